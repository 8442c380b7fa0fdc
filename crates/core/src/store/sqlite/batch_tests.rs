//! A batch that appends to a session and then patches it, with only a run's record between (a
//! run's reply, a run's end: `write_ops`), writes the session's row once: what it leaves must
//! be what the same writes leave one at a time.
use pretty_assertions::assert_eq;
use switchboard_protocol::sessions::Patch;

use super::SqliteStore;
use super::tests::{k, seed, user};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{
    EntryPatch, ListQuery, RunRecord, RunStatus, RunStore, SessionEntry, SessionReads,
    SessionStore, Store, TokenDelta, WriteOp, WriteOutcome,
};

fn tokens() -> EntryPatch {
    EntryPatch {
        add_tokens: Some(TokenDelta {
            input: 7,
            output: 3,
        }),
        add_cost: Some(0.5),
        context_tokens: Patch::Set(10),
        last_model: Patch::Set("mock/m".into()),
        aborted_last_run: Some(true),
        system_sent: Some(true),
        ..EntryPatch::default()
    }
}

fn ended(key: &SessionKey) -> RunRecord {
    RunRecord {
        run_id: RunId::from_string(format!("run-{key}")),
        session_key: key.clone(),
        session_id: None,
        status: RunStatus::Ok,
        lane: "main".into(),
        created_at: 1,
        started_at: Some(2),
        ended_at: Some(3),
        result: Some("reply".into()),
        error: None,
        idempotency_key: None,
        model: Some("mock/m".into()),
        cost_usd: Some(0.5),
        epoch: 0,
    }
}

/// What the two writes leave that does not depend on which session or when.
fn written(e: &SessionEntry) -> SessionEntry {
    SessionEntry {
        key: k("agent:main:x"),
        session_id: String::new(),
        created_at: 0,
        updated_at: 0,
        ..e.clone()
    }
}

fn now_ms() -> i64 {
    let since = std::time::UNIX_EPOCH.elapsed().unwrap();
    i64::try_from(since.as_millis()).unwrap()
}

async fn pause() {
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
}

#[tokio::test]
async fn an_append_then_a_patch_in_one_batch_leave_what_they_leave_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let (apart, batched, other) = (
        k("agent:main:apart"),
        k("agent:main:batched"),
        k("agent:main:other"),
    );
    for key in [&batched, &other, &apart] {
        seed(&store, key.as_str(), 3).await;
        pause().await;
    }
    // One at a time, as three commits.
    store
        .append(&apart, None, vec![user("reply")])
        .await
        .unwrap();
    store.put_run(ended(&apart)).await.unwrap();
    let patched_apart = store.patch(&apart, tokens()).await.unwrap();
    pause().await;
    // In one batch, as a run's end writes them; the oldest session of the three.
    let before = now_ms();
    let outcomes = store
        .write_batch(vec![
            WriteOp::Append {
                key: batched.clone(),
                create: None,
                messages: vec![user("reply")],
            },
            WriteOp::PutRun(ended(&batched)),
            WriteOp::Patch {
                key: batched.clone(),
                patch: Box::new(tokens()),
            },
        ])
        .await
        .unwrap();
    let stored = store.get(&batched).await.unwrap().unwrap();
    let apart_stored = store.get(&apart).await.unwrap().unwrap();
    assert_eq!(apart_stored, patched_apart);
    assert_eq!(written(&stored), written(&apart_stored));
    assert_eq!(stored.last_seq, 4);
    assert!(
        stored.updated_at >= before,
        "the batch moved the session's time: {} < {before}",
        stored.updated_at
    );
    match outcomes.as_slice() {
        [
            WriteOutcome::Appended(appended),
            _,
            WriteOutcome::Patched(patched),
        ] => {
            assert_eq!(appended.seqs, vec![4]);
            assert_eq!(patched, &stored, "the patch answers the stored entry");
        }
        other => panic!("unexpected outcomes {other:?}"),
    }
    // The page by time sees the move: the batched session, then the others, newest first.
    let page = store
        .list(ListQuery {
            limit: 10,
            ..ListQuery::default()
        })
        .await
        .unwrap();
    let keys: Vec<&str> = page.entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, vec![batched.as_str(), apart.as_str(), other.as_str()]);
    store.close().await;
}

#[tokio::test]
async fn an_append_followed_by_another_sessions_patch_still_moves_its_own_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let (appended, patched) = (k("agent:main:appended"), k("agent:main:patched"));
    for key in [&appended, &patched] {
        seed(&store, key.as_str(), 2).await;
        pause().await;
    }
    // The patch that follows is another session's: the append moves its own session's time.
    let before = now_ms();
    let append = |text: &str| WriteOp::Append {
        key: appended.clone(),
        create: None,
        messages: vec![user(text)],
    };
    let patch = |key: &SessionKey| WriteOp::Patch {
        key: key.clone(),
        patch: Box::new(tokens()),
    };
    store
        .write_batch(vec![append("one"), patch(&patched)])
        .await
        .unwrap();
    let (a, p) = (
        store.get(&appended).await.unwrap().unwrap(),
        store.get(&patched).await.unwrap().unwrap(),
    );
    assert!(a.updated_at >= before, "the append did not move its time");
    assert!(p.updated_at >= before);
    assert_eq!((a.last_seq, a.input_tokens), (3, 0));
    assert_eq!((p.last_seq, p.input_tokens, p.output_tokens), (2, 7, 3));
    // Two appends, then their session's patch: only the second leaves its time to the patch.
    pause().await;
    let before = now_ms();
    store
        .write_batch(vec![append("two"), append("three"), patch(&appended)])
        .await
        .unwrap();
    let a = store.get(&appended).await.unwrap().unwrap();
    assert!(a.updated_at >= before);
    assert_eq!((a.last_seq, a.input_tokens, a.output_tokens), (5, 7, 3));
    store.close().await;
}
