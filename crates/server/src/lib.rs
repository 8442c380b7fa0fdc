//! switchboard's adapters: the gateway (WebSocket protocol v4 + HTTP on one port) over the
//! engine, the MCP server (`/mcp` and stdio), A2A 1.0 (`/a2a/<agentId>`), and a protocol client
//! used by the CLI and the tests.
//!
//! `app(state)` builds the router so tests can drive it; `serve` binds and runs it until the
//! shutdown future resolves.
//!
//! Every door is a thin adapter: it decodes protocol params, calls the engine component that owns
//! the operation, and encodes its answer or maps its `CoreError` (wire code and HTTP status, one
//! mapping in `switchboard_core::error`). No decision is made here.

mod a2a;
pub mod access;
mod admission;
pub mod auth;
mod body;
pub mod client;
#[doc(hidden)]
pub mod fuzzing;
mod guard;
mod http;
mod inbound;
mod listen;
pub mod logs;
pub mod mcp;
pub mod methods;
pub mod metrics;
mod traced;
pub mod web;
mod ws;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use switchboard_core::Engine;
use tokio_util::task::TaskTracker;

pub use auth::GatewayAuth;
pub use listen::Limits;

/// How long [`ServerState::finish`] waits for the connections' last tasks.
const FINISH_TIMEOUT: Duration = Duration::from_secs(30);

/// What every connection and request handler shares.
pub struct ServerState {
    pub engine: Arc<Engine>,
    pub auth: GatewayAuth,
    /// Largest accepted frame or body, in bytes.
    pub max_payload: usize,
    /// How often connected clients get a `tick` event (the reference's liveness signal).
    pub tick_interval: Duration,
    /// Timeouts and the caps on connections that have not authenticated.
    pub limits: Limits,
    /// Flips to true when the gateway starts shutting down; connections say goodbye.
    stopping: tokio::sync::watch::Sender<bool>,
    /// Cancelled with `stopping`: `/mcp`'s open streams end and `/rpc` callers stop waiting, so
    /// the HTTP drain can complete.
    stop: tokio_util::sync::CancellationToken,
    /// The connections' writer and request tasks.
    tasks: TaskTracker,
    connections: AtomicU64,
    next_conn: AtomicU64,
    /// The port the gateway listens on, once [`serve`] has its listener (browser origins of
    /// this port are the gateway's own).
    port: std::sync::OnceLock<u16>,
    /// What `GET /metrics` renders, once the binary installed it ([`ServerState::export_metrics`]).
    metrics: std::sync::OnceLock<metrics::Exporter>,
    /// The frames of the newest run events, written once for every connection.
    rendered: ws::Rendered,
}

impl ServerState {
    pub fn new(engine: Arc<Engine>, auth: GatewayAuth) -> Arc<Self> {
        Self::with_tick_interval(engine, auth, Duration::from_secs(30))
    }

    pub fn with_tick_interval(
        engine: Arc<Engine>,
        auth: GatewayAuth,
        tick_interval: Duration,
    ) -> Arc<Self> {
        let limits = Limits::configured(&engine.config().gateway.limits);
        Self::with_options(engine, auth, tick_interval, limits)
    }

    pub fn with_options(
        engine: Arc<Engine>,
        auth: GatewayAuth,
        tick_interval: Duration,
        limits: Limits,
    ) -> Arc<Self> {
        let max_payload = engine.config().gateway.max_payload_bytes;
        Arc::new(Self {
            engine,
            auth,
            max_payload,
            tick_interval,
            limits,
            stopping: tokio::sync::watch::channel(false).0,
            stop: tokio_util::sync::CancellationToken::new(),
            tasks: TaskTracker::new(),
            connections: AtomicU64::new(0),
            next_conn: AtomicU64::new(1),
            port: std::sync::OnceLock::new(),
            metrics: std::sync::OnceLock::new(),
            rendered: ws::Rendered::default(),
        })
    }

    /// Serves `exporter` on `GET /metrics` (while `observability.metrics.enabled`); the first
    /// one given stays.
    pub fn export_metrics(&self, exporter: metrics::Exporter) {
        let _ = self.metrics.set(exporter);
    }

    /// The port being served (0 before [`serve`]).
    pub fn port(&self) -> u16 {
        self.port.get().copied().unwrap_or(0)
    }

    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Waits for the connections' writer and request tasks to end: after [`serve`] returned and
    /// the engine shut down, each answers (to nobody) once the run it waits on has ended. Bounded:
    /// a client that stopped reading cannot hold the process.
    pub async fn finish(&self) {
        self.tasks.close();
        if tokio::time::timeout(FINISH_TIMEOUT, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                tasks = self.tasks.len(),
                "connection tasks still running at exit; leaving them"
            );
        }
    }
}

/// The gateway's routes: `/` (the web page, or a WebSocket upgrade), `/ui/<file>`, `POST /rpc`, `GET /health`, `GET /metrics`,
/// `POST /channels/webhook/<accountId>`, a channel's HTTP door at `/channels/<name>[/<rest>]`,
/// `POST /hooks/agent`, `/mcp` (MCP's streamable HTTP), A2A's agent cards and `POST /a2a/<agentId>`.
pub fn app(state: Arc<ServerState>) -> Router {
    Router::new()
        .route("/", get(web::root))
        .route("/ui/{file}", get(web::file))
        .route("/ws", get(ws::upgrade))
        .route("/rpc", post(http::rpc))
        .route("/health", get(http::health))
        .route("/metrics", get(metrics::scrape))
        .route("/channels/webhook/{account}", post(inbound::webhook))
        .route(
            "/channels/{channel}",
            get(inbound::channel).post(inbound::channel),
        )
        .route(
            "/channels/{channel}/{*rest}",
            get(inbound::channel).post(inbound::channel),
        )
        .route("/hooks/agent", post(inbound::hook))
        .merge(mcp::http::routes(&state))
        .merge(a2a::routes(&state))
        .layer(axum::middleware::from_fn(traced::http_span))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::browser_check,
        ))
        .with_state(state)
}

/// Why the gateway would not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Binding beyond loopback needs token auth (SPEC §12).
    #[error(
        "refusing to listen on {0} without a token: set gateway.auth.mode to \"token\" (the default) or bind to loopback"
    )]
    OpenWithoutToken(SocketAddr),
    /// The address could not be bound; the message says why once, with what to do.
    #[error("cannot listen on {addr}: {}", bind_hint(.error))]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
}

/// Why a bind failed, in a person's words, with what to do.
fn bind_hint(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::AddrInUse => "the port is in use (is another gateway, this one or the reference, running? stop it, or pick another port with --port or gateway.port)".to_string(),
        std::io::ErrorKind::PermissionDenied => format!("{error} (ports under 1024 need privileges; pick another with --port or gateway.port)"),
        std::io::ErrorKind::AddrNotAvailable => format!("{error} (no interface of this machine has that address; check gateway.bind)"),
        _ => error.to_string(),
    }
}

/// Binds `addr` (port 0 picks a free port) and answers the bound address with a future that
/// serves until `shutdown` resolves.
pub async fn bind(
    state: Arc<ServerState>,
    addr: SocketAddr,
) -> Result<(SocketAddr, tokio::net::TcpListener), ServeError> {
    if !addr.ip().is_loopback() && state.auth.is_open() {
        return Err(ServeError::OpenWithoutToken(addr));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|error| ServeError::Bind { addr, error })?;
    let local = listener
        .local_addr()
        .map_err(|error| ServeError::Bind { addr, error })?;
    Ok((local, listener))
}

/// Serves on a bound listener until `shutdown` resolves; then every WebSocket client gets a
/// `shutdown` event and a close (1012) before the listener stops.
pub async fn serve(
    state: Arc<ServerState>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let Ok(local) = listener.local_addr() {
        let _ = state.port.set(local.port());
    }
    let stopping = state.stopping.clone();
    let stop = state.stop.clone();
    let shutdown = async move {
        shutdown.await;
        let _ = stopping.send(true);
        stop.cancel();
    };
    let router = app(state.clone());
    listen::serve(state, listener, router, shutdown).await
}
