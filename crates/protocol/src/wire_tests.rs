//! Wire pins: JSON as the gateway sends it today, read into the protocol's types and written
//! back. Results reach a socket as `to_string(to_value(result))` (the server's one encoder), so
//! equal values are equal bytes. These pins were written before the fields they cover were
//! typed, and must pass unchanged after: a typed field that loses, adds or renames anything
//! fails here.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::agents::{McpServerHealth, StoreHealthInfo};
use crate::chat::ChatHistoryResult;
use crate::cron::{CronDelivery, CronJobState, CronPayload, ScheduleView};
use crate::delivery::{DeliveryInfo, DeliveryKind, WebhookOutbound};
use crate::exchanges::ExchangeInfo;
use crate::message::HistoryMessage;
use crate::runs::RunResult;
use crate::session_tools::{HistoryResult, ListResult};
use crate::sessions::SessionsListResult;

/// Reads `wire` as a `T`, writes it back, and checks that nothing changed.
fn pin<T: Serialize + DeserializeOwned>(wire: Value) {
    let typed: T = serde_json::from_value(wire.clone()).unwrap();
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(back, wire);
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        serde_json::to_string(&wire).unwrap()
    );
}

/// One transcript message of each role and of each block kind, as the run loop stores them.
fn transcript() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "hi", "timestamp": 1, "seq": 1}),
        json!({"role": "user", "content": [{"type": "text", "text": "look"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}],
               "timestamp": 2, "seq": 2,
               "provenance": {"kind": "agent", "fromSessionKey": "agent:main:x", "runId": "r0"}}),
        json!({"role": "assistant", "seq": 3, "timestamp": 3,
               "content": [{"type": "thinking", "thinking": "hm", "thinkingSignature": "s"},
                           {"type": "text", "text": "calling"},
                           {"type": "toolCall", "id": "c1", "name": "sessions_list",
                            "arguments": {"limit": 2, "kinds": ["main"]}}],
               "provider": "openai", "model": "gpt", "stopReason": "toolUse",
               "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0,
                         "totalTokens": 15, "cost": {"total": 0.01}}}),
        json!({"role": "toolResult", "seq": 4, "timestamp": 4, "toolCallId": "c1",
               "toolName": "sessions_list", "isError": false,
               "content": [{"type": "text", "text": "{}"}], "details": {"count": 0}}),
        json!({"role": "assistant", "seq": 5, "timestamp": 5, "content": [],
               "provider": "openai", "model": "gpt", "stopReason": "error",
               "errorMessage": "boom",
               "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                         "totalTokens": 0}}),
        json!({"role": "user", "seq": 6, "timestamp": 6, "content": "summary",
               "provenance": {"kind": "compaction", "coversUntilSeq": 4}}),
        json!({"role": "user", "seq": 7, "timestamp": 7, "content": "tick",
               "provenance": {"kind": "cron", "jobId": "j1", "trigger": "schedule",
                              "scheduledAt": 60000}}),
    ]
}

#[test]
fn chat_history_messages() {
    pin::<ChatHistoryResult>(json!({
        "sessionKey": "main", "sessionId": "s1", "messages": transcript(), "nextBefore": 1,
    }));
    pin::<ChatHistoryResult>(json!({"sessionKey": "main", "messages": []}));
    // Each is read as a transcript message, not kept as foreign JSON.
    for message in transcript() {
        let read: HistoryMessage = serde_json::from_value(message.clone()).unwrap();
        assert!(matches!(read, HistoryMessage::Transcript(_)), "{message}");
    }
    let foreign = json!({"role": "system", "text": "by hand", "seq": 9});
    let read: HistoryMessage = serde_json::from_value(foreign.clone()).unwrap();
    assert_eq!(read, HistoryMessage::Unrecognised(foreign));
}

fn row(messages: Option<Vec<Value>>) -> Value {
    let mut row = json!({
        "key": "main", "kind": "main", "channel": "unknown", "agentId": "main",
        "sessionId": "s1", "createdAt": 1, "updatedAt": 2,
    });
    if let Some(messages) = messages {
        row["messages"] = Value::Array(messages);
    }
    row
}

#[test]
fn session_rows_with_their_last_messages() {
    pin::<SessionsListResult>(json!({
        "count": 2, "sessions": [row(Some(transcript())), row(None)],
    }));
}

#[test]
fn runs() {
    for (status, state) in [
        ("ok", None),
        ("error", None),
        ("aborted", None),
        ("timeout", Some("queued")),
        ("timeout", Some("running")),
    ] {
        let mut run = json!({"runId": "r1", "status": status, "sessionKey": "agent:main:main"});
        if let Some(state) = state {
            run["state"] = json!(state);
            run["waitTimedOut"] = json!(true);
        }
        pin::<RunResult>(run);
    }
}

#[test]
fn deliveries() {
    // `later-kind`: one a newer gateway sharing the database wrote, kept as it is.
    for kind in [
        "reply",
        "announce",
        "subagent-announce",
        "send",
        "command",
        "pairing",
        "later-kind",
    ] {
        for status in ["pending", "delivered", "failed", "denied", "recorded"] {
            pin::<DeliveryInfo>(json!({
                "id": "d1", "kind": kind, "status": status, "channel": "webhook", "to": "c1",
                "text": "hello", "attempts": 1, "createdAt": 1, "updatedAt": 2,
            }));
        }
        pin::<WebhookOutbound>(json!({
            "id": "d1", "kind": kind, "accountId": "ops", "to": "c1", "text": "hello",
        }));
    }
}

#[test]
fn exchanges() {
    for state in ["primary", "replying", "announcing", "done", "failed"] {
        pin::<ExchangeInfo>(json!({
            "id": "r1", "requesterKey": "agent:main:main", "targetKey": "agent:main:x",
            "state": state, "turn": 0, "stepRunId": "r1", "attempt": 0, "createdAt": 1,
            "updatedAt": 2,
        }));
    }
}

/// The messages of [`transcript`] as another session's model reads them: no usage, details or
/// signatures, image data as its size, a long tool call's arguments as cut text, and a
/// placeholder for a message too large even so.
fn trimmed() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "hi", "timestamp": 1, "seq": 1}),
        json!({"role": "user", "content": [{"type": "text", "text": "look"},
                {"type": "image", "data": {"omitted": true, "bytes": 8}, "mimeType": "image/png"}],
               "timestamp": 2, "seq": 2,
               "provenance": {"kind": "agent", "fromSessionKey": "agent:main:x", "runId": "r0"}}),
        json!({"role": "assistant", "seq": 3, "timestamp": 3,
               "content": [{"type": "thinking", "thinking": "hm"},
                           {"type": "text", "text": "calling… [truncated 6000 chars]"},
                           {"type": "toolCall", "id": "c1", "name": "sessions_list",
                            "arguments": "{\"a\":\"xxxx… [truncated 10 chars]"}],
               "provider": "openai", "model": "gpt", "stopReason": "toolUse"}),
        json!({"role": "toolResult", "seq": 4, "timestamp": 4, "toolCallId": "c1",
               "toolName": "sessions_list", "isError": false,
               "content": [{"type": "text", "text": "{}"}]}),
        json!({"role": "assistant", "seq": 5, "timestamp": 5, "content": [],
               "provider": "openai", "model": "gpt", "stopReason": "error",
               "errorMessage": "boom"}),
        json!({"role": "toolResult", "seq": 6, "timestamp": 6, "omitted": true, "bytes": 90000,
               "content": [{"type": "text", "text": "[message 6 (toolResult) omitted: …]"}]}),
    ]
}

#[test]
fn what_another_sessions_model_reads() {
    pin::<HistoryResult>(json!({
        "sessionKey": "main", "messages": trimmed(), "truncated": true, "droppedMessages": 0,
        "contentTruncated": true, "bytes": 1234, "nextBefore": 1,
    }));
    pin::<ListResult>(json!({"count": 1, "sessions": [row(Some(trimmed()))]}));
}

#[test]
fn session_kinds_run_states_and_subagents() {
    for kind in ["main", "group", "cron", "hook", "node", "other"] {
        let mut row = row(None);
        row["kind"] = json!(kind);
        pin::<SessionsListResult>(json!({"count": 1, "sessions": [row]}));
    }
    for run_state in ["queued", "running"] {
        for state in ["running", "announcing", "announced", "done"] {
            let mut row = row(None);
            row["runState"] = json!(run_state);
            row["subagent"] = json!({"state": state, "outcome": "ok", "task": "t", "endedAt": 3});
            pin::<SessionsListResult>(json!({"count": 1, "sessions": [row]}));
        }
    }
}

#[test]
fn cron_schedules_and_last_runs() {
    pin::<ScheduleView>(json!({"kind": "cron", "expr": "0 * * * *", "tz": "UTC"}));
    pin::<ScheduleView>(json!({"kind": "every", "everyMs": 60000}));
    for status in ["ok", "error", "timeout", "aborted"] {
        pin::<CronJobState>(json!({"nextRunAtMs": 2, "lastRunAtMs": 1, "lastRunStatus": status}));
    }
    pin::<CronJobState>(json!({"runningAtMs": 1}));
}

#[test]
fn a_delivery_kind_this_build_does_not_know_is_kept_by_name() {
    let kind: DeliveryKind = serde_json::from_value(json!("later-kind")).unwrap();
    assert_eq!(kind, DeliveryKind::Other("later-kind".into()));
    let known: DeliveryKind = serde_json::from_value(json!("subagent-announce")).unwrap();
    assert_eq!(known, DeliveryKind::SubagentAnnounce);
}

#[test]
fn cron_payloads_and_deliveries() {
    pin::<CronPayload>(json!({"kind": "agentTurn", "message": "@reply nightly report"}));
    pin::<CronDelivery>(json!({"mode": "announce"}));
    pin::<CronDelivery>(json!({"mode": "none"}));
}

#[test]
fn health_states() {
    for state in ["starting", "running", "restarting", "stopped"] {
        pin::<McpServerHealth>(json!({
            "transport": "stdio", "state": state, "tools": ["fs__read"], "restarts": 0,
            "cancelled": 0,
        }));
    }
    for state in ["ok", "degraded", "unreachable"] {
        pin::<StoreHealthInfo>(json!({"kind": "postgres", "state": state, "detail": "db"}));
    }
}

#[test]
fn messages_name_their_run_and_rows_their_last_run() {
    // Issue 35: the reference's Control UI matches sent and streamed messages by these.
    let named = vec![
        json!({"role": "user", "content": "hi", "timestamp": 1, "seq": 1,
               "__openclaw": {"id": "00000001", "seq": 1, "idempotencyKey": "r1:user"}}),
        json!({"role": "assistant", "seq": 2, "timestamp": 2,
               "content": [{"type": "text", "text": "hello"}],
               "provider": "builtin", "model": "scripted", "stopReason": "stop",
               "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                         "totalTokens": 2},
               "__openclaw": {"id": "00000002", "seq": 2, "runId": "r1"}}),
    ];
    pin::<ChatHistoryResult>(json!({"sessionKey": "main", "sessionId": "s1", "messages": named}));
    let mut done = row(None);
    for (field, value) in [
        ("status", json!("done")),
        ("hasActiveRun", json!(false)),
        ("activeRunIds", json!([])),
        ("lastRunId", json!("r1")),
        ("startedAt", json!(10)),
        ("endedAt", json!(12)),
        ("runtimeMs", json!(2)),
    ] {
        done[field] = value;
    }
    let mut running = row(None);
    running["runState"] = json!("running");
    running["status"] = json!("running");
    running["hasActiveRun"] = json!(true);
    running["activeRunIds"] = json!(["r2"]);
    pin::<SessionsListResult>(json!({"count": 2, "sessions": [done, running]}));
}

#[test]
fn cron_runs_and_delivery_previews() {
    pin::<crate::cron::CronRunsResult>(json!({
        "entries": [{"ts": 5, "jobId": "j1", "jobName": "Nightly", "action": "finished",
                     "status": "error", "runId": "r1", "runAtMs": 1, "durationMs": 3,
                     "sessionKey": "agent:main:cron:j1", "error": "boom",
                     "deliveryStatus": "not-requested", "model": "mock/m1"},
                    {"ts": 6, "jobId": "j1", "jobName": "Nightly", "action": "started",
                     "status": "running", "runId": "r2", "runAtMs": 6,
                     "sessionKey": "agent:main:cron:j1", "summary": "so far",
                     "deliveryStatus": "unknown"}],
        "total": 2, "offset": 0, "limit": 50, "hasMore": false, "nextOffset": null,
    }));
    pin::<crate::cron::DeliveryPreview>(
        json!({"label": "announce", "detail": "the job session's route"}),
    );
}
