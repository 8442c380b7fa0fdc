//! `kill -9` in the middle of an agent-to-agent exchange (SPEC §7.3): after the restart the
//! reply-back loop goes on from the turn that was cut off and the announce is delivered once.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;

use super::process::{
    GatewayProcess, exchange_config, send_from_main_to_peer, until_exchange_done,
    until_reply_turn_runs,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_reply_back_turn_resumes_the_loop_and_announces_once() {
    let home = tempfile::tempdir().unwrap();
    // One reply-back turn; the announce step posts.
    std::fs::write(home.path().join("config.json5"), exchange_config(1, "")).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    // The peer's reply is a script for turn 1: main's turn waits 10 s before it answers (time
    // enough to see it running on a loaded machine; it runs again after the restart).
    send_from_main_to_peer(&mut client, "@reply @delay 10000").await;
    until_reply_turn_runs(&mut client).await;
    gateway.kill_9();

    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let done = until_exchange_done(&mut client).await;
    assert_eq!(
        (
            done["turn"].clone(),
            done["attempt"].clone(),
            done["detail"].clone()
        ),
        (json!(1), json!(1), json!("announced"))
    );
    // The cut-off turn's run was resumed (SPEC §6.3): it answered once, on its message.
    let history = client
        .request("chat.history", json!({"sessionKey": "main", "limit": 100}))
        .await
        .unwrap();
    let tail: Vec<(String, String)> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                other => other[0]["text"].as_str().unwrap_or("").to_string(),
            };
            (m["stopReason"].as_str().unwrap_or("").to_string(), text)
        })
        .collect();
    assert_eq!(
        tail,
        [
            ("".to_string(), "@delay 10000".to_string()),
            ("stop".to_string(), "ack".to_string()),
        ]
    );
    let deliveries = client.request("deliveries.list", json!({})).await.unwrap();
    let announces: Vec<&Value> = deliveries["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "announce")
        .collect();
    assert_eq!(announces.len(), 1, "{deliveries}");
    assert_eq!(announces[0]["text"], "Posted: done");
    client.close().await;
    gateway.stop();
}
