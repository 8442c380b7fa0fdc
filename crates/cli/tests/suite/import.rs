//! `switchboard import openclaw` against a state dir the reference (2026.7.35, its on-disk
//! form: `sessions.json` and one JSONL transcript per session) wrote itself:
//! `tests/fixtures/openclaw-2026.7.35/` is that state dir, and its `expected.json` is what the
//! reference's own `sessions.list` and `chat.history` answered for it (keys, group or not,
//! labels, and each message's role and text). After the import the gateway answers the same,
//! a new turn in an imported session continues its conversation, and a second import writes
//! nothing twice.

use std::path::Path;

use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::{MockLlm, MockReply};

use super::process::{BIN, GatewayProcess};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/openclaw-2026.7.35"
);
/// The reference's gateway token in the fixture's config (carried over as it is).
const TOKEN: &str = "REDACTED-GATEWAY-TOKEN";

/// A copy of the fixture with its model pointed at `mock`.
fn reference_state(mock: &MockLlm) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(Path::new(FIXTURE), dir.path());
    let config = dir.path().join("openclaw.json");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replace("http://127.0.0.1:18999/v1", &mock.openai_base_url());
    std::fs::write(config, text).unwrap();
    dir
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

fn import(home: &Path, from: &Path) -> String {
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
fn summary(message: &Value) -> (String, String) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_state_dir_moves_in_and_its_sessions_read_as_the_reference_gave_them() {
    let mock = MockLlm::start().await;
    mock.set_fallback(MockReply::Text("continued".into()));
    let from = reference_state(&mock);
    let home = tempfile::tempdir().unwrap();
    let said = import(home.path(), from.path());
    assert!(said.contains("sessions: 6 imported"), "{said}");
    assert!(
        said.contains("gateway.tailscale: switchboard has no such setting"),
        "{said}"
    );
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(FIXTURE).join("expected.json")).unwrap(),
    )
    .unwrap();

    std::fs::write(home.path().join("gateway-token"), TOKEN).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(TOKEN))
        .await
        .unwrap();
    let listed = client.request("sessions.list", json!({})).await.unwrap();
    let rows = listed["sessions"].as_array().unwrap();
    let mut ours: Vec<(String, bool, Option<String>)> = rows
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
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs, "the same keys, group sessions and labels");

    for (key, messages) in expected["history"].as_object().unwrap() {
        let history = client
            .request("chat.history", json!({"sessionKey": key, "limit": 200}))
            .await
            .unwrap();
        let ours: Vec<(String, String)> = history["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(summary)
            .collect();
        let theirs: Vec<(String, String)> = messages
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m[0].as_str().unwrap().into(), m[1].as_str().unwrap().into()))
            .collect();
        assert_eq!(ours, theirs, "the history of {key}");
    }

    // A new turn continues the imported conversation: the model is sent what came before.
    let key = "agent:main:research-notes";
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
}
