//! Agents calling the tools of MCP servers nobody here wrote, installed from their registries by
//! the test kit (`switchboard_testkit::mcp_servers`): the PyPI `mcp-server-time` over stdio and
//! the npm `@modelcontextprotocol/server-everything` over streamable HTTP and stdio. Runs are
//! scripted (`@tool NAME {json}`); every result is the server's real answer.

use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::RunId;
use switchboard_core::config::{AgentEntry, AgentTools, Config, McpServerConfig, ToolPolicy};
use switchboard_core::mcp::{ServerStatus, State};
use switchboard_core::runtime::{RunEvent, RunEventData};
use switchboard_core::store::RunStatus;
use switchboard_testkit::mcp_servers::{self, Missing};

use super::support::{GUARD, TestEngine, tool_results};

fn tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

/// `mcp.servers.time`: the time server over stdio.
fn time_server() -> Result<McpServerConfig, Missing> {
    let python = mcp_servers::time_server(tmp())?;
    Ok(McpServerConfig {
        command: Some(python.to_string_lossy().into_owned()),
        args: vec![
            "-m".into(),
            "mcp_server_time".into(),
            "--local-timezone".into(),
            "UTC".into(),
        ],
        ..McpServerConfig::default()
    })
}

/// `mcp.servers.everything` over stdio.
fn everything_stdio() -> Result<McpServerConfig, Missing> {
    let script = mcp_servers::everything_server(tmp())?;
    Ok(McpServerConfig {
        command: Some("node".into()),
        args: vec![script.to_string_lossy().into_owned(), "stdio".into()],
        ..McpServerConfig::default()
    })
}

/// An engine whose only MCP server is `name`, once that server runs.
async fn with_server(
    name: &str,
    server: McpServerConfig,
    configure: impl FnOnce(&mut Config),
) -> TestEngine {
    let mut config = Config::default();
    config.mcp.servers.insert(name.into(), server);
    configure(&mut config);
    let h = TestEngine::open(config).await;
    // A server started with npx can take longer than the engine's start waits on a busy
    // machine: a turn before its tools are listed would not find them.
    status_when(&h, name, |s| s.state == State::Running).await;
    h
}

/// The server's status once `ok` holds for it (a hang guard, not a timing).
async fn status_when(
    h: &TestEngine,
    name: &str,
    ok: impl Fn(&ServerStatus) -> bool,
) -> ServerStatus {
    let found = tokio::time::timeout(GUARD, async {
        loop {
            let statuses = h.engine.mcp().statuses();
            if let Some(status) = statuses.into_iter().find(|s| s.name == name && ok(s)) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    found.unwrap_or_else(|_| {
        panic!(
            "server {name} never reached the state: {:?}",
            h.engine.mcp().statuses()
        )
    })
}

/// Waits until the run's tool call was made.
async fn called(
    h: &TestEngine,
    events: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<RunEvent>>,
    run: &RunId,
) {
    tokio::time::timeout(GUARD, async {
        loop {
            let event = events.recv().await.expect("run events");
            if event.run_id == *run && matches!(event.data, RunEventData::ToolCall { .. }) {
                return;
            }
        }
    })
    .await
    .expect("the run called the tool");
    let _ = h;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_calls_the_time_server_and_stores_its_real_answer() {
    let server = match time_server() {
        Ok(server) => server,
        Err(missing) => return mcp_servers::not_run("a_run_calls_the_time_server", &missing),
    };
    let mut config = Config::default();
    config.mcp.servers.insert("time".into(), server);
    let h = TestEngine::open(config).await;
    let record = h
        .turn(
            "main",
            "@tool time__get_current_time {\"timezone\": \"UTC\"}\n@reply it is {{result.datetime}}",
        )
        .await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    let results = tool_results(&h, "main").await;
    assert_eq!(results.len(), 1, "{results:?}");
    let (name, text, is_error) = &results[0];
    assert_eq!(
        (name.as_str(), *is_error),
        ("time__get_current_time", false)
    );
    let answer: Value = serde_json::from_str(text).expect("the server answers JSON");
    assert_eq!(answer["timezone"], "UTC");
    let datetime = answer["datetime"].as_str().expect("a datetime field");
    assert!(datetime.ends_with("+00:00"), "{datetime}");
    assert_eq!(
        record.result.as_deref(),
        Some(format!("it is {datetime}").as_str())
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_calls_an_mcp_tool_and_its_report_carries_the_result() {
    let server = match time_server() {
        Ok(server) => server,
        Err(missing) => return mcp_servers::not_run("a_sub_agent_calls_an_mcp_tool", &missing),
    };
    let h = with_server("time", server, |_| {}).await;
    let task = "@tool time__get_current_time {\"timezone\": \"UTC\"}\n@reply child says {{result.datetime}}";
    let spawned = h
        .invoke("main", "sessions_spawn", json!({"task": task}))
        .await;
    assert_eq!(spawned.content["status"], "accepted", "{}", spawned.content);
    let child = spawned.content["childSessionKey"]
        .as_str()
        .unwrap()
        .to_string();
    let announce = h.first_of_kind("main", "subagent-announce").await;
    let results = tool_results(&h, &child).await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(!results[0].2, "{results:?}");
    let answer: Value = serde_json::from_str(&results[0].1).unwrap();
    let datetime = answer["datetime"].as_str().expect("a datetime field");
    let report = announce["content"].as_str().unwrap();
    assert!(
        report.contains(&format!("child says {datetime}")),
        "{report}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_everything_server_answers_over_streamable_http_with_text_and_images() {
    let script = match mcp_servers::everything_server(tmp()) {
        Ok(script) => script,
        Err(missing) => return mcp_servers::not_run("the_everything_server_over_http", &missing),
    };
    let remote = mcp_servers::EverythingHttp::start(&script);
    let server = McpServerConfig {
        url: Some(remote.url()),
        ..McpServerConfig::default()
    };
    let h = with_server("everything", server, |_| {}).await;
    let calls = [
        r#"@tool everything__get-sum {"a": 2, "b": 3}"#,
        "@tool everything__get-tiny-image {}",
        r#"@tool everything__get-structured-content {"location": "Chicago"}"#,
        r#"@tool everything__get-sum {"a": "two"}"#,
        "@reply done",
    ];
    let record = h.turn("main", &calls.join("\n")).await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    let results = tool_results(&h, "main").await;
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(results[0].1.contains('5') && !results[0].2, "{results:?}");
    assert!(
        results[3].2,
        "a call the server refuses is an error result: {results:?}"
    );
    let transcript = h.transcript("main").await;
    let stored: Vec<&Value> = transcript
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .collect();
    let image = stored[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "image")
        .expect("the tiny image is stored as an image block");
    assert_eq!(image["mimeType"], "image/png");
    assert!(
        stored[2]["details"]["temperature"].is_number(),
        "{}",
        stored[2]
    );
    let status = status_when(&h, "everything", |s| s.state == State::Running).await;
    assert_eq!(status.transport, "http");
    assert!(
        status.tools.contains(&"everything__get-sum".to_string()),
        "{status:?}"
    );
    // The server goes away: a call says so and the run goes on; it comes back and is used again.
    let port = remote.port();
    drop(remote);
    let record = h
        .turn(
            "main",
            "@tool everything__echo {\"message\": \"anyone?\"}\n@reply {{result}}",
        )
        .await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    let results = tool_results(&h, "main").await;
    assert!(
        results[4].2 && results[4].1.contains("everything"),
        "{results:?}"
    );
    let _back = mcp_servers::EverythingHttp::start_on(&script, port);
    status_when(&h, "everything", |s| {
        s.state == State::Running && s.restarts >= 1
    })
    .await;
    let record = h
        .turn(
            "main",
            "@tool everything__echo {\"message\": \"back\"}\n@reply {{result}}",
        )
        .await;
    assert!(
        record
            .result
            .as_deref()
            .unwrap_or_default()
            .contains("back"),
        "{record:?}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_rules_hide_tools_from_agents_and_sub_agents() {
    let mut server = match everything_stdio() {
        Ok(server) => server,
        Err(missing) => return mcp_servers::not_run("deny_rules_hide_tools", &missing),
    };
    // The server offers only its get-* tools and echo; main may not add; sub-agents may not echo.
    server.tools = ToolPolicy {
        allow: vec!["get-*".into(), "echo".into()],
        deny: vec!["get-env".into()],
    };
    let h = with_server("everything", server, |config| {
        config.agents.list = vec![AgentEntry {
            id: "main".into(),
            default: true,
            tools: AgentTools {
                deny: vec!["*__get-sum".into()],
                ..AgentTools::default()
            },
            ..AgentEntry::default()
        }];
        config.tools.subagents.tools.deny = vec!["everything__echo".into()];
    })
    .await;
    let status = status_when(&h, "everything", |s| s.state == State::Running).await;
    assert!(
        status.tools.contains(&"everything__echo".to_string()),
        "{status:?}"
    );
    assert!(
        !status
            .tools
            .iter()
            .any(|t| t == "everything__get-env" || t.contains("toggle")),
        "{status:?}"
    );
    let record = h
        .turn("main", "@tool everything__get-sum {\"a\": 1, \"b\": 1}\n@tool everything__echo {\"message\": \"hi\"}\n@reply done")
        .await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    let results = tool_results(&h, "main").await;
    assert!(
        results[0].2 && results[0].1.contains("Unknown tool"),
        "{results:?}"
    );
    assert!(
        !results[0].1.contains("everything__get-sum,"),
        "the denied tool is not listed: {results:?}"
    );
    assert!(results[0].1.contains("everything__echo"), "{results:?}");
    assert_eq!(
        (results[1].1.contains("hi"), results[1].2),
        (true, false),
        "{results:?}"
    );
    // A sub-agent: everything main has minus the session tools, minus tools.subagents' deny.
    let task = "@tool everything__echo {\"message\": \"x\"}\n@reply done";
    let spawned = h
        .invoke("main", "sessions_spawn", json!({"task": task}))
        .await;
    let child = spawned.content["childSessionKey"]
        .as_str()
        .unwrap()
        .to_string();
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    let results = tool_results(&h, &child).await;
    assert!(
        results[0].2 && results[0].1.contains("Unknown tool"),
        "{results:?}"
    );
    assert!(
        results[0].1.contains("everything__get-tiny-image"),
        "{results:?}"
    );
    // agents_list tells the spawner what such a sub-agent can call.
    let listed = h.invoke("main", "agents_list", json!({})).await.content;
    let tools = listed["agents"][0]["tools"].as_array().unwrap().clone();
    assert!(
        tools.contains(&json!("everything__get-tiny-image")),
        "{listed}"
    );
    assert!(!tools.contains(&json!("everything__echo")), "{listed}");
    assert!(
        !tools
            .iter()
            .any(|t| t.as_str().unwrap().starts_with("sessions_")),
        "{listed}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_gives_an_error_result_restarts_and_the_next_call_works() {
    let server = match everything_stdio() {
        Ok(server) => server,
        Err(missing) => return mcp_servers::not_run("a_server_killed_mid_call", &missing),
    };
    let h = with_server("everything", server, |_| {}).await;
    let pid = status_when(&h, "everything", |s| s.state == State::Running)
        .await
        .pid
        .expect("a stdio server has a pid");
    let mut events = h.engine.runtime().subscribe();
    let long = "@tool everything__trigger-long-running-operation {\"duration\": 60, \"steps\": 6}\n@reply {{result}}";
    let run = h.submit("main", long, None).await;
    called(&h, &mut events, &run).await;
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
    assert!(killed.unwrap().success());
    let record = h.engine.runtime().wait(&run, GUARD).await.unwrap().record;
    assert_eq!(
        record.status,
        RunStatus::Ok,
        "the run goes on: {:?}",
        record.error
    );
    let results = tool_results(&h, "main").await;
    assert!(results[0].2, "{results:?}");
    assert!(
        results[0].1.contains("MCP server everything"),
        "{results:?}"
    );
    let again = status_when(&h, "everything", |s| {
        s.state == State::Running && s.restarts >= 1
    })
    .await;
    assert_ne!(again.pid, Some(pid), "a new process");
    let record = h
        .turn(
            "main",
            "@tool everything__get-sum {\"a\": 20, \"b\": 22}\n@reply {{result}}",
        )
        .await;
    assert!(
        record.result.as_deref().unwrap_or_default().contains("42"),
        "{record:?}"
    );
    // Stopping the gateway ends the server's process.
    h.engine.close().await;
    let new_pid = again.pid.expect("the new process").to_string();
    let alive = || {
        std::process::Command::new("kill")
            .args(["-0", &new_pid])
            .status()
            .is_ok_and(|s| s.success())
    };
    tokio::time::timeout(GUARD, async {
        while alive() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the server's process ended with the gateway");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_tool_times_out_and_an_abort_cancels_the_call() {
    let mut server = match everything_stdio() {
        Ok(server) => server,
        Err(missing) => return mcp_servers::not_run("a_slow_tool_times_out", &missing),
    };
    server.timeout_seconds = 2;
    let h = with_server("everything", server, |_| {}).await;
    let slow = "@tool everything__trigger-long-running-operation {\"duration\": 30, \"steps\": 3}\n@reply {{result}}";
    let record = h.turn("main", slow).await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    let results = tool_results(&h, "main").await;
    assert!(results[0].2, "{results:?}");
    assert!(
        results[0]
            .1
            .contains("timed out after 2s (mcp.servers.everything.timeoutSeconds)"),
        "{results:?}"
    );
    assert_eq!(status_when(&h, "everything", |_| true).await.cancelled, 1);
    // An abort while the call runs: the run ends aborted and the call is cancelled.
    let mut events = h.engine.runtime().subscribe();
    let run = h.submit("main", slow, None).await;
    called(&h, &mut events, &run).await;
    let key = h.key("main");
    h.engine.runtime().abort(&key, Some(&run)).await.unwrap();
    let record = h.engine.runtime().wait(&run, GUARD).await.unwrap().record;
    assert_eq!(record.status, RunStatus::Aborted);
    let status = status_when(&h, "everything", |s| s.cancelled >= 2).await;
    assert_eq!(
        status.state,
        State::Running,
        "the server is still up: {status:?}"
    );
    let record = h
        .turn(
            "main",
            "@tool everything__echo {\"message\": \"still here\"}\n@reply {{result}}",
        )
        .await;
    assert!(
        record
            .result
            .as_deref()
            .unwrap_or_default()
            .contains("still here"),
        "{record:?}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_list_changed_notification_refreshes_the_offer() {
    // The time server's venv carries the official MCP Python SDK, which this server is built on.
    let python = match mcp_servers::time_server(tmp()) {
        Ok(python) => python,
        Err(missing) => return mcp_servers::not_run("a_tools_list_changed_notification", &missing),
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_servers/changing.py");
    let server = McpServerConfig {
        command: Some(python.to_string_lossy().into_owned()),
        args: vec![script.into()],
        ..McpServerConfig::default()
    };
    let h = with_server("changing", server, |_| {}).await;
    let before = status_when(&h, "changing", |s| s.state == State::Running).await;
    assert_eq!(before.tools, ["changing__unlock"]);
    let record = h
        .turn("main", "@tool changing__unlock {}\n@reply {{result}}")
        .await;
    assert_eq!(record.result.as_deref(), Some("unlocked"));
    let after = status_when(&h, "changing", |s| s.tools.len() == 2).await;
    assert_eq!(after.tools, ["changing__unlock", "changing__secret"]);
    let record = h
        .turn("main", "@tool changing__secret {}\n@reply {{result}}")
        .await;
    assert_eq!(record.result.as_deref(), Some("opened"));
    h.engine.close().await;
}
