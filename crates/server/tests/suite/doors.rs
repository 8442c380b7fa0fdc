//! Doors that cannot be starved (issue 30): connections that never authenticate are capped in
//! total and per peer address, and holding idle sockets never locks out `/health` or a client
//! with the token — a newcomer closes the oldest idle waiting connection instead of getting 503.

use std::io::{ErrorKind, Read};
use std::net::SocketAddr;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::Config;
use switchboard_server::Limits;
use switchboard_server::client::GatewayClient;

use super::harness::{TOKEN, TestGateway, raw_http};

const HEALTH: &str = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/// `n` connections that never send a byte, connected one after the other (the gateway, on this
/// test's runtime, accepts each in turn). Handed back as non-blocking std sockets, so
/// [`still_open`] can ask whether the gateway closed one without waiting.
async fn idle_sockets(addr: SocketAddr, n: usize) -> Vec<std::net::TcpStream> {
    let mut sockets = Vec::with_capacity(n);
    for _ in 0..n {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        sockets.push(tcp.into_std().unwrap());
    }
    sockets
}

/// Which of `sockets` the gateway has not closed, as far as this side has seen (a close that
/// is still on its way counts as open).
fn still_open(sockets: &[std::net::TcpStream]) -> Vec<bool> {
    sockets
        .iter()
        .map(|mut tcp| matches!(tcp.read(&mut [0u8; 1]), Err(e) if e.kind() == ErrorKind::WouldBlock))
        .collect()
}

fn open_count(sockets: &[std::net::TcpStream]) -> usize {
    still_open(sockets).into_iter().filter(|open| *open).count()
}

async fn rpc_health(addr: SocketAddr) -> (u16, Value) {
    let body = json!({"method": "health"}).to_string();
    let request = format!(
        "POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let res = raw_http(addr, &request).await;
    (res.status, res.json["ok"].clone())
}

/// The default limits with `places` in total, all of which one address may take.
fn caps(places: usize) -> Limits {
    Limits {
        max_unauthenticated: places,
        max_unauthenticated_per_address: places,
        ..Limits::default()
    }
}

async fn assert_healthy(client: &mut GatewayClient) {
    let health = client.request("health", Value::Null).await.unwrap();
    assert_eq!(health["ok"], true);
}

#[tokio::test]
async fn idle_sockets_never_lock_out_health_or_clients_with_the_token() {
    // The default caps: 256 waiting connections in all, 32 per address.
    let gw = TestGateway::start().await;
    let limits = Config::default().gateway.limits;
    // 300 sockets from 127.0.0.1 that never send anything: more than the whole house.
    let idle = idle_sockets(gw.addr, 300).await;
    let health = raw_http(gw.addr, HEALTH).await;
    assert_eq!(health.status, 200, "{}", health.body);
    assert_eq!(rpc_health(gw.addr).await, (200, json!(true)));
    // A WebSocket client with the token completes the handshake and calls a method.
    let mut client = gw.client().await;
    let created = client
        .request("sessions.create", json!({"key": "agent:main:doors"}))
        .await
        .unwrap();
    assert_eq!(created["key"], "agent:main:doors");
    // Places were made by closing idle sockets: at most the whole house of them is left.
    let mut open = open_count(&idle);
    for _ in 0..400 {
        if open <= limits.max_unauthenticated {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        open = open_count(&idle);
    }
    assert!(open <= limits.max_unauthenticated, "{open} still open");
    // One address keeps at most its cap: once its idle sockets have waited a second, the next
    // connection from it closes them down to the cap (each probe is such a connection; ask
    // until the closes have arrived).
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(raw_http(gw.addr, HEALTH).await.status, 200);
        open = open_count(&idle);
        if open <= limits.max_unauthenticated_per_address {
            break;
        }
    }
    assert!(
        open <= limits.max_unauthenticated_per_address,
        "{open} idle sockets from one address still open"
    );
    // The connected client was never one of those counted.
    assert_healthy(&mut client).await;
    gw.stop().await;
}

#[tokio::test]
async fn a_newcomer_closes_the_oldest_idle_connection_not_another() {
    let limits = Limits {
        // Long enough that no idle socket here is closed for idling.
        header_timeout: Duration::from_secs(600),
        ..caps(2)
    };
    let gw = TestGateway::start_limited(Config::default(), limits).await;
    // Authenticated clients do not count: three in a row under a cap of two.
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(gw.client().await);
    }
    // The gateway admits in the order it accepts. An idle socket takes a place; a health
    // request takes the other and gives it back when its connection closes.
    let older = idle_sockets(gw.addr, 1).await;
    assert_eq!(raw_http(gw.addr, HEALTH).await.status, 200);
    // With two idle sockets waiting, the next request closes the older one to get in...
    let newer = idle_sockets(gw.addr, 1).await;
    assert_eq!(raw_http(gw.addr, HEALTH).await.status, 200);
    // ...and with `newer` and `third` waiting, a WebSocket client with the token closes `newer`.
    let third = idle_sockets(gw.addr, 1).await;
    let mut client = gw.client().await;
    assert_healthy(&mut client).await;
    let mut seen = (still_open(&older)[0], still_open(&newer)[0]);
    for _ in 0..400 {
        if seen == (false, false) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        seen = (still_open(&older)[0], still_open(&newer)[0]);
    }
    assert_eq!(seen, (false, false));
    assert_eq!(
        still_open(&third),
        [true],
        "the newest idle one keeps its place"
    );
    for client in &mut clients {
        assert_healthy(client).await;
    }
    gw.stop().await;
}

#[tokio::test]
async fn a_websocket_that_has_not_sent_connect_gives_its_place_up_with_a_reason() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;

    let gw = TestGateway::start_limited(Config::default(), caps(1)).await;
    let (mut socket, _) = tokio_tungstenite::connect_async(gw.url.as_str())
        .await
        .unwrap();
    // The challenge: the gateway now waits for `connect`, and the socket holds the one place.
    let challenge = socket.next().await.unwrap().unwrap();
    assert!(challenge.to_text().unwrap().contains("connect.challenge"));
    assert_eq!(raw_http(gw.addr, HEALTH).await.status, 200);
    let close = match socket.next().await {
        Some(Ok(Message::Close(frame))) => frame.unwrap(),
        other => panic!("expected a close frame, got {other:?}"),
    };
    assert_eq!(
        (u16::from(close.code), close.reason.as_str()),
        (
            1013,
            "too many connections are waiting to authenticate; connect again"
        )
    );
    gw.stop().await;
}
