//! Browser safety: a page on another origin cannot drive the gateway through any door, and a
//! token-less gateway answers only its own host names; clients that are not browsers (no
//! `Origin`) are unaffected.

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::config::Config;

use super::harness::{RawResponse, TOKEN, TestGateway, raw_http};

const UPGRADE: &str = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
                       Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";

async fn upgrade(gw: &TestGateway, origin: Option<&str>) -> RawResponse {
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {}\r\n{UPGRADE}{origin}\r\n",
        gw.addr
    );
    raw_http(gw.addr, &request).await
}

async fn post(
    gw: &TestGateway,
    path: &str,
    host: &str,
    extra: &str,
    content_type: &str,
    body: &str,
) -> RawResponse {
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\
         Content-Type: {content_type}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    raw_http(gw.addr, &request).await
}

fn assert_refused(res: &RawResponse, status: u16, code: &str, says: &str) {
    assert_eq!(res.status, status, "{}", res.body);
    let head = res.head.to_ascii_lowercase();
    assert!(head.contains("content-type: application/json"), "{head}");
    assert_eq!(res.json["ok"], false, "{res:?}");
    assert_eq!(res.json["error"]["code"], code, "{res:?}");
    let message = res.json["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{message}");
}

#[tokio::test]
async fn a_foreign_origin_is_refused_on_every_door_and_own_origins_pass() {
    let mut config = Config::default();
    config.gateway.control_ui.allowed_origins = vec!["https://ui.example".into()];
    let gw = TestGateway::start_with(config).await;
    let port = gw.addr.port();

    let foreign = upgrade(&gw, Some("https://evil.example")).await;
    assert_refused(
        &foreign,
        403,
        "FORBIDDEN",
        "origin \"https://evil.example\" is not allowed",
    );
    let message = foreign.json["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("http://127.0.0.1:{port}")) && message.contains("ui.example"),
        "says what is accepted: {message}"
    );
    // Another port of this machine is another origin.
    let other_port = format!("http://127.0.0.1:{}", port.wrapping_add(1));
    assert_eq!(upgrade(&gw, Some(&other_port)).await.status, 403);
    for origin in [
        None,
        Some(format!("http://127.0.0.1:{port}")),
        Some(format!("http://localhost:{port}")),
        Some("https://ui.example".to_string()),
    ] {
        let res = upgrade(&gw, origin.as_deref()).await;
        assert_eq!(res.status, 101, "{origin:?}: {res:?}");
    }

    let auth = format!("Authorization: Bearer {TOKEN}\r\nOrigin: https://evil.example\r\n");
    let inject = json!({"method": "chat.inject",
        "params": {"sessionKey": "main", "message": "from a web page"}})
    .to_string();
    let host = gw.addr.to_string();
    let rpc = post(&gw, "/rpc", &host, &auth, "application/json", &inject).await;
    assert_refused(&rpc, 403, "FORBIDDEN", "is not allowed");
    let hook = post(&gw, "/hooks/agent", &host, &auth, "application/json", "{}").await;
    assert_refused(&hook, 403, "FORBIDDEN", "is not allowed");
    // /mcp answers in JSON-RPC, which is all its clients read.
    let mcp = post(
        &gw,
        "/mcp?session=main",
        &host,
        &auth,
        "application/json",
        "{}",
    )
    .await;
    assert_eq!(mcp.status, 403, "{mcp:?}");
    assert_eq!(mcp.json["jsonrpc"], "2.0");
    assert_eq!(mcp.json["error"]["data"]["code"], "FORBIDDEN");
    // Nothing was injected.
    let history = gw.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(history["messages"], json!([]));
    gw.stop().await;
}

#[tokio::test]
async fn rpc_takes_only_json_bodies() {
    let gw = TestGateway::start().await;
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let host = gw.addr.to_string();
    let body = json!({"method": "chat.inject",
        "params": {"sessionKey": "main", "message": "x"}})
    .to_string();
    for content_type in ["text/plain", "application/x-www-form-urlencoded"] {
        let res = post(&gw, "/rpc", &host, &auth, content_type, &body).await;
        assert_refused(&res, 415, "INVALID_REQUEST", "must be application/json");
        assert!(
            res.json["error"]["message"]
                .as_str()
                .unwrap()
                .contains(content_type)
        );
    }
    let res = post(
        &gw,
        "/rpc",
        &host,
        &auth,
        "application/json; charset=utf-8",
        &body,
    )
    .await;
    assert_eq!(
        (res.status, res.json["ok"].clone()),
        (200, json!(true)),
        "{res:?}"
    );
    gw.stop().await;
}

#[tokio::test]
async fn without_a_token_only_this_machines_host_names_are_served() {
    let gw = TestGateway::start_open(Config::default()).await;
    let body = json!({"method": "chat.inject",
        "params": {"sessionKey": "main", "message": "rebound"}})
    .to_string();
    // A page whose own name was rebound to 127.0.0.1 is same-origin with itself: no foreign
    // Origin to see, only its Host.
    let rebound = post(
        &gw,
        "/rpc",
        "rebound.example:80",
        "",
        "application/json",
        &body,
    )
    .await;
    assert_refused(
        &rebound,
        403,
        "FORBIDDEN",
        "host \"rebound.example:80\" is not allowed",
    );
    let mcp = post(
        &gw,
        "/mcp?session=main",
        "rebound.example",
        "",
        "application/json",
        "{}",
    )
    .await;
    assert_eq!(
        (mcp.status, mcp.json["jsonrpc"].clone()),
        (403, json!("2.0")),
        "{mcp:?}"
    );
    // Its own names work, with no token.
    let own = format!("localhost:{}", gw.addr.port());
    let res = post(&gw, "/rpc", &own, "", "application/json", &body).await;
    assert_eq!(
        (res.status, res.json["ok"].clone()),
        (200, json!(true)),
        "{res:?}"
    );
    gw.stop().await;
}

async fn get(gw: &TestGateway, path: &str, extra: &str) -> RawResponse {
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n{extra}\r\n",
        gw.addr
    );
    raw_http(gw.addr, &request).await
}

#[tokio::test]
async fn the_page_is_served_at_root_with_a_strict_policy_and_the_socket_still_answers_there() {
    let gw = TestGateway::start().await;
    let page = get(&gw, "/", "").await;
    assert_eq!(page.status, 200, "{}", page.head);
    let head = page.head.to_ascii_lowercase();
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(
        head.contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{head}"
    );
    assert!(head.contains("x-frame-options: deny"), "{head}");
    assert!(page.body.contains("/ui/app.js"), "{}", page.body);

    let script = get(&gw, "/ui/app.js", "").await;
    assert_eq!(script.status, 200);
    assert!(script.head.to_ascii_lowercase().contains("text/javascript"));
    let etag = script
        .head
        .lines()
        .find_map(|l| l.strip_prefix("etag: ").or(l.strip_prefix("ETag: ")))
        .unwrap()
        .to_string();
    let again = get(&gw, "/ui/app.js", &format!("If-None-Match: {etag}\r\n")).await;
    assert_eq!(again.status, 304, "an unchanged file is not sent again");

    let missing = get(&gw, "/ui/nope.js", "").await;
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("app.js"), "{}", missing.body);

    // An upgrade on `/` still reaches the protocol, a broken one still says why.
    assert_eq!(upgrade(&gw, None).await.status, 101);
    let broken = get(&gw, "/", "Upgrade: websocket\r\nConnection: Upgrade\r\n").await;
    assert_eq!(broken.status, 400, "{}", broken.body);
    let mut client = gw.client().await;
    assert_eq!(
        client.request("health", json!({})).await.unwrap()["ok"],
        true
    );
}
