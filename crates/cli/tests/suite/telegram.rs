//! The Telegram channel through the gateway binary, against the test kit's fake Bot API: a
//! private message is answered within seconds, and a `kill -9` between receiving a message and
//! replying to it ends in exactly one reply, with no update run twice.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::FakeTelegram;

use super::process::GatewayProcess;

const TOKEN: &str = "123456:cli-test-token";
/// How long a reply may take before the test fails (a bound, not a timing).
const BOUND: Duration = Duration::from_secs(60);

fn write_config(home: &Path, fake: &FakeTelegram) {
    write_config_with(home, fake, r#"dmPolicy: "open","#);
}

/// `extra`: more `channels.telegram` settings, each with its trailing comma.
fn write_config_with(home: &Path, fake: &FakeTelegram, extra: &str) {
    let config = format!(
        r#"{{ channels: {{ telegram: {{ enabled: true, botToken: "{TOKEN}", apiBase: "{}",
                                     {extra} pollTimeoutSeconds: 1 }} }} }}"#,
        fake.api_base()
    );
    std::fs::write(home.join("config.json5"), config).unwrap();
}

async fn replies(fake: &FakeTelegram, n: usize) -> Vec<Value> {
    tokio::time::timeout(BOUND, fake.wait_sent(n))
        .await
        .expect("the bot replied")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_message_gets_its_reply_from_the_gateway() {
    let fake = FakeTelegram::start(TOKEN).await;
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), &fake);
    let gateway = GatewayProcess::start(home.path());
    fake.private_message(42, "alice", "@reply pong-7");
    let sent = replies(&fake, 1).await;
    assert_eq!(sent[0]["chat_id"], json!(42));
    assert!(
        sent[0]["text"].as_str().unwrap().contains("pong-7"),
        "{sent:?}"
    );
    gateway.stop();
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_the_model_streams_ends_in_one_reply_to_each_message() {
    let fake = FakeTelegram::start(TOKEN).await;
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), &fake);
    let gateway = GatewayProcess::start(home.path());
    // The first message holds the session; the second is received and queued behind it.
    fake.private_message(42, "alice", "@slow 1500\n@reply answered after the kill");
    tokio::time::timeout(
        BOUND,
        fake.wait_for(|calls| calls.iter().any(|c| c.method == "sendChatAction")),
    )
    .await
    .expect("the first run started");
    let second = fake.private_message(42, "alice", "@reply exactly-once");
    tokio::time::timeout(
        BOUND,
        fake.wait_for(|calls| {
            calls
                .iter()
                .any(|c| c.method == "getUpdates" && c.body["offset"].as_i64() > Some(second))
        }),
    )
    .await
    .expect("the second update was committed and confirmed");
    gateway.kill_9();
    let polls_before = fake
        .calls()
        .iter()
        .filter(|c| c.method == "getUpdates")
        .count();

    let gateway = GatewayProcess::start(home.path());
    let sent = replies(&fake, 2).await;
    let texts: Vec<&str> = sent.iter().map(|m| m["text"].as_str().unwrap()).collect();
    assert_eq!(
        texts,
        ["answered after the kill", "exactly-once"],
        "the cut-off run resumed and the queued one ran: each replied once"
    );
    // After the restart the poller asked from past the second update: it is never read again.
    let after: Vec<i64> = fake.calls()[..]
        .iter()
        .filter(|c| c.method == "getUpdates")
        .skip(polls_before)
        .map(|c| c.body["offset"].as_i64().unwrap())
        .collect();
    assert!(after.iter().all(|o| *o > second), "{after:?}");
    let (asked, history) =
        super::process::times_asked(home.path(), &gateway.url, "main", "@reply exactly-once");
    assert_eq!(asked, 1, "the second message ran once: {history}");
    gateway.stop();
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_is_let_in_with_switchboard_pairing_approve() {
    let fake = FakeTelegram::start(TOKEN).await;
    let home = tempfile::tempdir().unwrap();
    // No dmPolicy: pairing is the default.
    write_config_with(home.path(), &fake, "");
    let gateway = GatewayProcess::start(home.path());
    fake.private_message(42, "alice", "@reply not yet");
    let answer = replies(&fake, 1).await.remove(0);
    let text = answer["text"].as_str().unwrap().to_string();
    let code = text
        .lines()
        .find_map(|l| l.strip_prefix("Pairing code: "))
        .unwrap_or_else(|| panic!("a code in {text:?}"))
        .to_string();
    let run = |args: &[&str]| {
        let out = super::process::run(home.path(), &gateway.url, args);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        (out.status.success(), stdout, stderr)
    };
    let (ok, listed, err) = run(&["pairing", "list", "telegram"]);
    assert!(ok, "{err}");
    assert!(
        listed.contains(&code) && listed.contains("@alice"),
        "{listed}"
    );
    // Without a channel: every channel's requests, each named.
    let (ok, every, err) = run(&["pairing", "list"]);
    assert!(ok, "{err}");
    assert!(
        every.contains("CHANNEL") && every.contains("telegram") && every.contains(&code),
        "{every}"
    );
    let (ok, _, err) = run(&["pairing", "approve", "telegram", "WRONG234"]);
    assert!(!ok);
    assert!(
        err.contains("no pending telegram pairing request has code WRONG234"),
        "{err}"
    );
    let (ok, approved, err) = run(&["pairing", "approve", "telegram", &code, "--notify"]);
    assert!(ok, "{err}");
    assert!(
        approved.contains("Approved @alice (42) on telegram"),
        "{approved}"
    );
    let (ok, json, err) = run(&["--json", "pairing", "list"]);
    assert!(ok, "{err}");
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["requests"], json!([]));
    fake.private_message(42, "alice", "@reply pong-9");
    let sent = replies(&fake, 3).await;
    let texts: Vec<&str> = sent.iter().map(|m| m["text"].as_str().unwrap()).collect();
    assert!(texts[1].contains("approved"), "{texts:?}");
    assert_eq!(texts[2], "pong-9");
    gateway.stop();
    fake.stop().await;
}
