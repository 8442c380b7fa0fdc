//! A message judged on the entry its session's last run left (PostgreSQL): its start writes
//! only while the session is as that entry says and no other gateway runs it.

use switchboard_core::error::CoreError;
use switchboard_core::ids::RunId;
use switchboard_core::store::{EntryPatch, RunStatus, StoreError, TryLock, WriteOp};
use switchboard_protocol::runs::{ChatSendAnswer, ChatSendParams};
use switchboard_protocol::sessions::Patch;

use switchboard_core::config::{ProviderApi, StoreConfig, StoreKind};
use switchboard_testkit::{Gate, MockLlm, MockReply};

use super::postgres::{echo_session, lock_free, named, options, send_and_wait};
use super::runtime::mock_config;
use super::support::{GUARD, TestEngine, k};

fn chat(key: &str, message: &str) -> ChatSendParams {
    ChatSendParams {
        session_key: key.into(),
        message: message.into(),
        ..ChatSendParams::default()
    }
}

/// A send policy another gateway sets on the session between two turns refuses the next
/// message, which the entry the last turn left would have let in: the message's start finds
/// the session's row changed, writes nothing, and the message is judged again on the row read
/// anew. The session keeps serving once the policy is lifted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_policy_set_by_another_gateway_after_a_turn_refuses_the_next_message() {
    let test = "a_send_policy_set_by_another_gateway_after_a_turn_refuses_the_next_message";
    let Some(options) = options(test) else {
        return;
    };
    let key = "agent:main:policy-behind";
    let (h, other) = echo_session(&options, key).await;
    let before = h.engine.store().get(&k(key)).await.unwrap().unwrap();
    let set = format!(
        "UPDATE {}.sessions SET send_policy = $2 WHERE key = $1",
        options.schema
    );
    other.execute(&set, &[&key, &"deny"]).await.unwrap();
    let refused = h.engine.sessions().chat_send(chat(key, "hi"), true).await;
    assert!(
        matches!(&refused, Err(CoreError::Forbidden(why)) if why.contains("sendPolicy=deny")),
        "{refused:?}"
    );
    let after = h.engine.store().get(&k(key)).await.unwrap().unwrap();
    assert_eq!(
        after.last_seq, before.last_seq,
        "the refused message was written"
    );
    other.execute(&set, &[&key, &"allow"]).await.unwrap();
    let record = send_and_wait(&h.engine, key, "again").await;
    assert_eq!(record.status, RunStatus::Ok, "{record:?}");
}

/// A message into a session whose lock another gateway took after the last turn here is not
/// run meanwhile: its start finds the lock taken and writes nothing, and the message, asked
/// again, is queued; it runs once the lock is let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_into_a_session_another_gateway_locked_after_a_turn_waits_for_it() {
    let test = "a_message_into_a_session_another_gateway_locked_after_a_turn_waits_for_it";
    let Some(options) = options(test) else {
        return;
    };
    let key = "agent:main:locked-behind";
    let (h, other) = echo_session(&options, key).await;
    let lock = "SELECT pg_try_advisory_lock(hashtextextended($1, 0))";
    let taken: bool = other.query_one(lock, &[&key]).await.unwrap().get(0);
    assert!(taken, "the session's lock is held after its turn");
    let answer = h.engine.sessions().chat_send(chat(key, "hi"), true).await;
    let Ok(ChatSendAnswer::Started(started)) = answer else {
        panic!("{answer:?}");
    };
    let run_id = RunId::from_string(&started.run_id);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let run = h.engine.store().get_run(&run_id).await.unwrap().unwrap();
    assert_eq!(
        run.status,
        RunStatus::Queued,
        "ran while another held the lock"
    );
    let unlock = "SELECT pg_advisory_unlock(hashtextextended($1, 0))";
    other.execute(unlock, &[&key]).await.unwrap();
    let ended = h.engine.runtime().wait(&run_id, GUARD).await.unwrap();
    assert_eq!(ended.record.status, RunStatus::Ok, "{:?}", ended.record);
}

/// A start that is not one statement (here, a label set with it) asks for the lock while the
/// session is at the kept entry's version, then is written holding it; once the row moved on,
/// it is `Stale`: nothing written, no lock held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_of_several_statements_takes_the_lock_at_the_kept_version() {
    let test = "a_start_of_several_statements_takes_the_lock_at_the_kept_version";
    let Some(options) = options(test) else {
        return;
    };
    let key = "agent:main:kept-long-way";
    let (h, other) = echo_session(&options, key).await;
    let store = h.engine.store();
    let label = |name: &str| {
        let patch = EntryPatch {
            label: Patch::Set(name.into()),
            ..EntryPatch::default()
        };
        vec![WriteOp::Patch {
            key: k(key),
            patch: Box::new(patch),
        }]
    };
    let Ok((Some(_), TryLock::Unasked(lock))) = store.get_for_run(&k(key)).await else {
        panic!("no kept entry for the run");
    };
    let (written, held) = store.write_start(label("first"), Some(lock)).await;
    written.unwrap();
    assert!(held.is_some(), "the start's lock did not come back");
    assert!(
        !lock_free(&other, key).await,
        "the start did not take the lock"
    );
    drop(held);
    let freed = async {
        while !lock_free(&other, key).await {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(GUARD, freed)
        .await
        .expect("the lock is let go");
    // A turn keeps the entry again; the row then moves on behind it.
    send_and_wait(&h.engine, key, "again").await;
    let touch = format!(
        "UPDATE {}.sessions SET model = 'x/y' WHERE key = $1",
        options.schema
    );
    other.execute(&touch, &[&key]).await.unwrap();
    let Ok((_, TryLock::Unasked(lock))) = store.get_for_run(&k(key)).await else {
        panic!("no kept entry for the run");
    };
    let (written, held) = store.write_start(label("second"), Some(lock)).await;
    assert!(matches!(written, Err(StoreError::Stale(_))), "{written:?}");
    assert!(held.is_none(), "a stale start holds a lock");
    assert!(lock_free(&other, key).await, "a stale start took the lock");
    let entry = store.get(&k(key)).await.unwrap().unwrap();
    assert_eq!(entry.label.as_deref(), Some("first"));
}

/// A message judged on the kept entry that does not start at once (its lane is full) is judged
/// again on the session read anew before it is queued: a send policy set after the last turn
/// refuses it, where the kept entry would have queued it, and the queued run would have run
/// unchecked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_queued_behind_a_full_lane_is_judged_on_the_session_read_anew() {
    let test = "a_message_queued_behind_a_full_lane_is_judged_on_the_session_read_anew";
    let Some(options) = options(test) else {
        return;
    };
    let mock = MockLlm::start().await;
    let mut config = mock_config(&mock, ProviderApi::OpenAiCompletions, false);
    config.store = StoreConfig {
        kind: StoreKind::Postgres,
        url: Some(options.url.clone()),
        schema: options.schema.clone(),
        ..StoreConfig::default()
    };
    config.agents.defaults.max_concurrent = 1;
    config.cron.enabled = false;
    let h = TestEngine::open(config).await;
    let key = "agent:main:judged-anew";
    mock.push(MockReply::text("first answer"));
    send_and_wait(&h.engine, key, "first").await;
    // Another session takes the lane's one slot, held at the model.
    let gate = Gate::new();
    mock.push(MockReply::gated(&gate, MockReply::text("held")));
    let busy = "agent:main:holding-the-lane";
    let answer = h
        .engine
        .sessions()
        .chat_send(chat(busy, "hold"), true)
        .await;
    assert!(
        matches!(answer, Ok(ChatSendAnswer::Started(_))),
        "{answer:?}"
    );
    tokio::time::timeout(GUARD, mock.wait_requests(2))
        .await
        .expect("the second session called the model");
    let (other, connection) = tokio_postgres::connect(&options.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let set = format!(
        "UPDATE {}.sessions SET send_policy = 'deny' WHERE key = $1",
        options.schema
    );
    other.execute(&set, &[&key]).await.unwrap();
    let refused = h
        .engine
        .sessions()
        .chat_send(chat(key, "queued"), true)
        .await;
    assert!(
        matches!(&refused, Err(CoreError::Forbidden(why)) if why.contains("sendPolicy=deny")),
        "{refused:?}"
    );
    gate.open();
    mock.stop().await;
}

/// An entry kept before the gateway made a connection is not used: the new connection may
/// reach another server (a failover), where the row's version says nothing. Here the lock's
/// connection is cut after a turn; the next turn reads its session again (3 statements, not
/// 2) and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_kept_before_a_connection_was_made_is_read_again() {
    let test = "an_entry_kept_before_a_connection_was_made_is_read_again";
    let Some(options) = options(test) else {
        return;
    };
    let key = "agent:main:reconnected";
    let name = options.schema.clone();
    let (h, other) = echo_session(&named(&options, &name), key).await;
    let cut = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
               WHERE application_name = $1 AND query LIKE 'WITH %UPDATE runs %'";
    let cut: i64 = other.query_one(cut, &[&name]).await.unwrap().get(0);
    assert_eq!(cut, 1, "the lock's connection was not found");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let before = h.engine.store().statements();
    let record = send_and_wait(&h.engine, key, "after the cut").await;
    assert_eq!(record.status, RunStatus::Ok, "{record:?}");
    let sent = h.engine.store().statements() - before;
    assert!(sent >= 3, "{sent} statements: the kept entry was used");
    // The turn after it keeps and uses its entry again.
    let before = h.engine.store().statements();
    send_and_wait(&h.engine, key, "again").await;
    assert_eq!(h.engine.store().statements() - before, 2);
}
