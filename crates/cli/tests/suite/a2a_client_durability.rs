//! `kill -9` while a remote A2A agent works on a `sessions_send` (SPEC §10a, §12): after the
//! restart the send is resumed by polling its task and delivered once — the remote sees one
//! `messageId` — and the remote's bearer token appears in no log line, even at debug level.

use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::FakeA2a;

use super::process::{GatewayProcess, send_without_waiting, until};

const TOKEN: &str = "a2a-tok-5f1d9c";

async fn a2a_delivery(client: &mut GatewayClient) -> Option<Value> {
    let list = client.request("deliveries.list", json!({})).await.ok()?;
    list["deliveries"]
        .as_array()?
        .iter()
        .find(|d| d["kind"] == "a2a")
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_the_remote_works_resumes_the_send_and_it_is_taken_once() {
    let fake = FakeA2a::start(Some(TOKEN)).await;
    fake.hold(true);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.json5"),
        format!(
            r#"{{ agents: {{ list: [{{ id: "main", default: true,
                 a2a: {{ remotes: {{ fake: {{ url: "{}", token: "${{FAKE_A2A_TOKEN}}" }} }} }} }}] }} }}"#,
            fake.url()
        ),
    )
    .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (gateway, reader) = GatewayProcess::start_logging(
        home.path(),
        &[("SWITCHBOARD_LOG", "debug"), ("FAKE_A2A_TOKEN", TOKEN)],
        log.clone(),
    );
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let sent = send_without_waiting(&mut client, "main", "a2a:fake", "survive this").await;
    assert_eq!(sent["result"]["status"], "accepted", "{sent}");
    let id = sent["result"]["runId"].as_str().unwrap().to_string();
    // The task's id is committed before the first poll: from then on a restart polls, it does
    // not send again. (Before it, the message may go again under the same messageId:
    // docs/a2a.md says so.)
    fake.wait_polled().await;
    client.close().await;
    gateway.kill_9();
    reader.join().unwrap();

    let (gateway, reader) = GatewayProcess::start_logging(
        home.path(),
        &[("SWITCHBOARD_LOG", "debug"), ("FAKE_A2A_TOKEN", TOKEN)],
        log.clone(),
    );
    fake.hold(false);
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let delivered = until(async || {
        let d = a2a_delivery(&mut client).await?;
        (d["status"] != "pending").then_some(d)
    })
    .await;
    assert_eq!(
        (delivered["id"].clone(), delivered["status"].clone()),
        (json!(id), json!("delivered")),
        "{delivered}"
    );
    assert_eq!(fake.message_ids(), [id]);
    let history = client
        .request(
            "chat.history",
            json!({"sessionKey": "agent:main:a2a-remote:fake", "limit": 10}),
        )
        .await
        .unwrap();
    let last = history["messages"]
        .as_array()
        .unwrap()
        .last()
        .cloned()
        .unwrap();
    assert_eq!(
        last["content"][0]["text"], "fake says: survive this",
        "{history}"
    );
    client.close().await;
    gateway.stop();
    reader.join().unwrap();
    let log = log.lock().unwrap();
    assert!(
        log.contains("a2a"),
        "the debug log saw the a2a delivery:\n{log}"
    );
    assert!(
        !log.contains(TOKEN),
        "the token leaked into the log:\n{log}"
    );
}
