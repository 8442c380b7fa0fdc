//! Connection hygiene: clients that never finish a request are closed, bodies are refused
//! before they are read, and WebSocket protocol errors close with their RFC 6455 codes. (The
//! caps on connections that have not authenticated: `doors`.)

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::Config;
use switchboard_server::Limits;
use switchboard_server::client::{ClientError, GatewayClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

use super::harness::{TOKEN, TestGateway, raw_http};

fn short() -> Limits {
    Limits {
        header_timeout: Duration::from_millis(200),
        body_timeout: Duration::from_millis(200),
        ..Limits::default()
    }
}

/// Sends `bytes` and reads until the server closes the connection; answers what it sent.
/// (The bound only keeps a broken gateway from hanging the suite.)
async fn until_closed(gw: &TestGateway, bytes: &[u8]) -> String {
    let mut tcp = TcpStream::connect(gw.addr).await.unwrap();
    tcp.write_all(bytes).await.unwrap();
    let mut answer = Vec::new();
    let read = tcp.read_to_end(&mut answer);
    match tokio::time::timeout(Duration::from_secs(60), read).await {
        Ok(_) => String::from_utf8_lossy(&answer).to_string(),
        Err(_) => panic!("the gateway kept {:?} open", String::from_utf8_lossy(bytes)),
    }
}

fn post_head(path: &str, token: &str, length: usize) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {length}\r\n\r\n"
    )
}

fn body_json(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    serde_json::from_str(body).unwrap_or(Value::Null)
}

#[tokio::test]
async fn connections_that_never_finish_a_request_are_closed() {
    let gw = TestGateway::start_limited(Config::default(), short()).await;
    // Nothing at all, half a head, and (with the token) half a body.
    assert_eq!(until_closed(&gw, b"").await, "");
    until_closed(&gw, b"POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Le").await;
    let partial = format!("{}{{\"method\"", post_head("/rpc", TOKEN, 100));
    let answer = until_closed(&gw, partial.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let error = &body_json(&answer)["error"];
    assert_eq!(error["code"], "INVALID_REQUEST");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("did not arrive within")
    );
    // A keep-alive connection that goes idle after a request is closed too.
    let health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    let answer = until_closed(&gw, health.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn a_chunked_body_that_grows_past_the_limit_is_refused_saying_so() {
    let mut config = Config::default();
    config.gateway.max_payload_bytes = 4096;
    let gw = TestGateway::start_with(config).await;
    let chunk = format!("{:x}\r\n{}\r\n", 3000, "x".repeat(3000));
    let request = format!(
        "POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{chunk}{chunk}0\r\n\r\n"
    );
    let answer = until_closed(&gw, request.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let message = body_json(&answer)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        message,
        "the body grew past the limit and exceeds maxPayload (4096 bytes, gateway.maxPayloadBytes); send less"
    );
}

#[tokio::test]
async fn bodies_are_refused_before_they_are_read() {
    let mut config = Config::default();
    config.gateway.max_payload_bytes = 4 * 1024 * 1024;
    config.hooks.enabled = true;
    config.hooks.token = Some("hook-token".into());
    // The default body timeout: a gateway that waited for these bodies would answer 408 (after
    // 30 s), not the refusals below.
    let gw = TestGateway::start_with(config).await;
    let too_long = 5 * 1024 * 1024;
    for (path, token) in [
        ("/rpc", TOKEN),
        ("/hooks/agent", "hook-token"),
        ("/mcp?session=main", TOKEN),
    ] {
        let answer = until_closed(&gw, post_head(path, token, too_long).as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 413"), "{path}: {answer}");
        let body = body_json(&answer);
        let message = if path.starts_with("/mcp") {
            assert_eq!(body["jsonrpc"], "2.0", "{answer}");
            body["error"]["message"].as_str().unwrap().to_string()
        } else {
            body["error"]["message"].as_str().unwrap().to_string()
        };
        assert!(
            message.contains(&format!(
                "the body of {too_long} bytes exceeds maxPayload (4194304 bytes, gateway.maxPayloadBytes)"
            )),
            "{message}"
        );
    }
    // A wrong token is refused without reading the (never finished) body.
    let partial = format!(
        "{}{}",
        post_head("/rpc", "wrong", too_long),
        "x".repeat(1000)
    );
    let answer = until_closed(&gw, partial.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert_eq!(body_json(&answer)["error"]["code"], "UNAUTHORIZED");
    // rmcp's own transport errors reach MCP clients as JSON-RPC too (here: no SSE in Accept).
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let request = post_head("/mcp?session=main", TOKEN, body.len())
        .replace(", text/event-stream", "")
        .replace("HTTP/1.1\r\n", "HTTP/1.1\r\nConnection: close\r\n");
    let res = raw_http(gw.addr, &format!("{request}{body}")).await;
    assert_eq!(res.status, 406, "{}", res.body);
    assert_eq!(res.json["jsonrpc"], "2.0", "{}", res.body);
    assert!(
        res.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("text/event-stream")
    );
    // The limit is maxPayloadBytes, not a fixed 2 MiB: a 3 MiB request is served.
    let body = json!({"method": "health", "params": {"pad": "x".repeat(3 * 1024 * 1024)}});
    let body = body.to_string();
    let request = format!("{}{body}", post_head("/rpc", TOKEN, body.len()));
    let request = request.replace("HTTP/1.1\r\n", "HTTP/1.1\r\nConnection: close\r\n");
    let res = raw_http(gw.addr, &request).await;
    assert_eq!(
        (res.status, res.json["ok"].clone()),
        (200, json!(true)),
        "{}",
        res.body
    );
    gw.stop().await;
}

/// Reads until the server closes; answers the close's `"<code> <reason>"`.
async fn close_reason(client: &mut GatewayClient) -> String {
    loop {
        match client.next_frame().await {
            Ok(_) => {}
            Err(ClientError::Closed(reason)) => return reason.unwrap_or_default(),
            Err(e) => panic!("unexpected: {e}"),
        }
    }
}

#[tokio::test]
async fn websocket_protocol_errors_close_with_their_codes() {
    let gw = TestGateway::start().await;
    let frames = [
        (OpCode::Data(Data::Text), vec![0xff, 0xfe, 0xfd], "1007"),
        (OpCode::Data(Data::Reserved(3)), b"{}".to_vec(), "1002"),
        // Four times maxPayload: it used to be cut off by a reset.
        (
            OpCode::Data(Data::Text),
            vec![b' '; 5 * 1024 * 1024],
            "1009",
        ),
    ];
    for (opcode, payload, code) in frames {
        let mut client = gw.client().await;
        let frame = Frame::message(payload, opcode, true);
        // A large frame may be refused before the client has finished writing it.
        let _ = client.send_message(Message::Frame(frame)).await;
        let reason = close_reason(&mut client).await;
        assert!(reason.starts_with(code), "{code}: {reason}");
        if code == "1009" {
            assert!(reason.contains("maxPayload (1048576 bytes)"), "{reason}");
        }
    }
    gw.assert_serving().await;
    gw.stop().await;
}
