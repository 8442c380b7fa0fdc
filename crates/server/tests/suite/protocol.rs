//! The handshake and every kind of bad frame; after each the gateway serves other clients.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_protocol::{ErrorCode, Frame};
use switchboard_server::client::{ClientError, GatewayClient, connect_params};

use super::harness::{TOKEN, TestGateway};

/// Reads frames until the server closes; answers the error responses seen and the close reason.
async fn drain(
    client: &mut GatewayClient,
) -> (Vec<switchboard_protocol::ErrorShape>, Option<String>) {
    let mut errors = Vec::new();
    loop {
        match client.next_frame().await {
            Ok(Frame::Res(res)) => errors.extend(res.error),
            Ok(_) => {}
            Err(ClientError::Closed(reason)) => return (errors, reason),
            Err(e) => panic!("unexpected: {e}"),
        }
    }
}

async fn opened(gw: &TestGateway) -> GatewayClient {
    let mut client = GatewayClient::open(&gw.url).await.unwrap();
    let challenge = client.next_event().await.unwrap();
    assert_eq!(challenge.event, "connect.challenge");
    assert!(
        challenge.payload["nonce"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
    );
    client
}

#[tokio::test]
async fn handshake_answers_hello_ok_and_serves_sessions_list() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    assert_eq!(client.hello["type"], "hello-ok");
    assert_eq!(client.hello["protocol"], 4);
    let methods: Vec<&str> = client.hello["features"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(methods.contains(&"sessions.list") && methods.contains(&"chat.history"));
    assert_eq!(client.hello["policy"]["maxPayload"], 1024 * 1024);
    // The default agent's main session exists from the first start.
    let list = client.request("sessions.list", json!({})).await.unwrap();
    assert_eq!(list["count"], 1, "{list}");
    assert_eq!(list["sessions"][0]["key"], "agent:main:main");
    gw.stop().await;
}

#[tokio::test]
async fn a_wrong_or_missing_token_is_unauthorized_and_closes() {
    let gw = TestGateway::start().await;
    for token in [Some("wrong-token"), None] {
        let mut client = opened(&gw).await;
        let res = client
            .request_frame("connect", json!(connect_params(token)))
            .await
            .unwrap();
        let error = res.error.unwrap();
        assert_eq!(error.code, ErrorCode::Unauthorized);
        assert!(error.message.contains("token"), "{}", error.message);
        let (_, reason) = drain(&mut client).await;
        assert!(reason.unwrap().contains("unauthorized"));
    }
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn a_request_before_connect_is_refused_with_a_reason() {
    let gw = TestGateway::start().await;
    let mut client = opened(&gw).await;
    let res = client
        .request_frame("sessions.list", json!({}))
        .await
        .unwrap();
    let error = res.error.unwrap();
    assert_eq!(error.code, ErrorCode::Unauthorized);
    assert!(
        error.message.contains("first request must be connect"),
        "{}",
        error.message
    );
    let (_, reason) = drain(&mut client).await;
    assert!(reason.unwrap().contains("connect required"));
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn a_connect_without_params_says_what_they_must_hold() {
    let gw = TestGateway::start().await;
    // `params: null`, as a client that forgot them sends it.
    {
        let mut client = opened(&gw).await;
        let res = client
            .request_frame("connect", serde_json::Value::Null)
            .await
            .unwrap();
        let error = res.error.unwrap();
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert!(
            error.message.starts_with("connect: params are required")
                && error.message.contains("\"minProtocol\": 4")
                && error.message.contains("\"auth\""),
            "{}",
            error.message
        );
        let (_, reason) = drain(&mut client).await;
        assert!(reason.unwrap().contains("invalid connect"));
    }
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn a_frame_that_is_not_json_gets_an_error_and_the_connection_goes_on() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    client.send_text("this is {not json".into()).await.unwrap();
    let Frame::Res(res) = client.next_frame().await.unwrap() else {
        panic!("expected a response")
    };
    let error = res.error.unwrap();
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert!(
        error.message.starts_with("frame is not JSON"),
        "{}",
        error.message
    );
    // A JSON frame that is not a request, and a binary frame, are refused the same way.
    client
        .send_text(json!({"type": "req", "method": 5}).to_string())
        .await
        .unwrap();
    let Frame::Res(res) = client.next_frame().await.unwrap() else {
        panic!("expected a response")
    };
    assert!(res.error.unwrap().message.contains("invalid frame"));
    client.send_binary(vec![1, 2, 3]).await.unwrap();
    let Frame::Res(res) = client.next_frame().await.unwrap() else {
        panic!("expected a response")
    };
    assert!(res.error.unwrap().message.contains("binary frames"));
    // The same connection still answers.
    assert_eq!(
        client.request("health", Value::Null).await.unwrap()["ok"],
        true
    );
    // Before the handshake, a frame that is not JSON gets the same error, then a close whose
    // reason says what the first frame must be.
    let mut early = opened(&gw).await;
    early.send_text("hello?".into()).await.unwrap();
    let (errors, reason) = drain(&mut early).await;
    assert!(
        errors.len() == 1
            && errors[0].message.starts_with("frame is not JSON")
            && errors[0].message.contains(r#"expected {"type":"req""#),
        "{errors:?}"
    );
    assert!(
        reason
            .as_deref()
            .is_some_and(|r| r.contains("expected a connect request")),
        "{reason:?}"
    );
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn an_oversize_frame_is_refused_and_the_connection_closed_with_the_reason() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    let big = json!({"type": "req", "id": "x", "method": "chat.inject",
        "params": {"sessionKey": "main", "message": "a".repeat(1024 * 1024 + 10)}});
    client.send_text(big.to_string()).await.unwrap();
    let (errors, reason) = drain(&mut client).await;
    assert!(
        errors.iter().any(
            |e| e.code == ErrorCode::InvalidRequest && e.message.contains("exceeds maxPayload")
        )
    );
    let reason = reason.unwrap();
    assert!(
        reason.starts_with("1009") && reason.contains("maxPayload"),
        "{reason}"
    );
    // Nothing was stored, and the gateway goes on.
    let history = gw.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(history["messages"], json!([]));
    gw.stop().await;
}

#[tokio::test]
async fn unknown_methods_and_bad_params_name_what_is_wrong() {
    let gw = TestGateway::start().await;
    let error = gw.call_err("sessions.frobnicate", json!({})).await;
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert!(
        error
            .message
            .contains("unknown method: sessions.frobnicate")
    );
    assert!(
        error.message.contains("features.methods lists them"),
        "says where the methods are listed: {}",
        error.message
    );
    let near = gw.call_err("sessions.lst", json!({})).await;
    assert!(
        near.message
            .starts_with("unknown method: sessions.lst; did you mean sessions.list? ("),
        "{}",
        near.message
    );

    let missing = gw.call_err("chat.history", json!({"limit": 5})).await;
    assert_eq!(missing.code, ErrorCode::InvalidRequest);
    assert!(
        missing.message.contains("sessionKey"),
        "{}",
        missing.message
    );

    let wrong_type = gw
        .call_err(
            "chat.history",
            json!({"sessionKey": "main", "limit": "lots"}),
        )
        .await;
    assert_eq!(wrong_type.code, ErrorCode::InvalidRequest);
    assert!(
        wrong_type.message.contains("limit") && wrong_type.message.contains("expected a number"),
        "{}",
        wrong_type.message
    );

    let bad_key = gw
        .call_err(
            "chat.inject",
            json!({"sessionKey": "agent::x", "message": "hi"}),
        )
        .await;
    assert_eq!(bad_key.code, ErrorCode::InvalidRequest);
    assert!(bad_key.message.contains("accepted:"), "{}", bad_key.message);

    let bad_cursor = gw
        .call_err("sessions.list", json!({"cursor": "nonsense"}))
        .await;
    assert!(
        bad_cursor.message.contains("cursor"),
        "{}",
        bad_cursor.message
    );
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn http_rpc_needs_the_bearer_token_and_health_answers() {
    let gw = TestGateway::start().await;
    let (status, body) = http(gw.addr, "POST", "/rpc", None, r#"{"method":"health"}"#).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    let (status, body) = http(
        gw.addr,
        "POST",
        "/rpc",
        Some(TOKEN),
        r#"{"method":"sessions.list","params":{}}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["ok"], true);
    assert_eq!(
        body["payload"]["sessions"][0]["key"], "agent:main:main",
        "{body}"
    );
    let (status, body) = http(gw.addr, "POST", "/rpc", Some(TOKEN), "nope").await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expected {\"method\"")
    );
    let (status, body) = http(gw.addr, "GET", "/health", None, "").await;
    assert_eq!((status, body["ok"].clone()), (200, json!(true)));
    gw.stop().await;
}

/// A minimal HTTP/1.1 exchange over a real TCP socket.
pub async fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn connected_clients_get_numbered_ticks_and_a_shutdown_event() {
    let mut gw = TestGateway::start_ticking(
        switchboard_core::config::Config::default(),
        std::time::Duration::from_millis(30),
    )
    .await;
    let mut client = gw.client().await;
    assert_eq!(client.hello["policy"]["tickIntervalMs"], 30);
    let first = client.next_event().await.unwrap();
    let second = client.next_event().await.unwrap();
    assert_eq!((first.event.as_str(), first.seq), ("tick", Some(1)));
    assert_eq!((second.event.as_str(), second.seq), ("tick", Some(2)));
    gw.begin_stop();
    let goodbye = loop {
        let event = client.next_event().await.unwrap();
        if event.event != "tick" {
            break event;
        }
    };
    assert_eq!(goodbye.event, "shutdown");
    assert!(goodbye.seq.unwrap() > 2);
    let (_, reason) = drain(&mut client).await;
    assert!(reason.unwrap().contains("gateway stopping"));
    gw.stop().await;
}
