//! The client side of A2A (SPEC §10a, docs/a2a.md): a switchboard agent messages a remote
//! A2A agent through `sessions_send` with `sessionKey: "a2a:<remote>"`. The key test runs the
//! other side's own code — a tiny agent built with the official Python SDK (`a2a-sdk`, pinned,
//! installed once into a venv under the target dir) — and the failure cases run against
//! `switchboard_testkit::FakeA2a`, a small remote the test can make refuse, fail or keep working.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{A2aRemote, AgentEntry, Config};
use switchboard_testkit::mcp_servers::{self, Missing};

use super::support::{GUARD, TestEngine, text_of};

/// The official SDK's server and what it needs to serve HTTP, pinned.
const SDK: [&str; 2] = ["a2a-sdk[http-server]==1.3.0", "uvicorn==0.54.0"];

/// Agent `main` (default) whose remotes are `remotes` (name, url, token).
pub(super) fn config(remotes: &[(&str, &str, Option<&str>)]) -> Config {
    let mut config = Config::default();
    let mut main = AgentEntry {
        id: "main".into(),
        default: true,
        ..AgentEntry::default()
    };
    for (name, url, token) in remotes {
        main.a2a.remotes.insert(
            name.to_string(),
            A2aRemote {
                url: url.to_string(),
                token: token.map(str::to_string),
            },
        );
    }
    config.agents.list = vec![main];
    // Retries come quickly: the tests wait for outcomes, not for backoff.
    config.delivery.retry_initial_ms = 20;
    config.delivery.retry_max_ms = 100;
    config
}

/// A turn of `main` that calls `sessions_send` with `args`; answers the tool's JSON result.
pub(super) async fn send(w: &TestEngine, args: Value) -> Value {
    let message = format!("@tool sessions_send {args}\n@reply done");
    let record = w.turn("main", &message).await;
    assert_eq!(record.error, None);
    let transcript = w.transcript("main").await;
    let result = transcript
        .iter()
        .rev()
        .find(|m| m["role"] == "toolResult")
        .expect("a tool result");
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

/// The texts of `session`'s transcript as `role: text`.
pub(super) async fn texts(w: &TestEngine, session: &str) -> Vec<String> {
    w.transcript(session)
        .await
        .iter()
        .map(|m| format!("{}: {}", m["role"].as_str().unwrap_or("?"), text_of(m)))
        .collect()
}

/// The SDK's agent (`tests/a2a/remote_agent.py`) on a free loopback port; killed when dropped.
struct SdkAgent {
    child: Child,
    port: u16,
}

impl SdkAgent {
    fn start(python: &std::path::Path, token: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a2a/remote_agent.py");
        let child = Command::new(python)
            .arg(script)
            .arg(port.to_string())
            .arg(token)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + GUARD;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the SDK's agent never listened"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }
}

impl Drop for SdkAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The venv's Python with the SDK; `None` (the test says NOT RUN, a failure under `CI=true`)
/// on a machine without Python's venv and pip.
fn sdk_python(test: &str) -> Option<std::path::PathBuf> {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    match mcp_servers::python_with_all(tmp, &SDK) {
        Ok(python) => Some(python),
        Err(Missing(why)) => {
            switchboard_testkit::not_run(&format!(
                "A2A client test {test} NOT RUN: {why} (.ci/run installs it; see \
                 docs/a2a.md)"
            ));
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_built_with_the_official_sdk_answers_sessions_send_and_the_context_continues() {
    let Some(python) = sdk_python("the_official_sdks_agent_answers") else {
        return;
    };
    let agent = SdkAgent::start(&python, "sekrit");
    let url = format!("http://127.0.0.1:{}", agent.port);
    let w = TestEngine::open(config(&[("echo", &url, Some("sekrit"))])).await;

    let first = send(&w, json!({"sessionKey": "a2a:echo", "message": "hello"})).await;
    assert_eq!(first["status"], "ok", "{first}");
    assert_eq!(first["reply"], "remote says: hello (turn 1)");
    assert_eq!(first["sessionKey"], "agent:main:a2a-remote:echo");

    // The SDK's agent counts the messages of each context: a second send continues the first's.
    let second = send(&w, json!({"sessionKey": "a2a:echo", "message": "again"})).await;
    assert_eq!(second["reply"], "remote says: again (turn 2)", "{second}");

    let row = "agent:main:a2a-remote:echo";
    assert_eq!(
        texts(&w, row).await,
        [
            "user: hello",
            "assistant: remote says: hello (turn 1)",
            "user: again",
            "assistant: remote says: again (turn 2)",
        ]
    );
    let listed = w
        .invoke("main", "sessions_list", json!({"search": "a2a-remote"}))
        .await
        .content;
    let rows: Vec<(Value, Value)> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["key"].clone(), r["channel"].clone()))
        .collect();
    assert_eq!(rows, [(json!(row), json!("a2a"))]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdks_agent_refuses_a_wrong_token_and_the_send_says_so() {
    let Some(python) = sdk_python("the_sdks_agent_refuses_a_wrong_token") else {
        return;
    };
    let agent = SdkAgent::start(&python, "sekrit");
    let url = format!("http://127.0.0.1:{}", agent.port);
    let w = TestEngine::open(config(&[("echo", &url, Some("tok-3c1e"))])).await;
    let result = send(&w, json!({"sessionKey": "a2a:echo", "message": "hello"})).await;
    assert_eq!(result["status"], "error", "{result}");
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("401") && error.contains("token") && !error.contains("tok-3c1e"),
        "{error}"
    );
}
