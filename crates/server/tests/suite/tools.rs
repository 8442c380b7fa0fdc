//! `tools.invoke` over the WebSocket: session tools run as the agent of the named session, with
//! its resolution, visibility and policy; bad calls get clear errors and the gateway keeps serving.
//! `tools.list`: the same tools with their schemas (what MCP's `tools/list` shows).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{Config, SandboxMode};
use switchboard_protocol::ErrorCode;

use super::harness::TestGateway;

const CHILD: &str = "agent:main:subagent:5b0e7a52-8c1e-4c8f-9d35-0f4c1a6e2b11";

async fn inject(gw: &TestGateway, key: &str, text: &str) -> Value {
    gw.call(
        "chat.inject",
        json!({"sessionKey": key, "message": text, "role": "user"}),
    )
    .await
}

async fn invoke(gw: &TestGateway, session: &str, tool: &str, args: Value) -> Value {
    gw.call(
        "tools.invoke",
        json!({"sessionKey": session, "tool": tool, "args": args}),
    )
    .await
}

#[tokio::test]
async fn session_tools_answer_through_tools_invoke() {
    let gw = TestGateway::start().await;
    inject(&gw, "main", "hello").await;
    inject(&gw, "discord:group:dev", "in the group").await;
    inject(&gw, "cron:nightly", "first").await;
    inject(&gw, "cron:nightly", "second").await;

    let list = invoke(&gw, "main", "sessions_list", json!({"kinds": "group"})).await;
    assert_eq!(list["ok"], true);
    // OpenClaw's clients name the tool `name`; the answer is the same.
    let by_name = gw
        .call(
            "tools.invoke",
            json!({"sessionKey": "main", "name": "sessions_list", "args": {"kinds": "group"}}),
        )
        .await;
    assert_eq!(by_name, list);
    assert_eq!(list["result"]["count"], 1);
    // The reference's shape of the same answer: the text the model reads, the object as details.
    assert_eq!(list["toolName"], "sessions_list");
    assert_eq!(list["output"]["details"], list["result"]);
    let text = list["output"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        (
            list["output"]["content"][0]["type"].clone(),
            serde_json::from_str::<Value>(text).unwrap()
        ),
        (json!("text"), list["result"].clone())
    );
    let row = &list["result"]["sessions"][0];
    assert_eq!(
        (
            row["key"].clone(),
            row["kind"].clone(),
            row["channel"].clone()
        ),
        (
            json!("agent:main:discord:group:dev"),
            json!("group"),
            json!("discord")
        )
    );
    let all = invoke(
        &gw,
        "agent:main:main",
        "sessions_list",
        json!({"limit": "2"}),
    )
    .await;
    assert_eq!(all["result"]["count"], 2);
    assert!(all["result"]["nextCursor"].is_string());

    let history = invoke(
        &gw,
        "main",
        "sessions_history",
        json!({"sessionKey": "cron:nightly", "limit": 1.0}),
    )
    .await;
    assert_eq!(history["ok"], true);
    let result = &history["result"];
    assert_eq!(result["sessionKey"], "agent:main:cron:nightly");
    assert_eq!(result["messages"][0]["content"], "second");
    assert_eq!(result["messages"][0]["seq"], 2);
    assert_eq!(result["nextBefore"], 2);
    assert_eq!(
        (
            result["truncated"].clone(),
            result["droppedMessages"].clone(),
            result["contentTruncated"].clone()
        ),
        (json!(false), json!(0), json!(false))
    );

    // The session may be named by its sessionId too, and `arguments` is accepted for `args`.
    let id = list["result"]["sessions"][0]["sessionId"].as_str().unwrap();
    let by_id = gw
        .call(
            "tools.invoke",
            json!({"sessionKey": id, "tool": "agents_list", "arguments": {}}),
        )
        .await;
    assert_eq!(
        json!({"ok": by_id["ok"], "result": by_id["result"]}),
        json!({"ok": true, "result": {"requester": "main", "allowAny": false,
            "agents": [{"id": "main", "configured": true,
                "tools": ["apply_patch", "cron", "edit", "message", "read", "session_status", "web_fetch", "write"]}]}})
    );
    gw.stop().await;
}

#[tokio::test]
async fn unknown_tools_missing_sessions_and_bad_args_are_clear_errors() {
    let gw = TestGateway::start().await;
    inject(&gw, "main", "hello").await;

    let error = gw
        .call_err(
            "tools.invoke",
            json!({"sessionKey": "main", "tool": "rm_rf", "args": {}}),
        )
        .await;
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    for tool in ["sessions_list", "sessions_history", "agents_list"] {
        assert!(error.message.contains(tool), "{}", error.message);
    }

    let error = gw
        .call_err(
            "tools.invoke",
            json!({"sessionKey": "cron:nope", "tool": "sessions_list"}),
        )
        .await;
    assert_eq!(error.code, ErrorCode::NotFound);
    assert_eq!(
        error.message,
        "Session not found: cron:nope (list the sessions with `switchboard sessions list` or \
         the sessions.list method, and use the full key)"
    );

    let error = gw
        .call_err("tools.invoke", json!({"tool": "sessions_list"}))
        .await;
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert!(error.message.contains("sessionKey"), "{}", error.message);

    let error = gw
        .call_err(
            "tools.invoke",
            json!({"sessionKey": "main", "tool": "sessions_list", "args": [1, 2]}),
        )
        .await;
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert!(error.message.contains("JSON object"), "{}", error.message);

    // Arguments the tool rejects are the tool's answer, as the model would see it.
    let bad = invoke(&gw, "main", "sessions_list", json!({"limit": "lots"})).await;
    assert_eq!(bad["ok"], false);
    assert_eq!(bad["result"]["status"], "error");
    let message = bad["result"]["error"].as_str().unwrap();
    assert!(
        message.contains("limit") && message.contains("expected a number"),
        "{message}"
    );
    let missing = invoke(&gw, "main", "sessions_history", json!({})).await;
    assert_eq!(
        json!({"ok": missing["ok"], "result": missing["result"]}),
        json!({"ok": false, "result": {"status": "error", "error": "sessionKey required"}})
    );
    let absent = invoke(
        &gw,
        "main",
        "sessions_history",
        json!({"sessionKey": "cron:nope"}),
    )
    .await;
    assert_eq!(
        absent["result"]["error"],
        "No session found: agent:main:cron:nope (use sessions_list to find sessions)"
    );
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn access_tools_invoke_is_no_way_around_the_sandbox() {
    let mut config = Config::default();
    config.agents.defaults.sandbox.mode = SandboxMode::All;
    let gw = TestGateway::start_with(config).await;
    inject(&gw, "main", "parent").await;
    inject(&gw, CHILD, "child task").await;
    gw.call(
        "sessions.patch",
        json!({"key": CHILD, "spawnedBy": "agent:main:main"}),
    )
    .await;
    let secret = inject(&gw, "cron:secret", "top secret").await;
    let secret_id = secret["sessionId"].as_str().unwrap();

    let list = invoke(&gw, "main", "sessions_list", json!({})).await;
    let mut keys: Vec<String> = list["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap().to_string())
        .collect();
    keys.sort();
    // The sessions it spawned, not itself.
    assert_eq!(keys, vec![CHILD.to_string()]);

    let refused = invoke(
        &gw,
        "main",
        "sessions_history",
        json!({"sessionKey": secret_id}),
    )
    .await;
    assert_eq!(
        json!({"ok": refused["ok"], "result": refused["result"]}),
        json!({"ok": false, "result": {"status": "forbidden", "error":
            format!("Session not visible from this sandboxed agent session: {secret_id}")}})
    );
    let child = invoke(
        &gw,
        "main",
        "sessions_history",
        json!({"sessionKey": CHILD}),
    )
    .await;
    assert_eq!(child["result"]["messages"][0]["content"], "child task");
    gw.stop().await;
}

#[tokio::test]
async fn tools_list_shows_the_sessions_callable_tools_with_their_schemas() {
    let gw = TestGateway::start().await;
    gw.call("sessions.create", json!({"key": "main"})).await;
    gw.call("sessions.create", json!({"key": CHILD})).await;

    let listed = gw.call("tools.list", json!({"sessionKey": "main"})).await;
    assert_eq!(listed["sessionKey"], "agent:main:main");
    let tools = listed["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for tool in [
        "agents_list",
        "sessions_history",
        "sessions_list",
        "sessions_send",
    ] {
        assert!(names.contains(&tool), "{names:?}");
    }
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
    }
    // Every listed tool is one tools.invoke runs for this session.
    for name in names {
        let ran = gw
            .call(
                "tools.invoke",
                json!({"sessionKey": "main", "tool": name, "args": {}}),
            )
            .await;
        assert!(ran.get("result").is_some(), "{name}: {ran}");
    }

    // A sub-agent session gets no session tools (SPEC §7.4): they are not listed either.
    let child = gw.call("tools.list", json!({"sessionKey": CHILD})).await;
    let child_names: Vec<&str> = child["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        child_names.iter().all(|n| !n.starts_with("sessions_")),
        "{child_names:?}"
    );

    let missing = gw
        .call_err("tools.list", json!({"sessionKey": "cron:missing"}))
        .await;
    assert_eq!(missing.code, ErrorCode::NotFound);
    assert!(missing.message.contains("Session not found: cron:missing"));
    // No session: the default agent's main session; an agent by id: its main session.
    let default = gw.call("tools.list", json!({})).await;
    assert_eq!(default["sessionKey"], "agent:main:main");
    let unknown = gw.call_err("tools.list", json!({"agentId": "ghost"})).await;
    assert_eq!(unknown.code, ErrorCode::NotFound);
    assert!(
        unknown
            .message
            .contains("agentId: no agent ghost (configured: main)"),
        "{}",
        unknown.message
    );
    let bad = gw.call_err("tools.list", json!({"sessionKey": 7})).await;
    assert_eq!(bad.code, ErrorCode::InvalidRequest);
    assert!(bad.message.contains("sessionKey"), "{}", bad.message);
    gw.stop().await;
}
