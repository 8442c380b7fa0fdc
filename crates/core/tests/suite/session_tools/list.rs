//! `sessions_list`: kinds, paging past invisible rows, cross-agent rows, messages, activity.

use std::collections::BTreeSet;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::Config;
use switchboard_core::store::RunStatus;

use super::{
    CHILD, H, all_pages, assistant, every_kind, keys_of, tool_call, tool_result, user, visible_rows,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_filter_on_canonical_keys_in_a_real_run_and_through_invoke() {
    let h = H::open(Config::default()).await;
    every_kind(&h).await;
    h.add("discord:group:dev", vec![user("newest group message")])
        .await;

    // The agent calls the tool and uses its result.
    let record = h
        .turn(
            "main",
            "@tool sessions_list {\"kinds\": [\"group\"]}\n@reply {{result.sessions.0.key}} of {{result.count}}",
        )
        .await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    assert_eq!(
        record.result.as_deref(),
        Some("agent:main:discord:group:dev of 2")
    );
    let t = h.transcript("agent:main:main").await;
    let result = t.iter().find(|m| m["role"] == "toolResult").unwrap();
    assert_eq!(result["toolName"], "sessions_list");
    assert_eq!(result["isError"], false);

    let set = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();
    let expect = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<BTreeSet<_>>();
    let main = "agent:main:main";
    assert_eq!(
        set(h.keys(main, json!({"kinds": "cron"})).await),
        expect(&["agent:main:cron:nightly"])
    );
    assert_eq!(
        set(h
            .keys(main, json!({"kinds": ["main", "hook", "node"]}))
            .await),
        expect(&[
            "agent:main:main",
            "agent:main:hook:3f1c",
            "agent:main:node-pi4"
        ])
    );
    assert_eq!(
        set(h.keys(main, json!({"kinds": ["other"]})).await),
        expect(&[CHILD, "agent:main:my-notes"])
    );
    // An unknown kind is named: next to a known one it is ignored with a warning that lists the
    // accepted kinds; alone it is an error (never "every kind").
    let accepted = "accepted: main, group, cron, hook, node, other";
    let (status, error) = h
        .fails(main, "sessions_list", json!({"kinds": ["bogus"]}))
        .await;
    assert_eq!(
        (status.as_str(), error),
        (
            "error",
            format!("kinds: \"bogus\" is not a session kind; {accepted}")
        )
    );
    let mixed = h
        .ok(main, "sessions_list", json!({"kinds": ["group", "bogus"]}))
        .await;
    assert_eq!(
        mixed["warning"],
        format!("kinds: ignored \"bogus\" (not a session kind; {accepted})")
    );
    assert_eq!(
        set(h.keys(main, json!({"kinds": ["group", "bogus"]})).await),
        expect(&[
            "agent:main:discord:group:dev",
            "agent:main:slack:channel:general"
        ])
    );
    // Rows: kind and channel from the key's rest, most recently updated first.
    let list = h.ok(main, "sessions_list", json!({})).await;
    assert_eq!(list["count"], 8);
    assert!(list.get("nextCursor").is_none());
    let rows = list["sessions"].as_array().unwrap();
    assert_eq!(
        rows[0]["key"], "agent:main:main",
        "the run touched main last"
    );
    let by_key = |k: &str| rows.iter().find(|r| r["key"] == k).unwrap().clone();
    assert_eq!(
        (
            by_key("agent:main:cron:nightly")["kind"].clone(),
            by_key("agent:main:cron:nightly")["channel"].clone()
        ),
        (json!("cron"), json!("internal"))
    );
    assert_eq!(by_key("agent:main:discord:group:dev")["channel"], "discord");
    let updated: Vec<i64> = rows
        .iter()
        .map(|r| r["updatedAt"].as_i64().unwrap())
        .collect();
    assert!(updated.windows(2).all(|w| w[0] >= w[1]), "{updated:?}");
    // The mirror's file exists; a store without mirrors (PostgreSQL) names none.
    match rows[0]["transcriptPath"].as_str() {
        Some(path) => assert!(std::path::Path::new(path).exists(), "{path} exists"),
        None => assert!(h.t.on_postgres(), "only PostgreSQL keeps no mirror"),
    }
}

/// The rows a requester may see, in list order: the ground truth pages must add up to.

#[tokio::test]
async fn pages_are_never_short_because_of_rows_the_requester_may_not_see() {
    // Cross-agent listing is on but only for main and ops: secret's rows are filtered after the
    // query, between main's and ops' rows.
    let h = H::with(
        r#"{ agents: { list: [ {id: "main", default: true}, {id: "ops"}, {id: "secret"} ] },
             tools: { agentToAgent: { enabled: true, allow: ["main", "ops"] } } }"#,
    )
    .await;
    for i in 0..12 {
        for agent in ["secret", "secret", "main", "ops", "secret"] {
            h.add(&format!("agent:{agent}:cron:job-{i}"), vec![user("x")])
                .await;
        }
    }
    let requester = "agent:main:cron:job-0";
    let truth = visible_rows(&h, requester).await;
    assert!(!truth.is_empty());
    for limit in [1, 3, 4, 7, 200] {
        assert_eq!(
            all_pages(&h, requester, limit).await,
            truth,
            "limit {limit}"
        );
    }
    // A filter next to visibility: still full pages, still every match.
    let mut args = json!({"limit": 2, "search": "job-1"});
    let mut seen = Vec::new();
    loop {
        let page = h.ok(requester, "sessions_list", args.clone()).await;
        let keys = keys_of(&page);
        let next = page["nextCursor"].as_str().map(str::to_string);
        if next.is_some() {
            assert_eq!(keys.len(), 2);
        }
        seen.extend(keys);
        match next {
            Some(c) => args["cursor"] = json!(c),
            None => break,
        }
    }
    let expected: Vec<String> = truth
        .iter()
        .filter(|k| k.contains("job-1"))
        .cloned()
        .collect();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn access_cross_agent_rows_follow_the_allow_list() {
    let h = H::with(
        r#"{ agents: { list: [ {id: "main", default: true}, {id: "ops"}, {id: "secret"} ] },
             tools: { agentToAgent: { enabled: true, allow: ["main", "ops"] } } }"#,
    )
    .await;
    for agent in ["main", "ops", "secret"] {
        h.add(&format!("agent:{agent}:cron:a"), vec![user("x")])
            .await;
    }
    let keys: BTreeSet<String> = h
        .keys("agent:main:cron:a", json!({}))
        .await
        .into_iter()
        .collect();
    // Each agent's main session exists from the start: the allowed agents' are listed too.
    let expected: BTreeSet<String> = [
        "agent:main:cron:a",
        "agent:main:main",
        "agent:ops:cron:a",
        "agent:ops:main",
    ]
    .iter()
    .map(|k| k.to_string())
    .collect();
    assert_eq!(keys, expected);
    let (status, error) = h
        .fails(
            "agent:main:cron:a",
            "sessions_history",
            json!({"sessionKey": "agent:secret:cron:a"}),
        )
        .await;
    assert_eq!(status, "forbidden");
    assert!(error.contains("tools.agentToAgent.allow"), "{error}");
}

#[tokio::test]
async fn access_other_agents_are_absent_and_forbidden_when_agent_to_agent_is_off() {
    let h = H::with(r#"{ agents: { list: [ {id: "main", default: true}, {id: "ops"} ] } }"#).await;
    h.add("agent:main:main", vec![user("mine")]).await;
    let ops = h.add("agent:ops:main", vec![user("private")]).await;
    assert_eq!(
        h.keys("agent:main:main", json!({})).await,
        ["agent:main:main"]
    );
    for reference in ["agent:ops:main", ops.session_id.as_str()] {
        let out = h
            .invoke(
                "agent:main:main",
                "sessions_history",
                json!({"sessionKey": reference}),
            )
            .await;
        assert!(out.is_error);
        assert_eq!(out.content["status"], "forbidden");
        let error = out.content["error"].as_str().unwrap();
        assert!(error.contains("tools.agentToAgent.enabled"), "{error}");
        assert!(!out.text().contains("private"));
    }
}

#[tokio::test]
async fn message_limit_adds_the_last_messages_without_tool_results() {
    let h = H::open(Config::default()).await;
    h.add("main", vec![]).await;
    h.add(
        "cron:a",
        vec![
            user("question"),
            tool_call("c1"),
            tool_result("c1"),
            assistant("answer"),
        ],
    )
    .await;
    h.add("cron:b", vec![user("only one")]).await;
    h.add("cron:empty", vec![]).await;
    let list = h
        .ok(
            "main",
            "sessions_list",
            json!({"kinds": "cron", "messageLimit": "2"}),
        )
        .await;
    let rows = list["sessions"].as_array().unwrap();
    let messages = |key: &str| {
        rows.iter().find(|r| r["key"] == key).unwrap()["messages"]
            .as_array()
            .unwrap()
            .clone()
    };
    let a = messages("agent:main:cron:a");
    assert_eq!(
        a.iter()
            .map(|m| m["seq"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [2, 4]
    );
    assert_eq!(a[1]["content"][0]["text"], "answer");
    assert!(a[1].get("usage").is_none(), "heavy fields are removed");
    assert_eq!(messages("agent:main:cron:b").len(), 1);
    assert!(messages("agent:main:cron:empty").is_empty());
    // Clamped to 20; 0 (the default) means no messages at all.
    let many: Vec<Value> = (0..30).map(|i| user(&format!("m{i}"))).collect();
    h.add("cron:long", many).await;
    let list = h
        .ok(
            "main",
            "sessions_list",
            json!({"kinds": ["cron"], "messageLimit": 500}),
        )
        .await;
    let long = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "agent:main:cron:long")
        .unwrap()
        .clone();
    assert_eq!(long["messages"].as_array().unwrap().len(), 20);
    assert_eq!(long["messages"][19]["content"], "m29");
    let list = h.ok("main", "sessions_list", json!({})).await;
    assert!(list["sessions"][0].get("messages").is_none());
}

#[tokio::test]
async fn active_minutes_keeps_recent_sessions_only() {
    let h = H::open(Config::default()).await;
    h.add("cron:old", vec![user("x")]).await;
    h.add("cron:new", vec![user("x")]).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    h.backdate("agent:main:cron:old", now - 3 * 3_600_000).await;
    // The main session exists from the start: make it older than every window below.
    h.backdate("agent:main:main", now - 5 * 3_600_000).await;
    let recent = h
        .keys("agent:main:cron:new", json!({"activeMinutes": 60}))
        .await;
    assert_eq!(recent, ["agent:main:cron:new"]);
    let recent = h
        .keys("agent:main:cron:new", json!({"activeMinutes": "240.5"}))
        .await;
    assert_eq!(recent, ["agent:main:cron:new", "agent:main:cron:old"]);
    // Below 1 is no filter.
    assert_eq!(
        h.keys("agent:main:cron:new", json!({"activeMinutes": 0}))
            .await
            .len(),
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_limit_costs_the_same_store_reads_for_5_rows_as_for_40() {
    let h = H::open(Config::default()).await;
    h.add("main", vec![user("hi")]).await;
    for i in 0..40 {
        let messages = vec![
            user("q"),
            tool_call("c1"),
            tool_result("c1"),
            assistant("a"),
        ];
        h.add(&format!("chat-{i:02}"), messages).await;
    }
    let mut reads = Vec::new();
    for limit in [5, 40] {
        let before = h.engine.store_reads();
        let list = h
            .ok(
                "main",
                "sessions_list",
                json!({"limit": limit, "messageLimit": 3}),
            )
            .await;
        reads.push(h.engine.store_reads() - before);
        let rows = list["sessions"].as_array().unwrap();
        assert_eq!(rows.len(), limit);
        // Each row carries its last messages without tool results.
        let chat = rows.iter().find(|r| r["key"] != "agent:main:main").unwrap();
        let roles: Vec<&str> = chat["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "assistant"]);
    }
    // The page and all rows' messages take the same reads whatever the number of rows.
    assert_eq!(reads[0], reads[1], "{reads:?}");
    assert!(reads[1] <= 3, "{reads:?}");
}
