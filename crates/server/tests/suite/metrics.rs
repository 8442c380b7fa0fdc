//! `GET /metrics` at the door: refused without the token (token mode), served to loopback
//! without one (loopback mode), 404 when switched off; and what it serves is the Prometheus
//! text format with the gauges read from the engine.

use std::net::SocketAddr;

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::Engine;
use switchboard_core::config::{Config, MetricsAuth};
use switchboard_server::client::GatewayClient;
use switchboard_server::metrics::Exporter;
use switchboard_server::{GatewayAuth, ServerState};

use super::harness::{TOKEN, raw_http};

/// A gateway on loopback port 0 whose `/metrics` is configured by `config` (its exporter is a
/// detached recorder: the process's global one belongs to the binary).
async fn gateway(config: Config) -> (SocketAddr, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), config).await.unwrap();
    let state = ServerState::new(engine, GatewayAuth::token(TOKEN));
    state.export_metrics(Exporter::detached().unwrap());
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let (addr, listener) = switchboard_server::bind(state.clone(), addr).await.unwrap();
    tokio::spawn(switchboard_server::serve(
        state,
        listener,
        std::future::pending(),
    ));
    (addr, dir)
}

fn scrape(host: &str, token: Option<&str>) -> String {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n")
}

#[tokio::test]
async fn token_mode_refuses_a_scrape_without_the_token() {
    let (addr, _dir) = gateway(Config::default()).await;
    for token in [None, Some("wrong-token")] {
        let refused = raw_http(addr, &scrape("127.0.0.1", token)).await;
        assert_eq!(refused.status, 401, "{token:?}: {}", refused.body);
        assert_eq!(refused.json["error"]["code"], "UNAUTHORIZED");
        assert!(!refused.body.contains("switchboard_"), "{}", refused.body);
    }
    let served = raw_http(addr, &scrape("127.0.0.1", Some(TOKEN))).await;
    assert_eq!(served.status, 200, "{}", served.body);
    assert!(
        served
            .head
            .to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{}",
        served.head
    );
    // The lanes' sizes come from the config (agents.defaults.maxConcurrent: 4).
    assert!(
        served
            .body
            .contains("# TYPE switchboard_lane_slots gauge\n")
            && served
                .body
                .contains("switchboard_lane_slots{lane=\"main\"} 4\n"),
        "{}",
        served.body
    );
    assert!(
        served.body.contains("switchboard_cluster_members 1\n"),
        "{}",
        served.body
    );
}

#[tokio::test]
async fn loopback_mode_serves_this_machine_without_a_token_and_no_rebound_host() {
    let mut config = Config::default();
    config.observability.metrics.auth = MetricsAuth::Loopback;
    let (addr, _dir) = gateway(config).await;
    let served = raw_http(addr, &scrape(&addr.to_string(), None)).await;
    assert_eq!(served.status, 200, "{}", served.body);
    assert!(
        served.body.contains("switchboard_websocket_clients 0\n"),
        "{}",
        served.body
    );
    // A page that rebinds its DNS name to 127.0.0.1 connects from loopback too.
    let rebound = raw_http(addr, &scrape("rebound.example:80", None)).await;
    assert_eq!(rebound.status, 403, "{}", rebound.body);
    assert_eq!(rebound.json["error"]["code"], "FORBIDDEN");
}

#[tokio::test]
async fn switched_off_there_is_no_metrics_door() {
    let mut config = Config::default();
    config.observability.metrics.enabled = false;
    let (addr, _dir) = gateway(config).await;
    let off = raw_http(addr, &scrape("127.0.0.1", Some(TOKEN))).await;
    assert_eq!(off.status, 404, "{}", off.body);
    assert!(!off.body.contains("switchboard_"), "{}", off.body);
}

#[tokio::test]
async fn the_session_queue_and_the_connections_are_read_at_the_scrape() {
    let (addr, _dir) = gateway(Config::default()).await;
    let mut client = GatewayClient::connect(&format!("ws://{addr}"), Some(TOKEN))
        .await
        .unwrap();
    // The first run holds the session; the second waits behind it.
    for message in ["@delay 60000\n@reply first", "@reply second"] {
        client
            .request(
                "chat.send",
                json!({"sessionKey": "main", "message": message, "idempotencyKey": message}),
            )
            .await
            .unwrap();
    }
    let mut body = String::new();
    for _ in 0..200 {
        body = raw_http(addr, &scrape("127.0.0.1", Some(TOKEN))).await.body;
        if body.contains("switchboard_session_queued_runs 1\n") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for series in [
        "switchboard_session_queued_runs 1\n",
        "switchboard_sessions_active 1\n",
        "switchboard_websocket_clients 1\n",
    ] {
        assert!(body.contains(series), "{series:?} is not in:\n{body}");
    }
    client
        .request("chat.abort", json!({"sessionKey": "main"}))
        .await
        .unwrap();
}
