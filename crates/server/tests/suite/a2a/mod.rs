//! A2A 1.0 on the gateway: the official SDKs as clients (`sdks.rs`), bad input
//! (`bad_input.rs`), and the rules of the specification a careless caller found broken
//! (`spec_rules.rs`).

mod bad_input;
mod sdks;
mod spec_rules;

use serde_json::Value;

use super::harness::{TOKEN, TestGateway};

/// One JSON-RPC call to `/a2a/<agent>` with the token and `A2A-Version: 1.0`: the HTTP status
/// and the body.
async fn rpc(gateway: &TestGateway, agent: &str, body: &str) -> (u16, Value) {
    post(
        gateway,
        agent,
        body,
        &[
            ("authorization", &format!("Bearer {TOKEN}")),
            ("a2a-version", "1.0"),
        ],
    )
    .await
}

/// A POST of `body` as JSON with exactly `headers`.
async fn post(
    gateway: &TestGateway,
    agent: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let (status, text) = post_text(gateway, agent, body, headers).await;
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the answer ({status}) is not JSON ({e}): {text:?}"));
    (status, body)
}

/// [`post`], the answer's body as it came (a notification's is empty). `agent` may carry a
/// query (`main?A2A-Version=1.0`).
async fn post_text(
    gateway: &TestGateway,
    agent: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(format!("http://{}/a2a/{agent}", gateway.addr))
        .header("content-type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}
