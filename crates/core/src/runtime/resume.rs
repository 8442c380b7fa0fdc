//! A run resumed after a stop (SPEC §6.3, docs/decisions.md "Runs across a restart").
//!
//! A run still `running` when the process stopped — kill -9, a crash, a graceful stop whose
//! grace ran out — kept its request in the store (its message is in the transcript). The next
//! start (or, on PostgreSQL, the gateway that takes its session) queues it again, first in its
//! session, and it goes on from its transcript as committed: a model call is safe to repeat, so
//! the model is called again from there. The tool calls of its last reply that have no
//! committed result are run again only when every one of them is safe to repeat
//! ([`Tool::repeatable`]); otherwise the run ends `aborted` with a reason the chat it answers is
//! told ([`RunRecord::answer_lost`]). A run is started at most [`MAX_STARTS`] times.

use serde_json::Value;
use switchboard_protocol::message::{ContentBlock, TranscriptMessage};

use super::tool::Tool;
use crate::store::RunRecord;

/// Starts per run: a run the gateway stopped under this many times is not started again.
pub(super) const MAX_STARTS: u32 = 3;

/// Tool calls of the conversation's last assistant message that have no result after it:
/// `(id, name, arguments)` in call order.
pub(super) fn pending_calls(messages: &[TranscriptMessage]) -> Vec<(String, String, Value)> {
    let Some(at) = messages
        .iter()
        .rposition(|m| matches!(m, TranscriptMessage::Assistant(_)))
    else {
        return Vec::new();
    };
    let TranscriptMessage::Assistant(reply) = &messages[at] else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[at + 1..]
        .iter()
        .filter_map(|m| match m {
            TranscriptMessage::ToolResult(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    reply
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } if !answered.contains(&id.as_str()) => {
                Some((id.clone(), name.clone(), arguments.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Why a resumed run cannot go on, when it cannot: it started [`MAX_STARTS`] times, or a call
/// in `pending` is of a tool that is not safe to repeat (or no longer offered). `starts`: how
/// many times it started before.
pub(super) fn refusal(
    starts: u32,
    pending: &[(String, String, Value)],
    tools: &[std::sync::Arc<dyn Tool>],
) -> Option<String> {
    if starts >= MAX_STARTS {
        return Some(RunRecord::lost(&format!("{starts} times while answering")));
    }
    let repeatable = |name: &str| tools.iter().any(|t| t.name() == name && t.repeatable());
    let (_, name, _) = pending.iter().find(|(_, name, _)| !repeatable(name))?;
    Some(RunRecord::lost(&format!(
        "while the tool {name} was running, and {name} is not safe to run twice"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_protocol::message::{AssistantMessage, ToolResultMessage};

    fn reply(calls: &[(&str, &str)]) -> TranscriptMessage {
        let content = calls
            .iter()
            .map(|(id, name)| ContentBlock::ToolCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: json!({"n": id}),
            })
            .collect();
        TranscriptMessage::Assistant(AssistantMessage {
            content,
            provider: String::new(),
            model: String::new(),
            usage: Default::default(),
            stop_reason: Default::default(),
            error_message: None,
            timestamp: 0,
            origin: None,
        })
    }

    fn result(id: &str) -> TranscriptMessage {
        TranscriptMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "t".into(),
            content: Vec::new(),
            is_error: false,
            details: None,
            timestamp: 0,
        })
    }

    #[test]
    fn the_calls_left_without_a_result_are_pending_in_order() {
        let messages = [
            reply(&[("old", "a")]),
            reply(&[("1", "a"), ("2", "b"), ("3", "c")]),
            result("2"),
        ];
        let pending: Vec<(String, String)> = pending_calls(&messages)
            .into_iter()
            .map(|(id, name, args)| {
                assert_eq!(args, json!({"n": id}));
                (id, name)
            })
            .collect();
        assert_eq!(
            pending,
            [("1".into(), "a".into()), ("3".into(), "c".into())]
        );
        assert!(pending_calls(&[reply(&[("1", "a")]), result("1")]).is_empty());
        assert!(pending_calls(&[]).is_empty());
    }

    #[test]
    fn a_run_started_three_times_or_cut_in_an_unsafe_tool_is_lost() {
        let lost = refusal(3, &[], &[]).unwrap();
        assert!(lost.contains("stopped 3 times"), "{lost}");
        let pending = [("1".to_string(), "exec".to_string(), Value::Null)];
        let lost = refusal(1, &pending, &[]).unwrap();
        assert!(lost.contains("the tool exec was running"), "{lost}");
        assert_eq!(refusal(2, &[], &[]), None);
        let record = RunRecord {
            status: crate::store::RunStatus::Aborted,
            error: Some(lost),
            ..RunRecord::queued(
                crate::RunId::from_string("r"),
                crate::keys::SessionKey::from_canonical("agent:main:main".into()),
                "main",
                0,
            )
        };
        assert!(record.interrupted() && record.answer_lost().is_some());
    }
}
