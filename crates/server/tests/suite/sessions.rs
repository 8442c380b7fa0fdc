//! `chat.inject` into keys of every form, then `sessions.list` and the other `sessions.*` methods.

use std::collections::BTreeSet;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{Config, SessionScope};
use switchboard_protocol::ErrorCode;

use super::harness::TestGateway;

const SUBAGENT: &str = "agent:main:subagent:5b0e7a52-8c1e-4c8f-9d35-0f4c1a6e2b11";

async fn inject(gw: &TestGateway, key: &str, text: &str) -> Value {
    gw.call("chat.inject", json!({"sessionKey": key, "message": text}))
        .await
}

fn rows(list: &Value) -> Vec<(String, String, String)> {
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("key"), s("kind"), s("channel"))
        })
        .collect()
}

/// `list` has exactly the rows `forms` names: (input, key, kind, channel), in any order.
fn assert_lists(list: &Value, forms: &[(&str, &str, &str, &str)]) {
    let mut got = rows(list);
    got.sort();
    let mut expected: Vec<_> = forms
        .iter()
        .map(|(_, k, kind, ch)| (k.to_string(), kind.to_string(), ch.to_string()))
        .collect();
    expected.sort();
    assert_eq!(got, expected);
}

async fn listed_keys(gw: &TestGateway) -> Vec<String> {
    let list = gw.call("sessions.list", json!({})).await;
    rows(&list).into_iter().map(|r| r.0).collect()
}

#[tokio::test]
async fn every_key_form_lists_with_its_kind_and_channel() {
    let gw = TestGateway::start().await;
    let forms = [
        ("main", "agent:main:main", "main", "unknown"),
        (
            "agent:main:discord:group:Dev-Team",
            "agent:main:discord:group:dev-team",
            "group",
            "discord",
        ),
        (
            "slack:channel:general",
            "agent:main:slack:channel:general",
            "group",
            "slack",
        ),
        (
            "telegram:group:42:topic:7",
            "agent:main:telegram:group:42:topic:7",
            "group",
            "telegram",
        ),
        (
            "cron:nightly",
            "agent:main:cron:nightly",
            "cron",
            "internal",
        ),
        ("hook:3f1c", "agent:main:hook:3f1c", "hook", "internal"),
        ("node-pi4", "agent:main:node-pi4", "node", "internal"),
        (SUBAGENT, SUBAGENT, "other", "unknown"),
        (
            "whatsapp:direct:+15551234",
            "agent:main:whatsapp:direct:+15551234",
            "other",
            "whatsapp",
        ),
        ("my-notes", "agent:main:my-notes", "other", "unknown"),
    ];
    for (input, canonical, _, _) in forms {
        let injected = inject(&gw, input, "hello").await;
        assert_eq!(injected["sessionKey"], canonical, "{input}");
        assert_eq!(injected["seq"], 1);
    }
    let list = gw.call("sessions.list", json!({"limit": 100})).await;
    assert_lists(&list, &forms);

    // Every row names a transcript that exists (none without mirrors).
    for row in list["sessions"].as_array().unwrap() {
        match row["transcriptPath"].as_str() {
            Some(path) => assert!(std::path::Path::new(path).is_file(), "{path}"),
            None => assert!(!gw.mirrors(), "{row}"),
        }
    }
    // Each kind filters on the canonical key's rest.
    for kind in ["main", "group", "cron", "hook", "node", "other"] {
        let list = gw.call("sessions.list", json!({"kinds": [kind]})).await;
        let kinds: BTreeSet<_> = rows(&list).into_iter().map(|r| r.1).collect();
        assert_eq!(kinds, BTreeSet::from([kind.to_string()]), "{kind}");
    }
    // An unknown kind is named, never silently read as "every kind".
    let accepted = "accepted: main, group, cron, hook, node, other";
    let mixed = gw
        .call("sessions.list", json!({"kinds": ["cron", "crons"]}))
        .await;
    let kinds: BTreeSet<_> = rows(&mixed).into_iter().map(|r| r.1).collect();
    assert_eq!(kinds, BTreeSet::from(["cron".to_string()]));
    assert_eq!(
        mixed["warning"],
        format!("kinds: ignored \"crons\" (not a session kind; {accepted})")
    );
    let only_unknown = gw
        .call_err("sessions.list", json!({"kinds": "crons"}))
        .await;
    assert_eq!(
        only_unknown.message,
        format!("sessions.list: kinds: \"crons\" is not a session kind; {accepted}")
    );
    gw.stop().await;
}

/// One vocabulary (SPEC §7.1): a client's message is a `webchat` one, so a direct session it
/// talks to lists that channel; a session with a channel of its own keeps it.
#[tokio::test]
async fn a_clients_message_puts_a_direct_session_without_a_channel_on_webchat() {
    let gw = TestGateway::start().await;
    assert_eq!(inject(&gw, "notes", "before").await["seq"], 1);
    let talked_to = [
        ("main", "agent:main:main", "main", "webchat"),
        ("notes", "agent:main:notes", "other", "webchat"),
        (
            "whatsapp:direct:+15551234",
            "agent:main:whatsapp:direct:+15551234",
            "other",
            "whatsapp",
        ),
        (
            "discord:group:dev",
            "agent:main:discord:group:dev",
            "group",
            "discord",
        ),
        (
            "cron:nightly",
            "agent:main:cron:nightly",
            "cron",
            "internal",
        ),
    ];
    for (n, (key, ..)) in talked_to.iter().enumerate() {
        let params =
            json!({"sessionKey": key, "message": "hi", "idempotencyKey": format!("send-{n}")});
        assert_eq!(gw.call("chat.send", params).await["status"], "started");
    }
    // A message its caller routes to a channel is not a webchat one.
    let routed = json!({"sessionKey": "routed", "message": "hi", "deliver": true,
        "channel": "telegram", "to": "42", "idempotencyKey": "routed"});
    assert_eq!(gw.call("agent", routed).await["status"], "ok");
    let mut listed = talked_to.to_vec();
    listed.push(("routed", "agent:main:routed", "other", "unknown"));
    let list = gw.call("sessions.list", json!({"limit": 100})).await;
    assert_lists(&list, &listed);
    // Only the sessions that had no channel recorded one.
    for row in list["sessions"].as_array().unwrap() {
        let recorded = row["lastChannel"].as_str();
        let direct = row["channel"] == "webchat";
        assert_eq!(recorded, direct.then_some("webchat"), "{row}");
    }
    gw.stop().await;
}

#[tokio::test]
async fn global_and_unknown_are_reserved_and_never_listed() {
    let gw = TestGateway::start().await;
    for key in [
        "global",
        "unknown",
        "agent:main:unknown",
        "agent:main:global",
    ] {
        let error = gw
            .call_err("chat.inject", json!({"sessionKey": key, "message": "x"}))
            .await;
        assert_eq!(error.code, ErrorCode::InvalidRequest, "{key}");
        assert!(
            error.message.contains("reserved"),
            "{key}: {}",
            error.message
        );
    }
    inject(&gw, "main", "x").await;
    assert_eq!(listed_keys(&gw).await, vec!["agent:main:main".to_string()]);
    gw.stop().await;
}

#[tokio::test]
async fn under_global_scope_the_shared_bucket_shows_as_main() {
    let mut config = Config::default();
    config.session.scope = SessionScope::Global;
    let gw = TestGateway::start_with(config).await;
    let injected = inject(&gw, "main", "x").await;
    assert_eq!(injected["sessionKey"], "main");
    // The main key of the agent is the same bucket.
    assert_eq!(inject(&gw, "agent:main:main", "y").await["seq"], 2);
    let list = gw.call("sessions.list", json!({})).await;
    assert_eq!(
        rows(&list),
        vec![("main".into(), "main".into(), "unknown".into())]
    );
    let history = gw.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(history["sessionKey"], "main");
    assert_eq!(history["messages"].as_array().unwrap().len(), 2);
    gw.stop().await;
}

#[tokio::test]
async fn filters_apply_before_the_limit_and_cursor_paging_returns_each_session_once() {
    let gw = TestGateway::start().await;
    // Older cron sessions, then many newer custom ones: a limit-first list would miss the crons.
    for i in 0..7 {
        inject(&gw, &format!("cron:job-{i}"), "tick").await;
    }
    for i in 0..50 {
        inject(&gw, &format!("chat-{i:02}"), "hello").await;
    }
    let crons = gw
        .call("sessions.list", json!({"kinds": "cron", "limit": 5}))
        .await;
    assert_eq!(crons["count"], 5);
    assert!(rows(&crons).iter().all(|r| r.1 == "cron"));
    assert!(crons["nextCursor"].is_string());
    let search = gw
        .call("sessions.list", json!({"search": "JOB-3", "limit": 1}))
        .await;
    assert_eq!(
        rows(&search),
        vec![(
            "agent:main:cron:job-3".into(),
            "cron".into(),
            "internal".into()
        )]
    );

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = gw
            .call("sessions.list", json!({"limit": 10, "cursor": cursor}))
            .await;
        pages += 1;
        seen.extend(rows(&page).into_iter().map(|r| r.0));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    // 57 injected and the main session, there from the start.
    assert_eq!(pages, 6);
    let unique: BTreeSet<_> = seen.iter().cloned().collect();
    assert_eq!((seen.len(), unique.len()), (58, 58));

    let recent = gw
        .call("sessions.list", json!({"activeMinutes": 1, "limit": 1000}))
        .await;
    assert_eq!(recent["count"], 58);
    let with_messages = gw
        .call(
            "sessions.list",
            json!({"kinds": ["cron"], "messageLimit": 3}),
        )
        .await;
    for row in with_messages["sessions"].as_array().unwrap() {
        let texts: Vec<_> = row["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"][0]["text"].clone())
            .collect();
        assert_eq!(texts, vec![json!("tick")]);
    }
    gw.stop().await;
}

#[tokio::test]
async fn create_resolve_patch_reset_and_delete() {
    let gw = TestGateway::start().await;
    let created = gw
        .call(
            "sessions.create",
            json!({"key": "research", "label": "scout"}),
        )
        .await;
    assert_eq!(
        (created["key"].clone(), created["created"].clone()),
        (json!("agent:main:research"), json!(true))
    );
    let again = gw
        .call("sessions.create", json!({"key": "agent:main:research"}))
        .await;
    assert_eq!(
        (again["created"].clone(), again["sessionId"].clone()),
        (json!(false), created["sessionId"].clone())
    );

    let by_label = gw.call("sessions.resolve", json!({"label": "scout"})).await;
    assert_eq!(by_label["key"], "agent:main:research");
    let by_id = gw
        .call(
            "sessions.resolve",
            json!({"sessionId": created["sessionId"]}),
        )
        .await;
    assert_eq!(by_id["key"], "agent:main:research");
    let both = gw
        .call_err(
            "sessions.resolve",
            json!({"key": "research", "label": "scout"}),
        )
        .await;
    assert!(both.message.contains("exactly one"));
    let missing = gw
        .call_err(
            "sessions.resolve",
            json!({"sessionId": "5b0e7a52-8c1e-4c8f-9d35-0f4c1a6e2b99"}),
        )
        .await;
    assert_eq!(missing.code, ErrorCode::NotFound);
    assert!(missing.message.contains("`switchboard sessions list`"));

    // Patches merge: the label survives a model change.
    gw.call(
        "sessions.patch",
        json!({"key": "research", "model": "builtin/echo", "sendPolicy": "deny"}),
    )
    .await;
    let row = &gw.call("sessions.list", json!({})).await["sessions"][0];
    assert_eq!(
        (
            row["label"].clone(),
            row["model"].clone(),
            row["sendPolicy"].clone()
        ),
        (json!("scout"), json!("builtin/echo"), json!("deny"))
    );
    // Refused at the call, not at the next run: a model no provider serves, a label or display
    // name a chat could not show.
    let refusals = [
        (
            json!({"key": "research", "model": "openai/gpt-4o-mini"}),
            "model: unknown model \"openai/gpt-4o-mini\"; available: builtin/echo, builtin/scripted",
        ),
        (
            json!({"key": "research", "label": "two\nlines"}),
            "without control characters",
        ),
        (
            json!({"key": "research", "displayName": "x".repeat(201)}),
            "at most 200 characters",
        ),
    ];
    for (params, says) in refusals {
        let e = gw.call_err("sessions.patch", params.clone()).await;
        assert!(e.message.contains(says), "{params}: {}", e.message);
    }
    for (method, params, says) in [
        (
            "chat.send",
            json!({"sessionKey": "main", "message": "  "}),
            "chat.send: message is empty",
        ),
        (
            "chat.inject",
            json!({"sessionKey": "main", "message": ""}),
            "chat.inject: message is empty",
        ),
        (
            "agent",
            json!({"sessionKey": "main", "message": "hi", "model": "nope/x"}),
            "model: unknown model \"nope/x\"",
        ),
    ] {
        let e = gw.call_err(method, params.clone()).await;
        assert!(e.message.contains(says), "{method} {params}: {}", e.message);
    }
    gw.call(
        "sessions.patch",
        json!({"key": "research", "sendPolicy": null}),
    )
    .await;
    assert!(
        gw.call("sessions.list", json!({})).await["sessions"][0]
            .get("sendPolicy")
            .is_none()
    );
    let bad = gw
        .call_err(
            "sessions.patch",
            json!({"key": "research", "sendPolicy": "sometimes"}),
        )
        .await;
    assert!(
        bad.message.contains("\"allow\", \"deny\" or null"),
        "{}",
        bad.message
    );
    let not_sub = gw
        .call_err(
            "sessions.patch",
            json!({"key": "research", "spawnedBy": "main"}),
        )
        .await;
    assert!(
        not_sub.message.contains("only sub-agent sessions"),
        "{}",
        not_sub.message
    );
    gw.call("sessions.create", json!({"key": SUBAGENT})).await;
    let patched = gw
        .call(
            "sessions.patch",
            json!({"key": SUBAGENT, "spawnedBy": "main"}),
        )
        .await;
    assert_eq!(patched["session"]["spawnedBy"], "agent:main:main");
    let twice = gw
        .call_err(
            "sessions.patch",
            json!({"key": SUBAGENT, "spawnedBy": "cron:x"}),
        )
        .await;
    assert!(twice.message.contains("set once"), "{}", twice.message);
    gw.call("sessions.delete", json!({"key": SUBAGENT})).await;

    // Reset keeps the old transcript; delete keeps it too and refuses the main session.
    inject(&gw, "research", "first life").await;
    let reset = gw.call("sessions.reset", json!({"key": "research"})).await;
    assert_ne!(reset["sessionId"], created["sessionId"]);
    match reset["previousTranscriptPath"].as_str() {
        Some(path) => assert!(std::path::Path::new(path).is_file(), "{path}"),
        None => assert!(!gw.mirrors(), "{reset}"),
    }
    let history = gw
        .call("chat.history", json!({"sessionKey": "research"}))
        .await;
    assert_eq!(history["messages"], json!([]));

    inject(&gw, "main", "x").await;
    let main = gw.call_err("sessions.delete", json!({"key": "main"})).await;
    assert!(
        main.message.contains("cannot be deleted"),
        "{}",
        main.message
    );
    let deleted = gw.call("sessions.delete", json!({"key": "research"})).await;
    match deleted["archivedTranscriptPath"].as_str() {
        Some(path) => assert!(std::path::Path::new(path).is_file(), "{path}"),
        None => assert!(!gw.mirrors(), "{deleted}"),
    }
    assert_eq!(listed_keys(&gw).await, vec!["agent:main:main".to_string()]);
    gw.stop().await;
}

#[tokio::test]
async fn agents_list_names_the_default_agent() {
    let gw = TestGateway::start().await;
    let agents = gw.call("agents.list", json!({})).await;
    assert_eq!(agents["defaultId"], "main");
    assert_eq!(agents["agents"][0]["id"], "main");
    assert_eq!(agents["agents"][0]["mainKey"], "agent:main:main");
    gw.stop().await;
}

#[tokio::test]
async fn rows_carry_the_effective_model() {
    let gw = TestGateway::start().await;
    let model_of = async |key: &str| {
        let list = gw.call("sessions.list", json!({"search": key})).await;
        list["sessions"][0]["model"].clone()
    };
    // No run yet: the model a run would use now (the agent's, then the session's override).
    inject(&gw, "fresh", "hello").await;
    assert_eq!(model_of("fresh").await, "builtin/scripted");
    gw.call(
        "sessions.patch",
        json!({"key": "fresh", "model": "builtin/echo"}),
    )
    .await;
    assert_eq!(model_of("fresh").await, "builtin/echo");
    // After a run: the model that run used, even when it was only that run's choice.
    let outcome = gw
        .call(
            "agent",
            json!({"sessionKey": "ran", "message": "hi", "model": "builtin/echo",
                   "extraSystemPrompt": "Be brief."}),
        )
        .await;
    assert_eq!(outcome["status"], "ok", "{outcome}");
    assert_eq!(model_of("ran").await, "builtin/echo");
    // systemSent: true once a model call carried a system prompt, absent before.
    let row_of = async |key: &str| {
        let list = gw.call("sessions.list", json!({"search": key})).await;
        list["sessions"][0].clone()
    };
    assert_eq!(row_of("ran").await["systemSent"], true);
    assert!(row_of("fresh").await.get("systemSent").is_none());
    gw.stop().await;
}

/// Every string in `value`, at any depth.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn under_global_scope_no_answer_row_or_event_names_global() {
    let mut config = Config::default();
    config.session.scope = SessionScope::Global;
    let gw = TestGateway::start_with(config).await;
    let mut client = gw.client().await;
    client
        .request("sessions.subscribe", json!({"all": true}))
        .await
        .unwrap();
    let mut seen = Vec::new();
    let sent = client
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": "@reply hi", "idempotencyKey": "g1"}),
        )
        .await
        .unwrap();
    assert_eq!(sent["sessionKey"], "main");
    strings(&sent, &mut seen);
    // A sub-agent spawned from the shared bucket: its row's spawnedBy, the announce's
    // provenance, the agent answer and the wait.
    let spawn = "@tool sessions_spawn {\"task\": \"@reply Result: 42\"}\n@reply spawned";
    let agent = client
        .request(
            "agent",
            json!({"sessionKey": "agent:main:main", "message": spawn, "idempotencyKey": "g2"}),
        )
        .await
        .unwrap();
    assert_eq!(agent["sessionKey"], "main", "{agent}");
    strings(&agent, &mut seen);
    let run_id = agent["runId"].as_str().unwrap().to_string();
    let waited = gw
        .call("agent.wait", json!({"runId": run_id, "timeoutMs": 10000}))
        .await;
    assert_eq!(waited["sessionKey"], "main", "{waited}");
    strings(&waited, &mut seen);
    // Events of both runs, until the sub-agent's report reached main.
    let history = loop {
        let event = client.next_event().await.unwrap();
        assert_ne!(event.payload["sessionKey"], "global", "{}", event.payload);
        strings(&event.payload, &mut seen);
        let history = gw.call("chat.history", json!({"sessionKey": "main"})).await;
        let announced = history["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["provenance"]["kind"] == "subagent-announce");
        if announced {
            break history;
        }
    };
    strings(&history, &mut seen);
    let list = gw.call("sessions.list", json!({})).await;
    let child = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["key"].as_str().unwrap().contains(":subagent:"))
        .expect("the child is listed");
    assert_eq!(child["spawnedBy"], "main", "{child}");
    strings(&list, &mut seen);
    for (tool, args) in [
        ("sessions_list", json!({})),
        ("sessions_history", json!({"sessionKey": "main"})),
    ] {
        let params = json!({"tool": tool, "args": args, "sessionKey": "main"});
        strings(&gw.call("tools.invoke", params).await, &mut seen);
    }
    let leaks: Vec<&String> = seen.iter().filter(|s| s.contains("global")).collect();
    assert!(leaks.is_empty(), "`global` reached the caller: {leaks:?}");
    gw.stop().await;
}

#[tokio::test]
async fn every_configured_agents_main_session_exists_from_the_first_start() {
    let mut config = Config::default();
    config.agents.list = ["main", "ops"]
        .map(|id| switchboard_core::config::AgentEntry {
            id: id.into(),
            default: id == "main",
            ..Default::default()
        })
        .to_vec();
    let gw = TestGateway::start_with(config).await;
    let mut keys = listed_keys(&gw).await;
    keys.sort();
    assert_eq!(keys, ["agent:main:main", "agent:ops:main"]);
    // What an MCP client acting as it asks first works with no sessions.create.
    let tools = gw
        .call("tools.list", json!({"sessionKey": "agent:ops:main"}))
        .await;
    assert_eq!(tools["sessionKey"], "agent:ops:main");
    assert!(!tools["tools"].as_array().unwrap().is_empty());
    gw.stop().await;
}

#[tokio::test]
async fn the_reference_pages_the_list_by_offset_and_reads_its_total_and_idle_rows() {
    let gw = TestGateway::start().await;
    for name in ["a", "b", "c", "d", "e"] {
        let key = format!("agent:main:{name}");
        gw.call("sessions.create", json!({"key": key})).await;
    }
    let all = gw.call("sessions.list", json!({"limit": 100})).await;
    let total = all["count"].as_u64().unwrap();
    assert_eq!(
        (all["totalCount"].as_u64(), &all["hasMore"]),
        (Some(total), &json!(false))
    );
    assert_eq!(all.get("nextOffset"), None);
    let keys: Vec<&str> = (all["sessions"].as_array().unwrap().iter())
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    // The Control UI's "Load more": offset by offset, the same rows in the same order.
    let mut paged = Vec::new();
    let mut offset = Some(0);
    while let Some(at) = offset {
        let asked = json!({"limit": 2, "offset": at, "includeTotal": true});
        let page = gw.call("sessions.list", asked).await;
        assert_eq!(page["totalCount"].as_u64(), Some(total), "{page}");
        paged.extend(
            page["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["key"].clone()),
        );
        offset = page["nextOffset"].as_u64();
        assert_eq!(page["hasMore"], json!(offset.is_some()));
    }
    assert_eq!(paged, keys);
    // A session with no run since start: not running, shown "Idle" (no status).
    let row = &all["sessions"][0];
    assert_eq!(
        (&row["hasActiveRun"], row.get("status")),
        (&json!(false), None)
    );
    let searched = json!({"limit": 1, "search": "agent:main:", "includeTotal": true});
    let searched = gw.call("sessions.list", searched).await;
    assert_eq!(searched["totalCount"].as_u64(), Some(total));
    // Counting every matching session is a read of each: only when asked, or free at the end.
    let first = gw.call("sessions.list", json!({"limit": 1})).await;
    assert_eq!(
        (first.get("totalCount"), &first["hasMore"]),
        (None, &json!(true))
    );
    let last = json!({"limit": 1, "offset": total - 1});
    assert_eq!(
        gw.call("sessions.list", last).await["totalCount"].as_u64(),
        Some(total)
    );
    gw.stop().await;
}
