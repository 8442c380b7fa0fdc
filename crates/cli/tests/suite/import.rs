//! `switchboard import openclaw` against state dirs the reference wrote itself: 2026.9.6 (its
//! SQLite session store, transcripts in a table, some events zstd-compressed) and 2026.7.35 (its
//! on-disk form: `sessions.json` and one JSONL transcript per session), under
//! `tests/fixtures/openclaw-<version>/`. Each fixture's `expected.json` is what the reference's
//! own `sessions.list` and `chat.history` answered for it (keys, group or not, labels, and each
//! message's role and text). After the import the gateway answers the same, a new turn in an
//! imported session continues its conversation, and a second import writes nothing twice.

use std::path::Path;

use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::{MockLlm, MockReply};

use super::process::{BIN, GatewayProcess};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
/// The reference's gateway token in the fixture's config (carried over as it is).
const TOKEN: &str = "REDACTED-GATEWAY-TOKEN";

/// A copy of the fixture `version` with its model pointed at `mock`.
fn reference_state(version: &str, mock: &MockLlm) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture(version), dir.path());
    let config = dir.path().join("openclaw.json");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replace("http://127.0.0.1:18999/v1", &mock.openai_base_url());
    std::fs::write(config, text).unwrap();
    dir
}

fn fixture(version: &str) -> std::path::PathBuf {
    Path::new(FIXTURES).join(format!("openclaw-{version}"))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        match entry.file_type().unwrap().is_dir() {
            true => copy_tree(&entry.path(), &target),
            false => {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
}

pub(super) fn import(home: &Path, from: &Path) -> String {
    let out = std::process::Command::new(BIN)
        .args(["--state-dir"])
        .arg(home)
        .args(["import", "openclaw", "--from"])
        .arg(from)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said
}

/// A message as the fixture's `expected.json` writes it: its role and its text (tool calls as
/// `toolCall:<name>`, a tool result as `<tool>: <first 60 characters>`).
pub(super) fn summary(message: &Value) -> (String, String) {
    let role = message["role"].as_str().unwrap_or_default().to_owned();
    let content = &message["content"];
    if let Some(text) = content.as_str() {
        return (role, text.to_owned());
    }
    let parts: Vec<String> = content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| match b["type"].as_str() {
            Some("text") => b["text"].as_str().map(str::to_owned),
            Some("toolCall") => Some(format!("toolCall:{}", b["name"].as_str()?)),
            _ => None,
        })
        .collect();
    let text = parts.join(" ");
    match role.as_str() {
        "toolResult" => {
            let tool = message["toolName"].as_str().unwrap_or_default();
            let cut: String = format!("{tool}: {text}")
                .chars()
                .take(tool.len() + 2 + 60)
                .collect();
            (role, cut)
        }
        _ => (role, text),
    }
}

/// Asserts that our history of `key` is the reference's, but for the reference's own `custom`
/// messages (which the import leaves out, saying so) and how it shows a cron prompt.
pub(super) fn same_history(key: &str, ours: Vec<(String, String)>, theirs: &[(String, String)]) {
    let theirs: Vec<(String, String)> =
        theirs.iter().filter(|m| m.0 != "custom").cloned().collect();
    assert_eq!(ours.len(), theirs.len(), "{key}: {ours:#?}\n{theirs:#?}");
    let ours: Vec<(String, String)> = ours
        .into_iter()
        .zip(&theirs)
        .map(|(mine, theirs)| shown_as_the_reference_shows(mine, theirs))
        .collect();
    assert_eq!(ours, theirs, "the history of {key}");
}

/// Our message as the reference's `chat.history` shows it, where 2026.9.6 shows a stored
/// message otherwise: a cron job's prompt (stored as the user message `[cron:<jobId> <name>]
/// <text>`, as here) it shows as an assistant message without its `[cron:…]` prefix.
fn shown_as_the_reference_shows(
    ours: (String, String),
    theirs: &(String, String),
) -> (String, String) {
    let cron_prompt = ours.0 == "user" && ours.1.starts_with("[cron:");
    match cron_prompt && theirs.0 == "assistant" && ours.1.ends_with(&theirs.1) {
        true => theirs.clone(),
        false => ours,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_dir_of_the_references_sqlite_store_moves_in_as_the_reference_gave_it() {
    // Two of the reference's messages in the main chat are its own `custom` rows (a tool the
    // meta-tool `tool_call` ran): not messages here, and the import says so.
    let said = moves_in("2026.9.6", "agent:main:research-notes").await;
    assert!(
        said.contains("not carried over: agent:main:main: 2 transcript messages that are not user, assistant or tool-result messages"),
        "{said}"
    );
    // Its three jobs ask for what a job here cannot do, each said; its own two (a heartbeat,
    // a skill review) are not anyone's and are not mentioned.
    for refused in [
        "cron job \"Hourly ping\": sessionTarget: \"main\" is not supported",
        "cron job \"Morning brief\": tz: \"Europe/Berlin\" is not supported",
        "cron job \"Deploy digest\": schedule.kind: one-shot \"at\" schedules are not supported",
    ] {
        assert!(said.contains(refused), "{refused}\nnot in:\n{said}");
    }
    assert!(
        !said.contains("heartbeat-main") && !said.contains("skill-collection-review"),
        "{said}"
    );
    assert!(
        said.contains("senders let in by pairing: 4 imported"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_keeps_its_task_and_outcome() {
    let mock = MockLlm::start().await;
    let from = reference_state("2026.9.6", &mock);
    let home = tempfile::tempdir().unwrap();
    import(home.path(), from.path());
    std::fs::write(home.path().join("gateway-token"), TOKEN).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(TOKEN))
        .await
        .unwrap();
    let listed = client.request("sessions.list", json!({})).await.unwrap();
    let child = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "agent:main:subagent:7701d895-0973-41fe-865f-db1cd6d6826a")
        .cloned()
        .unwrap();
    assert_eq!(
        (
            &child["subagent"]["task"],
            &child["subagent"]["state"],
            &child["subagent"]["outcome"]
        ),
        (
            &json!("Say hello from the sub-agent"),
            &json!("done"),
            &json!("ok")
        ),
        "{child}"
    );
    assert_eq!(child["spawnedBy"], "agent:main:main", "{child}");
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_dir_of_the_references_session_files_moves_in_as_the_reference_gave_it() {
    let said = moves_in("2026.7.35", "agent:main:research-notes").await;
    assert!(!said.contains("not carried over: agent:"), "{said}");
    // Its pairing files: two of Telegram's default account (merged), one of WhatsApp's.
    for sender in [
        "telegram/default: 111111111",
        "telegram/default: 222222222",
        "telegram/default: 333333333",
        "whatsapp/default: +15555550123",
    ] {
        assert!(
            said.contains(&format!("  {sender}\n")),
            "{sender}\nnot in:\n{said}"
        );
    }
}

/// Imports the fixture `version`, checks what the gateway then answers against what the
/// reference answered, continues `key`'s conversation and imports again; answers what the
/// first import printed.
async fn moves_in(version: &str, key: &str) -> String {
    let mock = MockLlm::start().await;
    mock.set_fallback(MockReply::Text("continued".into()));
    let from = reference_state(version, &mock);
    let home = tempfile::tempdir().unwrap();
    // A dry run says what would come over, and writes nothing.
    let fresh = home.path().join("fresh");
    let dry = std::process::Command::new(BIN)
        .arg("--state-dir")
        .arg(&fresh)
        .args(["import", "openclaw", "--dry-run", "--from"])
        .arg(from.path())
        .output()
        .unwrap();
    let dry = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.contains("sessions: 6 would be imported"), "{dry}");
    assert!(!fresh.exists(), "a dry run wrote {}", fresh.display());
    let said = import(home.path(), from.path());
    assert!(said.contains("sessions: 6 imported"), "{said}");
    assert!(
        said.contains("models.mode: switchboard has no such setting"),
        "{said}"
    );
    let expected = std::fs::read_to_string(fixture(version).join("expected.json")).unwrap();
    let expected: Value = serde_json::from_str(&expected).unwrap();

    std::fs::write(home.path().join("gateway-token"), TOKEN).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(TOKEN))
        .await
        .unwrap();
    let (ours, histories) = answers(&mut client).await;
    let mut theirs: Vec<(String, bool, Option<String>)> = expected["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let key = s["key"].as_str().unwrap().to_owned();
            (
                key,
                s["group"] == true,
                s["label"].as_str().map(str::to_owned),
            )
        })
        .collect();
    theirs.sort();
    assert_eq!(ours, theirs, "the same keys, group sessions and labels");

    for (key, messages) in expected["history"].as_object().unwrap() {
        let ours = &histories.iter().find(|(k, _)| k == key).expect(key).1;
        let theirs: Vec<(String, String)> = messages
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m[0].as_str().unwrap().into(), m[1].as_str().unwrap().into()))
            .collect();
        same_history(key, ours.clone(), &theirs);
    }

    // A new turn continues the imported conversation: the model is sent what came before.
    let earlier = expected["history"][key][0][1].as_str().unwrap().to_owned();
    let sent = client
        .request(
            "chat.send",
            json!({"sessionKey": key, "message": "and then?", "idempotencyKey": "import-1"}),
        )
        .await
        .unwrap();
    client
        .request(
            "agent.wait",
            json!({"runId": sent["runId"], "timeoutMs": 20000}),
        )
        .await
        .unwrap();
    let asked = mock.requests().last().unwrap().body.to_string();
    assert!(
        asked.contains(&earlier[..20]) && asked.contains("and then?"),
        "{asked}"
    );
    let history = client
        .request("chat.history", json!({"sessionKey": key}))
        .await
        .unwrap();
    let last = history["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(summary(&last), ("assistant".into(), "continued".into()));
    gateway.stop();

    let again = import(home.path(), from.path());
    assert!(
        again.contains("sessions: 0 imported (0 messages); 6 already here"),
        "{again}"
    );
    assert!(
        again.contains("senders let in by pairing: 0 imported; 4 already here"),
        "{again}"
    );
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_held_here_already_leaves_the_session_unlabelled_and_says_so() {
    // Both state dirs have a sub-agent labelled `helper-one`; labels are unique per agent here.
    let mock = MockLlm::start().await;
    let (older, newer) = (
        reference_state("2026.7.35", &mock),
        reference_state("2026.9.6", &mock),
    );
    let home = tempfile::tempdir().unwrap();
    import(home.path(), older.path());
    let said = import(home.path(), newer.path());
    assert!(
        said.contains("not carried over: agent:main:subagent:7701d895-0973-41fe-865f-db1cd6d6826a: its label, because label \"helper-one\" is already used"),
        "{said}"
    );
    // The keys both have (the main chat, the groups, …) were there already and stay as they are.
    assert!(
        said.contains("sessions: 2 imported (4 messages); 4 already here"),
        "{said}"
    );
}

/// What a gateway answers: its `sessions.list` rows (key, group or not, label) and
/// each session's history as `(role, text)`.
pub(super) async fn answers(
    client: &mut GatewayClient,
) -> (
    Vec<(String, bool, Option<String>)>,
    Vec<(String, Vec<(String, String)>)>,
) {
    let listed = client.request("sessions.list", json!({})).await.unwrap();
    let mut rows: Vec<(String, bool, Option<String>)> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = r["key"].as_str().unwrap().to_owned();
            (
                key,
                r["kind"] == "group",
                r["label"].as_str().map(str::to_owned),
            )
        })
        .collect();
    rows.sort();
    let mut histories = Vec::new();
    for (key, ..) in &rows {
        let history = client
            .request("chat.history", json!({"sessionKey": key, "limit": 200}))
            .await
            .unwrap();
        let messages = history["messages"].as_array().unwrap();
        histories.push((key.clone(), messages.iter().map(summary).collect()));
    }
    (rows, histories)
}
