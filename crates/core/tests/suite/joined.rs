//! A send's reply commits with its target's start (docs/decisions.md, "A send's reply commits
//! with its target's start"): on SQLite the model's reply that calls `sessions_send` is written
//! in the commit that starts the target's run, or, when that write does not happen, with the
//! call's result; a run cut off meanwhile still closes its transcript with the reply. On
//! PostgreSQL the reply is written before the call, as before (the first test checks the send
//! there; the other two say NOT RUN).

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{Config, ProviderApi};
use switchboard_core::runtime::RunEventData;
use switchboard_core::store::RunStatus;
use switchboard_testkit::{Gate, MockLlm, MockReply, MockToolCall};

use super::runtime::mock_config;
use super::support::{GUARD, TestEngine};

/// The engine on the mock model, without reply-back turns. The announce step is answered by
/// its prompt, never from the queue: it starts once the target's run ended, beside the caller's
/// next model call, and may ask first (on PostgreSQL, where the caller is told only the
/// committed end, it sometimes did).
async fn engine(mock: &MockLlm) -> TestEngine {
    let mut config: Config = mock_config(mock, ProviderApi::OpenAiCompletions, true);
    config.session.agent_to_agent.max_ping_pong_turns = 0;
    mock.set_rule(Box::new(|asked| {
        let announce = (asked.messages().iter())
            .any(|m| m.to_string().contains("Agent-to-agent announce step"));
        announce.then(|| MockReply::text("ANNOUNCE_SKIP"))
    }));
    mock.set_fallback(MockReply::text("ANNOUNCE_SKIP"));
    let h = TestEngine::open(config).await;
    h.create("helper").await;
    h
}

/// The model's call of `sessions_send` into `helper`.
fn send_call() -> MockReply {
    let args = json!({"sessionKey": "helper", "message": "ping"}).to_string();
    MockReply::ToolCalls(vec![MockToolCall::new("c1", "sessions_send", args)])
}

/// The messages of the first model request that carries a tool result, once one arrived.
async fn asked_with_result(mock: &MockLlm) -> Vec<Value> {
    let mut n = 1;
    loop {
        mock.wait_requests(n).await;
        let requests = mock.requests();
        let with_result =
            (requests.iter()).find(|r| r.messages().iter().any(|m| m["role"] == "tool"));
        if let Some(asked) = with_result {
            return asked.messages().to_vec();
        }
        n = requests.len() + 1;
    }
}

/// The roles of `transcript`, in order.
fn roles(transcript: &[Value]) -> Vec<String> {
    transcript
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The SQLite database of `h`, opened beside the gateway.
fn database(h: &TestEngine) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(h.engine.home().join("switchboard.db")).unwrap();
    db.busy_timeout(GUARD).unwrap();
    db
}

/// The store row of session `key` (canonical).
fn row(db: &rusqlite::Connection, key: &str) -> i64 {
    db.query_row("SELECT rowid FROM sessions WHERE key = ?1", [key], |r| {
        r.get(0)
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sends_reply_commits_with_its_targets_start() {
    let mock = MockLlm::start().await;
    let (called, answer) = (Gate::new(), Gate::new());
    mock.push(MockReply::gated(&called, send_call()));
    mock.push(MockReply::gated(&answer, MockReply::text("pong")));
    mock.push(MockReply::text("done"));
    let h = engine(&mock).await;
    let run = h.submit("main", "ask helper", None).await;
    tokio::time::timeout(GUARD, mock.wait_requests(1))
        .await
        .expect("the caller's model call");
    let store = h.engine.store();
    let before = store.version();
    called.open();
    tokio::time::timeout(GUARD, mock.wait_requests(2))
        .await
        .expect("the target's model call");
    let after = store.version();
    match (before, after) {
        (Some(before), Some(after)) => {
            let db = database(&h);
            let caller = row(&db, h.key("main").as_str());
            let target = row(&db, h.key("helper").as_str());
            // Between the caller's model call and the target's, one commit wrote both
            // sessions: the reply that called the tool, and the run it started.
            let both = (before + 1..=after).any(|v| {
                let touched = store.sessions_touched(v - 1, v).unwrap_or_default();
                touched.contains(&caller) && touched.contains(&target)
            });
            assert!(
                both,
                "no commit of versions {before}..={after} wrote both the caller's reply and the \
                 target's start"
            );
        }
        _ => assert!(h.on_postgres(), "only a shared store keeps no versions"),
    }
    answer.open();
    let ended = h.ended(&run).await;
    // Its last reply is "done", or the fallback when the announce step asked the model first.
    assert_eq!(ended.status, RunStatus::Ok, "{:?}", ended.error);
    let transcript = h.transcript("main").await;
    assert_eq!(
        roles(&transcript),
        ["user", "assistant", "toolResult", "assistant"]
    );
    let result: Value =
        serde_json::from_str(transcript[2]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        (&result["status"], &result["reply"]),
        (&json!("ok"), &json!("pong"))
    );
    // The reply's seq was known without reading it: the conversation the next run starts from
    // is the transcript.
    let seqs: Vec<i64> = h
        .engine
        .store()
        .history(&h.session_id("main").await, 10, None)
        .await
        .unwrap()
        .messages
        .iter()
        .map(|m| m.seq)
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    mock.assert_tool_results_answer_tool_calls();
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_whose_send_could_not_start_is_written_with_the_error() {
    let mock = MockLlm::start().await;
    mock.push(send_call());
    mock.push(MockReply::text("done"));
    let h = engine(&mock).await;
    if h.on_postgres() {
        println!(
            "NOT RUN on PostgreSQL: the reply is written before the call there, and the \
             trigger that refuses the exchange is SQLite's"
        );
        h.engine.close().await;
        return;
    }
    // Every exchange's record is refused: the commit that would start the target's run, with
    // the caller's reply in it, fails whole.
    database(&h)
        .execute_batch(
            "CREATE TRIGGER refuse_exchanges BEFORE INSERT ON exchanges BEGIN \
             SELECT RAISE(ABORT, 'the test refuses every exchange'); END;",
        )
        .unwrap();
    let record = h.turn("main", "ask helper").await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    assert_eq!(record.result.as_deref(), Some("done"));
    let transcript = h.transcript("main").await;
    assert_eq!(
        roles(&transcript),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(transcript[1]["content"][0]["id"], "c1");
    let text = transcript[2]["content"][0]["text"].as_str().unwrap();
    let result: Value = serde_json::from_str(text).unwrap();
    assert_eq!(result["status"], "error", "{result}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("refuses every exchange"),
        "{result}"
    );
    assert_eq!(h.transcript("helper").await, Vec::<Value>::new());
    assert_eq!(
        mock.requests().len(),
        2,
        "the target's model was never called"
    );
    mock.assert_tool_results_answer_tool_calls();
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cut_off_while_its_send_commits_keeps_the_reply_before_the_closing() {
    let mock = MockLlm::start().await;
    let called = Gate::new();
    mock.push(MockReply::gated(&called, send_call()));
    mock.push(MockReply::text("pong"));
    let h = engine(&mock).await;
    if h.on_postgres() {
        println!(
            "NOT RUN on PostgreSQL: the reply is written before the call there, and nothing \
             holds the send's commit for the abort to find"
        );
        h.engine.close().await;
        return;
    }
    let mut events = h.engine.runtime().subscribe();
    let run = h.submit("main", "ask helper", None).await;
    tokio::time::timeout(GUARD, mock.wait_requests(1))
        .await
        .expect("the caller's model call");
    // Another connection holds SQLite's write lock: the send's commit waits for it.
    let holder = database(&h);
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    called.open();
    // The call is made while its reply waits for the call's own write.
    tokio::time::timeout(GUARD, async {
        loop {
            let event = events.recv().await.expect("the events go on");
            if matches!(event.data, RunEventData::ToolCall { .. }) {
                break;
            }
        }
    })
    .await
    .expect("the tool was called");
    // Long enough for the call to reach its write, which the lock holds (the abort below finds
    // it sent, or, on a slow machine, still left: both must close the transcript well).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let key = h.key("main");
    let aborted = h.engine.runtime().abort(&key, Some(&run)).await.unwrap();
    assert_eq!(aborted, std::slice::from_ref(&run));
    holder.execute_batch("ROLLBACK").unwrap();
    let ended = h.ended(&run).await;
    assert_eq!(ended.status, RunStatus::Aborted);
    let transcript = h.transcript("main").await;
    assert_eq!(
        roles(&transcript),
        ["user", "assistant", "toolResult", "assistant"],
        "{transcript:?}"
    );
    assert_eq!(transcript[1]["content"][0]["id"], "c1");
    assert_eq!(transcript[2]["toolCallId"], "c1");
    // The closing's error result, or, when a loaded machine let the call end before the run
    // saw its abort, the call's own.
    let closed = transcript[2]["isError"] == true;
    assert_eq!(transcript[3]["stopReason"], "aborted");
    // The target's run started exactly when the reply was written with it.
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .expect("the engine became idle");
    let helper = h.transcript("helper").await;
    let started = !helper.is_empty();
    let exchanges = h
        .engine
        .exchanges()
        .list(Default::default())
        .await
        .unwrap()
        .exchanges;
    assert_eq!(exchanges.len(), usize::from(started), "{helper:?}");
    println!(
        "the abort found the send's commit {}; the call's result: {}",
        if started { "sent" } else { "not yet sent" },
        if closed { "the closing's" } else { "its own" }
    );
    mock.assert_tool_results_answer_tool_calls();
    h.engine.close().await;
}

/// A send's reply is told once its target's end is queued (docs/decisions.md, "A send's reply
/// is told once its end is queued"): on SQLite the caller's next model call goes out with the
/// reply while the end cannot commit yet, the caller's result commits only after it, and
/// nothing of either is reported before; on PostgreSQL the end commits first, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sends_reply_is_told_once_its_targets_end_is_queued() {
    let mock = MockLlm::start().await;
    let answer = Gate::new();
    mock.push(send_call());
    mock.push(MockReply::gated(&answer, MockReply::text("pong")));
    mock.push(MockReply::text("done"));
    let h = engine(&mock).await;
    let run = h.submit("main", "ask helper", None).await;
    tokio::time::timeout(GUARD, mock.wait_requests(2))
        .await
        .expect("the target's model call");
    // On SQLite, another connection holds the database's write lock from here: the target's
    // end cannot commit until it lets go.
    let holder = (!h.on_postgres()).then(|| {
        let db = database(&h);
        db.execute_batch("BEGIN IMMEDIATE").unwrap();
        db
    });
    answer.open();
    let asked = tokio::time::timeout(GUARD, asked_with_result(&mock))
        .await
        .expect("the caller's model call after the reply");
    let told = asked
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a result");
    let told: Value = serde_json::from_str(told["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        (&told["status"], &told["reply"]),
        (&json!("ok"), &json!("pong"))
    );
    if let Some(holder) = holder {
        // Neither the target's end nor the result that quotes it has committed.
        let ended: i64 = holder
            .query_row("SELECT count(*) FROM runs WHERE status = 'ok'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(
            ended, 0,
            "a run's end committed through another's write lock"
        );
        assert_eq!(roles(&h.transcript("main").await), ["user", "assistant"]);
        holder.execute_batch("ROLLBACK").unwrap();
    }
    let ended = h.ended(&run).await;
    assert_eq!(ended.status, RunStatus::Ok, "{:?}", ended.error);
    assert_eq!(ended.result.as_deref(), Some("done"));
    let transcript = h.transcript("main").await;
    assert_eq!(
        roles(&transcript),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(
        roles(&h.transcript("helper").await)[..2],
        ["user", "assistant"]
    );
    mock.assert_tool_results_answer_tool_calls();
    h.engine.close().await;
}
