//! Runs resumed after a stop (SPEC §6.3, docs/decisions.md "Runs across a restart"): a tool call
//! cut off by the stop is made again only when the tool is safe to repeat; otherwise the run ends
//! `aborted` and the chat it answers gets one notice; a run is started at most three times.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_core::config::Config;
use switchboard_core::runtime::tool::{Tool, ToolContext, ToolFuture, ToolOutput};
use switchboard_core::runtime::{Deliver, RunRequest, lanes::Lane};
use switchboard_core::store::RunStatus;
use switchboard_protocol::delivery::DeliveryKind;
use switchboard_protocol::sessions::DeliveryContext;
use switchboard_protocol::tools::ToolHints;

use super::support::{GUARD, TestEngine, text_of, until};

/// A tool that never answers its first `hangs` calls (the gateway stops while it runs), then
/// answers `done`; it says it only reads when `reads`.
struct Stuck {
    name: &'static str,
    calls: Arc<AtomicUsize>,
    hangs: usize,
    reads: bool,
}

impl Stuck {
    fn new(name: &'static str, hangs: usize, reads: bool) -> (Arc<Self>, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let tool = Self {
            name,
            calls: calls.clone(),
            hangs,
            reads,
        };
        (Arc::new(tool), calls)
    }
}

impl Tool for Stuck {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Answers done, some time."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn hints(&self) -> Option<ToolHints> {
        self.reads.then_some(ToolHints::READS)
    }
    fn call<'a>(&'a self, _: &'a ToolContext, _: Value) -> ToolFuture<'a> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let hangs = n < self.hangs;
        Box::pin(async move {
            if hangs {
                std::future::pending::<()>().await;
            }
            ToolOutput::ok(json!("done"))
        })
    }
}

/// Submits `text` into main with its reply delivered to a Telegram chat.
/// Where `run` stands now, without waiting.
async fn status_now(w: &TestEngine, run: &switchboard_core::RunId) -> RunStatus {
    let waited = w.engine.runtime().wait(run, Duration::ZERO).await;
    waited.unwrap().record.status
}

async fn submit_from_chat(w: &TestEngine, text: &str) -> switchboard_core::RunId {
    let key = w.key("main");
    let mut request = RunRequest::new(key.clone(), Lane::Main).with_message(text, None);
    request.create = Some(w.engine.resolver().new_session(&key));
    request.deliver = Some(Deliver {
        kind: DeliveryKind::Reply,
        route: Some(DeliveryContext {
            channel: "telegram".into(),
            to: "42".into(),
            account_id: None,
            thread_id: None,
        }),
    });
    w.engine.runtime().submit(request).await.unwrap().run_id
}

/// The texts of the replies recorded for delivery (sent or not).
async fn replies(w: &TestEngine) -> Vec<String> {
    let records = super::support::deliveries_of(&w.engine, "reply").await;
    records.into_iter().map(|d| d.text).collect()
}

/// Waits until `calls` is `n` (the tool was called, and hangs).
async fn called(calls: &AtomicUsize, n: usize) {
    until("the tool is called", || async {
        (calls.load(Ordering::SeqCst) == n).then_some(())
    })
    .await;
}

/// A run from a chat that calls `tool` (safe to repeat when `reads`), cut off by a stop while
/// the tool hangs once; answers the engine after the restart, the run's end and the tool's
/// calls.
async fn cut_off_in(
    tool: &'static str,
    reads: bool,
    text: &str,
) -> (
    TestEngine,
    switchboard_core::store::RunRecord,
    Arc<AtomicUsize>,
) {
    let (stuck, calls) = Stuck::new(tool, 1, reads);
    let w = TestEngine::builder().tool(stuck).open().await;
    let run = submit_from_chat(&w, text).await;
    called(&calls, 1).await;
    let w = w.restart(None).await;
    let record = w.engine.runtime().wait(&run, GUARD).await.unwrap().record;
    (w, record, calls)
}

fn roles(transcript: &[Value]) -> Vec<String> {
    transcript
        .iter()
        .map(|m| format!("{}: {}", m["role"].as_str().unwrap(), text_of(m)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_safe_to_repeat_is_called_again_and_the_run_answers_once() {
    let text = "@tool lookup {}\n@reply found: {{result}}";
    let (w, record, calls) = cut_off_in("lookup", true, text).await;
    assert_eq!(
        (record.status, record.result.as_deref()),
        (RunStatus::Ok, Some("found: done"))
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2, "called again once");
    assert_eq!(
        roles(&w.transcript("main").await),
        [
            "user: @tool lookup {}\n@reply found: {{result}}",
            "assistant: ",
            "toolResult: done",
            "assistant: found: done",
        ]
    );
    tokio::time::timeout(GUARD, w.engine.runtime().idle())
        .await
        .unwrap();
    assert_eq!(replies(&w).await, ["found: done"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_not_safe_to_repeat_ends_the_run_aborted_with_one_notice() {
    let (w, record, calls) = cut_off_in("charge", false, "@tool charge {}\n@reply charged").await;
    assert_eq!(record.status, RunStatus::Aborted);
    assert!(record.interrupted(), "{:?}", record.error);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "never called twice");
    let why = "the gateway stopped while the tool charge was running, and charge is not safe \
               to run twice";
    assert_eq!(record.answer_lost(), Some(why));
    tokio::time::timeout(GUARD, w.engine.runtime().idle())
        .await
        .unwrap();
    assert_eq!(
        replies(&w).await,
        [format!(
            "⚠️ My answer to your message was lost: {why}. Please send it again."
        )]
    );
    let transcript = roles(&w.transcript("main").await);
    assert_eq!(transcript.len(), 4, "{transcript:?}");
    assert!(
        transcript[2].starts_with("toolResult: No result: the run stopped before charge"),
        "{transcript:?}"
    );
    let entry = w.engine.store().get(&w.key("main")).await.unwrap().unwrap();
    assert!(entry.aborted_last_run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_started_at_most_three_times() {
    let (tool, calls) = Stuck::new("lookup", usize::MAX, true);
    let mut w = TestEngine::builder().tool(tool).open().await;
    let run = submit_from_chat(&w, "@tool lookup {}\n@reply never").await;
    for start in 1..=3 {
        called(&calls, start).await;
        w = w.restart(None).await;
    }
    let record = w.engine.runtime().wait(&run, GUARD).await.unwrap().record;
    assert_eq!(record.status, RunStatus::Aborted);
    assert_eq!(
        record.answer_lost(),
        Some("the gateway stopped 3 times while answering")
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    tokio::time::timeout(GUARD, w.engine.runtime().idle())
        .await
        .unwrap();
    assert_eq!(replies(&w).await.len(), 1, "one notice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_cut_off_while_it_waits_is_made_again_without_a_second_message() {
    let w = TestEngine::open(Config::default()).await;
    w.create("peer").await;
    // The peer's answer streams slowly: the stop finds main waiting in sessions_send.
    let send = json!({"sessionKey": "peer", "message": "@slow 100\n@reply a b c d e f", "timeoutSeconds": 60});
    let run = w
        .submit(
            "main",
            &format!("@tool sessions_send {send}\n@reply peer said: {{{{result.reply}}}}"),
            None,
        )
        .await;
    until("the peer answers", || async {
        let peer = w.transcript("peer").await;
        (!peer.is_empty()).then_some(())
    })
    .await;
    let w = w.restart(None).await;

    let record = w.engine.runtime().wait(&run, GUARD).await.unwrap().record;
    assert_eq!(
        (record.status, record.result.as_deref()),
        (RunStatus::Ok, Some("peer said: a b c d e f"))
    );
    let peer: Vec<String> = roles(&w.transcript("peer").await);
    assert_eq!(
        peer.iter().filter(|m| m.contains("@slow 100")).count(),
        1,
        "the message reached the peer once: {peer:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_telegram_chat_gets_the_notice_once_when_its_answer_is_lost() {
    let fake = switchboard_testkit::FakeTelegram::start(super::telegram::TOKEN).await;
    let (tool, calls) = Stuck::new("charge", 1, false);
    let config = super::telegram::config(&fake, switchboard_core::config::DmPolicy::Open);
    let w = TestEngine::builder().config(config).tool(tool).open().await;
    w.engine.start_channels();
    fake.private_message(42, "alice", "@tool charge {}\n@reply charged");
    called(&calls, 1).await;
    let w = w.restart(None).await;
    w.engine.start_channels();

    let sent = super::telegram::sent(&fake, 1).await;
    let text = sent[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("⚠️ My answer to your message was lost: the gateway stopped while the tool charge was running"),
        "{text}"
    );
    // A later message is answered, and the notice was the only message before it.
    fake.private_message(42, "alice", "@reply still here");
    let sent = super::telegram::sent(&fake, 2).await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1]["text"], "still here");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "never called twice");
    fake.stop().await;
    w.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_run_aborted_before_it_starts_again_closes_its_transcript() {
    // Two runs cut off in their tools; after the restart the lane has one slot: whichever takes
    // it holds it (its tool hangs again), the other waits for it and is aborted there.
    let (first, first_calls) = Stuck::new("first", 2, true);
    let (second, second_calls) = Stuck::new("second", 2, true);
    let mut w = TestEngine::builder().tool(first).tool(second).open().await;
    w.create("other").await;
    let in_other = w.submit("other", "@tool first {}\n@reply one", None).await;
    let in_main = submit_from_chat(&w, "@tool second {}\n@reply two").await;
    called(&first_calls, 1).await;
    called(&second_calls, 1).await;
    w.config.agents.defaults.max_concurrent = 1;
    let w = w.restart(None).await;
    // The runs were taken up together: which one starts first is not decided.
    let (holder, waiter, waiter_calls, session, tool) = until("one run holds the slot", || {
        let order = match (
            first_calls.load(Ordering::SeqCst),
            second_calls.load(Ordering::SeqCst),
        ) {
            (2, _) => Some((&in_other, &in_main, &second_calls, "main", "second")),
            (_, 2) => Some((&in_main, &in_other, &first_calls, "other", "first")),
            _ => None,
        };
        async move { order }
    })
    .await;
    assert_eq!(
        status_now(&w, waiter).await,
        RunStatus::Running,
        "waits for the slot"
    );
    let aborted = w
        .engine
        .runtime()
        .abort(&w.key(session), Some(waiter))
        .await;
    assert_eq!(aborted.unwrap(), std::slice::from_ref(waiter));

    let record = w.engine.runtime().wait(waiter, GUARD).await.unwrap().record;
    assert_eq!(
        (record.status, record.error.as_deref()),
        (
            RunStatus::Aborted,
            Some("aborted before it went on after the gateway's stop")
        )
    );
    assert_eq!(
        waiter_calls.load(Ordering::SeqCst),
        1,
        "never started again"
    );
    let transcript = roles(&w.transcript(session).await);
    assert_eq!(transcript.len(), 4, "{transcript:?}");
    assert_eq!(
        transcript[2],
        format!(
            "toolResult: No result: the run stopped before {tool} finished (aborted before it went on after the gateway's stop)."
        ),
        "the cut-off call has its result: {transcript:?}"
    );
    assert_eq!(transcript[3], "assistant: ", "{transcript:?}");
    assert_eq!(
        status_now(&w, holder).await,
        RunStatus::Running,
        "the other holds the slot"
    );
}
