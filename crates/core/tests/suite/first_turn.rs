//! A session's first message: the session is created by the commit that starts its run, and
//! the run carries the id of the transcript it runs in, also when two first messages race.

use pretty_assertions::assert_eq;
use switchboard_core::RunId;
use switchboard_core::config::Config;
use switchboard_core::store::{RunRecord, RunStatus, WriteOp, WriteOutcome};

use super::support::{GUARD, TestEngine, message};

/// A run's record of the store, by id.
async fn stored(h: &TestEngine, run_id: &RunId) -> RunRecord {
    let record = h.engine.store().get_run(run_id).await.unwrap();
    record.unwrap_or_else(|| panic!("no run {run_id}"))
}

#[tokio::test]
async fn a_first_message_creates_its_session_in_the_commit_that_starts_its_run() {
    let h = TestEngine::open(Config::default()).await;
    let before = h.engine.store().version();
    let record = h.turn("first", "hello").await;
    let after = h.engine.store().version();
    assert_eq!(record.status, RunStatus::Ok, "{record:?}");
    let session_id = h.session_id("first").await;
    assert_eq!(record.session_id.as_deref(), Some(session_id.as_str()));
    let kept = stored(&h, &record.run_id).await;
    assert_eq!(kept.session_id.as_deref(), Some(session_id.as_str()));
    let texts: Vec<String> = h
        .transcript("first")
        .await
        .iter()
        .map(super::support::text_of)
        .collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert_eq!(texts[0], "hello");
    // The start (the session, its message, the run) and the end (the reply, the record).
    // PostgreSQL counts statements, not commits (`postgres::` counts a turn's).
    if let (Some(before), Some(after)) = (before, after) {
        assert_eq!(after - before, 2, "commits of a first turn");
    }
}

#[tokio::test]
async fn two_first_messages_to_one_new_session_both_run_in_it() {
    let h = TestEngine::open(Config::default()).await;
    let (one, two) = tokio::join!(
        h.submit("raced", "one", None),
        h.submit("raced", "two", None)
    );
    let session_id = h.session_id("raced").await;
    for run_id in [one, two] {
        let waited = h.engine.runtime().wait(&run_id, GUARD).await.unwrap();
        assert_eq!(waited.record.status, RunStatus::Ok, "{:?}", waited.record);
        assert_eq!(
            waited.record.session_id.as_deref(),
            Some(session_id.as_str())
        );
        let kept = stored(&h, &run_id).await;
        assert_eq!(kept.session_id.as_deref(), Some(session_id.as_str()));
    }
    assert_eq!(
        h.transcript("raced").await.len(),
        4,
        "two turns in one transcript"
    );
}

/// The store's side of the race, made certain: a batch that would create a session that
/// another batch created first appends to that session, and its new run takes that session's
/// transcript id.
#[tokio::test]
async fn a_new_run_without_its_session_id_takes_the_id_of_the_session_its_batch_wrote() {
    let h = TestEngine::open(Config::default()).await;
    let key = h.key("batched");
    let store = h.engine.store();
    let mut ids = Vec::new();
    for text in ["one", "two"] {
        let record = RunRecord {
            status: RunStatus::Ok,
            started_at: Some(1),
            ended_at: Some(2),
            ..RunRecord::queued(RunId::default(), key.clone(), "main", 1)
        };
        let append = WriteOp::Append {
            key: key.clone(),
            create: Some(h.engine.resolver().new_session(&key)),
            messages: vec![message(
                serde_json::json!({"role": "user", "content": text, "timestamp": 1}),
            )],
        };
        let run_id = record.run_id.clone();
        let outcomes = store
            .write_batch(vec![append, WriteOp::NewRun(record, None)])
            .await
            .unwrap();
        let WriteOutcome::Appended(appended) = &outcomes[0] else {
            panic!("{outcomes:?}");
        };
        assert_eq!(
            appended.created,
            text == "one",
            "created by the first batch only"
        );
        ids.push(stored(&h, &run_id).await.session_id);
    }
    let session_id = Some(h.session_id("batched").await);
    assert_eq!(ids, vec![session_id.clone(), session_id]);
}
