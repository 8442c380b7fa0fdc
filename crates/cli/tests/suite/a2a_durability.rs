//! `kill -9` while an A2A task's push notifications are pending (their receiver is down): after
//! the restart each (`SUBMITTED`, `WORKING`, the end) is delivered, exactly once.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::a2a::{self, PushReceiver};

use super::process::{GatewayProcess, until};

/// The task's pushes as `deliveries.list` shows them.
async fn pushes(client: &mut GatewayClient, session: &str) -> Vec<Value> {
    let list = client
        .request("deliveries.list", json!({"sessionKey": session}))
        .await
        .unwrap();
    let all = list["deliveries"].as_array().unwrap().clone();
    all.into_iter()
        .filter(|d| d["channel"] == "a2a-push")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_pending_at_kill_9_is_delivered_once_after_the_restart() {
    let home = tempfile::tempdir().unwrap();
    // The receiver is down: a free loopback port nobody listens on yet.
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    drop(socket);
    let config =
        json!({"delivery": {"retryInitialMs": 100, "retryMaxMs": 300, "maxAttempts": 100}});
    std::fs::write(home.path().join("config.json5"), config.to_string()).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "contextId": "ctx-1",
                    "parts": [{"text": "@reply pushed"}]},
        "configuration": {"taskPushNotificationConfig": {
            "url": format!("http://{addr}/push"), "token": "push-secret"}}}});
    let http = switchboard_core::http_client(std::time::Duration::from_secs(60)).unwrap();
    let answer: Value = http
        .post(format!(
            "{}/a2a/main",
            gateway.url.replace("ws://", "http://")
        ))
        .bearer_auth(&gateway.token)
        .header("A2A-Version", "1.0")
        .json(&call)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task = answer["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let session = "agent:main:a2a:ctx-1";
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    // The three pushes (SUBMITTED, WORKING, the end) are pending and were tried: the receiver
    // is down.
    until(async || {
        let pending = pushes(&mut client, session).await;
        let tried = pending
            .iter()
            .filter(|d| d["status"] == "pending" && d["attempts"].as_u64() >= Some(1))
            .count();
        (tried == 3).then_some(())
    })
    .await;
    client.close().await;
    gateway.kill_9();

    let receiver = PushReceiver::start_on(addr).await;
    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let delivered = until(async || {
        let all = pushes(&mut client, session).await;
        all.iter()
            .all(|d| d["status"] == "delivered")
            .then_some(all)
    })
    .await;
    assert_eq!(delivered.len(), 3);
    // Marked delivered: nothing more is on its way, and each came once.
    let pushes = receiver.pushes();
    let task_id = task["id"].as_str().unwrap();
    let seen = |state: &str| {
        let some = |s: &str| Some(s.to_string());
        (some(task_id), some(state), some("push-secret"))
    };
    assert_eq!(
        a2a::by_state(pushes),
        [
            seen("TASK_STATE_SUBMITTED"),
            seen("TASK_STATE_WORKING"),
            seen("TASK_STATE_COMPLETED")
        ]
    );
    client.close().await;
    gateway.stop();
}
