//! The file tools (SPEC §6.5, `group:fs`) through scripted runs: each call's result is in the
//! transcript, the files are on disk in the agent's workspace, a sub-agent works in the same
//! workspace as its parent, every way out of the workspace is refused by name, and a profile
//! that leaves the tools out refuses them.

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{Config, ToolProfile};
use switchboard_core::store::RunStatus;

use super::support::{TestEngine, tool_results};

fn workspace(h: &TestEngine, agent: &str) -> PathBuf {
    h.engine.home().join("workspace").join(agent)
}

/// A script line calling `tool` with `args`.
fn call(tool: &str, args: Value) -> String {
    format!("@tool {tool} {args}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_writes_edits_patches_and_reads_files_in_its_workspace() {
    let h = TestEngine::open(Config::default()).await;
    let patch = "*** Begin Patch\n*** Update File: notes/todo.md\n@@\n one\n-zwei\n+deux\n*** Add File: b.txt\n+bee\n*** End Patch";
    let script = [
        call(
            "write",
            json!({"path": "notes/todo.md", "content": "one\ntwo\n"}),
        ),
        call(
            "edit",
            json!({"path": "notes/todo.md", "oldText": "two", "newText": "zwei"}),
        ),
        call("apply_patch", json!({"input": patch})),
        call("read", json!({"file_path": "notes/todo.md"})),
        "@reply the list: {{result}}".to_string(),
    ]
    .concat();
    let record = h.turn("main", &script).await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    assert_eq!(record.result.as_deref(), Some("the list: one\ndeux\n"));
    let results = tool_results(&h, "main").await;
    let names: Vec<&str> = results.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["write", "edit", "apply_patch", "read"]);
    assert!(results.iter().all(|(_, _, error)| !error), "{results:?}");
    let written: Value = serde_json::from_str(&results[0].1).unwrap();
    assert_eq!(
        written,
        json!({"status": "ok", "path": "notes/todo.md", "bytes": 8, "created": true})
    );
    let applied: Value = serde_json::from_str(&results[2].1).unwrap();
    assert_eq!(
        applied,
        json!({"status": "ok", "added": ["b.txt"], "updated": ["notes/todo.md"], "deleted": []})
    );
    let root = workspace(&h, "main");
    assert_eq!(
        std::fs::read_to_string(root.join("notes/todo.md")).unwrap(),
        "one\ndeux\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("b.txt")).unwrap(),
        "bee\n"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_writes_a_file_its_parent_reads() {
    let h = TestEngine::open(Config::default()).await;
    let task = [
        call(
            "write",
            json!({"path": "report.md", "content": "found 3 bugs\n"}),
        ),
        "@reply written".to_string(),
    ]
    .concat();
    let spawned = h
        .invoke("main", "sessions_spawn", json!({"task": task}))
        .await;
    assert_eq!(spawned.content["status"], "accepted", "{}", spawned.content);
    let child = spawned.content["childSessionKey"]
        .as_str()
        .unwrap()
        .to_string();
    h.first_of_kind("main", "subagent-announce").await;
    assert_eq!(tool_results(&h, &child).await[0].0, "write");

    let record = h
        .turn(
            "main",
            &format!(
                "{}@reply child: {{{{result}}}}",
                call("read", json!({"path": "report.md"}))
            ),
        )
        .await;
    assert_eq!(record.result.as_deref(), Some("child: found 3 bugs\n"));
    // The child was offered the built-ins without the session tools.
    let tools = h
        .engine
        .runtime()
        .tools_for(&h.key(&child), &h.engine.config().agent("main"));
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    for fs in ["apply_patch", "edit", "read", "write"] {
        assert!(names.contains(&fs), "{names:?}");
    }
    assert!(
        !names.iter().any(|n| n.starts_with("sessions_")),
        "{names:?}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_out_of_the_workspace_is_refused_by_name() {
    let h = TestEngine::open(Config::default()).await;
    let root = workspace(&h, "main");
    let outside = h.engine.home().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "token").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("door")).unwrap();
    let cases = [
        (
            "read",
            json!({"path": "../../outside/secret.txt"}),
            "(`..` climbs above it)",
        ),
        (
            "read",
            json!({"path": "/etc/shadow"}),
            "(an absolute path elsewhere)",
        ),
        (
            "read",
            json!({"path": "link.txt"}),
            "(a symlink leads out of it)",
        ),
        (
            "write",
            json!({"path": "door/planted.txt", "content": "x"}),
            "(a symlink leads out of it)",
        ),
        (
            "edit",
            json!({"path": "link.txt", "oldText": "token", "newText": "x"}),
            "(a symlink leads out of it)",
        ),
        (
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Add File: ../planted.txt\n+x\n*** End Patch"}),
            "(`..` climbs above it)",
        ),
    ];
    for (tool, args, why) in cases {
        let output = h.invoke("main", tool, args.clone()).await;
        let error = output.content["error"].as_str().unwrap_or_default();
        assert!(
            output.is_error && error.contains("is outside your workspace"),
            "{tool} {args}: {}",
            output.content
        );
        assert!(error.contains(why), "{tool} {args}: {error}");
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "token"
    );
    assert!(
        !outside.join("planted.txt").exists()
            && !h.engine.home().join("workspace/planted.txt").exists()
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_without_the_file_tools_refuses_them_and_unknown_arguments_are_named() {
    let mut config = Config::default();
    config.tools.profile = Some(ToolProfile::Messaging);
    let h = TestEngine::open(config).await;
    let record = h
        .turn(
            "main",
            &format!(
                "{}@reply {{{{result}}}}",
                call("write", json!({"path": "a.txt", "content": "x"}))
            ),
        )
        .await;
    // The model was not offered it: the call is answered with the tools it has.
    let reply = record.result.unwrap_or_default();
    assert!(
        reply.contains("Unknown tool \\\"write\\\"") && !reply.contains("read"),
        "{reply}"
    );
    let args = json!({"path": "a.txt", "content": "x"});
    let stop = tokio_util::sync::CancellationToken::new();
    let refused = h
        .engine
        .tools()
        .call("main", "write", args, stop)
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("tools.profile \"messaging\" leaves it out"),
        "{refused}"
    );
    assert!(!workspace(&h, "main").join("a.txt").exists());
    h.engine.close().await;

    let h = TestEngine::open(Config::default()).await;
    let output = h
        .invoke("main", "write", json!({"path": "a.txt", "text": "x"}))
        .await;
    let error = output.content["error"].as_str().unwrap_or_default();
    assert!(
        output.is_error
            && error.contains("unknown field `text`; accepted: `file_path`, `path`, `content`"),
        "{error}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_built_in_tool_describes_and_types_each_argument() {
    let mut config = Config::default();
    config.tools.profile = Some(ToolProfile::Full);
    let h = TestEngine::open(config).await;
    let tools = h
        .engine
        .runtime()
        .tools_for(&h.key("main"), &h.engine.config().agent("main"));
    assert!(tools.len() >= 14, "{}", tools.len());
    for tool in tools {
        let schema = tool.parameters();
        assert_eq!(schema["type"], "object", "{}", tool.name());
        // The session tools ignore unknown arguments yet (issue "Hard to misuse").
        let session_tool = tool.name().starts_with("sessions_") || tool.name() == "agents_list";
        if !session_tool {
            assert_eq!(
                schema["additionalProperties"],
                false,
                "{} refuses unknown arguments",
                tool.name()
            );
        }
        let properties = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (name, field) in properties {
            let at = format!("{}.{name}: {field}", tool.name());
            assert!(
                field["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{at}"
            );
            assert!(field["type"].is_string(), "{at}");
            assert!(field.get("$ref").is_none(), "{at}");
        }
    }
    h.engine.close().await;
}
