//! The Discord channel through the gateway binary, against the test kit's fake Discord: a
//! `kill -9` while the model streams an answer, with a message received and queued behind it,
//! ends in exactly one reply to each (the cut-off run resumed, SPEC §6.3), and the message seen
//! again on the new Gateway session is not run twice; messages sent while the gateway was killed
//! are fetched when it starts again and answered once.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use switchboard_testkit::FakeDiscord;
use switchboard_testkit::discord::{GatewayEvent, sent_of};

use super::process::GatewayProcess;

const TOKEN: &str = "discord-cli-test-token";
/// How long a reply may take before the test fails (a bound, not a timing).
const BOUND: Duration = Duration::from_secs(60);

fn write_config(home: &Path, fake: &FakeDiscord) {
    let config = format!(
        r#"{{ channels: {{ discord: {{ enabled: true, botToken: "{TOKEN}", apiBase: "{}",
                                    gatewayUrl: "{}", dmPolicy: "open", channels: {{ "*": {{}} }} }} }} }}"#,
        fake.api_base(),
        fake.gateway_url()
    );
    std::fs::write(home.join("config.json5"), config).unwrap();
}

/// Waits until the bot posted a message whose content is `text`.
async fn posted(fake: &FakeDiscord, text: &str) {
    tokio::time::timeout(
        BOUND,
        fake.wait_for(|calls, _| sent_of(calls).iter().any(|(_, t)| t == text)),
    )
    .await
    .unwrap_or_else(|_| panic!("the bot posted {text:?}"));
}

/// Waits until `processes` gateway processes in all have identified on the fake's Gateway.
async fn identified(fake: &FakeDiscord, processes: usize) {
    tokio::time::timeout(
        BOUND,
        fake.wait_for(|_, events| {
            let identify = |e: &&GatewayEvent| matches!(e, GatewayEvent::Identify { .. });
            events.iter().filter(identify).count() >= processes
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("{processes} processes identified"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_the_model_streams_ends_in_one_reply_to_each_message() {
    let fake = FakeDiscord::start(TOKEN).await;
    fake.text_channel("700", "dev");
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), &fake);
    let gateway = GatewayProcess::start(home.path());
    // The first message holds the DM's session; the second is received and queued behind it.
    fake.dm("42", "alice", "@slow 1500\n@reply answered after the kill");
    tokio::time::timeout(
        BOUND,
        fake.wait_for(|calls, _| calls.iter().any(|c| c.path.ends_with("/typing"))),
    )
    .await
    .expect("the first run started");
    let second = fake.dm("42", "alice", "@reply exactly-once");
    // Messages are handled in order: once a later one is answered, the second was committed.
    fake.guild_message("700", "43", "carol", "@reply marker", true);
    posted(&fake, "marker").await;
    gateway.kill_9();

    let gateway = GatewayProcess::start(home.path());
    posted(&fake, "exactly-once").await;
    // The resumed run replies over REST, maybe before the new process has a Gateway session:
    // what is dispatched before its IDENTIFY goes to the dead session, as on Discord.
    identified(&fake, 2).await;
    // The new Gateway session sees the second message again (as after a lost session): it was
    // handled before, so it is skipped.
    fake.repeat(&second);
    fake.guild_message("700", "43", "carol", "@reply after", true);
    posted(&fake, "after").await;
    let texts: Vec<String> = sent_of(&fake.calls()).into_iter().map(|(_, t)| t).collect();
    let mut sorted = texts.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["after", "answered after the kill", "exactly-once", "marker"],
        "the cut-off run resumed and the queued one ran: each replied once"
    );
    let at = |text: &str| texts.iter().position(|t| t == text);
    assert!(
        at("answered after the kill") < at("exactly-once"),
        "{texts:?}"
    );
    let history = super::process::run(
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

/// The texts the bot posted, sorted.
fn posted_sorted(fake: &FakeDiscord) -> Vec<String> {
    let mut texts: Vec<String> = sent_of(&fake.calls()).into_iter().map(|(_, t)| t).collect();
    texts.sort();
    texts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_while_the_gateway_was_killed_are_answered_once_after_it_starts() {
    let fake = FakeDiscord::start(TOKEN).await;
    fake.text_channel("700", "dev");
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), &fake);
    let gateway = GatewayProcess::start(home.path());
    fake.dm("42", "alice", "@reply before");
    fake.guild_message("700", "43", "carol", "@reply before in dev", true);
    posted(&fake, "before").await;
    posted(&fake, "before in dev").await;
    gateway.kill_9();
    // Sent while no process is connected: the dead session's events, never dispatched to the
    // next one (as on Discord).
    fake.dm("42", "alice", "@reply missed one");
    fake.dm("42", "alice", "@reply missed two");
    fake.guild_message("700", "43", "carol", "@reply missed in dev", true);

    let gateway = GatewayProcess::start(home.path());
    posted(&fake, "missed one").await;
    posted(&fake, "missed two").await;
    posted(&fake, "missed in dev").await;
    let dm: Vec<String> = sent_of(&fake.calls())
        .into_iter()
        .map(|(_, t)| t)
        .filter(|t| t.starts_with("missed o") || t.starts_with("missed t"))
        .collect();
    assert_eq!(dm, ["missed one", "missed two"], "in order within the chat");
    let looked_back = |calls: &[switchboard_testkit::discord::DiscordCall]| {
        calls
            .iter()
            .filter(|c| c.method == "GET" && c.path == "/channels/542/messages")
            .count()
    };
    assert!(
        looked_back(&fake.calls()) >= 1,
        "fetched from the DM's history"
    );
    // Killed again: the next start looks back again and answers none of them twice.
    gateway.kill_9();
    let gateway = GatewayProcess::start(home.path());
    identified(&fake, 3).await;
    fake.dm("42", "alice", "@reply after");
    posted(&fake, "after").await;
    assert_eq!(
        posted_sorted(&fake),
        [
            "after",
            "before",
            "before in dev",
            "missed in dev",
            "missed one",
            "missed two"
        ],
        "each message answered once"
    );
    gateway.stop();
    fake.stop().await;
}
