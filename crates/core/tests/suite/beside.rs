//! A reply's last tool result commits beside the next model call (docs/decisions.md, "A tool
//! result commits beside the next model call"): on SQLite the call goes out while the result's
//! commit is held back, nothing reports the result before it is written, and the call's own
//! events follow that report; on PostgreSQL the result is written before the call, as before.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::ProviderApi;
use switchboard_core::runtime::tool::{Tool, ToolContext, ToolFuture, ToolOutput};
use switchboard_core::runtime::{RunEvent, RunEventData};
use switchboard_core::store::RunStatus;
use switchboard_testkit::{MockLlm, MockReply, MockToolCall};
use tokio::sync::Notify;

use super::runtime::mock_config;
use super::support::{GUARD, TestEngine};

/// A tool that says it was called, then answers once the test lets it.
struct GateTool {
    called: Arc<Notify>,
    go: Arc<Notify>,
}

impl Tool for GateTool {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> &str {
        "Waits for the test."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn call<'a>(&'a self, _ctx: &'a ToolContext, _arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            self.called.notify_one();
            self.go.notified().await;
            ToolOutput::ok(json!({"opened": true}))
        })
    }
}

/// What a client sees of `event`, for the run kinds it is checked by.
fn kind(event: &RunEvent) -> Option<String> {
    Some(match &event.data {
        RunEventData::ToolCall { .. } => "toolCall".to_string(),
        RunEventData::ToolResult { text, .. } => format!("toolResult {text}"),
        RunEventData::Delta { text, .. } => format!("delta {text}"),
        RunEventData::Ended { .. } => "ended".to_string(),
        _ => return None,
    })
}

/// The events of `events` received so far, of run kinds a client sees.
fn received(events: &mut tokio::sync::broadcast::Receiver<Arc<RunEvent>>) -> Vec<String> {
    let mut kinds = Vec::new();
    while let Ok(event) = events.try_recv() {
        kinds.extend(kind(&event));
    }
    kinds
}

/// The events of `events` up to the run's end, which is told to its waiters just before it
/// is emitted.
async fn through_ended(
    events: &mut tokio::sync::broadcast::Receiver<Arc<RunEvent>>,
) -> Vec<String> {
    let mut kinds = Vec::new();
    while kinds.last().is_none_or(|last| last != "ended") {
        let event = tokio::time::timeout(GUARD, events.recv())
            .await
            .unwrap_or_else(|_| panic!("no end among the events: {kinds:?}"))
            .expect("the events go on");
        kinds.extend(kind(&event));
    }
    kinds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_model_call_goes_out_while_the_tool_result_commits() {
    let mock = MockLlm::start().await;
    mock.push(MockReply::ToolCalls(vec![MockToolCall::new(
        "c1", "gate", "{}",
    )]));
    mock.push(MockReply::text("all done"));
    let (called, go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let gate = GateTool {
        called: called.clone(),
        go: go.clone(),
    };
    let h = TestEngine::builder()
        .config(mock_config(&mock, ProviderApi::OpenAiCompletions, true))
        .tool(Arc::new(gate))
        .open()
        .await;
    let mut events = h.engine.runtime().subscribe();
    let run = h.submit("main", "open the gate", None).await;
    tokio::time::timeout(GUARD, called.notified())
        .await
        .expect("the model called the gate");

    let sqlite = !h.on_postgres();
    // On SQLite, another connection holds the database's write lock from here: the result
    // cannot commit until it lets go.
    let holder = sqlite.then(|| {
        let db = rusqlite::Connection::open(h.engine.home().join("switchboard.db")).unwrap();
        db.execute_batch("BEGIN IMMEDIATE").unwrap();
        db
    });
    go.notify_one();
    tokio::time::timeout(GUARD, mock.wait_requests(2))
        .await
        .expect("the next model call was made");
    let asked = mock.requests()[1].messages().to_vec();
    let result = asked
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a result");
    assert_eq!(result["tool_call_id"], "c1");
    let written = h
        .transcript("main")
        .await
        .iter()
        .any(|m| m["role"] == "toolResult");
    if sqlite {
        // The call went out with the result while its commit waited, and nothing reported it.
        assert!(
            !written,
            "the result committed through another's write lock"
        );
        assert_eq!(received(&mut events), ["toolCall"]);
        holder.unwrap().execute_batch("ROLLBACK").unwrap();
    } else {
        assert!(written, "the result was written before the next model call");
    }

    let ended = h.ended(&run).await;
    assert_eq!(ended.status, RunStatus::Ok, "{:?}", ended.error);
    assert_eq!(ended.result.as_deref(), Some("all done"));
    let mut after = through_ended(&mut events).await;
    after.retain(|kind| kind != "toolCall");
    // The reply's pieces, however many reads they took, make its text.
    let text: String = after
        .iter()
        .filter_map(|kind| kind.strip_prefix("delta "))
        .collect();
    after.dedup_by(|next, kept| next.starts_with("delta ") && kept.starts_with("delta "));
    assert_eq!(text, "all done");
    assert_eq!(
        after
            .iter()
            .map(|k| k.split(' ').next().unwrap())
            .collect::<Vec<_>>(),
        ["toolResult", "delta", "ended"],
        "{after:?}"
    );
    assert_eq!(after[0], r#"toolResult {"opened":true}"#);
    let roles: Vec<Value> = h
        .transcript("main")
        .await
        .iter()
        .map(|m| m["role"].clone())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "assistant"].map(Value::from)
    );
    mock.assert_tool_results_answer_tool_calls();
    h.engine.close().await;
}
