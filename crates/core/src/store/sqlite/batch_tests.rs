//! A batch that appends to a session and then patches it, with only a run's record between (a
//! run's reply, a run's end: `write_ops`), writes the session's row once: what it leaves must
//! be what the same writes leave one at a time. The store's clock is a manual one, so every
//! time is exact.
use std::sync::Arc;

use pretty_assertions::assert_eq;
use switchboard_protocol::sessions::Patch;

use super::tests::{k, new_session, seed, user};
use super::{SqliteStore, patched_later};
use crate::clock::ManualClock;
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{
    EntryPatch, ListQuery, RunRecord, RunStatus, RunStore, SessionEntry, SessionReads,
    SessionStore, Store, StoreError, TokenDelta, WriteOp, WriteOutcome,
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

fn append(key: &SessionKey, text: &str) -> WriteOp {
    WriteOp::Append {
        key: key.clone(),
        create: None,
        messages: vec![user(text)],
    }
}

fn patch(key: &SessionKey) -> WriteOp {
    WriteOp::Patch {
        key: key.clone(),
        patch: Box::new(tokens()),
    }
}

/// What the writes leave that does not depend on which session it is.
fn written(e: &SessionEntry) -> SessionEntry {
    SessionEntry {
        key: k("agent:main:x"),
        session_id: String::new(),
        ..e.clone()
    }
}

/// A store on a manual clock, with the sessions created (three messages each) at `at`.
async fn store_at(
    at: i64,
    keys: &[&SessionKey],
) -> (tempfile::TempDir, SqliteStore, Arc<ManualClock>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(at);
    let store = SqliteStore::open_with_clock(dir.path(), clock.clone()).unwrap();
    for key in keys {
        seed(&store, key.as_str(), 3).await;
    }
    (dir, store, clock)
}

#[tokio::test]
async fn an_append_then_a_patch_in_one_batch_leave_what_they_leave_one_at_a_time() {
    let (apart, batched, other) = (
        k("agent:main:apart"),
        k("agent:main:batched"),
        k("agent:main:other"),
    );
    let (_dir, store, clock) = store_at(1_000, &[&batched, &other, &apart]).await;
    // One at a time, as three commits, at 2,000.
    clock.set(2_000);
    store
        .append(&apart, None, vec![user("reply")])
        .await
        .unwrap();
    store.put_run(ended(&apart)).await.unwrap();
    let patched_apart = store.patch(&apart, tokens()).await.unwrap();
    // In one batch, as a run's end writes them, at 2,000 too.
    let outcomes = store
        .write_batch(vec![
            append(&batched, "reply"),
            WriteOp::PutRun(ended(&batched)),
            patch(&batched),
        ])
        .await
        .unwrap();
    let stored = store.get(&batched).await.unwrap().unwrap();
    assert_eq!(store.get(&apart).await.unwrap().unwrap(), patched_apart);
    assert_eq!(written(&stored), written(&patched_apart));
    assert_eq!((stored.updated_at, stored.last_seq), (2_000, 4));
    match outcomes.as_slice() {
        [
            WriteOutcome::Appended(appended),
            _,
            WriteOutcome::Patched(patched),
        ] => {
            let e = &appended.entry;
            assert_eq!(
                (
                    e.updated_at,
                    e.last_seq,
                    appended.seqs.clone(),
                    appended.created
                ),
                (2_000, 4, vec![4], false)
            );
            assert_eq!(patched, &stored, "the patch answers the stored entry");
        }
        other => panic!("unexpected outcomes {other:?}"),
    }
    // The page by time: the two written sessions (the same time, then by key), then the other.
    let page = store
        .list(ListQuery {
            limit: 10,
            ..ListQuery::default()
        })
        .await
        .unwrap();
    let keys: Vec<&str> = page.entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys[2], other.as_str());
    // A clock that went back: the row keeps its later time through the skipped touch.
    clock.set(1_500);
    store
        .write_batch(vec![append(&batched, "late"), patch(&batched)])
        .await
        .unwrap();
    let stored = store.get(&batched).await.unwrap().unwrap();
    assert_eq!((stored.updated_at, stored.last_seq), (2_000, 5));
    store.close().await;
}

#[tokio::test]
async fn an_append_followed_by_another_sessions_patch_still_moves_its_own_time() {
    let (appended, patched) = (k("agent:main:appended"), k("agent:main:patched"));
    let (_dir, store, clock) = store_at(1_000, &[&appended, &patched]).await;
    // The patch that follows is another session's: the append moves its own session's time.
    clock.set(2_000);
    store
        .write_batch(vec![append(&appended, "one"), patch(&patched)])
        .await
        .unwrap();
    let (a, p) = (
        store.get(&appended).await.unwrap().unwrap(),
        store.get(&patched).await.unwrap().unwrap(),
    );
    assert_eq!((a.updated_at, a.last_seq, a.input_tokens), (2_000, 4, 0));
    assert_eq!((p.updated_at, p.last_seq, p.input_tokens), (2_000, 3, 7));
    // Two appends, then their session's patch: the patch starts from the second's entry.
    clock.set(3_000);
    let outcomes = store
        .write_batch(vec![
            append(&appended, "two"),
            append(&appended, "three"),
            patch(&appended),
        ])
        .await
        .unwrap();
    let a = store.get(&appended).await.unwrap().unwrap();
    assert_eq!((a.updated_at, a.last_seq, a.output_tokens), (3_000, 6, 3));
    let [_, _, WriteOutcome::Patched(answered)] = outcomes.as_slice() else {
        panic!("unexpected outcomes {outcomes:?}");
    };
    assert_eq!(answered, &a);
    store.close().await;
}

#[tokio::test]
async fn an_append_that_creates_its_session_then_its_patch_leave_the_created_row() {
    let (_dir, store, clock) = store_at(1_000, &[]).await;
    let key = k("agent:main:kept");
    clock.set(2_000);
    let outcomes = store
        .write_batch(vec![
            WriteOp::Append {
                key: key.clone(),
                create: Some(new_session(key.as_str())),
                messages: vec![user("kept")],
            },
            WriteOp::PutRun(ended(&key)),
            patch(&key),
        ])
        .await
        .unwrap();
    let stored = store.get(&key).await.unwrap().unwrap();
    assert_eq!(
        (stored.created_at, stored.updated_at, stored.last_seq),
        (2_000, 2_000, 1)
    );
    assert_eq!((stored.input_tokens, stored.aborted_last_run), (7, true));
    assert!(matches!(outcomes.as_slice(), [WriteOutcome::Appended(a), _, _] if a.created));
    store.close().await;
}

#[test]
fn only_writes_of_other_tables_are_passed_over_to_the_patch() {
    let (key, other) = (k("agent:main:a"), k("agent:main:b"));
    let fence = || WriteOp::Fence {
        run_id: RunId::from_string("r"),
        epoch: 0,
    };
    let run = || WriteOp::PutRun(ended(&key));
    assert!(patched_later(&key, &[fence(), run(), patch(&key)]));
    assert!(patched_later(&key, &[patch(&key)]));
    assert!(!patched_later(&key, &[append(&key, "again"), patch(&key)]));
    assert!(!patched_later(&key, &[patch(&other), patch(&key)]));
    assert!(!patched_later(&key, &[run()]));
    let create = WriteOp::Create(Box::new(new_session(key.as_str())));
    assert!(!patched_later(&key, &[create, patch(&key)]));
}

/// A write that quotes a run's end ([`WriteOp::Ended`], `runtime/told.rs`) commits only once
/// that end is stored as it says, and queued after the end on the one writer it is; one that
/// finds the run otherwise fails alone, writing nothing, and what was queued with it commits.
#[tokio::test]
async fn a_write_that_quotes_a_runs_end_commits_only_with_that_end() {
    let (target, caller) = (k("agent:main:target"), k("agent:main:caller"));
    let (_dir, store, _clock) = store_at(1_000, &[&target, &caller]).await;
    let end = ended(&target);
    let running = RunRecord {
        status: RunStatus::Running,
        ended_at: None,
        result: None,
        ..end.clone()
    };
    store.put_run(running).await.unwrap();
    let quotes = |status| WriteOp::Ended {
        run_id: end.run_id.clone(),
        status,
    };
    // The end queued first, the write that quotes it after: both commit.
    let ending = store
        .write_batch_beside(vec![WriteOp::PutRun(end.clone())])
        .unwrap_or_else(|_| panic!("SQLite writes beside"));
    let quoting = store
        .write_batch_beside(vec![quotes(RunStatus::Ok), append(&caller, "the reply")])
        .unwrap_or_else(|_| panic!("SQLite writes beside"));
    let (ended_written, quoted) = tokio::join!(ending, quoting);
    ended_written.unwrap();
    assert!(matches!(
        quoted.unwrap().as_slice(),
        [WriteOutcome::Ended, WriteOutcome::Appended(_)]
    ));
    assert_eq!(store.get(&caller).await.unwrap().unwrap().last_seq, 4);

    // An end that is not the one quoted: that write fails whole; the one queued with it lands.
    let refused = store
        .write_batch_beside(vec![quotes(RunStatus::Error), append(&caller, "not so")])
        .unwrap_or_else(|_| panic!("SQLite writes beside"));
    let beside = store
        .write_batch_beside(vec![append(&target, "still written")])
        .unwrap_or_else(|_| panic!("SQLite writes beside"));
    let (refused, beside) = tokio::join!(refused, beside);
    match refused {
        Err(StoreError::Conflict(why)) => {
            assert!(why.contains("is stored ok, not ended error"), "{why}")
        }
        other => panic!("a write quoting another end: {other:?}"),
    }
    beside.unwrap();
    assert_eq!(store.get(&caller).await.unwrap().unwrap().last_seq, 4);
    assert_eq!(store.get(&target).await.unwrap().unwrap().last_seq, 4);
    // The check after a write of its own: what the failed write wrote is undone, alone.
    let undone = store
        .write_batch_beside(vec![append(&caller, "undone"), quotes(RunStatus::Error)])
        .unwrap_or_else(|_| panic!("SQLite writes beside"));
    let beside = store
        .write_batch_beside(vec![append(&target, "kept")])
        .unwrap_or_else(|_| panic!("SQLite writes beside"));
    let (undone, beside) = tokio::join!(undone, beside);
    assert!(matches!(undone, Err(StoreError::Conflict(_))), "{undone:?}");
    beside.unwrap();
    assert_eq!(store.get(&caller).await.unwrap().unwrap().last_seq, 4);
    assert_eq!(store.get(&target).await.unwrap().unwrap().last_seq, 5);
    // A run never stored.
    let unknown = WriteOp::Ended {
        run_id: RunId::from_string("nowhere"),
        status: RunStatus::Ok,
    };
    let absent = store.write_batch(vec![unknown, append(&caller, "x")]).await;
    assert!(matches!(absent, Err(StoreError::Conflict(_))), "{absent:?}");
    assert_eq!(store.get(&caller).await.unwrap().unwrap().last_seq, 4);
    store.close().await;
}
