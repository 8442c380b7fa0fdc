//! Accepting connections: HTTP/1.1 with the timeouts and the caps that keep clients which never
//! finish a request from holding the gateway (SPEC §12).
//!
//! - A request's head must arrive within [`Limits::header_timeout`] — counted from the moment
//!   the connection is waiting for one, so it is also the idle timeout of a keep-alive
//!   connection and the time a connection that sends nothing is kept (hyper's
//!   `header_read_timeout`).
//! - A body must arrive within [`Limits::body_timeout`] once the route reads it, which it does
//!   only after the caller was authenticated (`crate::body`).
//! - Connections open before their first authenticated request are capped in total and per
//!   peer address (`crate::admission`): each holds a place (`Pending`) until a door accepts its
//!   token (for a WebSocket: until `hello-ok`). A newcomer over a cap closes the oldest idle
//!   waiting connection instead of being turned away, so idle sockets cannot lock clients out;
//!   only when every waiting connection has a request in flight is it answered 503 and closed
//!   before anything is read. Authenticated connections are not counted.
//!
//! Shutdown: when `shutdown` resolves the loop stops accepting, each connection finishes the
//! request it is serving and closes (hyper's graceful shutdown), and `serve` returns once they
//! have. WebSocket connections live on their own tasks (`ServerState::finish` waits for them).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use switchboard_core::config::GatewayLimits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::ServerState;
use crate::admission::{Admission, Caps, Evictions};

/// The bounds every connection is held to. Defaults: 15 s for a request's head (and a
/// keep-alive connection's idle time), 30 s for a body, and `gateway.limits`' defaults for
/// the connections not yet authenticated (256 in all, 32 per address, trimmed after 1 s).
#[derive(Debug, Clone)]
pub struct Limits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    /// `gateway.limits.maxUnauthenticated`.
    pub max_unauthenticated: usize,
    /// `gateway.limits.maxUnauthenticatedPerAddress`.
    pub max_unauthenticated_per_address: usize,
    /// How long an idle unauthenticated connection is left alone before newer ones from its
    /// address over the per-address cap may close it (a burst of honest clients is not cut).
    pub trim_after: Duration,
}

impl Limits {
    /// The default timeouts with the configured caps.
    pub fn configured(limits: &GatewayLimits) -> Self {
        Self {
            header_timeout: Duration::from_secs(15),
            body_timeout: Duration::from_secs(30),
            max_unauthenticated: limits.max_unauthenticated,
            max_unauthenticated_per_address: limits.max_unauthenticated_per_address,
            trim_after: Duration::from_secs(1),
        }
    }

    fn caps(&self) -> Caps {
        Caps {
            total: self.max_unauthenticated.max(1),
            per_address: self.max_unauthenticated_per_address.max(1),
            trim_after: self.trim_after,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::configured(&GatewayLimits::default())
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains the connections.
pub(crate) async fn serve(
    state: Arc<ServerState>,
    listener: TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.limits.clone();
    let admission = Admission::new(limits.caps());
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let connections = TaskTracker::new();
    let closing = CancellationToken::new();
    let warnings = Warnings::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, most likely: wait for some to close.
                    tracing::error!(error = %e, "accepting a connection failed; retrying in 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Without TCP_NODELAY every small frame after another (a response, then run events)
        // waits for the client's delayed ACK: 40 ms per turn.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let now_ms = state.engine.now_ms();
        let pending = match admission.admit(peer.ip(), std::time::Instant::now()) {
            Ok((pending, evictions)) => {
                warnings.evicted(&evictions, peer, &limits, now_ms);
                pending
            }
            Err(_) => {
                if warnings.refusals.due(now_ms) {
                    tracing::warn!(
                        cap = limits.max_unauthenticated,
                        "every connection waiting to authenticate is being served; refusing new ones (503)"
                    );
                }
                connections.spawn(refuse_busy(tcp));
                continue;
            }
        };
        let evicted = pending.evicted().clone();
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            let serving = pending.serving();
            request.extensions_mut().insert(pending.clone());
            // Who is asking, for the doors that decide by address (`/metrics` from loopback).
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            let mut router = router.clone();
            let call = tower_service::Service::call(&mut router, request.map(Body::new));
            async move {
                let response = call.await;
                drop(serving);
                response
            }
        });
        let connection = http
            .serve_connection(TokioIo::new(tcp), service)
            .with_upgrades();
        let closing = closing.clone();
        let open = switchboard_core::measure::http_connection();
        connections.spawn(async move {
            let _open = open;
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                // A newer connection took its place; it has no request in flight. Dropping
                // the connection closes the socket.
                () = evicted.cancelled() => return,
                () = closing.cancelled() => {}
            }
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        });
    }
    closing.cancel();
    connections.close();
    connections.wait().await;
    Ok(())
}

/// The accept loop's warnings, each at most once every ten seconds.
#[derive(Default)]
struct Warnings {
    refusals: Throttle,
    total: Throttle,
    per_address: Throttle,
}

impl Warnings {
    fn evicted(&self, evictions: &Evictions, peer: SocketAddr, limits: &Limits, now_ms: i64) {
        if evictions.total > 0 && self.total.due(now_ms) {
            tracing::warn!(
                cap = limits.max_unauthenticated,
                "too many connections are waiting to authenticate; closing the oldest idle ones to admit new ones"
            );
        }
        if evictions.per_address > 0 && self.per_address.due(now_ms) {
            tracing::warn!(
                peer = %peer.ip(),
                cap = limits.max_unauthenticated_per_address,
                "one address holds too many connections waiting to authenticate; closing its oldest idle ones"
            );
        }
    }
}

/// Answers a connection that found no place with a 503 in the gateway's error shape, without reading
/// its request, then closes it (reading a little first, so the client sees the answer rather
/// than a reset).
async fn refuse_busy(mut tcp: TcpStream) {
    let body = json!({"ok": false, "error": {"code": "UNAVAILABLE", "message":
        "too many connections are waiting to authenticate; retry shortly"}})
    .to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = async {
        tcp.write_all(response.as_bytes()).await?;
        tcp.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut drained = 0;
        while drained < 64 * 1024 {
            match tcp.read(&mut sink).await? {
                0 => break,
                n => drained += n,
            }
        }
        std::io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), answer).await;
}

/// At most one warning every ten seconds, however many refusals.
#[derive(Default)]
struct Throttle(AtomicI64);

impl Throttle {
    fn due(&self, now_ms: i64) -> bool {
        let last = self.0.load(Ordering::Relaxed);
        now_ms - last >= 10_000
            && self
                .0
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}
