//! `kill -9` around a sub-agent's announce (SPEC §7.4): the announce is durable, resumes after a
//! restart and is delivered exactly once.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;

use super::process::{
    GatewayProcess, announce_failed_once, down_webhook, first_delivered, spawn_from_webhook_group,
    until,
};

async fn connect(gateway: &GatewayProcess) -> GatewayClient {
    GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap()
}

async fn announces(client: &mut GatewayClient, key: &str) -> Vec<Value> {
    let history = client
        .request("chat.history", json!({"sessionKey": key, "limit": 1000}))
        .await
        .unwrap();
    history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["provenance"]["kind"] == "subagent-announce")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_the_child_runs_resumes_it_and_announces_its_result_once() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = connect(&gateway).await;
    client
        .request("sessions.create", json!({"key": "main"}))
        .await
        .unwrap();
    let spawned = client
        .request(
            "tools.invoke",
            json!({"sessionKey": "main", "tool": "sessions_spawn",
                   "args": {"task": "@slow 1000\n@reply the child finished after all"}}),
        )
        .await
        .unwrap();
    assert_eq!(spawned["result"]["status"], "accepted", "{spawned}");
    let run_id = spawned["result"]["runId"].as_str().unwrap().to_string();
    let child = spawned["result"]["childSessionKey"]
        .as_str()
        .unwrap()
        .to_string();
    super::process::wait_running(&mut client, &run_id).await;
    gateway.kill_9();

    let gateway = GatewayProcess::start(home.path());
    let mut client = connect(&gateway).await;
    let announce = until(async || announces(&mut client, "agent:main:main").await.pop()).await;
    let text = announce["content"].as_str().unwrap();
    // The child's run was resumed from its transcript and answered.
    assert!(text.starts_with("Status: success\n"), "{text}");
    assert!(text.contains("the child finished after all"), "{text}");
    assert_eq!(announce["provenance"]["fromSessionKey"], child.as_str());
    let waited = client
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 1000}))
        .await
        .unwrap();
    assert_eq!(waited["status"], "ok");
    // Once, and only once, even after another restart.
    client.close().await;
    gateway.stop();
    let gateway = GatewayProcess::start(home.path());
    let mut client = connect(&gateway).await;
    client.request("health", json!({})).await.unwrap();
    assert_eq!(announces(&mut client, "agent:main:main").await.len(), 1);
    client.close().await;
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_before_the_announce_was_delivered_delivers_it_once_after_the_restart() {
    // The requester is a webhook group whose receiver is down: the announce waits in the outbox.
    let (addr, config) = down_webhook();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.json5"), config.to_string()).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = connect(&gateway).await;
    let spawned = spawn_from_webhook_group(&gateway, &mut client).await;
    let child = spawned["result"]["childSessionKey"]
        .as_str()
        .unwrap()
        .to_string();
    // The child finished and its announce failed at least once against the dead receiver.
    announce_failed_once(&mut client).await;
    gateway.kill_9();

    let posts = super::process::webhook_receiver(addr).await;

    let gateway = GatewayProcess::start(home.path());
    let mut client = connect(&gateway).await;
    let delivered = first_delivered(&mut client).await;
    assert_eq!(delivered["kind"], "subagent-announce");
    let received = posts.lock().unwrap().clone();
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0]["id"], delivered["id"]);
    assert_eq!(received[0]["to"], "ops");
    let text = received[0]["text"].as_str().unwrap();
    assert!(text.starts_with("Status: success\n"), "{text}");
    assert!(text.contains(&format!("sessionKey {child}")), "{text}");
    // The announce step ran once: the child's transcript has one announce request.
    let history = client
        .request("chat.history", json!({"sessionKey": child}))
        .await
        .unwrap();
    let steps = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("[sub-agent announce step]"))
        })
        .count();
    assert_eq!(steps, 1);
    client.close().await;
    gateway.stop();
}
