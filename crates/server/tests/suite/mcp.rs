//! The `/mcp` endpoint's door: the token, the acting session, and a shutdown that open MCP
//! streams do not hold up. MCP itself is tested with the official Python SDK in the CLI's suite
//! (`crates/cli/tests/suite/mcp.rs`).

use std::net::SocketAddr;
use std::time::Duration;

use pretty_assertions::assert_eq;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::harness::{TOKEN, TestGateway};
use super::protocol::http;

pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

#[tokio::test]
async fn mcp_over_http_needs_the_token_and_an_acting_session() {
    let gw = TestGateway::start().await;
    let (status, body) = http(gw.addr, "POST", "/mcp?session=main", None, INITIALIZE).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], -32600);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Authorization: Bearer <gateway token>")
    );
    let (status, body) = http(gw.addr, "POST", "/mcp", Some(TOKEN), INITIALIZE).await;
    assert_eq!(status, 400);
    assert_eq!(body["jsonrpc"], "2.0");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("/mcp?session=") && message.contains("X-Switchboard-Session"),
        "{message}"
    );
    let (status, _) = mcp_post(gw.addr, "/mcp?session=main", INITIALIZE).await;
    assert_eq!(status, 200);
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn an_open_mcp_stream_does_not_hold_up_the_shutdown() {
    let gw = TestGateway::start().await;
    let (status, head) = mcp_post(gw.addr, "/mcp?session=main", INITIALIZE).await;
    assert_eq!(status, 200);
    let session_id = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l["mcp-session-id:".len()..].trim().to_string())
        })
        .expect("an Mcp-Session-Id header");
    // The standalone server-to-client stream: it stays open until the server ends it.
    let mut stream = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let request = format!(
        "GET /mcp?session=main HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
         Accept: text/event-stream\r\nMcp-Session-Id: {session_id}\r\n\
         MCP-Protocol-Version: 2025-06-18\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut first = [0u8; 12];
    stream.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");

    // A hang guard only: the shutdown must end the stream rather than wait for the client.
    tokio::time::timeout(Duration::from_secs(60), gw.stop())
        .await
        .expect("the gateway stopped with an MCP stream open");
}

/// POSTs an MCP message with the token; answers the status and the response head (the body is
/// an event stream, read to its end).
async fn mcp_post(addr: SocketAddr, path: &str, body: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let head = response.split("\r\n\r\n").next().unwrap_or_default();
    (status, head.to_string())
}
