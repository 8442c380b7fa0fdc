//! `sessions_list`, `sessions_history` and `agents_list` through real runs (the scripted model and
//! the mock OpenAI-compatible server) and through `invoke_tool`, the way `tools.invoke` calls them.
//!
//! Tests marked "access" depend on the rules of `crate::access` (SPEC §8.1); the rest check the
//! tools' own behaviour and hold whatever those rules say.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::access::{self, Operation, Target};
use switchboard_core::config::{self, Config, ProviderApi, ProviderConfig};
use switchboard_core::runtime::tool::ToolOutput;
use switchboard_core::store::{ListQuery, NewSession, RunRecord, RunStatus, SessionEntry};
use switchboard_core::{CoreError, Engine};
use switchboard_testkit::{MockLlm, MockReply, MockToolCall};
use tokio_util::sync::CancellationToken;

mod history;
mod list;

use super::support::{TestEngine, message};

const CHILD: &str = "agent:main:subagent:5b0e7a52-8c1e-4c8f-9d35-0f4c1a6e2b11";

struct H {
    engine: Arc<Engine>,
    t: TestEngine,
}

impl H {
    async fn open(config: Config) -> Self {
        let t = TestEngine::open(config).await;
        Self {
            engine: t.engine.clone(),
            t,
        }
    }

    async fn with(config: &str) -> Self {
        Self::open(config::load_str(config, "test", &|_| None).unwrap().config).await
    }

    fn new_session(&self, key: &str) -> NewSession {
        let key = self.engine.resolver().canonical(key, None).unwrap();
        self.engine.resolver().new_session(&key)
    }

    /// Creates (or appends to) a session with these messages.
    async fn add(&self, key: &str, messages: Vec<Value>) -> SessionEntry {
        self.add_new(self.new_session(key), messages).await
    }

    async fn add_new(&self, new: NewSession, messages: Vec<Value>) -> SessionEntry {
        let key = new.key.clone();
        let messages = messages.into_iter().map(message).collect();
        self.engine
            .store()
            .append(&key, Some(new), messages)
            .await
            .unwrap()
            .entry
    }

    async fn invoke(&self, session: &str, tool: &str, args: Value) -> ToolOutput {
        self.t.invoke(session, tool, args).await
    }

    /// A successful tool result.
    async fn ok(&self, session: &str, tool: &str, args: Value) -> Value {
        let out = self.invoke(session, tool, args.clone()).await;
        assert!(!out.is_error, "{tool} {args}: {}", out.text());
        out.content
    }

    /// A refused or failed tool result: `(status, error)`.
    async fn fails(&self, session: &str, tool: &str, args: Value) -> (String, String) {
        let out = self.invoke(session, tool, args.clone()).await;
        assert!(out.is_error, "{tool} {args} should fail: {}", out.text());
        (
            out.content["status"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            out.content["error"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    }

    async fn keys(&self, session: &str, args: Value) -> Vec<String> {
        keys_of(&self.ok(session, "sessions_list", args).await)
    }

    /// One run of `session` with `message`, waited for.
    async fn turn(&self, session: &str, message: &str) -> RunRecord {
        super::support::turn(&self.engine, session, message).await
    }

    async fn transcript(&self, key: &str) -> Vec<Value> {
        super::support::transcript(&self.engine, key).await
    }

    /// Sets a session's `updatedAt` behind the store's back (the store always stamps "now").
    async fn backdate(&self, key: &str, updated_at: i64) {
        let n = self
            .t
            .sql_behind(
                "UPDATE sessions SET updated_at = ?2 WHERE key = ?1",
                "UPDATE sessions SET updated_at = $2 WHERE key = $1",
                key,
                updated_at,
            )
            .await;
        assert_eq!(n, 1);
    }
}

fn keys_of(list: &Value) -> Vec<String> {
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap().to_string())
        .collect()
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text, "timestamp": 1})
}

fn assistant(text: &str) -> Value {
    json!({
        "role": "assistant", "content": [{"type": "text", "text": text}],
        "provider": "p", "model": "m",
        "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3, "cost": {"total": 0.1}},
        "stopReason": "stop", "timestamp": 1
    })
}

fn tool_call(id: &str) -> Value {
    json!({
        "role": "assistant",
        "content": [{"type": "toolCall", "id": id, "name": "lookup", "arguments": {"q": id}}],
        "provider": "p", "model": "m", "stopReason": "toolUse", "timestamp": 1
    })
}

fn tool_result(id: &str) -> Value {
    json!({
        "role": "toolResult", "toolCallId": id, "toolName": "lookup",
        "content": [{"type": "text", "text": format!("result {id}")}],
        "details": {"raw": "x".repeat(100)}, "isError": false, "timestamp": 1
    })
}

fn seqs(history: &Value) -> Vec<i64> {
    history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_i64().unwrap())
        .collect()
}

fn roles(history: &Value) -> Vec<String> {
    history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

/// Sessions of every kind for agent `main`.
async fn every_kind(h: &H) {
    for key in [
        "main",
        "discord:group:dev",
        "slack:channel:general",
        "cron:nightly",
        "hook:3f1c",
        "node-pi4",
        CHILD,
        "my-notes",
    ] {
        h.add(key, vec![user("hello")]).await;
    }
}

async fn visible_rows(h: &H, requester_key: &str) -> Vec<String> {
    let config = h.engine.config();
    let requester = access::requester(config, requester_key);
    let all = h
        .engine
        .store()
        .list(ListQuery {
            exclude_keys: vec!["global".into(), "unknown".into()],
            limit: 10_000,
            ..ListQuery::default()
        })
        .await
        .unwrap();
    all.entries
        .iter()
        .filter(|e| {
            let target = Target {
                key: &e.key,
                agent_id: &e.agent_id,
                spawned_by: e.spawned_by.as_deref(),
            };
            access::decide(config, &requester, target, Operation::List).is_ok()
        })
        .map(|e| e.key.as_str().to_string())
        .collect()
}

/// Pages through `sessions_list` with `limit`, checking that every page but the last is full.
async fn all_pages(h: &H, requester: &str, limit: i64) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let mut args = json!({"limit": limit.to_string()});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = h.ok(requester, "sessions_list", args).await;
        let keys = keys_of(&page);
        assert_eq!(page["count"], keys.len());
        cursor = page["nextCursor"].as_str().map(str::to_string);
        if cursor.is_some() {
            assert_eq!(keys.len() as i64, limit, "a page before the last is full");
        }
        seen.extend(keys);
        if cursor.is_none() {
            return seen;
        }
    }
    panic!("more than 100 pages");
}

#[tokio::test]
async fn agents_list_names_itself_then_the_allow_list() {
    let h = H::with(
        r#"{ agents: { list: [
              {id: "main", default: true, name: "Main", subagents: { allowAgents: ["*"] }},
              {id: "research", name: "Research", subagents: { allowAgents: ["main", "Ghost"] }},
              {id: "ops"} ] } }"#,
    )
    .await;
    for key in ["agent:main:main", "agent:research:main", "agent:ops:main"] {
        h.add(key, vec![]).await;
    }
    let all = h.ok("agent:main:main", "agents_list", json!({})).await;
    assert_eq!(
        all,
        json!({"requester": "main", "allowAny": true, "agents": [
            {"id": "main", "name": "Main", "configured": true, "tools": ["apply_patch", "cron", "edit", "message", "read", "session_status", "web_fetch", "write"]},
            {"id": "research", "name": "Research", "configured": true, "tools": ["apply_patch", "cron", "edit", "message", "read", "session_status", "web_fetch", "write"]},
            {"id": "ops", "configured": true, "tools": ["apply_patch", "cron", "edit", "message", "read", "session_status", "web_fetch", "write"]},
        ]})
    );
    // A field the tool does not take is refused, not dropped (SPEC §12).
    let (_, error) = h
        .fails("agent:research:main", "agents_list", json!({"ignored": 1}))
        .await;
    assert!(
        error.contains("unknown field `ignored`; no fields are accepted here"),
        "{error}"
    );
    let some = h.ok("agent:research:main", "agents_list", json!({})).await;
    assert_eq!(
        some,
        json!({"requester": "research", "allowAny": false, "agents": [
            {"id": "research", "name": "Research", "configured": true, "tools": ["apply_patch", "cron", "edit", "message", "read", "session_status", "web_fetch", "write"]},
            {"id": "main", "name": "Main", "configured": true, "tools": ["apply_patch", "cron", "edit", "message", "read", "session_status", "web_fetch", "write"]},
            {"id": "ghost", "configured": false, "tools": ["apply_patch", "cron", "edit", "message", "read", "session_status", "web_fetch", "write"]},
        ]})
    );
    let alone = h.ok("agent:ops:main", "agents_list", Value::Null).await;
    assert_eq!(
        alone,
        json!({"requester": "ops", "allowAny": false, "agents": [{"id": "ops", "configured": true, "tools": ["apply_patch", "cron", "edit", "message", "read", "session_status", "web_fetch", "write"]}]})
    );
    // With no agents configured, the implicit default agent is itself.
    let h = H::open(Config::default()).await;
    h.add("main", vec![]).await;
    let only = h.ok("main", "agents_list", json!({})).await;
    assert_eq!(
        only,
        json!({"requester": "main", "allowAny": false, "agents": [{"id": "main", "configured": true, "tools": ["apply_patch", "cron", "edit", "message", "read", "session_status", "web_fetch", "write"]}]})
    );
}

#[tokio::test]
async fn invoke_tool_checks_the_session_the_tool_and_the_agents_policy() {
    let h = H::with(
        r#"{ agents: { list: [ {id: "main", default: true},
                               {id: "locked", tools: { deny: ["sessions_history"] }} ] } }"#,
    )
    .await;
    h.add("main", vec![user("hi")]).await;
    h.add("agent:locked:main", vec![user("hi")]).await;
    h.add(CHILD, vec![user("child")]).await;

    let err = h
        .engine
        .tools()
        .call(
            "cron:missing",
            "sessions_list",
            json!({}),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::NotFound(_)), "{err}");
    assert!(
        err.to_string().contains("Session not found: cron:missing"),
        "{err}"
    );

    let err = h
        .engine
        .tools()
        .call("main", "nonesuch", json!({}), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::Invalid(_)));
    let text = err.to_string();
    for tool in [
        "agents_list",
        "sessions_history",
        "sessions_list",
        "sessions_send",
    ] {
        assert!(text.contains(tool), "{text}");
    }

    // A built-in the policy does not give: refused, naming the setting.
    let err = h
        .engine
        .tools()
        .call("main", "exec", json!({}), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::Forbidden(_)), "{err}");
    assert!(err.to_string().contains("names group:runtime"), "{err}");

    let err = h
        .engine
        .tools()
        .call(
            "main",
            "sessions_list",
            json!("limit=5"),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::Invalid(_)));
    assert!(err.to_string().contains("JSON"), "{err}");

    let err = h
        .engine
        .tools()
        .call(
            "agent:locked:main",
            "sessions_history",
            json!({}),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::Forbidden(_)), "{err}");
    assert!(err.to_string().contains("tools.allow/deny"), "{err}");
    // The agent's other tools still work.
    h.ok("agent:locked:main", "sessions_list", json!({})).await;

    // Sub-agent sessions get no session tools unless tools.subagents.tools.allow names them.
    let err = h
        .engine
        .tools()
        .call(CHILD, "sessions_list", json!({}), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::Forbidden(_)), "{err}");
    assert!(
        err.to_string().contains("tools.subagents.tools.allow"),
        "{err}"
    );
    // agents_list only serves sessions_spawn, which sub-agents cannot call: it goes too.
    let err = h
        .engine
        .tools()
        .call(CHILD, "agents_list", json!({}), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::Forbidden(_)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_mock_openai_server_the_next_request_carries_the_tool_result() {
    let mock = MockLlm::start().await;
    let mut config = Config::default();
    config.models.providers.insert(
        "mock".into(),
        ProviderConfig {
            api: ProviderApi::OpenAiCompletions,
            base_url: Some(mock.openai_base_url()),
            api_key: Some("sk-test".into()),
            stream: Some(true),
            max_retries: Some(0),
            timeout_seconds: Some(5),
            ..ProviderConfig::default()
        },
    );
    config.agents.defaults.model = config::ModelRef::new("mock/m1");
    let h = H::open(config).await;
    h.add("discord:group:dev", vec![user("hi")]).await;
    h.add("cron:nightly", vec![user("hi")]).await;

    mock.push(MockReply::ToolCalls(vec![MockToolCall::new(
        "call_1",
        "sessions_list",
        r#"{"kinds": "group", "limit": "5"}"#,
    )]));
    mock.push(MockReply::text("there is one group"));
    let record = h.turn("main", "which groups are there?").await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    assert_eq!(record.result.as_deref(), Some("there is one group"));

    let t = h.transcript("agent:main:main").await;
    let result = t.iter().find(|m| m["role"] == "toolResult").unwrap();
    let text = result["content"][0]["text"].as_str().unwrap();
    let listed: Value = serde_json::from_str(text).unwrap();
    assert_eq!(listed["count"], 1);
    assert_eq!(listed["sessions"][0]["key"], "agent:main:discord:group:dev");

    mock.assert_tool_results_answer_tool_calls();
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let offered = requests[0].body.to_string();
    assert!(
        offered.contains("\"sessions_list\"") && offered.contains("\"sessions_history\""),
        "the session tools are offered"
    );
    let carried = requests[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(carried["tool_call_id"], "call_1");
    assert!(
        carried["content"]
            .to_string()
            .contains("agent:main:discord:group:dev"),
        "{carried}"
    );
    mock.stop().await;
}

#[tokio::test]
async fn schemas_are_shaped_for_models() {
    let h = H::open(Config::default()).await;
    let registry = h.engine.runtime();
    let names = [
        "sessions_list",
        "sessions_history",
        "agents_list",
        "sessions_send",
        "sessions_spawn",
    ];
    for name in names {
        let tool = registry.tool(name).unwrap();
        let schema = tool.parameters();
        let text = schema.to_string();
        assert_eq!(schema["type"], "object", "{name}");
        assert!(!text.contains("integer"), "{name}: numbers are `number`");
        assert!(
            !text.contains("anyOf") && !text.contains("$schema"),
            "{name}: {text}"
        );
        for (field, property) in schema["properties"].as_object().unwrap() {
            assert!(
                property["description"].is_string(),
                "{name}.{field} has a description"
            );
            assert!(
                property["type"].is_string(),
                "{name}.{field}: one type, never [X, \"null\"]"
            );
        }
        assert!(tool.hints().is_some(), "{name} has annotations");
        assert!(tool.description().len() > 100, "{name}");
    }
    let history = registry.tool("sessions_history").unwrap().parameters();
    let one_target = json!([{"required": ["sessionKey"]}, {"required": ["label"]}]);
    assert_eq!(history["oneOf"], one_target);
    assert_eq!(history["properties"]["sessionKey"]["type"], "string");
    let send = registry.tool("sessions_send").unwrap().parameters();
    assert_eq!(
        (&send["required"], &send["oneOf"]),
        (&json!(["message"]), &one_target)
    );
    let spawn = registry.tool("sessions_spawn").unwrap().parameters();
    assert_eq!(spawn["required"], json!(["task"]));
    assert_eq!(
        spawn["properties"]["cleanup"]["enum"],
        json!(["keep", "delete"])
    );
    let list = registry.tool("sessions_list").unwrap().parameters();
    assert!(list.get("required").is_none());
}
