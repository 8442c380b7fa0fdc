//! The Signal channel through the gateway binary, against the test kit's fake signal-cli
//! daemon: a `kill -9` between receiving a message and replying to it ends in exactly one
//! reply, and every event the daemon sends again afterwards runs nothing twice.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use switchboard_testkit::signal::{ACCOUNT, Address, FakeSignal, sent_of};

use super::process::{GatewayProcess, run, until};

/// How long a reply may take before the test fails (a bound, not a timing).
const BOUND: Duration = Duration::from_secs(60);
const ALICE: &str = "+15551234567";
const GROUP: &str = "Z3JvdXAtb2YtdGhlLWtpbGwtdGVzdA==";

fn write_config(home: &Path, fake: &FakeSignal) {
    let config = format!(
        r#"{{ channels: {{ signal: {{ enabled: true, account: "{ACCOUNT}", httpUrl: "{}",
                                   dmPolicy: "open", groups: {{ "*": {{}} }} }} }} }}"#,
        fake.http_url()
    );
    std::fs::write(home.join("config.json5"), config).unwrap();
}

/// Waits until the account sent a message whose text is `text`.
async fn posted(fake: &FakeSignal, text: &str) {
    tokio::time::timeout(
        BOUND,
        fake.wait_for(|calls, _| sent_of(calls).iter().any(|(_, t)| t == text)),
    )
    .await
    .unwrap_or_else(|_| panic!("the account sent {text:?}"));
}

async fn connected(fake: &FakeSignal, n: usize) {
    tokio::time::timeout(BOUND, fake.wait_connections(n))
        .await
        .expect("the gateway opened the event stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_the_model_streams_ends_in_one_reply_to_each_message() {
    let fake = FakeSignal::start().await;
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), &fake);
    let gateway = GatewayProcess::start(home.path());
    connected(&fake, 1).await;
    // The first message holds the DM's session; the second is received and queued behind it.
    fake.dm(ALICE, "Alice", "@slow 1500\n@reply answered after the kill");
    tokio::time::timeout(
        BOUND,
        fake.wait_for(|calls, _| calls.iter().any(|c| c.method == "sendTyping")),
    )
    .await
    .expect("the first run started");
    fake.dm(ALICE, "Alice", "@reply exactly-once");
    // Events are handled in order: once a later one is answered, the second was committed.
    fake.group(
        GROUP,
        ("+15557654321", "Carol"),
        "@reply marker",
        Address::Mention,
    );
    posted(&fake, "marker").await;
    // Killed between receipt and reply, not inside a send: the marker's delivery is recorded
    // first (signal-cli's `send` has no idempotency key, so a part whose answer a kill loses
    // would go again; docs/channels/signal.md says so).
    until(async || {
        let list = run(
            home.path(),
            &gateway.url,
            &["call", "deliveries.list", "--params", "{}"],
        );
        let list: Value = serde_json::from_slice(&list.stdout).ok()?;
        let records = list["deliveries"].as_array()?;
        records
            .iter()
            .any(|r| r["status"] == "delivered")
            .then_some(())
    })
    .await;
    gateway.kill_9();

    let gateway = GatewayProcess::start(home.path());
    posted(&fake, "exactly-once").await;
    // The daemon restarts too: it sends every event it kept again, all handled before.
    connected(&fake, 2).await;
    fake.restart();
    connected(&fake, 3).await;
    fake.dm(ALICE, "Alice", "@reply after");
    fake.group(
        GROUP,
        ("+15557654321", "Carol"),
        "@reply after-group",
        Address::Mention,
    );
    posted(&fake, "after").await;
    posted(&fake, "after-group").await;
    let mut texts: Vec<String> = sent_of(&fake.calls()).into_iter().map(|(_, t)| t).collect();
    texts.sort();
    assert_eq!(
        texts,
        [
            "after",
            "after-group",
            "answered after the kill",
            "exactly-once",
            "marker"
        ],
        "the cut-off run resumed and the queued one ran: each replied once"
    );
    let history = run(
        home.path(),
        &gateway.url,
        &[
            "call",
            "chat.history",
            "--params",
            r#"{"sessionKey": "main"}"#,
        ],
    );
    let history: Value = serde_json::from_slice(&history.stdout).unwrap();
    let asked = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" && m["content"] == "@reply exactly-once")
        .count();
    assert_eq!(asked, 1, "the second message ran once: {history}");
    gateway.stop();
    fake.stop().await;
}
