use pretty_assertions::assert_eq;
use rusqlite::{Connection, StatementStatus};
use serde_json::json;
use switchboard_protocol::message::TranscriptMessage;
use switchboard_protocol::sessions::Patch;

use super::queries::{self, BEHIND_SQL, HISTORY_SQL};
use super::*;
use crate::ids::RunId;
use crate::keys::{SessionKey, SessionKind};
use crate::store::{
    EntryPatch, ListQuery, NewSession, RunRecord, RunStatus, RunStore, SessionReads, SessionStore,
    Store,
};

/// A new session of kind `Other` for agent `main` (also used by other modules' tests).
pub(crate) fn new_session(key: &str) -> NewSession {
    NewSession {
        key: k(key),
        agent_id: "main".to_string(),
        kind: SessionKind::Other,
        channel: None,
        chat_type: None,
        label: None,
        display_name: None,
        spawned_by: None,
    }
}

/// A canonical key from a literal.
pub(crate) fn k(key: &str) -> SessionKey {
    SessionKey::from_canonical(key.to_string())
}

/// A patch that sets only the session's label.
fn labelled(label: &str) -> EntryPatch {
    EntryPatch {
        label: Patch::Set(label.into()),
        ..EntryPatch::default()
    }
}

pub(super) fn user(text: &str) -> TranscriptMessage {
    serde_json::from_value(
        json!({"role": "user", "content": text, "timestamp": 1_700_000_000_000_i64}),
    )
    .unwrap()
}

pub(super) async fn seed(store: &SqliteStore, key: &str, n: usize) -> String {
    let mut session_id = String::new();
    for start in (0..n).step_by(1000) {
        let batch = (start..(start + 1000).min(n))
            .map(|i| user(&format!("m{}", i + 1)))
            .collect();
        let appended = store
            .append(&k(key), Some(new_session(key)), batch)
            .await
            .unwrap();
        session_id = appended.entry.session_id;
    }
    session_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_reads_only_the_rows_it_returns_and_pages_through_everything() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let id = seed(&store, "agent:main:big", 100_000).await;
    let conn = Connection::open(store.db_path()).unwrap();

    // The plan: a range search on the primary key, no scan, no sort.
    let plan: Vec<String> = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {HISTORY_SQL}"))
        .unwrap()
        .query_map(rusqlite::params![id, i64::MAX, 50], |r| {
            r.get::<_, String>(3)
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        plan,
        vec!["SEARCH messages USING PRIMARY KEY (session_id=? AND seq<?)".to_string()]
    );

    // The counters: no full-scan step, no sort, and VM work proportional to the rows returned.
    let vm_steps = |limit: i64| {
        let mut stmt = conn.prepare(HISTORY_SQL).unwrap();
        let rows = stmt
            .query_map(rusqlite::params![id, i64::MAX, limit], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap()
            .count();
        assert_eq!(rows as i64, limit);
        assert_eq!(stmt.get_status(StatementStatus::FullscanStep), 0);
        assert_eq!(stmt.get_status(StatementStatus::Sort), 0);
        stmt.get_status(StatementStatus::VmStep)
    };
    let (small, large) = (vm_steps(50), vm_steps(500));
    assert!(small < 50 * 20, "50 rows took {small} VM steps");
    assert!(
        large > small * 5,
        "VM steps do not grow with the rows returned: {small} vs {large}"
    );

    // `before` paging walks the whole transcript, oldest first within each page.
    let page = store.history(&id, 50, None).await.unwrap();
    assert_eq!(page.messages.first().map(|m| m.seq), Some(99_951));
    assert_eq!(page.messages.last().map(|m| m.seq), Some(100_000));
    assert_eq!(page.messages[49].message["content"], "m100000");
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let page = store.history(&id, 1000, before).await.unwrap();
        seen.extend(page.messages.iter().rev().map(|m| m.seq));
        match page.next_before {
            Some(b) => before = Some(b),
            None => break,
        }
    }
    assert_eq!(seen, (1..=100_000).rev().collect::<Vec<i64>>());
    store.close().await;
}

#[tokio::test]
async fn patches_merge_fields_and_spawned_by_is_set_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let key = "agent:main:subagent:x";
    store.create(new_session(key)).await.unwrap();
    store.patch(&k(key), labelled("scout")).await.unwrap();
    let model = EntryPatch {
        model: Patch::Set("openai/gpt".into()),
        ..Default::default()
    };
    let e = store.patch(&k(key), model).await.unwrap();
    assert_eq!(
        (e.label.as_deref(), e.model.as_deref()),
        (Some("scout"), Some("openai/gpt"))
    );

    let parent = |p: &str| EntryPatch {
        spawned_by: Patch::Set(k(p)),
        ..Default::default()
    };
    store
        .patch(&k(key), parent("agent:main:main"))
        .await
        .unwrap();
    let again = store
        .patch(&k(key), parent("agent:main:other"))
        .await
        .unwrap_err();
    assert!(again.to_string().contains("set once"), "{again}");

    // A label is unique per agent.
    store.create(new_session("agent:main:two")).await.unwrap();
    let taken = store
        .patch(&k("agent:main:two"), labelled("scout"))
        .await
        .unwrap_err();
    assert!(
        taken
            .to_string()
            .contains("label \"scout\" is already used by another session of agent main"),
        "{taken}"
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_write_in_a_group_rolls_back_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            if i % 10 == 0 {
                // Appending to a missing session without creating it fails inside the group.
                store
                    .append(&k("agent:main:missing"), None, vec![user("x")])
                    .await
                    .map(|_| ())
            } else {
                let key = format!("agent:main:s{i}");
                store
                    .append(&k(&key), Some(new_session(&key)), vec![user("x")])
                    .await
                    .map(|_| ())
            }
        }));
    }
    let mut failed = 0;
    for task in tasks {
        if task.await.unwrap().is_err() {
            failed += 1;
        }
    }
    assert_eq!(failed, 5);
    assert_eq!(store.count().await.unwrap(), 45);
    store.close().await;
}

#[tokio::test]
async fn a_short_or_missing_mirror_is_rebuilt_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let a = seed(&store, "agent:main:a", 30).await;
    let b = seed(&store, "agent:main:b", 5).await;
    store.close().await;
    let path_a = mirror::transcript_path(dir.path(), "main", &a);
    let path_b = mirror::transcript_path(dir.path(), "main", &b);
    let expected_a = std::fs::read(&path_a).unwrap();
    let expected_b = std::fs::read(&path_b).unwrap();

    // What a kill between commit and mirror write leaves: a short file, a missing file, and
    // mirrored_seq behind last_seq, flagged.
    std::fs::write(&path_a, &expected_a[..expected_a.len() / 2]).unwrap();
    std::fs::remove_file(&path_b).unwrap();
    Connection::open(dir.path().join("switchboard.db"))
        .unwrap()
        .execute(
            "UPDATE transcripts SET mirrored_seq = 0, mirror_behind = 1",
            [],
        )
        .unwrap();

    let store = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(std::fs::read(&path_a).unwrap(), expected_a);
    assert_eq!(std::fs::read(&path_b).unwrap(), expected_b);
    // And appends after the repair continue the file.
    store
        .append(&k("agent:main:b"), None, vec![user("six")])
        .await
        .unwrap();
    assert!(mirror::is_complete(&path_b, 6));
    store.close().await;
}

#[tokio::test]
async fn a_start_reads_only_the_mirrors_behind_their_database() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(seed(&store, &format!("agent:main:s{i:02}"), 3).await);
    }
    store.close().await;
    // s00: a kill left its last line out of the file and its mark behind. s01: deleted by hand
    // while the gateway was stopped, its mark current.
    let behind = mirror::transcript_path(dir.path(), "main", &ids[0]);
    let behind_bytes = std::fs::read(&behind).unwrap();
    std::fs::write(&behind, &behind_bytes[..behind_bytes.len() - 10]).unwrap();
    let deleted = mirror::transcript_path(dir.path(), "main", &ids[1]);
    let deleted_bytes = std::fs::read(&deleted).unwrap();
    std::fs::remove_file(&deleted).unwrap();
    let conn = Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    conn.execute(
        "UPDATE transcripts SET mirrored_seq = 2, mirror_behind = 1 WHERE session_id = ?1",
        [&ids[0]],
    )
    .unwrap();

    // What an open runs before it serves anyone: the one behind is checked and rewritten, through
    // the partial index; none of the 19 others is looked at.
    let plan: String = conn
        .query_row(&format!("EXPLAIN QUERY PLAN {BEHIND_SQL}"), [], |r| {
            r.get(3)
        })
        .unwrap();
    assert!(plan.contains("transcripts_behind"), "{plan}");
    assert_eq!(
        repair_behind(&conn, dir.path()).unwrap(),
        Repair {
            checked: 1,
            rebuilt: 1
        }
    );
    assert_eq!(std::fs::read(&behind).unwrap(), behind_bytes);
    assert!(!deleted.exists());
    assert_eq!(
        repair_behind(&conn, dir.path()).unwrap(),
        Repair {
            checked: 0,
            rebuilt: 0
        }
    );
    drop(conn);

    // The writer's sweep after the start finds the deleted one and rewrites it.
    let store = SqliteStore::open(dir.path()).unwrap();
    until_complete(&deleted, 3, "the sweep never rebuilt the deleted mirror").await;
    assert_eq!(std::fs::read(&deleted).unwrap(), deleted_bytes);
    store.close().await;
}

/// Waits until the mirror at `path` holds its header and `messages` lines (written in the
/// background: the writer's sweep or its retry); `what` names what never happened.
async fn until_complete(path: &std::path::Path, messages: i64, what: &str) {
    until(what, || mirror::is_complete(path, messages)).await;
}

/// Waits up to 30 s until `done` (what the writer thread does in the background); `what` names
/// what never happened.
pub(super) async fn until(what: &str, mut done: impl FnMut() -> bool) {
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while !done() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect(what);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_mirror_write_is_retried_and_leaves_no_hole() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let key = k("agent:main:a");
    let a = seed(&store, key.as_str(), 5).await;
    let path = mirror::transcript_path(dir.path(), "main", &a);
    let append = async |text: &str| {
        store.append(&key, None, vec![user(text)]).await.unwrap();
    };
    // The file cannot be written for a moment (a directory stands in its place: even root
    // cannot append to that); the database takes the messages all the same.
    let block = || {
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
    };
    block();
    append("m5").await;
    append("m6").await;
    std::fs::remove_dir(&path).unwrap();
    // Writable again: the idle retry rewrites the file whole.
    until_complete(&path, 7, "the failed mirror write was never retried").await;
    // A failed write followed by good ones in one commit: the first rewrites the file (with the
    // second's message already in it), the second adds nothing twice.
    block();
    append("m7").await;
    std::fs::remove_dir(&path).unwrap();
    let two = |text: &str| WriteOp::Append {
        key: key.clone(),
        create: None,
        messages: vec![user(text)],
    };
    store.write_batch(vec![two("m8"), two("m9")]).await.unwrap();
    assert!(mirror::is_complete(&path, 10));
    let text = std::fs::read_to_string(&path).unwrap();
    let ids: Vec<String> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].to_string())
        .collect();
    let expected: Vec<String> = (1..=10)
        .map(|seq| format!("\"{}\"", mirror::message_id(seq)))
        .collect();
    assert_eq!(ids, expected);
    store.close().await;
}

#[tokio::test]
async fn runs_left_live_by_a_dead_process_are_found_with_their_input() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    store.create(new_session("agent:main:main")).await.unwrap();
    let run = RunRecord {
        run_id: RunId::from_string("r1"),
        session_key: k("agent:main:main"),
        session_id: None,
        status: RunStatus::Running,
        lane: "main".into(),
        created_at: 1,
        started_at: Some(2),
        ended_at: None,
        result: None,
        error: None,
        idempotency_key: Some("k1".into()),
        model: Some("mock/m2".into()),
        cost_usd: Some(0.25),
        epoch: 0,
    };
    store.put_run(run.clone()).await.unwrap();
    let stored = store.get_run(&run.run_id).await.unwrap();
    assert_eq!(
        stored.as_ref(),
        Some(&run),
        "the answering model and cost are kept"
    );
    let dup = RunRecord {
        run_id: RunId::from_string("r2"),
        ..run.clone()
    };
    assert!(
        store
            .put_run(dup)
            .await
            .unwrap_err()
            .to_string()
            .contains("idempotencyKey")
    );
    // A queued run keeps its input until it starts; the order of submission is kept.
    let queued = |id: &str| RunRecord {
        run_id: RunId::from_string(id),
        status: RunStatus::Queued,
        started_at: None,
        idempotency_key: None,
        ..run.clone()
    };
    let input = |text: &str| crate::store::RunInput {
        message: Some(user(text)),
        extra_system_prompt: Some("block".into()),
        timeout_ms: Some(5_000),
        model: None,
        chain: vec!["agent:main:a".into()],
        deliver: None,
        trace: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
        starts: 0,
    };
    store
        .write_batch(vec![
            WriteOp::QueueRun(queued("r4"), Box::new(input("first"))),
            WriteOp::QueueRun(queued("r3"), Box::new(input("second"))),
        ])
        .await
        .unwrap();
    drop(store);

    let store = SqliteStore::open(dir.path()).unwrap();
    let live = store.live_runs().await.unwrap();
    let ids: Vec<&str> = live.iter().map(|(r, _)| r.run_id.as_str()).collect();
    assert_eq!(ids, ["r1", "r4", "r3"], "submission order, not id order");
    assert_eq!(live[0].1, None, "a started run keeps no input");
    assert_eq!(live[1].1, Some(input("first")));
    assert_eq!(live[2].1, Some(input("second")));
    // Starting clears the input.
    store
        .put_run(RunRecord {
            status: RunStatus::Running,
            ..queued("r4")
        })
        .await
        .unwrap();
    let live = store.live_runs().await.unwrap();
    assert_eq!(live[1].1, None);
}

#[tokio::test]
async fn list_applies_filters_before_the_limit_and_pages_with_a_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    for i in 0..12 {
        let key = format!("agent:main:cron:{i}");
        let mut new = new_session(&key);
        new.kind = SessionKind::Cron;
        store.create(new).await.unwrap();
    }
    for i in 0..30 {
        store
            .create(new_session(&format!("agent:main:o{i:02}")))
            .await
            .unwrap();
    }
    let query = |cursor| ListQuery {
        kinds: vec![SessionKind::Cron],
        limit: 5,
        cursor,
        ..Default::default()
    };
    let mut keys = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.list(query(cursor)).await.unwrap();
        assert!(page.entries.len() == 5 || page.next_cursor.is_none());
        keys.extend(page.entries.into_iter().map(|e| e.key));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    keys.sort();
    let mut expected: Vec<String> = (0..12).map(|i| format!("agent:main:cron:{i}")).collect();
    expected.sort();
    assert_eq!(keys, expected);
    store.close().await;
}

#[tokio::test]
async fn cached_statements_are_not_re_prepared_when_parameters_change() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    for key in ["agent:main:a", "agent:main:b", "agent:main:c"] {
        store.create(new_session(key)).await.unwrap();
    }
    store.close().await;
    let conn = Connection::open(dir.path().join("switchboard.db")).unwrap();
    super::schema::configure(&conn).unwrap();
    for key in [
        "agent:main:a",
        "agent:main:b",
        "agent:main:c",
        "agent:main:a",
    ] {
        assert!(queries::get_entry(&conn, key).unwrap().is_some());
    }
    let sql = format!(
        "SELECT {} FROM {} WHERE s.key = ?1",
        crate::store::rules::rows::ENTRY_COLUMNS,
        crate::store::rules::rows::ENTRY_FROM
    );
    let stmt = conn.prepare_cached(&sql).unwrap();
    assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
    assert_eq!(stmt.get_status(StatementStatus::Run), 4);
}

#[cfg(unix)]
#[tokio::test]
async fn the_state_dir_the_database_and_the_transcripts_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::tempdir().unwrap();
    let home = parent.path().join("state");
    let store = SqliteStore::open(&home).unwrap();
    let session_id = seed(&store, "agent:main:a", 2).await;
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let transcript = mirror::transcript_path(&home, "main", &session_id);
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(transcript.parent().unwrap()), 0o700);
    assert_eq!(mode(&transcript), 0o600);
    for file in ["switchboard.db", "switchboard.db-wal", "switchboard.db-shm"] {
        assert_eq!(mode(&home.join(file)), 0o600, "{file}");
    }
    // A rebuilt transcript keeps the mode (rebuilt by the sweep after the start).
    std::fs::remove_file(&transcript).unwrap();
    store.close().await;
    let store = SqliteStore::open(&home).unwrap();
    until_complete(&transcript, 2, "the sweep never rebuilt the deleted mirror").await;
    assert_eq!(mode(&transcript), 0o600);
    store.close().await;
}

#[tokio::test]
async fn sessions_are_counted_per_agent_as_they_are_created_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(store.count().await.unwrap(), 0);
    for (key, agent_id) in [
        ("agent:main:main", "main"),
        ("agent:main:a", "main"),
        ("agent:ops:main", "ops"),
    ] {
        let new = NewSession {
            agent_id: agent_id.into(),
            ..new_session(key)
        };
        store.create(new).await.unwrap();
    }
    assert_eq!(
        store.count_by_agent().await.unwrap(),
        [("main".to_string(), 2), ("ops".to_string(), 1)]
    );
    store.create(new_session("agent:main:a")).await.unwrap(); // already there
    store.reset(&k("agent:main:a")).await.unwrap();
    assert_eq!(store.count().await.unwrap(), 3);
    store.delete(&k("agent:ops:main")).await.unwrap();
    assert_eq!(
        store.count_by_agent().await.unwrap(),
        [("main".to_string(), 2)],
        "an agent without sessions is not listed"
    );
    assert_eq!(store.count().await.unwrap(), 2);
    store.close().await;
}

#[tokio::test]
async fn a_version_1_database_is_migrated_and_its_queued_runs_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    store.create(new_session("agent:main:main")).await.unwrap();
    let queued = RunRecord::queued(RunId::from_string("old"), k("agent:main:main"), "main", 1);
    store.put_run(queued).await.unwrap();
    store.close().await;
    // What version 1 looked like: no run input, no last model.
    Connection::open(dir.path().join("switchboard.db"))
        .unwrap()
        .execute_batch(
            "DROP INDEX runs_to_recover; ALTER TABLE runs DROP COLUMN input; \
             ALTER TABLE sessions DROP COLUMN last_model; ALTER TABLE cron_jobs DROP COLUMN name; \
             ALTER TABLE cron_jobs DROP COLUMN enabled; DROP TABLE channel_cursors; \
             DROP TABLE channel_pairings; ALTER TABLE deliveries DROP COLUMN parts_sent; \
             ALTER TABLE sessions DROP COLUMN cost_usd; ALTER TABLE runs DROP COLUMN model; \
             ALTER TABLE runs DROP COLUMN cost_usd; ALTER TABLE transcripts DROP COLUMN summary_seq; \
             ALTER TABLE deliveries DROP COLUMN trace; ALTER TABLE subagents DROP COLUMN trace; ALTER TABLE subagents DROP COLUMN origin; \
             ALTER TABLE exchanges DROP COLUMN trace; DROP TRIGGER sessions_counted; \
             DROP INDEX transcripts_behind; ALTER TABLE transcripts DROP COLUMN mirror_behind; \
             DROP TRIGGER sessions_uncounted; DROP TRIGGER sessions_recounted; \
             DROP TABLE session_counts; DROP TABLE mirror_checked; PRAGMA user_version = 1;",
        )
        .unwrap();

    let store = SqliteStore::open(dir.path()).unwrap();
    let live = store.live_runs().await.unwrap();
    assert_eq!(live.len(), 1);
    assert_eq!((live[0].0.run_id.as_str(), &live[0].1), ("old", &None));
    let entry = store.get(&k("agent:main:main")).await.unwrap().unwrap();
    assert_eq!(entry.last_model, None);
    assert_eq!(store.count().await.unwrap(), 1, "counted by the migration");
    let ops = NewSession {
        agent_id: "ops".into(),
        ..new_session("agent:ops:main")
    };
    store.create(ops).await.unwrap();
    assert_eq!(
        store.count_by_agent().await.unwrap(),
        [("main".to_string(), 1), ("ops".to_string(), 1)]
    );
    store.close().await;
    let conn = Connection::open(dir.path().join("switchboard.db")).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, 14);
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('channel_cursors', 'channel_pairings')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        tables, 2,
        "schema 5 adds the channel cursors, 6 the pairings"
    );
    let parts: i64 = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('deliveries') WHERE name = 'parts_sent'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(parts, 1, "schema 6 counts the parts a channel took");
    let cron_columns: i64 = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('cron_jobs') WHERE name IN ('name', 'enabled')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(cron_columns, 2);
    let run_columns: i64 = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('runs') WHERE name IN ('model', 'cost_usd')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(run_columns, 2, "schema 8 keeps a run's model and cost");
}

#[tokio::test]
async fn a_list_page_is_read_in_order_from_an_index_without_a_sort_or_a_join() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    for i in 0..30 {
        store
            .create(new_session(&format!("agent:main:s{i:02}")))
            .await
            .unwrap();
    }
    store.close().await;
    let conn = Connection::open(dir.path().join("switchboard.db")).unwrap();
    let mut query = ListQuery::every(None, 10);
    query.include_archived = false;
    query.exclude_keys = vec!["unknown".into(), "global".into()];
    for agent in [None, Some("main".to_string())] {
        query.agent_id = agent;
        let statement = crate::store::rules::list::statement(&query, crate::store::dialect::SQLITE);
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", statement.sql))
            .unwrap()
            .query_map(types::bind(&statement.params), |r| r.get(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(plan.len(), 1, "{plan:?}");
        assert!(plan[0].contains("USING INDEX sessions_by_"), "{plan:?}");
        let mut stmt = conn.prepare(&statement.sql).unwrap();
        let rows = stmt
            .query_map(types::bind(&statement.params), |r| r.get::<_, String>(0))
            .unwrap()
            .count();
        assert_eq!(rows, 11);
        assert_eq!(stmt.get_status(StatementStatus::Sort), 0);
    }
}

/// A writer without its thread: nothing else takes the desk or commits meanwhile.
fn threadless_writer(dir: &std::path::Path) -> writer::Writer {
    let conn = Connection::open(dir.join(DATABASE_FILE)).unwrap();
    let checked = super::checked::Checked::unwatched(dir);
    let checkpoints =
        super::checkpoint::Checkpoints::start(&conn, &dir.join(DATABASE_FILE)).unwrap();
    writer::Writer::new(conn, dir.to_path_buf(), checked, checkpoints)
}

/// A job that writes nothing.
fn empty_job() -> writer::Job {
    Box::new(|_| writer::JobDone {
        ok: true,
        mirror: Vec::new(),
        finish: Box::new(|_| {}),
    })
}

#[test]
fn a_write_queued_beside_its_callers_work_leaves_the_next_one_to_its_own_task() {
    let dir = tempfile::tempdir().unwrap();
    let writer = threadless_writer(dir.path());
    // Past the calm a new writer starts with.
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(matches!(
        writer.submit(empty_job(), Committer::WriterThread),
        writer::Queued::Alone
    ));
    // Behind the write in flight, committed with it.
    assert!(matches!(
        writer.submit(empty_job(), Committer::Caller),
        writer::Queued::Behind
    ));
    assert!(writer.help(), "the two writes were not committed");
    assert!(
        matches!(
            writer.submit(empty_job(), Committer::Caller),
            writer::Queued::Alone
        ),
        "a write queued beside its caller's work was taken for concurrent writes"
    );
}

#[test]
fn a_point_read_takes_the_writers_desk_only_when_it_is_free_and_no_write_waits() {
    let dir = tempfile::tempdir().unwrap();
    let writer = threadless_writer(dir.path());
    let one = |c: &Connection| c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0)).unwrap();
    assert_eq!(
        writer.read_at_desk(one).ok(),
        Some(1),
        "a free desk refused the read"
    );
    let held = writer.hold_desk();
    assert!(
        writer.read_at_desk(one).is_err(),
        "a held desk took the read"
    );
    drop(held);
    assert!(!matches!(
        writer.submit(empty_job(), Committer::Caller),
        writer::Queued::Closed
    ));
    assert!(
        writer.read_at_desk(one).is_err(),
        "the read went ahead of a queued write"
    );
}

#[tokio::test]
async fn a_point_read_answers_the_same_row_at_the_desk_and_from_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    seed(&store, "agent:main:a", 2).await;
    let idle_readers = |store: &SqliteStore| store.inner.readers.lock().unwrap().len();
    // At the desk when it is free (the writer thread may hold it for a moment: then a reader).
    let first = store.get(&k("agent:main:a")).await.unwrap().unwrap();
    // A commit holds the desk: the read does not wait for it, a reader answers the same row.
    let held = store.inner.writer.hold_desk();
    let by_reader = store.get(&k("agent:main:a")).await.unwrap().unwrap();
    drop(held);
    assert!(
        idle_readers(&store) >= 1,
        "a busy desk's read was not served by a reader"
    );
    assert_eq!(first, by_reader);
    // What a commit wrote is read right after it.
    store
        .patch(&k("agent:main:a"), labelled("after"))
        .await
        .unwrap();
    let after = store.get(&k("agent:main:a")).await.unwrap().unwrap();
    assert_eq!(after.label.as_deref(), Some("after"));
    store.close().await;
}
