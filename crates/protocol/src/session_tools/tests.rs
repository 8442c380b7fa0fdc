use serde_json::json;

use super::*;
use crate::sessions::SessionRow;
use crate::test_support::round_trip;

/// The property names and `required` list of `P`'s raw `schema_for!` output.
fn raw_shape<P: JsonSchema>() -> (Vec<String>, Value) {
    let raw = serde_json::to_value(schemars::schema_for!(P)).unwrap();
    let names = raw["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    (names, raw.get("required").cloned().unwrap_or(json!([])))
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn raw_schemas_keep_their_properties_and_required_lists() {
    assert_eq!(
        raw_shape::<ListParams>(),
        (
            names(&[
                "activeMinutes",
                "cursor",
                "kinds",
                "limit",
                "messageLimit",
                "search"
            ]),
            json!([])
        )
    );
    assert_eq!(
        raw_shape::<HistoryParams>(),
        (
            names(&[
                "agentId",
                "before",
                "includeTools",
                "label",
                "limit",
                "sessionKey"
            ]),
            json!([])
        )
    );
    assert_eq!(
        raw_shape::<SendParams>(),
        (
            names(&[
                "agentId",
                "label",
                "message",
                "sessionKey",
                "timeoutSeconds"
            ]),
            json!(["message"])
        )
    );
    assert_eq!(
        raw_shape::<SpawnParams>(),
        (
            names(&[
                "agentId",
                "cleanup",
                "label",
                "model",
                "runTimeoutSeconds",
                "task"
            ]),
            json!(["task"])
        )
    );
    assert_eq!(raw_shape::<AgentsListParams>(), (vec![], json!([])));
}

// The expected schemas are today's `tools.list` output (each tool's `inputSchema`), verbatim.

#[test]
fn the_list_schema_is_what_the_model_saw() {
    assert_eq!(
        tool_schema::<ListParams>(),
        json!({
            "properties": {
                "activeMinutes": {
                    "description": "Only sessions updated in the last N minutes (N ≥ 1). Omit for any age.",
                    "type": "number"
                },
                "cursor": {
                    "description": "The nextCursor of a previous sessions_list result, to get the next page.",
                    "type": "string"
                },
                "kinds": {
                    "description": "Only these kinds: any of \"main\", \"group\", \"cron\", \"hook\", \"node\", \"other\" (an array, or one string). Omit for every kind.",
                    "items": {"type": "string", "enum": ["main", "group", "cron", "hook", "node", "other"]},
                    "type": "array"
                },
                "limit": {
                    "description": "How many sessions to return (default 50, at most 200).",
                    "type": "number"
                },
                "messageLimit": {
                    "description": "Also return the last N messages of each session (0–20, default 0), tool results left out.",
                    "type": "number"
                },
                "search": {
                    "description": "Only sessions whose key, label or display name contains this text (case-insensitive).",
                    "type": "string"
                }
            },
            "type": "object"
        })
    );
}

#[test]
fn the_history_schema_is_what_the_model_saw() {
    assert_eq!(
        tool_schema::<HistoryParams>(),
        json!({
            "properties": {
                "agentId": {
                    "description": "With label: the agent whose sessions the label is looked up in (default: yours).",
                    "type": "string"
                },
                "before": {
                    "description": "Page backwards: only messages with a seq below this. Pass the nextBefore of a previous result.",
                    "type": "number"
                },
                "includeTools": {
                    "description": "Include tool results (role \"toolResult\"). Default false.",
                    "type": "boolean"
                },
                "label": {
                    "description": "Alternative to sessionKey: the session's label (as shown by sessions_list).",
                    "type": "string"
                },
                "limit": {
                    "description": "How many messages to return, newest last (default 50, at most 200).",
                    "type": "number"
                },
                "sessionKey": {
                    "description": "The session to read: its key from sessions_list (e.g. \"agent:main:discord:group:dev\"), its sessionId, or \"main\" for your own main session. Give this or `label`, not both.",
                    "type": "string"
                }
            },
            "oneOf": [{"required": ["sessionKey"]}, {"required": ["label"]}],
            "type": "object"
        })
    );
}

#[test]
fn the_send_schema_is_what_the_model_saw() {
    assert_eq!(
        tool_schema::<SendParams>(),
        json!({
            "properties": {
                "agentId": {
                    "description": "With `label`: the agent whose session carries the label (default: yours).",
                    "type": "string"
                },
                "label": {
                    "description": "The target session's label, instead of sessionKey.",
                    "type": "string"
                },
                "message": {
                    "description": "The message to send: the text the target's agent receives as its user message.",
                    "type": "string"
                },
                "sessionKey": {
                    "description": "The target session: its key from sessions_list (e.g. \"agent:main:discord:group:dev\"), \"main\" for your agent's main session, or its sessionId. Give this or `label`, not both.",
                    "type": "string"
                },
                "timeoutSeconds": {
                    "description": "Seconds to wait for the reply (default 30, at most 600). 0 sends without waiting.",
                    "type": "number"
                }
            },
            "oneOf": [{"required": ["sessionKey"]}, {"required": ["label"]}],
            "required": ["message"],
            "type": "object"
        })
    );
}

#[test]
fn the_spawn_schema_is_what_the_model_saw() {
    assert_eq!(
        tool_schema::<SpawnParams>(),
        json!({
            "properties": {
                "agentId": {
                    "description": "The agent to run the sub-agent as (default: yours). agents_list shows which ids work.",
                    "type": "string"
                },
                "cleanup": {
                    "description": "\"keep\" (default) archives the sub-agent's session later; \"delete\" removes it once its result was announced.",
                    "enum": ["keep", "delete"],
                    "type": "string"
                },
                "label": {
                    "description": "A short name for the sub-agent's session (unique per agent, at most 64 characters).",
                    "type": "string"
                },
                "model": {
                    "description": "`provider/model` for the sub-agent (default: the agent's sub-agent model, else its model).",
                    "type": "string"
                },
                "runTimeoutSeconds": {
                    "description": "Stop the sub-agent after this many seconds (0 or absent: the agent's own timeout).",
                    "type": "number"
                },
                "task": {
                    "description": "What the sub-agent should do, written as a complete instruction: it is all the sub-agent is told.",
                    "type": "string"
                }
            },
            "required": ["task"],
            "type": "object"
        })
    );
}

#[test]
fn the_agents_list_schema_is_an_empty_object() {
    assert_eq!(
        tool_schema::<AgentsListParams>(),
        json!({"properties": {}, "type": "object"})
    );
}

#[test]
fn params_decode_as_leniently_as_before() {
    let list: ListParams = serde_json::from_value(json!({
        "kinds": "group", "limit": "20", "activeMinutes": 5.5, "messageLimit": null,
        "search": "dev", "unknown": true
    }))
    .unwrap();
    assert_eq!(
        list,
        ListParams {
            kinds: Some(json!("group")),
            limit: Some(20),
            active_minutes: Some(5),
            message_limit: None,
            search: Some("dev".into()),
            cursor: None,
        }
    );
    assert!(serde_json::from_value::<ListParams>(json!({"limit": "many"})).is_err());

    for alias in ["sessionKey", "session_key", "key", "sessionId"] {
        let history: HistoryParams =
            serde_json::from_value(json!({alias: "main", "includeTools": "yes", "before": "7"}))
                .unwrap();
        assert_eq!(history.session_key.as_deref(), Some("main"), "{alias}");
        assert_eq!(history.include_tools, Some(true));
        assert_eq!(history.before, Some(7));
    }
    let by_label: HistoryParams =
        serde_json::from_value(json!({"label": "ops", "agent_id": "work"})).unwrap();
    assert_eq!(
        by_label,
        HistoryParams {
            label: Some("ops".into()),
            agent_id: Some("work".into()),
            ..HistoryParams::default()
        }
    );

    let send: SendParams = serde_json::from_value(json!({
        "sessionKey": "main", "message": "hi", "timeoutSeconds": "0"
    }))
    .unwrap();
    assert_eq!(send.timeout_seconds, Some(0));
    assert_eq!(
        serde_json::from_value::<SendParams>(json!({})).unwrap(),
        SendParams::default()
    );
    let spawn: SpawnParams =
        serde_json::from_value(json!({"task": "t", "runTimeoutSeconds": 90.9, "cleanup": null}))
            .unwrap();
    assert_eq!(spawn.run_timeout_seconds, Some(90));
    assert_eq!(spawn.cleanup, None);
    assert_eq!(
        serde_json::from_value::<AgentsListParams>(json!({"extra": 1})).unwrap(),
        AgentsListParams {}
    );
    assert!(serde_json::from_value::<AgentsListParams>(json!("x")).is_err());
}

#[test]
fn params_serialize_only_what_is_set() {
    let send = SendParams {
        session_key: Some("main".into()),
        message: Some("hi".into()),
        timeout_seconds: Some(0),
        ..SendParams::default()
    };
    assert_eq!(
        serde_json::to_value(&send).unwrap(),
        json!({"sessionKey": "main", "message": "hi", "timeoutSeconds": 0})
    );
    let history = HistoryParams {
        session_key: Some("main".into()),
        include_tools: Some(false),
        ..HistoryParams::default()
    };
    let value = serde_json::to_value(&history).unwrap();
    assert_eq!(value, json!({"sessionKey": "main", "includeTools": false}));
    assert_eq!(
        serde_json::from_value::<HistoryParams>(value).unwrap(),
        history
    );
    assert_eq!(
        serde_json::to_value(ListParams::default()).unwrap(),
        json!({})
    );
    assert_eq!(
        serde_json::to_value(SpawnParams {
            task: Some("t".into()),
            ..SpawnParams::default()
        })
        .unwrap(),
        json!({"task": "t"})
    );
}

#[test]
fn failures_carry_their_status() {
    round_trip(
        ToolFailure::error("sessionKey required"),
        json!({"status": "error", "error": "sessionKey required"}),
    );
    round_trip(
        ToolFailure::forbidden("not visible"),
        json!({"status": "forbidden", "error": "not visible"}),
    );
    assert_eq!(ToolFailure::forbidden("no").message(), "no");
}

#[test]
fn list_and_history_results_have_the_tool_shapes() {
    let row = SessionRow {
        key: "main".into(),
        kind: crate::sessions::SessionKind::Main,
        channel: "unknown".into(),
        agent_id: "main".into(),
        session_id: "s1".into(),
        created_at: 1,
        updated_at: 2,
        chat_type: None,
        display_name: None,
        label: None,
        model: None,
        context_tokens: None,
        input_tokens: None,
        output_tokens: None,
        total_tokens: None,
        cost_usd: None,
        thinking_level: None,
        verbose_level: None,
        system_sent: None,
        aborted_last_run: None,
        send_policy: None,
        last_channel: None,
        last_to: None,
        delivery_context: None,
        spawned_by: None,
        archived_at: None,
        transcript_path: Some("/t/s1.jsonl".into()),
        messages: None,
        run_state: None,
        activity: None,
        subagent: None,
    };
    let row_json = json!({
        "key": "main", "kind": "main", "channel": "unknown", "agentId": "main",
        "sessionId": "s1", "createdAt": 1, "updatedAt": 2, "transcriptPath": "/t/s1.jsonl"
    });
    round_trip(
        ListResult {
            count: 1,
            sessions: vec![row.clone()],
            next_cursor: Some("c".into()),
            total_count: Some(7),
            has_more: Some(true),
            next_offset: Some(1),
            warning: Some("kinds: ignored \"x\"".into()),
            defaults: None,
        },
        json!({"count": 1, "sessions": [row_json.clone()], "nextCursor": "c", "totalCount": 7,
            "hasMore": true, "nextOffset": 1, "warning": "kinds: ignored \"x\""}),
    );
    round_trip(
        ListResult {
            count: 1,
            sessions: vec![row],
            next_cursor: None,
            total_count: None,
            has_more: None,
            next_offset: None,
            warning: None,
            defaults: None,
        },
        json!({"count": 1, "sessions": [row_json]}),
    );

    let message = json!({"role": "user", "content": "hi", "timestamp": 1, "seq": 4});
    round_trip(
        HistoryResult {
            session_key: "agent:main:cron:daily".into(),
            messages: vec![serde_json::from_value(message.clone()).unwrap()],
            truncated: true,
            dropped_messages: 3,
            content_truncated: false,
            bytes: 53,
            next_before: Some(4),
        },
        json!({
            "sessionKey": "agent:main:cron:daily",
            "messages": [message],
            "truncated": true,
            "droppedMessages": 3,
            "contentTruncated": false,
            "bytes": 53,
            "nextBefore": 4,
        }),
    );
    round_trip(
        HistoryResult {
            session_key: "main".into(),
            messages: vec![],
            truncated: false,
            dropped_messages: 0,
            content_truncated: false,
            bytes: 2,
            next_before: None,
        },
        json!({
            "sessionKey": "main", "messages": [], "truncated": false, "droppedMessages": 0,
            "contentTruncated": false, "bytes": 2,
        }),
    );
}

#[test]
fn send_results_have_every_shape_the_tool_answers() {
    let cases = [
        (
            SendResult::Accepted {
                run_id: "r1".into(),
                session_key: "main".into(),
            },
            json!({"status": "accepted", "runId": "r1", "sessionKey": "main"}),
            false,
        ),
        (
            SendResult::Ok {
                run_id: "r1".into(),
                reply: "pong".into(),
                session_key: "main".into(),
            },
            json!({"status": "ok", "runId": "r1", "reply": "pong", "sessionKey": "main"}),
            false,
        ),
        (
            SendResult::Timeout {
                run_id: "r1".into(),
                session_key: "main".into(),
                run: PendingRun {
                    state: PendingState::Running,
                },
                error: "the reply did not arrive within 5s".into(),
            },
            json!({
                "status": "timeout", "runId": "r1", "sessionKey": "main",
                "run": {"state": "running"}, "error": "the reply did not arrive within 5s",
            }),
            false,
        ),
        (
            SendResult::Timeout {
                run_id: "r1".into(),
                session_key: "main".into(),
                run: PendingRun {
                    state: PendingState::Queued,
                },
                error: "late".into(),
            },
            json!({
                "status": "timeout", "runId": "r1", "sessionKey": "main",
                "run": {"state": "queued"}, "error": "late",
            }),
            false,
        ),
        (
            SendResult::Error {
                error: "the target run ended error: boom".into(),
                run_id: Some("r1".into()),
                session_key: Some("main".into()),
            },
            json!({
                "status": "error", "runId": "r1", "sessionKey": "main",
                "error": "the target run ended error: boom",
            }),
            true,
        ),
        (
            SendResult::from(ToolFailure::error("message required")),
            json!({"status": "error", "error": "message required"}),
            true,
        ),
        (
            SendResult::Forbidden {
                error: "send policy denies".into(),
                session_key: Some("main".into()),
            },
            json!({"status": "forbidden", "error": "send policy denies", "sessionKey": "main"}),
            true,
        ),
        (
            SendResult::from(ToolFailure::forbidden("not visible")),
            json!({"status": "forbidden", "error": "not visible"}),
            true,
        ),
    ];
    for (result, expected, is_error) in cases {
        assert_eq!(result.is_error(), is_error, "{expected}");
        round_trip(result, expected);
    }
}

#[test]
fn spawn_results_have_every_shape_the_tool_answers() {
    let accepted = SpawnResult::Accepted {
        run_id: "r2".into(),
        child_session_key: "agent:main:subagent:u".into(),
    };
    assert!(!accepted.is_error());
    round_trip(
        accepted,
        json!({"status": "accepted", "runId": "r2", "childSessionKey": "agent:main:subagent:u"}),
    );
    let error = SpawnResult::from(ToolFailure::error("task required"));
    assert!(error.is_error());
    round_trip(error, json!({"status": "error", "error": "task required"}));
    let forbidden = SpawnResult::from(ToolFailure::forbidden("agentId is not allowed"));
    assert!(forbidden.is_error());
    round_trip(
        forbidden,
        json!({"status": "forbidden", "error": "agentId is not allowed"}),
    );
}

#[test]
fn agents_list_result_has_the_tool_shape() {
    round_trip(
        AgentsListResult {
            requester: "main".into(),
            allow_any: false,
            agents: vec![
                AgentChoice {
                    id: "main".into(),
                    name: Some("Main".into()),
                    configured: true,
                    tools: Vec::new(),
                },
                AgentChoice {
                    id: "ghost".into(),
                    name: None,
                    configured: false,
                    tools: Vec::new(),
                },
            ],
        },
        json!({
            "requester": "main",
            "allowAny": false,
            "agents": [
                {"id": "main", "name": "Main", "configured": true},
                {"id": "ghost", "configured": false},
            ],
        }),
    );
}
