//! A gateway running in the test process on port 0 with its own state dir.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::Value;
use switchboard_core::Engine;
use switchboard_core::config::Config;
use switchboard_server::client::{ClientError, GatewayClient};
use switchboard_server::{GatewayAuth, Limits, ServerState};
use tokio::sync::oneshot;

pub const TOKEN: &str = "test-token-0123456789";

pub struct TestGateway {
    pub url: String,
    pub addr: SocketAddr,
    pub engine: Arc<Engine>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl TestGateway {
    /// Whether the store mirrors transcripts to files (SQLite does; PostgreSQL, the matrix's
    /// second leg, does not).
    pub fn mirrors(&self) -> bool {
        self.engine
            .store()
            .transcript_path("main", "probe")
            .is_some()
    }

    pub async fn start() -> Self {
        Self::start_with(Config::default()).await
    }

    pub async fn start_with(config: Config) -> Self {
        Self::start_ticking(config, std::time::Duration::from_secs(30)).await
    }

    pub async fn start_ticking(config: Config, tick: std::time::Duration) -> Self {
        let limits = Limits::configured(&config.gateway.limits);
        Self::start_full(config, GatewayAuth::token(TOKEN), tick, limits).await
    }

    /// A gateway with other timeouts or another cap on unauthenticated connections.
    pub async fn start_limited(config: Config, limits: Limits) -> Self {
        let tick = std::time::Duration::from_secs(30);
        Self::start_full(config, GatewayAuth::token(TOKEN), tick, limits).await
    }

    /// A gateway without a token (`gateway.auth.mode: "none"`).
    pub async fn start_open(config: Config) -> Self {
        let tick = std::time::Duration::from_secs(30);
        let limits = Limits::configured(&config.gateway.limits);
        Self::start_full(config, GatewayAuth::open(), tick, limits).await
    }

    async fn start_full(
        mut config: Config,
        auth: GatewayAuth,
        tick: std::time::Duration,
        limits: Limits,
    ) -> Self {
        config.gateway.port = 0;
        // The matrix's PostgreSQL leg: a schema of this test's own in the test database.
        if let Some(db) = switchboard_testkit::postgres::matrix_database() {
            config.store = switchboard_core::config::StoreConfig {
                kind: switchboard_core::config::StoreKind::Postgres,
                url: Some(db.url),
                schema: db.schema,
                ..Default::default()
            };
        }
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), config).await.unwrap();
        let state = ServerState::with_options(engine.clone(), auth, tick, limits);
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (addr, listener) = switchboard_server::bind(state.clone(), addr).await.unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            switchboard_server::serve(state, listener, shutdown)
                .await
                .unwrap();
        });
        Self {
            url: format!("ws://{addr}"),
            addr,
            engine,
            stop: Some(stop),
            task: Some(task),
            _dir: dir,
        }
    }

    pub async fn client(&self) -> GatewayClient {
        GatewayClient::connect(&self.url, Some(TOKEN))
            .await
            .unwrap()
    }

    /// One call on a fresh connection; panics on an error response.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let mut client = self.client().await;
        let result = client.request(method, params).await;
        client.close().await;
        result.unwrap_or_else(|e| panic!("{method} failed: {e}"))
    }

    /// One call on a fresh connection, answering the gateway's error.
    pub async fn call_err(&self, method: &str, params: Value) -> switchboard_protocol::ErrorShape {
        let mut client = self.client().await;
        let result = client.request(method, params).await;
        client.close().await;
        match result {
            Err(ClientError::Gateway(e)) => e,
            other => panic!("{method}: expected a gateway error, got {other:?}"),
        }
    }

    /// Proves the gateway still serves a new client.
    pub async fn assert_serving(&self) {
        let health = self.call("health", Value::Null).await;
        assert_eq!(health["ok"], true);
    }

    /// Starts the graceful shutdown without waiting for it.
    pub fn begin_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        self.engine.close().await;
    }
}

/// What a raw HTTP exchange answered: the status, the head, and the body as JSON (`Null` when
/// it is not JSON) with its text.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub head: String,
    pub json: Value,
    pub body: String,
}

/// Whether `bytes` hold a whole response: a 101's head, or a head and `Content-Length` bytes.
fn is_complete(bytes: &[u8]) -> bool {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
    if head.starts_with("http/1.1 101") {
        return true;
    }
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .is_some_and(|len| bytes.len() >= end + 4 + len)
}

/// Writes `request` (a whole HTTP/1.1 request, head and body) on a new TCP connection and reads
/// the answer: its head and `Content-Length` bytes, or until the server closes; for a 101
/// the head alone.
pub async fn raw_http(addr: SocketAddr, request: &str) -> RawResponse {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        // A reset ends the answer as a close does.
        let n = stream.read(&mut buf).await.unwrap_or_default();
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
        if is_complete(&bytes) {
            break;
        }
    }
    let text = String::from_utf8_lossy(&bytes).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    RawResponse {
        status: head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0),
        head: head.to_string(),
        json: serde_json::from_str(body).unwrap_or(Value::Null),
        body: body.to_string(),
    }
}
