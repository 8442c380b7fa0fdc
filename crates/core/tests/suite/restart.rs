//! What a restart keeps (SPEC §6.3, §12, docs/decisions.md "Runs across a restart"): a running
//! run is resumed from its transcript and answers once, queued runs start again in order after
//! it, a run cut off in a tool not safe to repeat ends aborted with its transcript closed, and an
//! agent-to-agent exchange goes on from the step it was at, announcing exactly once.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{AgentEntry, Config};
use switchboard_core::store::{ExchangeState, RunStatus};
use switchboard_protocol::exchanges::{ExchangeInfo, ExchangesListParams};

use switchboard_core::runtime::tool::{Tool, ToolContext, ToolFuture, ToolOutput};

use super::support::{GUARD, TestEngine};

/// Polls `check` until it answers something (hang-guarded).
async fn eventually<T>(mut check: impl AsyncFnMut() -> Option<T>) -> T {
    tokio::time::timeout(GUARD, async {
        loop {
            if let Some(found) = check().await {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the condition never held")
}

fn shape(t: &[Value]) -> Vec<String> {
    t.iter()
        .map(|m| {
            let text = super::support::text_of(m);
            let stop = m["stopReason"].as_str().unwrap_or("");
            format!("{} {stop}: {text}", m["role"].as_str().unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_run_is_resumed_and_the_queued_ones_follow_in_order() {
    let w = TestEngine::open(Config::default()).await;
    let streamed = "@slow 150\n@reply streamed across the stop";
    let slow = w.submit("main", streamed, None).await;
    let first = w.submit("main", "PLEASE-KEEP-ME\n@reply one", None).await;
    let second = w.submit("main", "@reply two", None).await;
    let runtime = w.engine.runtime().clone();
    eventually(async || {
        let record = runtime.record(&slow).await.unwrap()?;
        (record.status == RunStatus::Running).then_some(())
    })
    .await;
    let w = w.restart(None).await;

    let runtime = w.engine.runtime();
    // Resumed from its transcript (its message, nothing of the stream): the model is asked
    // again, and the run answers once.
    for (run, reply) in [
        (slow, "streamed across the stop"),
        (first, "one"),
        (second, "two"),
    ] {
        let record = runtime.wait(&run, GUARD).await.unwrap().record;
        assert_eq!(
            (record.status, record.result.as_deref()),
            (RunStatus::Ok, Some(reply))
        );
    }
    assert_eq!(
        shape(&w.transcript("main").await),
        [
            "user : @slow 150\n@reply streamed across the stop",
            "assistant stop: streamed across the stop",
            "user : PLEASE-KEEP-ME\n@reply one",
            "assistant stop: one",
            "user : @reply two",
            "assistant stop: two",
        ]
    );
    let entry = w.engine.store().get(&w.key("main")).await.unwrap().unwrap();
    assert!(
        !entry.aborted_last_run,
        "the last run of the session ended well"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_run_aborted_before_a_stop_never_runs_and_keeps_its_message() {
    let w = TestEngine::open(Config::default()).await;
    let slow = w.submit("main", "@slow 1000\n@reply at last", None).await;
    let queued = w.submit("main", "@reply must not run", None).await;
    let runtime = w.engine.runtime().clone();
    eventually(async || {
        let record = runtime.record(&slow).await.unwrap()?;
        (record.status == RunStatus::Running).then_some(())
    })
    .await;
    let key = w.key("main");
    assert_eq!(
        runtime.abort(&key, Some(&queued)).await.unwrap(),
        vec![queued.clone()]
    );
    // Committed when answered: the stored record already says so.
    let stored = w.engine.store().get_run(&queued).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Aborted);
    let w = w.restart(None).await;

    let record = w
        .engine
        .runtime()
        .wait(&queued, GUARD)
        .await
        .unwrap()
        .record;
    assert_eq!(
        (
            record.status,
            record.error.as_deref(),
            record.result.clone()
        ),
        (RunStatus::Aborted, Some("aborted before it started"), None)
    );
    assert!(!record.interrupted());
    tokio::time::timeout(GUARD, w.engine.runtime().idle())
        .await
        .unwrap();
    assert_eq!(
        shape(&w.transcript("main").await),
        [
            "user : @slow 1000\n@reply at last",
            "assistant stop: at last",
            "user : @reply must not run",
        ]
    );
}

/// A tool that never answers: the run calling it is still running when the gateway stops.
struct Hang;

impl Tool for Hang {
    fn name(&self) -> &str {
        "hang"
    }
    fn description(&self) -> &str {
        "Never answers."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn call<'a>(&'a self, _: &'a ToolContext, _: Value) -> ToolFuture<'a> {
        Box::pin(std::future::pending::<ToolOutput>())
    }
}

/// Agent `main` answers reply-back turns by number; `turn2` is the rules for turn 2.
fn exchange_config(turn2: &str) -> Config {
    let prompt = format!(
        "@when \"Turn 1 of\" @reply t1\n{turn2}\n@when \"Turn 3 of\" @reply \
         t3\n@when \"announce step\" @reply Posted: the end"
    );
    let mut config = Config::default();
    config.agents.list = vec![AgentEntry {
        id: "main".into(),
        default: true,
        system_prompt: Some(prompt),
        ..AgentEntry::default()
    }];
    config.session.agent_to_agent.max_ping_pong_turns = 3;
    config
}

async fn exchanges(w: &TestEngine) -> Vec<ExchangeInfo> {
    let all = ExchangesListParams::default();
    w.engine.exchanges().list(all).await.unwrap().exchanges
}

async fn announces(w: &TestEngine) -> Vec<String> {
    let records = super::support::deliveries_of(&w.engine, "announce").await;
    records.into_iter().map(|d| d.text).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exchange_cut_off_mid_loop_runs_the_step_again_and_announces_once() {
    let hang = "@when \"Turn 2 of\" @tool hang {}";
    let mut w = TestEngine::builder()
        .config(exchange_config(hang))
        .tool(std::sync::Arc::new(Hang))
        .open()
        .await;
    w.create("peer").await;
    let send = json!({"sessionKey": "peer", "message": "@reply r1", "timeoutSeconds": 0});
    w.turn("main", &format!("@tool sessions_send {send}\n@reply sent"))
        .await;
    // Turn 2 (the peer answering t1) hangs in a tool call: the gateway stops while it runs,
    // once the call is in the transcript (a stop between the run's start and the model's
    // answer would cut off another moment than the one this test is about).
    let runtime = w.engine.runtime().clone();
    let step = eventually(async || {
        let x = exchanges(&w).await.pop()?;
        let run = switchboard_core::RunId::from_string(x.step_run_id.clone());
        let record = runtime.record(&run).await.unwrap()?;
        let peer = shape(&w.transcript("peer").await);
        let calling = peer.last().is_some_and(|m| m == "assistant toolUse: ");
        (x.turn == 1 && record.status == RunStatus::Running && calling).then_some(x)
    })
    .await;
    assert_eq!((step.state.as_str(), step.attempt), ("replying", 1));
    // Run again without its hanging rule, the step is answered by the default rule.
    w.config = exchange_config("@default @reply t2");
    let w = w.restart(None).await;

    let done = eventually(async || {
        let x = exchanges(&w).await.pop()?;
        (x.state == "done").then_some(x)
    })
    .await;
    assert_eq!((done.turn, done.detail.as_deref()), (3, Some("announced")));
    tokio::time::timeout(GUARD, w.engine.runtime().idle())
        .await
        .unwrap();
    let peer = shape(&w.transcript("peer").await);
    // The cut-off step's transcript is closed (its tool call answered, an aborted message), then
    // the step runs again on it.
    assert_eq!(
        peer[..4],
        [
            "user : @reply r1",
            "assistant stop: r1",
            "user : t1",
            "assistant toolUse: "
        ]
    );
    assert!(
        peer[4].starts_with("toolResult : No result: the run stopped before hang finished (interrupted: the gateway stopped"),
        "{}",
        peer[4]
    );
    assert_eq!(
        peer[5..],
        [
            "assistant aborted: ",
            "assistant stop: t2",
            // The loop stopped at its limit on main's turn: main's reply is the announce's
            // user message.
            "user : t3",
            "assistant stop: Posted: the end",
        ]
    );
    let main = shape(&w.transcript("main").await);
    assert_eq!(main[main.len() - 2..], ["user : t2", "assistant stop: t3"]);
    assert_eq!(announces(&w).await, ["Posted: the end"]);

    // Driven again from a record that says the announce is still to come (a stop between the
    // announce run's end and the record's): its run ended, so nothing is announced twice.
    let mut record = w
        .engine
        .store()
        .get_exchange(&done.id)
        .await
        .unwrap()
        .unwrap();
    record.state = ExchangeState::Announcing;
    w.engine.store().put_exchange(record).await.unwrap();
    let w = w.restart(None).await;
    let again = eventually(async || {
        let x = exchanges(&w).await.pop()?;
        (x.state == "done").then_some(x)
    })
    .await;
    assert_eq!(again.step_run_id, done.step_run_id);
    tokio::time::timeout(GUARD, w.engine.runtime().idle())
        .await
        .unwrap();
    assert_eq!(announces(&w).await, ["Posted: the end"]);
    assert_eq!(shape(&w.transcript("peer").await).len(), peer.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_step_ends_the_exchange_failed_with_the_reason_kept() {
    let fails = "@when \"Turn 2 of\" @error the peer fell over";
    let w = TestEngine::open(exchange_config(fails)).await;
    w.create("peer").await;
    let send = json!({"sessionKey": "peer", "message": "@reply r1", "timeoutSeconds": 0});
    w.turn("main", &format!("@tool sessions_send {send}\n@reply sent"))
        .await;
    let failed = eventually(async || {
        let x = exchanges(&w).await.pop()?;
        (x.state == "failed").then_some(x)
    })
    .await;
    let detail = failed.detail.unwrap();
    assert!(
        detail.starts_with("reply turn 2 ended error") && detail.contains("the peer fell over"),
        "{detail}"
    );
    assert!(announces(&w).await.is_empty());
    // The exchange is found by the runId the send answered, and by either session.
    let got = w
        .engine
        .exchanges()
        .get(switchboard_protocol::exchanges::ExchangesGetParams {
            id: failed.id.clone(),
        })
        .await
        .unwrap();
    assert_eq!(got.state, "failed");
    for session in ["main", "peer"] {
        let p = ExchangesListParams {
            session_key: Some(session.into()),
            limit: None,
        };
        let rows = w.engine.exchanges().list(p).await.unwrap().exchanges;
        assert_eq!(rows.len(), 1, "{session}");
    }
    let missing = switchboard_protocol::exchanges::ExchangesGetParams { id: "nope".into() };
    let error = w
        .engine
        .exchanges()
        .get(missing)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("Exchange not found: nope"), "{error}");
}

/// The trace context of waiting work (SPEC §10b) is kept with its record, so the spans of
/// resumed work join the trace they began in.
#[tokio::test]
async fn waiting_work_keeps_its_trace_context() {
    use switchboard_core::ids::RunId;
    use switchboard_core::keys::SessionKey;
    use switchboard_core::store::{
        DeliveryRecord, DeliveryStatus, ExchangeRecord, SubagentRecord, SubagentState,
    };
    const TRACE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let t = TestEngine::open(Config::default()).await;
    let store = t.engine.store();
    let key = |k: &str| SessionKey::from_canonical(k.to_string());
    let exchange = ExchangeRecord {
        id: "x-1".into(),
        requester_key: key("agent:main:main"),
        requester_run: RunId::from_string("r-1"),
        target_key: key("agent:main:peer"),
        message: "hello".into(),
        chain: vec![key("agent:main:main")],
        state: ExchangeState::Replying,
        turn: 1,
        step_run: RunId::from_string("r-2"),
        attempt: 1,
        round1: None,
        latest: None,
        previous_run: None,
        detail: None,
        created_at: 1,
        updated_at: 1,
        trace: Some(TRACE.into()),
        epoch: store.cluster().epoch(),
    };
    store.put_exchange(exchange.clone()).await.unwrap();
    let read = store.get_exchange("x-1").await.unwrap().unwrap();
    assert_eq!(read.trace.as_deref(), Some(TRACE));
    let subagent = SubagentRecord {
        child_key: key("agent:main:subagent:1"),
        requester_key: key("agent:main:main"),
        run_id: RunId::from_string("r-3"),
        task: "task".into(),
        label: None,
        model: "builtin/echo".into(),
        delete_after: false,
        state: SubagentState::Running,
        outcome: None,
        created_at: 1,
        ended_at: None,
        delivery_id: None,
        archive_at: None,
        archived_at: None,
        trace: Some(TRACE.into()),
        origin: None,
        epoch: store.cluster().epoch(),
    };
    store
        .write_batch(vec![switchboard_core::store::WriteOp::PutSubagent(
            Box::new(subagent),
        )])
        .await
        .unwrap();
    let read = store
        .get_subagent(&key("agent:main:subagent:1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.trace.as_deref(), Some(TRACE));
    let delivery = DeliveryRecord {
        id: "d-1".into(),
        idempotency_key: None,
        kind: "reply".into(),
        session_key: None,
        source_key: None,
        run_id: None,
        channel: "none".into(),
        to: String::new(),
        account_id: None,
        thread_id: None,
        text: "hi".into(),
        status: DeliveryStatus::Recorded,
        attempts: 0,
        next_attempt_at: 1,
        detail: None,
        created_at: 1,
        updated_at: 1,
        delivered_at: None,
        parts_sent: 0,
        trace: Some(TRACE.into()),
    };
    store.enqueue_delivery(delivery).await.unwrap();
    let read = store.get_delivery("d-1").await.unwrap().unwrap();
    assert_eq!(read.trace.as_deref(), Some(TRACE));
}
