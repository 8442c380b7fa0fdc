//! `switchboard sessions spawn` against a real gateway process: accepted at once with a child key
//! of the spawning agent, the announce then in the acting session's history; a refused spawn
//! fails the command with the tool's error and creates nothing.

use std::path::Path;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::process::{GatewayProcess, run};

/// The default agent answers its sub-agents' task and announce step by rule.
const CONFIG: &str = r#"{ agents: { list: [{ id: "main", default: true, systemPrompt:
  "@when \"Sub-agent announce step\" @reply Result: 42\\nNotes: from the CLI test\n@when \"You are a sub-agent\" @reply the answer is 42" }] } }"#;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The value after `name:` on its own line of the readable output.
fn field(output: &str, name: &str) -> String {
    let prefix = format!("{name}:");
    let line = output.lines().find(|l| l.starts_with(&prefix));
    line.unwrap_or_else(|| panic!("no {name} in {output}"))[prefix.len()..]
        .trim()
        .to_string()
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Polls `sessions history main --json` until a sub-agent announce is there (a hang guard, not a
/// timing).
fn announces_in_main(home: &Path, url: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let history = run(home, url, &["sessions", "history", "main", "--json"]);
        assert!(history.status.success(), "{}", text(&history.stderr));
        let value: Value = serde_json::from_slice(&history.stdout).unwrap();
        let announces: Vec<Value> = value["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["provenance"]["kind"] == "subagent-announce")
            .cloned()
            .collect();
        if !announces.is_empty() {
            return announces;
        }
        assert!(Instant::now() < deadline, "no announce in main: {value}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn session_keys(home: &Path, url: &str) -> Vec<String> {
    let list = run(home, url, &["sessions", "list", "--json"]);
    let value: Value = serde_json::from_slice(&list.stdout).unwrap();
    value["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn spawn_is_accepted_and_its_announce_arrives_in_the_acting_session() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.json5"), CONFIG).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let url = gateway.url.clone();

    let spawned = run(
        home.path(),
        &url,
        &[
            "sessions",
            "spawn",
            "What is the answer?",
            "--label",
            "answer",
        ],
    );
    let out = text(&spawned.stdout);
    assert!(spawned.status.success(), "{}", text(&spawned.stderr));
    assert_eq!(field(&out, "status"), "accepted");
    assert!(is_uuid(&field(&out, "runId")), "{out}");
    let child = field(&out, "childSessionKey");
    let uuid = child.strip_prefix("agent:main:subagent:").unwrap_or("");
    assert!(is_uuid(uuid), "{child}");

    // The report, normalised by the runtime, arrives in main as a user-role message.
    let announces = announces_in_main(home.path(), &url);
    assert_eq!(announces.len(), 1, "{announces:?}");
    assert_eq!(announces[0]["role"], "user");
    assert_eq!(announces[0]["provenance"]["fromSessionKey"], child.as_str());
    let report = announces[0]["content"].as_str().unwrap();
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(
        lines[..3],
        ["Status: success", "Result: 42", "Notes: from the CLI test"]
    );
    assert!(
        lines[3].starts_with("Stats: runtime ") && lines[3].contains(&child),
        "{report}"
    );
    // The child did its task.
    let child_history = run(home.path(), &url, &["sessions", "history", &child]);
    assert!(
        text(&child_history.stdout).contains("assistant: the answer is 42"),
        "{}",
        text(&child_history.stdout)
    );
    // One vocabulary (SPEC §7.1): the table names kinds and channels as `sessions_list` does. The
    // child is the gateway's own work; main, once talked to from a client, is on webchat.
    let params = r#"{"sessionKey": "main", "message": "hello", "idempotencyKey": "one-word"}"#;
    let sent = run(
        home.path(),
        &url,
        &["call", "chat.send", "--params", params],
    );
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    let table = text(&run(home.path(), &url, &["sessions", "list"]).stdout);
    let cells = |key: &str| -> Vec<String> {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key));
        let line = line.unwrap_or_else(|| panic!("no row {key} in\n{table}"));
        line.split_whitespace()
            .skip(1)
            .take(2)
            .map(str::to_string)
            .collect()
    };
    assert_eq!(cells(&child), ["other", "internal"], "{table}");
    assert_eq!(cells("agent:main:main"), ["main", "webchat"], "{table}");
    gateway.stop();
}

#[test]
fn a_refused_spawn_fails_with_the_tools_error_and_creates_nothing() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let url = gateway.url.clone();
    let before = run(home.path(), &url, &["sessions", "history", "main"]);
    assert!(before.status.success(), "{}", text(&before.stderr));
    let sessions = session_keys(home.path(), &url);

    // The default config allows main to spawn only under its own agent id.
    let refused = run(
        home.path(),
        &url,
        &["sessions", "spawn", "look it up", "--agent", "research"],
    );
    assert!(!refused.status.success());
    assert_eq!(
        text(&refused.stderr).trim(),
        "forbidden: agentId \"research\" is not allowed for sessions_spawn (allowed: main)"
    );
    assert_eq!(text(&refused.stdout), "");
    // With --json the raw result is printed, and the exit code still says it failed.
    let json = run(
        home.path(),
        &url,
        &[
            "sessions",
            "spawn",
            "look it up",
            "--model",
            "nope/none",
            "--json",
        ],
    );
    assert!(!json.status.success());
    let value: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["status"], "error");
    assert!(
        value["error"].as_str().unwrap().contains("\"nope/none\""),
        "{value}"
    );
    assert_eq!(session_keys(home.path(), &url), sessions);
    gateway.stop();
}
