//! What a connection is sent about runs and deliveries: the reference's event shapes, typed by
//! the protocol crate (`agent` for lifecycle, assistant, thinking and tool streams; `chat` for
//! the reply as it grows and its final state; `delivery` for an outbox record's outcome).

use switchboard_core::runtime::{RunEvent, RunEventData};
use switchboard_core::store::RunStatus;
use switchboard_protocol::events::{
    AgentEvent, AgentStream, ChatEvent, ChatState, EndStatus, Lifecycle, RunUsage, ServerEvent,
    StreamedPiece, ThinkingDelta, ToolStep,
};

/// The events a run event becomes, on the server's clock `ts`.
pub(super) fn run_events(event: &RunEvent, ts: i64) -> Vec<ServerEvent> {
    let (run_id, key) = (event.run_id.as_str(), event.session_key.display());
    let agent = |stream: AgentStream| ServerEvent::Agent(AgentEvent::new(run_id, key, ts, stream));
    match &event.data {
        RunEventData::Queued => vec![agent(AgentStream::Lifecycle(Lifecycle::Queued))],
        RunEventData::Started => vec![agent(AgentStream::Lifecycle(Lifecycle::Start))],
        RunEventData::Delta { text, seq, so_far } => {
            let piece = StreamedPiece {
                delta: text,
                seq: *seq,
                so_far: so_far.as_deref(),
            };
            vec![
                agent(AgentStream::Assistant(piece.assistant())),
                ServerEvent::Chat(piece.chat(run_id, key)),
            ]
        }
        RunEventData::Thinking { text } => vec![agent(AgentStream::Thinking(ThinkingDelta {
            delta: text.clone(),
        }))],
        RunEventData::ToolCall {
            id,
            name,
            arguments,
        } => vec![agent(AgentStream::Tool(ToolStep::Call {
            tool_call_id: id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
        }))],
        RunEventData::ToolResult {
            id,
            name,
            is_error,
            text,
        } => vec![agent(AgentStream::Tool(ToolStep::Result {
            tool_call_id: id.clone(),
            name: name.clone(),
            is_error: *is_error,
            text: text.clone(),
        }))],
        RunEventData::Usage { output_tokens } => {
            vec![agent(AgentStream::Usage(RunUsage {
                output_tokens: *output_tokens,
            }))]
        }
        RunEventData::Ended {
            status,
            result,
            error,
        } => {
            let status = end_status(*status);
            vec![
                agent(AgentStream::Lifecycle(Lifecycle::End {
                    status,
                    error: error.clone(),
                })),
                ServerEvent::Chat(ChatEvent::ended(
                    run_id,
                    key,
                    ChatState::ended(status),
                    result.as_deref(),
                    error.as_deref(),
                )),
            ]
        }
    }
}

fn end_status(status: RunStatus) -> EndStatus {
    match status {
        RunStatus::Ok => EndStatus::Ok,
        RunStatus::Timeout => EndStatus::Timeout,
        RunStatus::Aborted => EndStatus::Aborted,
        // A run ends in one of the four final states; anything else reads as an error.
        RunStatus::Error | RunStatus::Queued | RunStatus::Running => EndStatus::Error,
    }
}
