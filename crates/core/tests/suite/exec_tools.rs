//! The command tools (SPEC §6.5, `group:runtime`) outside a sandbox, through scripted runs and
//! `tools.invoke`: a command runs in the workspace with a clean environment, long output keeps
//! its head and tail, a timeout stops it, a background process is polled, written to, killed
//! and removed, and every process dies with its run's abort and with the gateway's stop.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{Config, ExecAsk, ToolProfile};
use switchboard_core::store::RunStatus;

use super::support::{GUARD, TestEngine, tool_results};

/// An engine whose agents may run commands without asking.
async fn engine() -> TestEngine {
    let mut config = Config::default();
    config.tools.profile = Some(ToolProfile::Coding);
    config.tools.exec.ask = Some(ExecAsk::Off);
    TestEngine::open(config).await
}

fn workspace(h: &TestEngine) -> PathBuf {
    h.engine.home().join("workspace/main")
}

async fn exec(h: &TestEngine, args: Value) -> Value {
    let output = h.invoke("main", "exec", args).await;
    output.content
}

async fn process(h: &TestEngine, args: Value) -> Value {
    h.invoke("main", "process", args).await.content
}

/// Whether the process `pid` is gone (or a zombie nobody reaps: it runs no more).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// The pid a command wrote into `file` of the workspace, once it is there.
async fn pid_in(root: &Path, file: &str) -> String {
    let path = root.join(file);
    tokio::time::timeout(GUARD, async {
        loop {
            if let Ok(pid) = std::fs::read_to_string(&path)
                && !pid.trim().is_empty()
            {
                return pid.trim().to_string();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the command wrote its pid")
}

/// Waits (a hang guard, not a timing) until `pid` runs no more.
async fn until_gone(pid: &str) {
    let ended = tokio::time::timeout(GUARD, async {
        while !gone(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    assert!(ended.await.is_ok(), "process {pid} still runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_runs_in_the_workspace_with_none_of_the_gateways_variables() {
    let h = engine().await;
    let script = "@tool exec {\"command\": \"echo hi > a.txt; pwd; cat a.txt; env; exit 3\"}\n@reply {{result.exitCode}}";
    let record = h.turn("main", script).await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    assert_eq!(record.result.as_deref(), Some("3"));
    let results = tool_results(&h, "main").await;
    let answer: Value = serde_json::from_str(&results[0].1).unwrap();
    assert_eq!(
        (&answer["status"], &answer["truncated"]),
        (&json!("exited"), &json!(false))
    );
    let output = answer["output"].as_str().unwrap();
    let root = workspace(&h).canonicalize().unwrap();
    assert!(
        output.starts_with(&format!("{}\nhi\n", root.display())),
        "{output}"
    );
    // cargo runs the tests with CARGO_* variables; none reach a command.
    assert!(
        !output.contains("CARGO") && output.contains("HOME="),
        "{output}"
    );
    assert!(answer.get("processId").is_none(), "{answer}");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_output_keeps_its_head_and_tail_and_a_timeout_stops_the_command() {
    let h = engine().await;
    let answer = exec(&h, json!({"command": "seq 1 100000"})).await;
    let output = answer["output"].as_str().unwrap();
    assert_eq!(answer["truncated"], true);
    assert!(
        output.starts_with("1\n2\n3\n") && output.ends_with("99999\n100000\n"),
        "{}",
        &output[..40]
    );
    assert!(output.contains(" bytes left out …]"), "{}", output.len());
    assert!(output.len() < 40_000, "{}", output.len());

    let answer = exec(
        &h,
        json!({"command": "echo started; sleep 30", "timeout": 1}),
    )
    .await;
    assert_eq!(
        (&answer["status"], &answer["output"]),
        (&json!("timeout"), &json!("started\n")),
        "{answer}"
    );
    let failed = exec(&h, json!({"command": " "})).await;
    assert_eq!(failed["status"], "error", "{failed}");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_process_is_polled_written_to_killed_and_removed() {
    let h = engine().await;
    let started = exec(
        &h,
        json!({"command": "echo ready; cat", "background": true}),
    )
    .await;
    assert_eq!(started["status"], "running", "{started}");
    let id = started["processId"].as_str().unwrap().to_string();
    let written = process(
        &h,
        json!({"action": "write", "processId": id, "data": "hello\n"}),
    )
    .await;
    assert_eq!(written, json!({"processId": id, "written": 6}));
    let mut seen = started["output"].as_str().unwrap().to_string();
    tokio::time::timeout(GUARD, async {
        while !seen.contains("hello") {
            let polled = process(&h, json!({"action": "poll", "processId": id})).await;
            seen.push_str(polled["output"].as_str().unwrap());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the process echoed its input");
    assert_eq!(seen, "ready\nhello\n");
    let listed = process(&h, json!({"action": "list"})).await;
    assert_eq!(listed["processes"][0]["processId"], id.as_str());
    assert_eq!(listed["processes"][0]["command"], "echo ready; cat");
    let running = process(&h, json!({"action": "remove", "sessionId": id})).await;
    assert!(
        running["error"].as_str().unwrap().contains("kill it first"),
        "{running}"
    );
    let killed = process(&h, json!({"action": "kill", "processId": id})).await;
    assert_eq!(killed["status"], "killed", "{killed}");
    let log = process(&h, json!({"action": "log", "processId": id})).await;
    assert_eq!(log["output"], "ready\nhello\n");
    // In a scripted run: its result is in the transcript.
    let listed = h
        .turn(
            "main",
            "@tool process {\"action\": \"list\"}\n@reply {{result.processes.0.status}}",
        )
        .await;
    assert_eq!(listed.result.as_deref(), Some("killed"));
    assert_eq!(tool_results(&h, "main").await[0].0, "process");
    let removed = process(&h, json!({"action": "remove", "processId": id})).await;
    assert_eq!(removed, json!({"processId": id, "removed": true}));
    let missing = process(&h, json!({"action": "poll", "processId": id})).await;
    assert!(
        missing["error"].as_str().unwrap().starts_with("no process"),
        "{missing}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_abort_kills_its_command_and_the_gateways_stop_kills_the_background() {
    let h = engine().await;
    let root = workspace(&h);
    let slow = "@tool exec {\"command\": \"sleep 60 & echo $! > fg.pid; wait\"}\n@reply done";
    let run = h.submit("main", slow, None).await;
    let pid = pid_in(&root, "fg.pid").await;
    assert!(!gone(&pid));
    let key = h.key("main");
    h.engine.runtime().abort(&key, Some(&run)).await.unwrap();
    let record = h.engine.runtime().wait(&run, GUARD).await.unwrap().record;
    assert_eq!(record.status, RunStatus::Aborted);
    until_gone(&pid).await;

    let started = exec(
        &h,
        json!({"command": "sleep 60 & echo $! > bg.pid; wait", "background": true}),
    )
    .await;
    assert_eq!(started["status"], "running", "{started}");
    let pid = pid_in(&root, "bg.pid").await;
    h.engine.close().await;
    until_gone(&pid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_session_runs_no_command_without_the_sandbox_helper() {
    let mut config = Config::default();
    config.tools.profile = Some(ToolProfile::Coding);
    config.agents.defaults.sandbox.mode = switchboard_core::config::SandboxMode::All;
    // An embedder without the gateway's binary: nothing can build the sandbox.
    let h = TestEngine::open(config).await;
    let refused = exec(&h, json!({"command": "touch ran"})).await;
    let error = refused["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("this session is sandboxed and this gateway has no sandbox helper"),
        "{refused}"
    );
    assert!(!workspace(&h).join("ran").exists());
    h.engine.close().await;
}

/// The commands waiting for approval, once `n` wait (a hang guard, not a timing).
async fn waiting(
    h: &TestEngine,
    n: usize,
) -> Vec<switchboard_protocol::exec_tools::PendingApproval> {
    let listed = tokio::time::timeout(GUARD, async {
        loop {
            let waiting = h.engine.approvals().list();
            if waiting.len() == n {
                return waiting;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    listed.await.expect("the command was held for approval")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_a_sandbox_a_command_waits_for_an_operator_unless_allowlisted() {
    use switchboard_core::tools::exec::Decision;
    let mut config = Config::default();
    config.tools.profile = Some(ToolProfile::Coding);
    config.tools.exec.approval_timeout_seconds = 2;
    let h = TestEngine::open(config).await;
    let engine = h.engine.clone();
    let call = |command: &'static str| {
        let engine = engine.clone();
        tokio::spawn(async move {
            super::support::invoke(&engine, "main", "exec", json!({"command": command})).await
        })
    };
    // Held, approved: it runs.
    let approved = call("echo approved");
    let held = waiting(&h, 1).await;
    assert_eq!(
        (held[0].command.as_str(), held[0].agent_id.as_str()),
        ("echo approved", "main")
    );
    assert!(!workspace(&h).join("never").exists());
    h.engine
        .approvals()
        .decide(&held[0].id, Decision::Approve { always: false })
        .unwrap();
    let ran = approved.await.unwrap();
    assert_eq!(ran.content["output"], "approved\n", "{}", ran.content);
    // Held, denied: it does not.
    let denied = call("touch never");
    let held = waiting(&h, 1).await;
    h.engine
        .approvals()
        .decide(&held[0].id, Decision::Deny)
        .unwrap();
    let refused = denied.await.unwrap();
    assert!(
        refused.content["error"]
            .as_str()
            .unwrap()
            .starts_with("an operator denied this command"),
        "{}",
        refused.content
    );
    // Nobody answers: refused when the time is out.
    let ignored = call("touch never").await.unwrap();
    let error = ignored.content["error"].as_str().unwrap();
    assert_eq!(
        error,
        "no operator approved this command within 2 s (tools.exec.ask); it was not run"
    );
    assert!(!workspace(&h).join("never").exists());
    assert!(h.engine.approvals().list().is_empty());
    // Approved for always: the program joins the allowlist and runs unasked from then on.
    let always = call("uname");
    let held = waiting(&h, 1).await;
    h.engine
        .approvals()
        .decide(&held[0].id, Decision::Approve { always: true })
        .unwrap();
    always.await.unwrap();
    let unasked = call("uname -s").await.unwrap();
    assert_eq!(unasked.content["output"], "Linux\n", "{}", unasked.content);
    let file = std::fs::read_to_string(h.engine.home().join("exec-approvals.json")).unwrap();
    assert!(
        file.contains("/usr/bin/uname") || file.contains("/bin/uname"),
        "{file}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_workspace_may_not_hold_the_state_dir() {
    let mut config = Config::default();
    config.tools.profile = Some(ToolProfile::Coding);
    config.agents.defaults.sandbox.mode = switchboard_core::config::SandboxMode::All;
    // "." is the state dir itself: the sandbox would be given all of it.
    config.agents.list = vec![switchboard_core::config::AgentEntry {
        id: "main".into(),
        default: true,
        workspace: Some(".".into()),
        ..Default::default()
    }];
    let h = TestEngine::open(config).await;
    let refused = exec(&h, json!({"command": "true"})).await;
    let error = refused["error"].as_str().unwrap_or_default();
    assert!(error.contains("holds the gateway's state dir"), "{refused}");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_command_whose_run_is_aborted_leaves_the_approvals() {
    let mut config = Config::default();
    config.tools.profile = Some(ToolProfile::Coding);
    let h = TestEngine::open(config).await;
    let run = h
        .submit(
            "main",
            "@tool exec {\"command\": \"touch held\"}\n@reply done",
            None,
        )
        .await;
    waiting(&h, 1).await;
    h.engine
        .runtime()
        .abort(&h.key("main"), Some(&run))
        .await
        .unwrap();
    let record = h.engine.runtime().wait(&run, GUARD).await.unwrap().record;
    assert_eq!(record.status, RunStatus::Aborted);
    assert!(
        h.engine.approvals().list().is_empty(),
        "{:?}",
        h.engine.approvals().list()
    );
    assert!(!workspace(&h).join("held").exists());
    h.engine.close().await;
}
