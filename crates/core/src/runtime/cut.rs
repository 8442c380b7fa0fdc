//! A run cut off — by an abort, its timeout or the gateway's stop — leaves a well-formed
//! transcript: every tool call it made gets a result, and an assistant message with
//! `stopReason: "aborted"` keeps whatever was streamed (empty when nothing was) and says why.

use switchboard_protocol::message::{
    AssistantMessage, ContentBlock, StopReason, ToolResultMessage, TranscriptMessage, Usage,
};

use std::sync::Mutex;

use super::end::Ending;
use super::fence::{fence_of, fenced};
use super::pieces::Partial;
use super::providers::ModelResponse;
use super::{Runtime, lock};
use crate::store::{RunStatus, StoredMessage, WriteOp};

/// Tool calls of the transcript's last assistant message that have no result after it:
/// `(id, name)` in call order. `tail` is the newest messages, oldest first.
pub(super) fn unanswered_calls(tail: &[StoredMessage]) -> Vec<(String, String)> {
    let Some(at) = tail
        .iter()
        .rposition(|m| m.message.get("role").and_then(|r| r.as_str()) == Some("assistant"))
    else {
        return Vec::new();
    };
    let answered: Vec<&str> = tail[at + 1..]
        .iter()
        .filter_map(|m| m.message.get("toolCallId").and_then(|v| v.as_str()))
        .collect();
    let Some(content) = tail[at].message.get("content").and_then(|c| c.as_array()) else {
        return Vec::new();
    };
    content
        .iter()
        .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("toolCall"))
        .filter_map(|b| {
            let id = b.get("id")?.as_str()?;
            let name = b.get("name")?.as_str()?;
            (!answered.contains(&id)).then(|| (id.to_string(), name.to_string()))
        })
        .collect()
}

/// What the cut-off run leaves in its transcript: an error result for each unanswered call,
/// then the `aborted` assistant message with the streamed `text`.
pub(super) fn closing_messages(
    unanswered: &[(String, String)],
    streamed: Streamed<'_>,
    reason: &str,
    now: i64,
) -> Vec<TranscriptMessage> {
    let mut messages: Vec<TranscriptMessage> = unanswered
        .iter()
        .map(|(id, name)| {
            TranscriptMessage::ToolResult(ToolResultMessage {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                content: vec![ContentBlock::text(format!(
                    "No result: the run stopped before {name} finished ({reason})."
                ))],
                is_error: true,
                details: None,
                timestamp: now,
            })
        })
        .collect();
    let content = match streamed.text.is_empty() {
        true => Vec::new(),
        false => vec![ContentBlock::text(streamed.text.to_string())],
    };
    let cut = ModelResponse {
        content,
        usage: Usage::default(),
        stop_reason: StopReason::Aborted,
    };
    messages.push(assistant_message(
        streamed.provider,
        streamed.model,
        &cut,
        Some(reason),
        now,
    ));
    messages
}

/// What a model turn streamed before the cut, and from which model.
#[derive(Default, Clone, Copy)]
pub(super) struct Streamed<'a> {
    pub text: &'a str,
    pub provider: &'a str,
    pub model: &'a str,
}

/// A model's reply as a transcript message (total tokens summed when the provider gave none).
pub(super) fn assistant_message(
    provider: &str,
    model: &str,
    response: &ModelResponse,
    error: Option<&str>,
    now: i64,
) -> TranscriptMessage {
    let mut usage = response.usage.clone();
    if usage.total_tokens == 0 {
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
    }
    TranscriptMessage::Assistant(AssistantMessage {
        content: response.content.clone(),
        provider: provider.to_string(),
        model: model.to_string(),
        usage,
        stop_reason: response.stop_reason,
        error_message: error.map(str::to_string),
        timestamp: now,
        origin: None,
    })
}

/// Closes the transcript of a run cut off by a timeout or an abort (results for its unanswered
/// tool calls, an `aborted` message with what was streamed), and ends the run.
pub(super) async fn keep_partial(
    rt: &Runtime,
    record: &crate::store::RunRecord,
    partial: &Mutex<Partial>,
    status: RunStatus,
    reason: String,
) -> Ending {
    let (text, model, provider, unanswered) = {
        let mut partial = lock(partial);
        (
            std::mem::take(&mut partial.text),
            std::mem::take(&mut partial.model),
            std::mem::take(&mut partial.provider),
            std::mem::take(&mut partial.unanswered),
        )
    };
    let streamed = Streamed {
        text: &text,
        provider: &provider,
        model: &model,
    };
    let closing = closing_messages(&unanswered, streamed, &reason, rt.now_ms());
    // The reply of the call cut off, when that call's write had not written it (`joined.rs`).
    let joined = lock(partial).joined.clone();
    if let Some(session_id) = &record.session_id
        && let Err(e) = rt.settle_sent(&joined, session_id).await
    {
        tracing::warn!(error = %e, "could not tell whether the cut-off call's reply was written");
    }
    let mut ops = joined.take_left();
    ops.push(WriteOp::Append {
        key: record.session_key.clone(),
        create: None,
        messages: closing,
    });
    if let Err(e) = rt.store().write_batch(fenced(&fence_of(record), ops)).await {
        tracing::warn!(error = %e, "could not keep the partial reply");
    }
    Ending::new(status, Some(text).filter(|t| !t.is_empty()), Some(reason))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stored(seq: i64, message: serde_json::Value) -> StoredMessage {
        StoredMessage { seq, message }
    }

    #[test]
    fn only_calls_of_the_last_assistant_message_without_results_are_unanswered() {
        let tail = vec![
            stored(1, json!({"role": "user", "content": "go"})),
            stored(
                2,
                json!({"role": "assistant", "content": [
                    {"type": "text", "text": "calling"},
                    {"type": "toolCall", "id": "c1", "name": "a", "arguments": {}},
                    {"type": "toolCall", "id": "c2", "name": "b", "arguments": {}},
                ]}),
            ),
            stored(
                3,
                json!({"role": "toolResult", "toolCallId": "c1", "toolName": "a", "content": []}),
            ),
        ];
        assert_eq!(
            unanswered_calls(&tail),
            [("c2".to_string(), "b".to_string())]
        );
        assert!(unanswered_calls(&tail[..1]).is_empty());
        let closing = closing_messages(
            &unanswered_calls(&tail),
            Streamed {
                text: "half",
                provider: "p",
                model: "m",
            },
            "aborted",
            9,
        );
        let json = serde_json::to_value(&closing).unwrap();
        assert_eq!(json[0]["toolCallId"], "c2");
        assert_eq!(json[0]["isError"], true);
        assert_eq!(json[1]["stopReason"], "aborted");
        assert_eq!(json[1]["content"][0]["text"], "half");
        assert_eq!(json[1]["errorMessage"], "aborted");
    }
}
