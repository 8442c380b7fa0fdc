//! The import against the reference itself: OpenClaw 2026.9.6, installed by the bench kit
//! (`../shared/bench/openclaw/install.sh`; `.ci/run` installs it), runs here on the mock model,
//! makes sessions of several kinds and a transcript with a tool call, and answers
//! `sessions.list` and `chat.history`; its state dir is imported, and switchboard answers the
//! same keys, group sessions, labels and message texts, and continues a conversation.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use switchboard_server::client::GatewayClient;
use switchboard_testkit::{MockLlm, MockReply, MockToolCall};

use super::import::{answers, import, same_history};
use super::process::GatewayProcess;

const VERSION: &str = "2026.9.6";
const TOKEN: &str = "live-import-token-0123456789";
const TEST: &str = "a_state_dir_the_reference_just_wrote_moves_in_as_it_gave_it";

/// A job in the reference's own `cron.add` shape.
const HOURLY: &str = r#"{"name": "Hourly report", "schedule": {"kind": "every", "everyMs": 3600000},
  "sessionTarget": "isolated", "wakeMode": "now", "payload": {"kind": "agentTurn", "message": "report"}}"#;

/// Every chat channel both have, in the reference's spellings (which its `config set` checks),
/// off.
const CHANNELS: &str = r#"{
  "discord": {"enabled": false, "token": "discord-token", "allowBots": false, "dmPolicy": "allowlist",
    "allowFrom": ["123456789012345678"], "dm": {"enabled": true},
    "guilds": {"111111111111111111": {"requireMention": false, "channels": {"222222222222222222": {"enabled": true}}}},
    "textChunkLimit": 1800},
  "telegram": {"enabled": false, "botToken": "123:abc", "dmPolicy": "pairing", "allowFrom": ["tg:123456789"],
    "groups": {"*": {"requireMention": true}}},
  "slack": {"enabled": false, "botToken": "xoxb-1", "appToken": "xapp-1", "allowFrom": ["U123"],
    "channels": {"C123": {"enabled": true, "requireMention": false}}},
  "signal": {"enabled": false, "account": "+15555550123", "dmPolicy": "allowlist",
    "allowFrom": ["+15551234567", "uuid:123e4567-e89b-12d3-a456-426614174000"]},
  "whatsapp": {"enabled": false, "dmPolicy": "pairing", "allowFrom": ["+15555550123"]},
  "matrix": {"enabled": false, "homeserver": "https://matrix.example.org", "accessToken": "syt_x",
    "userId": "@bot:example.org", "groups": {"!room:example.org": {"requireMention": true}}}
}"#;

/// The bench kit beside the repository (`../shared/bench/openclaw`).
fn kit() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench/openclaw")
}

/// Why the reference cannot run here, if it cannot.
fn missing() -> Option<String> {
    if !kit().join("start.sh").is_file() {
        return Some(format!("the bench kit is not at {}", kit().display()));
    }
    let home = std::env::var_os("BENCH_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/switchboard-bench"))
        })
        .unwrap_or_default();
    let marker = home.join(format!("openclaw-{VERSION}/.bench-install-complete"));
    (!marker.is_file()).then(|| {
        format!(
            "the reference {VERSION} is not installed ({}/install.sh --version {VERSION})",
            kit().display()
        )
    })
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The mock model's answers, by what it was asked: a tool call for `TOOL:sessions_list`, a
/// line after a tool's result, a greeting otherwise (the reference's other calls included).
fn answer_by_question(mock: &MockLlm) {
    mock.set_rule(Box::new(|request| {
        // The reference sends its own context as a last user message: the question is before.
        let last = request.messages().iter().rev().find(|m| {
            !m["content"]
                .to_string()
                .contains("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>")
        })?;
        match last["role"].as_str()? {
            "tool" => Some(MockReply::text("Listed the sessions.")),
            "user" if last["content"].to_string().contains("TOOL:sessions_list") => {
                Some(MockReply::ToolCalls(vec![MockToolCall::new(
                    "call_live_1",
                    "sessions_list",
                    "{}",
                )]))
            }
            _ => None,
        }
    }));
    mock.set_fallback(MockReply::text("Hello from the mock model."));
}

/// Runs a kit script; its output when it fails.
fn kit_script(script: &str, args: &[&str]) {
    let out = Command::new("bash")
        .arg(kit().join(script))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script} {args:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Stops the reference's gateway on `port` however the test ends.
struct Stopped(String);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(kit().join("stop.sh"))
            .args(["--port", &self.0])
            .output();
    }
}

async fn turn(client: &mut GatewayClient, key: &str, text: &str, n: usize) {
    let sent = client
        .request(
            "chat.send",
            json!({"sessionKey": key, "message": text, "idempotencyKey": format!("live-{n}")}),
        )
        .await
        .unwrap();
    let waited = client
        .request(
            "agent.wait",
            json!({"runId": sent["runId"], "timeoutMs": 60000}),
        )
        .await
        .unwrap();
    assert_eq!(waited["status"], "ok", "{key}: {waited}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_dir_the_reference_just_wrote_moves_in_as_it_gave_it() {
    if let Some(why) = missing() {
        return switchboard_testkit::not_run(&format!("import test {TEST} NOT RUN: {why}"));
    }
    let mock = MockLlm::start().await;
    answer_by_question(&mock);
    let (port, mock_port) = (free_port().to_string(), mock.addr().port().to_string());
    let state = tempfile::tempdir().unwrap();
    let oc = state.path().join("openclaw");
    let oc_text = oc.display().to_string();
    kit_script(
        "start.sh",
        &[
            "--fresh",
            "--version",
            VERSION,
            "--port",
            &port,
            "--mock-port",
            &mock_port,
            "--no-mock",
            "--token",
            TOKEN,
            "--state",
            &oc_text,
            "--timeout-s",
            "240",
        ],
    );
    let stopped = Stopped(port.clone());
    let url = format!("ws://127.0.0.1:{port}");
    let theirs = async {
        let mut client = GatewayClient::connect(&url, Some(TOKEN)).await.unwrap();
        turn(&mut client, "agent:main:main", "hello there", 1).await;
        turn(
            &mut client,
            "agent:main:main",
            "please list TOOL:sessions_list",
            2,
        )
        .await;
        client
            .request(
                "sessions.create",
                json!({"key": "agent:main:research-notes", "label": "Research notes"}),
            )
            .await
            .unwrap();
        turn(&mut client, "agent:main:research-notes", "notes please", 3).await;
        turn(
            &mut client,
            "agent:main:telegram:group:-1001234567890",
            "hi group",
            4,
        )
        .await;
        let hourly: serde_json::Value = serde_json::from_str(HOURLY).unwrap();
        let job = client.request("cron.add", hourly).await.unwrap();
        let job = job["id"].as_str().unwrap().to_owned();
        (answers(&mut client).await, job)
    }
    .await;
    let (theirs, job) = theirs;
    // The reference writes its channels' settings itself (off: nothing here may reach out).
    let oc_args = [
        "--version",
        VERSION,
        "--state",
        &oc_text,
        "--port",
        &port,
        "--token",
        TOKEN,
        "--",
    ];
    let set = ["config", "set", "channels", CHANNELS, "--strict-json"];
    kit_script("cli.sh", &[&oc_args[..], &set[..]].concat());
    drop(stopped);
    let keys: Vec<&str> = theirs.0.iter().map(|(k, ..)| k.as_str()).collect();
    for key in [
        "agent:main:main",
        "agent:main:research-notes",
        "agent:main:telegram:group:-1001234567890",
    ] {
        assert!(keys.contains(&key), "the reference made {key}: {keys:?}");
    }
    let main = &theirs
        .1
        .iter()
        .find(|(k, _)| k == "agent:main:main")
        .unwrap()
        .1;
    let roles: Vec<(&str, &str)> = main.iter().map(|(r, t)| (r.as_str(), t.as_str())).collect();
    assert!(
        roles.contains(&("assistant", "toolCall:sessions_list"))
            && roles.iter().any(|(r, _)| *r == "toolResult"),
        "the reference's transcript has the tool call and its result: {roles:?}"
    );

    let home = tempfile::tempdir().unwrap();
    let said = import(home.path(), &oc);
    assert!(
        said.contains(&format!("sessions: {} imported", theirs.0.len())),
        "{said}"
    );
    assert!(
        said.contains("cron jobs: 1 imported") && said.contains("Hourly report"),
        "{said}"
    );
    // The channels, as the reference wrote them, carried over and checked as the gateway would.
    let config = std::fs::read_to_string(home.path().join("config.json5")).unwrap();
    for written in [
        "\"botToken\": \"discord-token\"",
        "\"222222222222222222\"",
        "\"rooms\"",
        "uuid:123e4567",
    ] {
        assert!(
            config.contains(written),
            "{written} not in the imported config:\n{config}"
        );
    }
    let check = Command::new(super::process::BIN)
        .arg("--state-dir")
        .arg(home.path())
        .args(["config", "check"])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    std::fs::write(home.path().join("gateway-token"), TOKEN).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(TOKEN))
        .await
        .unwrap();
    let ours = answers(&mut client).await;
    assert_eq!(ours.0, theirs.0, "the same keys, group sessions and labels");
    for ((key, mine), (_, reference)) in ours.1.iter().zip(&theirs.1) {
        same_history(key, mine.clone(), reference);
    }
    let jobs = client
        .request("cron.list", json!({"includeDisabled": true}))
        .await
        .unwrap();
    assert!(
        jobs.to_string().contains(&job),
        "the reference's job {job} is here: {jobs}"
    );
    let asked = mock.requests().len();
    turn(&mut client, "agent:main:research-notes", "and then?", 5).await;
    let sent = mock.requests()[asked..]
        .iter()
        .map(|r| r.body.to_string())
        .collect::<String>();
    assert!(
        sent.contains("notes please") && sent.contains("and then?"),
        "{sent}"
    );
    gateway.stop();
}
