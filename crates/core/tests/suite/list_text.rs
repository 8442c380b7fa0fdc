//! `sessions.list` as text (`Sessions::list_text`, each row written as the store reads it) is
//! the text of the typed page (`Sessions::list`) byte for byte, on every filter, page and field.

use serde_json::{Value, json};
use switchboard_core::config::{AgentEntry, Config, ModelEntry, ModelRef, ProviderConfig};
use switchboard_core::ids::RunId;
use switchboard_core::store::{EntryPatch, SubagentRecord, SubagentState, TokenDelta, WriteOp};
use switchboard_protocol::runs::RunState;
use switchboard_protocol::sessions::{DeliveryContext, Patch, SessionsListParams};

use super::support::{TestEngine, until};

/// Sessions of every kind, with every field a row shows set on some of them.
async fn varied() -> TestEngine {
    let mut config = Config::default();
    config.agents.list = vec![
        AgentEntry {
            id: "main".into(),
            default: true,
            ..AgentEntry::default()
        },
        AgentEntry {
            id: "ops".into(),
            model: Some(ModelRef::new("builtin/echo")),
            ..AgentEntry::default()
        },
    ];
    // A window for the model the busiest session last used (the row's `contextTokens`).
    let model = ModelEntry {
        id: "m-1".into(),
        context_window: Some(128_000),
        ..ModelEntry::default()
    };
    let provider = ProviderConfig {
        models: vec![model],
        ..ProviderConfig::default()
    };
    config.models.providers.insert("mock".into(), provider);
    let h = TestEngine::open(config).await;
    let store = h.engine.store();
    let keys = [
        "agent:main:main",
        "agent:main:telegram:group:-100:topic:7",
        "agent:main:cron:nightly",
        "agent:main:hook:gmail",
        "agent:main:discord:direct:42",
        "agent:main:subagent:child-1",
        "agent:ops:main",
        "agent:ops:slack:channel:c1",
        "agent:main:custom-\"q\"-ü",
    ];
    for key in keys {
        h.create(key).await;
    }
    let set = |s: &str| Patch::Set(s.to_string());
    let patches = [
        (
            "agent:main:telegram:group:-100:topic:7",
            EntryPatch {
                label: set("läbel \"one\"\n"),
                display_name: set("Zoë 🎉\u{1}"),
                model: set("builtin/echo"),
                thinking_level: set("high"),
                verbose_level: set("on"),
                send_policy: set("deny"),
                system_sent: Some(true),
                aborted_last_run: Some(true),
                last_channel: set("telegram"),
                last_to: set("+100"),
                last_account_id: set("bot"),
                last_thread_id: set("7"),
                delivery_context: Patch::Set(DeliveryContext {
                    channel: "telegram".into(),
                    to: "-100".into(),
                    account_id: Some("bot".into()),
                    thread_id: Some("7".into()),
                }),
                add_tokens: Some(TokenDelta {
                    input: 1200,
                    output: 34,
                }),
                add_cost: Some(0.000123),
                context_tokens: Patch::Set(900),
                last_model: set("mock/m-1"),
                ..EntryPatch::default()
            },
        ),
        (
            "agent:main:discord:direct:42",
            EntryPatch {
                last_channel: set("discord"),
                channel: set("discord"),
                label: set("search-me"),
                ..EntryPatch::default()
            },
        ),
        (
            "agent:main:subagent:child-1",
            EntryPatch {
                spawned_by: Patch::Set(h.key("agent:main:main")),
                label: set("child"),
                ..EntryPatch::default()
            },
        ),
        (
            "agent:ops:slack:channel:c1",
            EntryPatch {
                archived_at: Patch::Set(5),
                ..EntryPatch::default()
            },
        ),
    ];
    for (key, patch) in patches {
        store.patch(&h.key(key), patch).await.unwrap();
    }
    let task = SubagentRecord {
        child_key: h.key("agent:main:subagent:child-1"),
        requester_key: h.key("agent:main:main"),
        run_id: RunId::from_string("r-child"),
        task: "find \"it\"".into(),
        label: Some("child".into()),
        model: "builtin/echo".into(),
        delete_after: false,
        state: SubagentState::Announcing,
        outcome: Some("ok".into()),
        trace: None,
        origin: None,
        created_at: 1,
        ended_at: Some(9),
        delivery_id: None,
        archive_at: None,
        archived_at: None,
        epoch: store.cluster().epoch(),
    };
    store
        .write_batch(vec![WriteOp::PutSubagent(Box::new(task))])
        .await
        .unwrap();
    // A run that ended (the row's run fields) and messages to show.
    h.turn("main", "hello").await;
    h.turn("agent:main:discord:direct:42", "hi \"there\"").await;
    h
}

/// A session whose run works after an ended one, with another waiting, and one whose last run
/// ended: the first row's run fields are built at each list, the second's copied as an earlier
/// page wrote them; both are the typed page's, before and after the working run ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_with_a_run_working_or_ended_is_the_typed_row_byte_for_byte() {
    let h = varied().await;
    let main = h.key("main");
    let row = |page: &Value, key: &str| {
        let rows = page["sessions"].as_array().unwrap();
        rows.iter().find(|r| r["key"] == key).cloned().unwrap()
    };
    let ended = row(&same(&h, json!({"limit": 1000})).await, "agent:main:main");
    assert_eq!(ended["status"], "done", "{ended}");
    let working = h.submit("main", "@delay 600000\n@reply late", None).await;
    let runtime = h.engine.runtime();
    until("the run works", || async {
        (runtime.run_state(&main) == Some(RunState::Running)).then_some(())
    })
    .await;
    h.submit("main", "@reply next", None).await;
    let page = same(&h, json!({"limit": 1000})).await;
    let live = row(&page, "agent:main:main");
    assert_eq!(live["runState"], "running", "{live}");
    assert_eq!(live["activeRunIds"], json!([working.as_str()]), "{live}");
    assert_eq!(live["lastRunId"], ended["lastRunId"], "{live}");
    let other = row(&page, "agent:main:discord:direct:42");
    assert_eq!(other["status"], "done", "{other}");
    // Asked again, the ended row's fields are the ones the first page wrote.
    assert_eq!(same(&h, json!({"limit": 1000})).await, page);
    let aborted = runtime.abort(&main, None).await.unwrap();
    assert_eq!(aborted, std::slice::from_ref(&working));
    until("the runs end", || async {
        runtime.run_state(&main).is_none().then_some(())
    })
    .await;
    let after = row(&same(&h, json!({"limit": 1000})).await, "agent:main:main");
    assert_ne!(after["lastRunId"], ended["lastRunId"], "{after}");
}

/// The two answers to `params`, as text; answers the typed page as a value.
pub(super) async fn same(h: &TestEngine, params: Value) -> Value {
    let sessions = h.engine.sessions();
    let p: SessionsListParams = serde_json::from_value(params.clone()).unwrap();
    let typed = sessions.list(p.clone()).await.unwrap();
    let written = sessions.list_text(p).await.unwrap();
    let expected = serde_json::to_string(&typed).unwrap();
    assert_eq!(String::from_utf8(written).unwrap(), expected, "{params}");
    serde_json::to_value(&typed).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_written_as_it_is_read_is_the_typed_page_byte_for_byte() {
    let h = varied().await;
    let all = same(&h, json!({"includeArchived": true, "limit": 1000})).await;
    let rows = all["sessions"].as_array().unwrap();
    assert_eq!(rows.len(), 9, "{all}");
    // Every field a row can show is on some row of this page.
    let shown: std::collections::BTreeSet<&str> = rows
        .iter()
        .flat_map(|r| r.as_object().unwrap().keys().map(String::as_str))
        .collect();
    for field in [
        "chatType",
        "displayName",
        "label",
        "contextTokens",
        "inputTokens",
        "costUsd",
        "thinkingLevel",
        "abortedLastRun",
        "sendPolicy",
        "lastTo",
        "deliveryContext",
        "spawnedBy",
        "archivedAt",
        "lastRunId",
        "subagent",
    ] {
        assert!(shown.contains(field), "{field} is on no row: {all}");
    }
    // Page by page: the same rows, the same cursors.
    let mut cursor: Option<String> = None;
    let mut paged = 0;
    loop {
        let page = same(&h, json!({"limit": 2, "cursor": cursor})).await;
        paged += page["count"].as_u64().unwrap();
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(paged, 8, "every unarchived session, once");
    for params in [
        json!({}),
        json!({"messageLimit": 2}),
        json!({"messageLimit": 2, "limit": 1}),
        json!({"kinds": ["group", "nonsense"]}),
        json!({"search": "SEARCH"}),
        json!({"agentId": "ops", "includeArchived": true}),
        json!({"spawnedBy": "agent:main:main"}),
        json!({"label": "child"}),
        json!({"activeMinutes": 60}),
        json!({"search": "nothing like it"}),
    ] {
        let page = same(&h, params.clone()).await;
        assert!(page.get("count").is_some(), "{params}");
    }
    let with_messages = same(&h, json!({"messageLimit": 2})).await;
    let main = with_messages["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "agent:main:main")
        .cloned()
        .unwrap();
    assert_eq!(main["messages"].as_array().map(Vec::len), Some(2), "{main}");
}

/// A list page's text and the store reads it cost.
async fn listed(h: &TestEngine, params: Value) -> (u64, String) {
    let before = h.engine.store_reads();
    let p: SessionsListParams = serde_json::from_value(params).unwrap();
    let text = h.engine.sessions().list_text(p).await.unwrap();
    (
        h.engine.store_reads() - before,
        String::from_utf8(text).unwrap(),
    )
}

/// A history page's text (checked against the typed page) and the store reads it cost.
async fn history(h: &TestEngine, limit: i64) -> (u64, String) {
    let p = json!({"sessionKey": "main", "limit": limit});
    let sessions = h.engine.sessions();
    let before = h.engine.store_reads();
    let page = sessions.history_text(serde_json::from_value(p.clone()).unwrap());
    let page = page.await.unwrap().as_ref().clone();
    let reads = h.engine.store_reads() - before;
    let typed = sessions.history(serde_json::from_value(p).unwrap()).await;
    assert_eq!(page, serde_json::to_string(&typed.unwrap()).unwrap());
    (reads, page)
}

/// A page asked for again with nothing written since is answered from memory (no read of its
/// rows) on a store of one gateway; each kind of write shows in the very next answer, which is
/// the typed page again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_asked_again_is_kept_until_the_next_write_shows_in_it() {
    let h = varied().await;
    // A store that other gateways write to (PostgreSQL) has no version: nothing is kept.
    let kept = u64::from(h.engine.store().version().is_some());
    let (first, page) = listed(&h, json!({"limit": 50})).await;
    let (again, same_page) = listed(&h, json!({"limit": 50})).await;
    assert_eq!(page, same_page);
    assert_eq!(again + kept, first, "kept: the rows were not read again");
    let (other, _) = listed(&h, json!({"limit": 49})).await;
    assert_eq!(other, first, "another page is read");

    let patch = json!({"key": "agent:main:main", "label": "renamed"});
    let sessions = h.engine.sessions();
    sessions
        .patch(serde_json::from_value(patch).unwrap())
        .await
        .unwrap();
    let patched = same(&h, json!({"limit": 50})).await;
    assert!(patched.to_string().contains("renamed"), "{patched}");
    h.turn("agent:ops:main", "a new turn").await;
    let after_turn = same(&h, json!({"limit": 50})).await;
    assert_eq!(
        after_turn["sessions"][0]["key"], "agent:ops:main",
        "{after_turn}"
    );

    // chat.history: kept the same way, and a message appended shows at once.
    let (first, page) = history(&h, 10).await;
    let (again, same_page) = history(&h, 10).await;
    assert_eq!(page, same_page);
    match kept {
        1 => assert_eq!(again, 0, "the page was kept ({first} reads the first time)"),
        _ => assert_eq!(again, first, "nothing is kept"),
    }
    h.turn("main", "one more").await;
    let (_, after) = history(&h, 10).await;
    assert!(after.contains("one more"), "{after}");
}
