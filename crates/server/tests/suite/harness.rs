//! A gateway running in the test process on port 0 with its own state dir.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::Value;
use switchboard_core::Engine;
use switchboard_core::config::Config;
use switchboard_server::client::{ClientError, GatewayClient};
use switchboard_server::{GatewayAuth, ServerState};
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
    pub async fn start() -> Self {
        Self::start_with(Config::default()).await
    }

    pub async fn start_with(config: Config) -> Self {
        Self::start_ticking(config, std::time::Duration::from_secs(30)).await
    }

    pub async fn start_ticking(mut config: Config, tick: std::time::Duration) -> Self {
        config.gateway.port = 0;
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), config).await.unwrap();
        let state =
            ServerState::with_tick_interval(engine.clone(), GatewayAuth::token(TOKEN), tick);
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
