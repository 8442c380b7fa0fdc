//! `chat.history` (newest page first, `before` paging) and `chat.inject`.

use std::sync::Arc;

use serde::Deserialize as _;
use serde_json::Value;
use switchboard_protocol::chat::{
    ChatHistoryParams, ChatHistoryResult, ChatInjectParams, ChatInjectResult, InjectMessage,
};
use switchboard_protocol::lenient::clamp_or;
use switchboard_protocol::message::{
    AssistantMessage, ContentBlock, HistoryMessage, Provenance, SeqMessage, StopReason,
    TranscriptMessage, Usage, UserContent, UserMessage,
};

use super::{Sessions, with_seq};
use crate::error::{CoreError, CoreResult};
use crate::keys;
use crate::store::{StoreError, StoredMessage, StoredText, message_id};

pub const DEFAULT_LIMIT: i64 = 200;
pub const MAX_LIMIT: i64 = 1000;

impl Sessions {
    /// `chat.history`: a page of the transcript, newest first.
    pub async fn history(&self, p: ChatHistoryParams) -> CoreResult<ChatHistoryResult> {
        let agent_id = p.agent_id.as_deref();
        let entry = match self.resolver.find(&p.session_key, agent_id).await {
            Ok(entry) => entry,
            // A valid key that names no session yet has an empty history (the reference's answer,
            // which its clients expect); nothing is created. An unknown sessionId stays an error.
            Err(CoreError::NotFound(_)) if !keys::looks_like_session_id(p.session_key.trim()) => {
                // …of an agent that is configured (`agentId` and the key's own).
                let key = self.resolver.caller_key(&p.session_key, agent_id)?;
                return Ok(ChatHistoryResult {
                    session_key: key.display().to_string(),
                    session_id: None,
                    messages: Vec::new(),
                    next_before: None,
                });
            }
            Err(e) => return Err(e),
        };
        let (limit, before) = page_bounds(p.limit, p.before, entry.last_seq);
        let page = self
            .store
            .history_text(&entry.session_id, limit, before)
            .await?;
        let messages = page
            .messages
            .into_iter()
            .map(|m| history_text_message(&entry.session_id, m))
            .collect::<CoreResult<_>>()?;
        Ok(ChatHistoryResult {
            session_key: entry.key.display().to_string(),
            session_id: Some(entry.session_id),
            messages,
            next_before: page.next_before,
        })
    }

    /// `chat.history` as its JSON text: [`Sessions::history`]'s page, or the page kept since it
    /// was read (`kept.rs`).
    pub async fn history_text(&self, p: ChatHistoryParams) -> CoreResult<Arc<String>> {
        let asked = (p.session_key.clone(), p.limit, p.before);
        let read = async |_: &_| -> CoreResult<String> {
            let page = self.history(p).await?;
            serde_json::to_string(&page).map_err(|e| {
                StoreError::Backend(format!("could not write a history page: {e}")).into()
            })
        };
        (self.kept.histories)
            .get_or_read(asked, self.store.version(), read, String::len)
            .await
    }

    /// `chat.inject`: appends one message without a run, creating the session when the key is new.
    pub async fn inject(&self, p: ChatInjectParams) -> CoreResult<ChatInjectResult> {
        let message = inject_message(p.message, p.role.as_deref(), self.clock.now_ms())?;
        let key = self
            .resolver
            .target_key(&p.session_key, p.agent_id.as_deref())
            .await?;
        let new = self.resolver.new_session(&key);
        let appended = self.store.append(&key, Some(new), vec![message]).await?;
        let reason = if appended.created { "create" } else { "update" };
        self.changed(&appended.entry.key, reason);
        let seq = appended
            .seqs
            .first()
            .copied()
            .unwrap_or(appended.entry.last_seq);
        Ok(ChatInjectResult {
            ok: true,
            session_key: self.row(&appended.entry).key,
            session_id: appended.entry.session_id,
            seq,
            message_id: message_id(seq),
        })
    }
}

/// A page's `limit` and `before` as the store reads them: the page asked for, of the transcript
/// as it was when its entry was read (up to `last_seq`). Seqs are 1 and up, one per message, so
/// the page holds at most `before − 1` messages: a short transcript's page is a read of a few
/// rows by the primary key, which the store does without a hand-off (`sqlite/parts.rs`).
fn page_bounds(limit: Option<i64>, before: Option<i64>, last_seq: i64) -> (usize, Option<i64>) {
    let limit = clamp_or(limit, DEFAULT_LIMIT, 1, MAX_LIMIT);
    let before = before.filter(|b| *b > 0).unwrap_or(last_seq + 1);
    let held = (before - 1).max(1);
    (limit.min(held) as usize, Some(before))
}

/// A stored message as a page shows it: typed, or (not in the transcript format) as stored,
/// reported as the model's view reports it.
pub(crate) fn history_message(session_id: &str, m: StoredMessage) -> HistoryMessage {
    match TranscriptMessage::deserialize(&m.message) {
        Ok(mut message) => {
            message.place(message_id(m.seq), m.seq);
            HistoryMessage::Transcript(SeqMessage {
                seq: m.seq,
                message,
            })
        }
        Err(e) => {
            tracing::warn!(session_id, seq = m.seq, error = %e, "a stored message is not a transcript message; it is shown as stored");
            HistoryMessage::Unrecognised(with_seq(m))
        }
    }
}

/// [`history_message`] of a message's stored text, decoded once, straight into its type; text
/// that is not a transcript message is shown as stored, as [`history_message`] shows it.
pub(crate) fn history_text_message(session_id: &str, m: StoredText) -> CoreResult<HistoryMessage> {
    match serde_json::from_str::<TranscriptMessage>(&m.body) {
        Ok(mut message) => {
            message.place(message_id(m.seq), m.seq);
            Ok(HistoryMessage::Transcript(SeqMessage {
                seq: m.seq,
                message,
            }))
        }
        Err(_) => Ok(history_message(session_id, m.into_stored()?)),
    }
}

/// Text becomes a message of `role`; an object must be a transcript message.
fn inject_message(
    message: InjectMessage,
    role: Option<&str>,
    now: i64,
) -> CoreResult<TranscriptMessage> {
    match message {
        InjectMessage::Text(text) if text.trim().is_empty() => Err(CoreError::invalid(
            "chat.inject: message is empty; give the text (or a transcript message object)",
        )),
        InjectMessage::Text(text) => match role.unwrap_or("assistant") {
            "assistant" => Ok(TranscriptMessage::Assistant(AssistantMessage {
                content: vec![ContentBlock::text(text)],
                provider: "switchboard".into(),
                model: "inject".into(),
                usage: Usage::default(),
                stop_reason: StopReason::Stop,
                error_message: None,
                timestamp: now,
                origin: None,
            })),
            "user" => Ok(TranscriptMessage::User(UserMessage {
                content: UserContent::Text(text),
                timestamp: now,
                provenance: Some(Provenance {
                    kind: "inject".into(),
                    ..Provenance::default()
                }),
                origin: None,
            })),
            other => Err(CoreError::invalid(format!(
                "role: {other:?} is not allowed; expected \"assistant\" (default) or \"user\""
            ))),
        },
        InjectMessage::Message(mut value) => {
            if let Value::Object(map) = &mut value {
                map.entry("timestamp").or_insert(Value::from(now));
            }
            serde_json::from_value(value).map_err(|e| {
                CoreError::invalid(format!(
                    "message: not a transcript message ({}); expected text, or an object with \
                     role \"user\" | \"assistant\" | \"toolResult\" in the transcript format",
                    switchboard_protocol::decode::explain(&e.to_string())
                ))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// What the page showed before: the stored text decoded into a value, then typed from it.
    fn via_value(m: &StoredText) -> CoreResult<HistoryMessage> {
        Ok(history_message("s", m.clone().into_stored()?))
    }

    #[test]
    fn a_message_decoded_from_its_text_is_the_message_decoded_through_a_value() {
        let bodies = [
            json!({"role": "user", "content": "héllo \"wörld\" 🎉\n", "timestamp": 1}),
            json!({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}],
                   "timestamp": 2, "provenance": {"kind": "compaction"}}),
            json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "thinkingSignature": "sig"},
                   {"type": "text", "text": "ünïcode"}, {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "/x", "n": 1.5}}],
                   "provider": "mock", "model": "m", "usage": {"input": 3, "output": 4, "cacheRead": 0, "cacheWrite": 0,
                   "totalTokens": 7, "cost": {"total": 0.000123}}, "stopReason": "toolUse", "timestamp": 3}),
            json!({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "boom", "timestamp": 4}),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "x"}],
                   "isError": true, "details": {"n": null, "list": [1, -2, 3.25e10]}, "timestamp": 5}),
            // Not a transcript message: shown as stored.
            json!({"role": "system", "content": "hand-written", "n": 18446744073709551615u64}),
            json!([1, 2, 3]),
        ];
        for (i, body) in bodies.iter().enumerate() {
            let m = StoredText {
                seq: i as i64 + 1,
                body: body.to_string(),
            };
            let direct = history_text_message("s", m.clone()).unwrap();
            assert_eq!(direct, via_value(&m).unwrap(), "message {body}");
            assert_eq!(
                serde_json::to_string(&direct).unwrap(),
                serde_json::to_string(&via_value(&m).unwrap()).unwrap()
            );
        }
        let broken = StoredText {
            seq: 9,
            body: "{not json".into(),
        };
        assert!(history_text_message("s", broken.clone()).is_err());
        assert!(via_value(&broken).is_err());
    }

    #[test]
    fn a_page_is_bounded_by_the_transcript_it_was_asked_of() {
        // A short transcript: the page holds at most its messages, read as of its entry.
        assert_eq!(page_bounds(None, None, 3), (3, Some(4)));
        assert_eq!(page_bounds(Some(2), None, 3), (2, Some(4)));
        // Paging back: at most the messages before `before`.
        assert_eq!(page_bounds(Some(50), Some(10), 500), (9, Some(10)));
        assert_eq!(page_bounds(Some(50), Some(100), 500), (50, Some(100)));
        // A long one: the limit asked for, within its bounds.
        assert_eq!(page_bounds(None, None, 10_000), (200, Some(10_001)));
        assert_eq!(
            page_bounds(Some(5_000), None, 10_000),
            (1_000, Some(10_001))
        );
        // An empty transcript, and a `before` of 0 or less (ignored, as before).
        assert_eq!(page_bounds(None, None, 0), (1, Some(1)));
        assert_eq!(page_bounds(Some(20), Some(0), 7), (7, Some(8)));
        assert_eq!(page_bounds(Some(20), Some(1), 7), (1, Some(1)));
    }
}
