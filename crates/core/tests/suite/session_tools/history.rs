//! `sessions_history`: the byte cap and paging, trimming, tool results, references, scope
//! global, and the sandbox whatever the reference.

use std::collections::BTreeSet;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{Config, SessionScope};
use switchboard_core::store::RunStatus;

use super::{
    CHILD, H, all_pages, assistant, every_kind, roles, seqs, tool_call, tool_result, user,
    visible_rows,
};

#[tokio::test]
async fn history_is_capped_at_80_kib_and_before_paging_reaches_every_message() {
    let h = H::open(Config::default()).await;
    h.add("main", vec![]).await;
    let messages: Vec<Value> = (1..=300)
        .map(|i| {
            let text = format!("{i:04} {}", "z".repeat(995));
            if i % 2 == 0 {
                assistant(&text)
            } else {
                user(&text)
            }
        })
        .collect();
    h.add("cron:big", messages).await;

    let mut seen: Vec<i64> = Vec::new();
    let mut before: Option<i64> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"sessionKey": "cron:big", "limit": 200});
        if let Some(b) = before {
            args["before"] = json!(b);
        }
        let page = h.ok("main", "sessions_history", args).await;
        pages += 1;
        assert_eq!(page["sessionKey"], "agent:main:cron:big");
        let page_seqs = seqs(&page);
        assert!(
            page_seqs.windows(2).all(|w| w[0] + 1 == w[1]),
            "oldest first, no gaps"
        );
        let bytes = page["bytes"].as_u64().unwrap() as usize;
        assert!(bytes <= 80 * 1024, "{bytes}");
        assert_eq!(
            serde_json::to_string(&page["messages"]).unwrap().len(),
            bytes
        );
        assert_eq!(page["contentTruncated"], false);
        let dropped = page["droppedMessages"].as_u64().unwrap() as usize;
        // `usage` is removed from every assistant message: something was cut on every page.
        assert_eq!(page["truncated"], true);
        if pages == 1 {
            assert!(dropped > 0, "200 messages of 1,000 chars are over 80 KiB");
            assert_eq!(page_seqs.len() + dropped, 200);
            assert_eq!(*page_seqs.last().unwrap(), 300);
            assert!(page["messages"][0].get("usage").is_none());
        }
        if let Some(last_seen) = seen.first() {
            assert_eq!(
                page_seqs.last().unwrap() + 1,
                *last_seen,
                "pages are adjacent"
            );
        }
        let mut all = page_seqs.clone();
        all.append(&mut seen);
        seen = all;
        match page["nextBefore"].as_i64() {
            Some(b) => {
                assert_eq!(b, page_seqs[0]);
                before = Some(b);
            }
            None => break,
        }
        assert!(pages < 20);
    }
    assert_eq!(seen, (1..=300).collect::<Vec<i64>>());
    assert!(pages >= 4);
}

#[tokio::test]
async fn long_text_is_cut_with_a_marker_and_a_huge_message_becomes_a_placeholder() {
    let h = H::open(Config::default()).await;
    h.add("main", vec![]).await;
    let blocks: Vec<Value> = (0..60)
        .map(|_| json!({"type": "text", "text": "h".repeat(3_500)}))
        .collect();
    let huge = json!({
        "role": "assistant", "content": blocks, "provider": "p", "model": "m",
        "stopReason": "stop", "timestamp": 7
    });
    assert!(huge.to_string().len() > 200 * 1024);
    h.add(
        "cron:heavy",
        vec![
            user(&"t".repeat(10_000)),
            huge,
            json!({"role": "user", "content": [
                {"type": "image", "data": "QUJD".repeat(1000), "mimeType": "image/png"},
                {"type": "text", "text": "see picture"}
            ], "timestamp": 9}),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "s".repeat(500)},
                {"type": "text", "text": "done"}
            ], "usage": {"input": 1}, "stopReason": "stop", "timestamp": 10}),
        ],
    )
    .await;
    let page = h
        .ok(
            "main",
            "sessions_history",
            json!({"sessionKey": "cron:heavy"}),
        )
        .await;
    assert_eq!(seqs(&page), [1, 2, 3, 4]);
    assert_eq!(page["contentTruncated"], true);
    assert_eq!(
        page["truncated"], true,
        "texts were cut even though no message was dropped"
    );
    assert_eq!(page["droppedMessages"], 0);
    assert!(page.get("nextBefore").is_none());
    let m = &page["messages"];
    let text = m[0]["content"].as_str().unwrap();
    assert_eq!(
        text,
        format!("{}… [truncated 6000 chars]", "t".repeat(4_000))
    );
    assert_eq!(m[1]["omitted"], true);
    assert_eq!(
        (m[1]["role"].clone(), m[1]["seq"].clone()),
        (json!("assistant"), json!(2))
    );
    let note = m[1]["content"][0]["text"].as_str().unwrap();
    assert!(note.contains("message 2 (assistant) omitted"), "{note}");
    assert!(m[1]["bytes"].as_u64().unwrap() > 200 * 1024);
    assert_eq!(
        m[2]["content"][0]["data"],
        json!({"omitted": true, "bytes": 4000})
    );
    assert_eq!(m[2]["content"][0]["mimeType"], "image/png");
    assert!(m[3]["content"][0].get("thinkingSignature").is_none());
    assert!(m[3].get("usage").is_none());
    assert!(page["bytes"].as_u64().unwrap() < 20 * 1024);

    // Only a heavy field removed (an image's data): truncated, though no text was cut.
    let picture = json!({"role": "user", "content": [
        {"type": "image", "data": "QUJD", "mimeType": "image/png"}
    ], "timestamp": 11});
    h.add("cron:picture", vec![picture]).await;
    let args = json!({"sessionKey": "cron:picture"});
    let page = h.ok("main", "sessions_history", args).await;
    assert_eq!(
        (page["truncated"].clone(), page["contentTruncated"].clone()),
        (json!(true), json!(false))
    );
    // Nothing cut or removed: not truncated.
    h.add("cron:light", vec![user("hi"), user("there")]).await;
    let page = h
        .ok(
            "main",
            "sessions_history",
            json!({"sessionKey": "cron:light"}),
        )
        .await;
    assert_eq!(page["truncated"], false, "{page}");
}

#[tokio::test]
async fn include_tools_drops_or_keeps_tool_results_and_pages_stay_full() {
    let h = H::open(Config::default()).await;
    h.add("main", vec![]).await;
    let mut messages = vec![user("start")];
    for i in 0..25 {
        messages.push(tool_call(&format!("c{i}")));
        messages.push(tool_result(&format!("c{i}")));
    }
    messages.push(assistant("end"));
    h.add("cron:tools", messages).await;
    // 52 messages: 1 user, 25 calls (even seqs 2..50), 25 results (odd seqs 3..51), the answer 52.

    let page = h
        .ok(
            "main",
            "sessions_history",
            json!({"sessionKey": "cron:tools", "limit": 3}),
        )
        .await;
    assert_eq!(seqs(&page), [48, 50, 52]);
    assert!(!roles(&page).contains(&"toolResult".to_string()));
    assert_eq!(page["nextBefore"], 48);

    let page = h
        .ok(
            "main",
            "sessions_history",
            json!({"sessionKey": "cron:tools", "limit": 3, "includeTools": true}),
        )
        .await;
    assert_eq!(seqs(&page), [50, 51, 52]);
    assert_eq!(roles(&page), ["assistant", "toolResult", "assistant"]);
    assert!(
        page["messages"][1].get("details").is_none(),
        "tool details removed"
    );
    assert_eq!(page["nextBefore"], 50);

    // "true" and "false" as strings work too; a full read without tools reaches the start.
    let page = h
        .ok(
            "main",
            "sessions_history",
            json!({"sessionKey": "cron:tools", "limit": 200, "includeTools": "false"}),
        )
        .await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 27);
    assert!(page.get("nextBefore").is_none());

    // Mostly tool results: reading goes on until the page is full or the transcript starts.
    let mut sparse = vec![user("first")];
    for i in 0..60 {
        sparse.push(tool_result(&format!("r{i}")));
    }
    sparse.push(assistant("last"));
    h.add("cron:sparse", sparse).await;
    let page = h
        .ok(
            "main",
            "sessions_history",
            json!({"sessionKey": "cron:sparse", "limit": 2}),
        )
        .await;
    assert_eq!(seqs(&page), [1, 62]);
    assert!(page.get("nextBefore").is_none());
    let page = h
        .ok(
            "main",
            "sessions_history",
            json!({"sessionKey": "cron:sparse", "limit": 1, "before": 62}),
        )
        .await;
    assert_eq!(seqs(&page), [1]);
}

#[tokio::test]
async fn references_by_key_legacy_key_main_session_id_and_label() {
    let h = H::open(Config::default()).await;
    let mut new = h.new_session("cron:nightly");
    new.label = Some("nightly-report".into());
    let entry = h.add_new(new, vec![user("report")]).await;
    h.add("main", vec![user("hi")]).await;

    let by = |args: Value| {
        let h = &h;
        async move { h.ok("agent:main:main", "sessions_history", args).await }
    };
    for args in [
        json!({"sessionKey": "agent:main:cron:nightly"}),
        json!({"sessionKey": "cron:nightly"}),
        json!({"sessionKey": "CRON:Nightly"}),
        json!({"sessionKey": entry.session_id}),
        json!({"sessionKey": entry.session_id.to_uppercase()}),
        json!({"sessionId": entry.session_id}),
        json!({"label": "nightly-report"}),
        json!({"label": "nightly-report", "agentId": "main"}),
    ] {
        let page = by(args.clone()).await;
        assert_eq!(page["sessionKey"], "agent:main:cron:nightly", "{args}");
        assert_eq!(page["messages"][0]["content"], "report", "{args}");
    }
    let page = by(json!({"sessionKey": "main"})).await;
    assert_eq!(page["sessionKey"], "agent:main:main");

    let unknown = "0b0e7a52-8c1e-4c8f-9d35-0f4c1a6e2b11";
    let (status, error) = h
        .fails("main", "sessions_history", json!({"sessionKey": unknown}))
        .await;
    assert_eq!(
        (status.as_str(), error.as_str()),
        (
            "error",
            format!("Session not found: {unknown} (use the full sessionKey from sessions_list)")
                .as_str()
        )
    );
    let (_, error) = h
        .fails(
            "main",
            "sessions_history",
            json!({"sessionKey": "cron:nope"}),
        )
        .await;
    assert_eq!(
        error,
        "No session found: agent:main:cron:nope (use sessions_list to find sessions)"
    );
    let (_, error) = h
        .fails("main", "sessions_history", json!({"label": "nope"}))
        .await;
    assert!(
        error.contains("No session found with label \"nope\""),
        "{error}"
    );
    let (_, error) = h
        .fails(
            "main",
            "sessions_history",
            json!({"sessionKey": "main", "label": "nightly-report"}),
        )
        .await;
    assert!(error.contains("not both"), "{error}");
    let (_, error) = h
        .fails("main", "sessions_history", json!({"sessionKey": "agent:"}))
        .await;
    assert!(error.starts_with("sessionKey: "), "{error}");
}

#[tokio::test]
async fn scope_global_shows_the_shared_bucket_as_main() {
    let mut config = Config::default();
    config.session.scope = SessionScope::Global;
    let h = H::open(config).await;
    h.add("main", vec![user("shared")]).await;
    h.add("cron:x", vec![user("job")]).await;
    let keys = h.keys("global", json!({})).await;
    assert_eq!(keys.iter().filter(|k| *k == "main").count(), 1, "{keys:?}");
    assert!(!keys.iter().any(|k| k == "global"));
    let page = h
        .ok(
            "agent:main:cron:x",
            "sessions_history",
            json!({"sessionKey": "main"}),
        )
        .await;
    assert_eq!(page["sessionKey"], "main");
    assert_eq!(page["messages"][0]["content"], "shared");
}

#[tokio::test]
async fn access_a_sandboxed_session_sees_only_what_it_spawned_whatever_the_reference() {
    let h = H::with(r#"{ agents: { defaults: { sandbox: { mode: "all" } } } }"#).await;
    let parent = "agent:main:main";
    h.add(parent, vec![user("parent")]).await;
    let mut child = h.new_session(CHILD);
    child.spawned_by = Some(switchboard_core::SessionKey::from_canonical(parent.into()));
    child.label = Some("helper".into());
    h.add_new(child, vec![user("child task")]).await;
    let mut secret = h.new_session("cron:secret");
    secret.label = Some("secret-label".into());
    let secret = h.add_new(secret, vec![user("top secret content")]).await;
    h.add("discord:group:ops", vec![user("group talk")]).await;

    // Listing: only what it spawned — not itself, not the others.
    let keys: BTreeSet<String> = h.keys(parent, json!({})).await.into_iter().collect();
    let expected: BTreeSet<String> = [CHILD].iter().map(|k| k.to_string()).collect();
    assert_eq!(keys, expected);
    assert_eq!(h.keys(parent, json!({"limit": 1})).await.len(), 1);
    assert_eq!(
        all_pages(&h, parent, 1).await,
        visible_rows(&h, parent).await
    );

    // The child is readable by key, sessionId and label.
    let page = h
        .ok(parent, "sessions_history", json!({"sessionKey": CHILD}))
        .await;
    assert_eq!(page["messages"][0]["content"], "child task");
    let page = h
        .ok(parent, "sessions_history", json!({"label": "helper"}))
        .await;
    assert_eq!(page["sessionKey"], CHILD);

    // Anything else is forbidden, and a sessionId or label does not reveal the key or content.
    let cases = [
        (
            json!({"sessionKey": "agent:main:cron:secret"}),
            "agent:main:cron:secret".to_string(),
        ),
        (
            json!({"sessionKey": "cron:secret"}),
            "agent:main:cron:secret".to_string(),
        ),
        (
            json!({"sessionKey": secret.session_id}),
            secret.session_id.clone(),
        ),
        (
            json!({"label": "secret-label"}),
            "label \"secret-label\"".to_string(),
        ),
    ];
    for (args, shown) in cases {
        let out = h.invoke(parent, "sessions_history", args.clone()).await;
        assert!(out.is_error, "{args}");
        assert_eq!(out.content["status"], "forbidden", "{args}");
        assert_eq!(
            out.content["error"],
            format!("Session not visible from this sandboxed agent session: {shown}"),
            "{args}"
        );
        let text = out.text();
        assert!(!text.contains("top secret"), "{text}");
        if !args.to_string().contains("cron:secret") {
            assert!(!text.contains("cron:secret"), "{text}");
        }
    }
    // A key with no session answers like a hidden one: existence does not leak.
    let (status, _) = h
        .fails(
            parent,
            "sessions_history",
            json!({"sessionKey": "cron:does-not-exist"}),
        )
        .await;
    assert_eq!(status, "forbidden");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_common_mistakes_work_or_say_how_to_fix_the_call() {
    let h = H::open(Config::default()).await;
    every_kind(&h).await;
    for i in 0..3 {
        h.add("cron:nightly", vec![user(&format!("run {i}"))]).await;
    }
    let main = "agent:main:main";
    // "10", 10.0 and 10.9 all mean 10; a huge limit is clamped.
    for limit in [json!("10"), json!(10.0), json!(10.9), json!(" 10 ")] {
        let list = h.ok(main, "sessions_list", json!({"limit": limit})).await;
        assert_eq!(list["count"], 8, "{limit}");
    }
    let list = h.ok(main, "sessions_list", json!({"limit": 2})).await;
    assert_eq!(list["count"], 2);
    assert!(list["nextCursor"].is_string());
    let list = h
        .ok(main, "sessions_list", json!({"limit": 1_000_000}))
        .await;
    assert_eq!(list["count"], 8);
    let list = h.ok(main, "sessions_list", json!({"limit": -5})).await;
    assert_eq!(list["count"], 1, "clamped to 1");
    let page = h
        .ok(
            main,
            "sessions_history",
            json!({"sessionKey": "cron:nightly", "limit": "2"}),
        )
        .await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 2);
    let page = h
        .ok(
            main,
            "sessions_history",
            json!({"sessionKey": "cron:nightly", "limit": 99_999}),
        )
        .await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 4);
    // Wrong types and missing fields say what to do.
    let (status, error) = h.fails(main, "sessions_history", json!({})).await;
    assert_eq!(
        (status.as_str(), error.as_str()),
        ("error", "sessionKey required")
    );
    let (_, error) = h
        .fails(main, "sessions_history", json!({"sessionKey": "  "}))
        .await;
    assert_eq!(error, "sessionKey required");
    let (_, error) = h
        .fails(main, "sessions_list", json!({"limit": "lots"}))
        .await;
    assert!(
        error.contains("limit") && error.contains("expected a number"),
        "{error}"
    );
    let (_, error) = h
        .fails(main, "sessions_list", json!({"cursor": "garbage"}))
        .await;
    assert!(error.contains("nextCursor"), "{error}");

    // The same through a real run: the tool result tells the model what was wrong.
    let record = h
        .turn("main", "@tool sessions_history {\"limit\": \"2\"}")
        .await;
    assert_eq!(record.status, RunStatus::Ok);
    let result: Value = serde_json::from_str(record.result.as_deref().unwrap()).unwrap();
    assert_eq!(
        result,
        json!({"status": "error", "error": "sessionKey required"})
    );
    let record = h
        .turn(
            "main",
            "@tool sessions_history {\"sessionKey\": \"cron:nightly\", \"limit\": \"1\"}\n@reply {{result.sessionKey}}: {{result.messages.0.content}}",
        )
        .await;
    assert_eq!(
        record.result.as_deref(),
        Some("agent:main:cron:nightly: run 2")
    );
    let record = h.turn("main", "@badtool sessions_list {\"limit\": ").await;
    assert!(
        record.result.as_deref().unwrap().contains("not valid JSON"),
        "{:?}",
        record.result
    );
}
