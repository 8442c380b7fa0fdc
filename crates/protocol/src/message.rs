//! Transcript messages in the reference's raw shapes (SPEC §4.2), so existing tooling reads our
//! transcripts and JSONL mirrors.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

/// One transcript message, told apart by `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role")]
pub enum TranscriptMessage {
    #[serde(rename = "user")]
    User(UserMessage),
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
}

impl TranscriptMessage {
    pub fn role(&self) -> &'static str {
        match self {
            Self::User(_) => "user",
            Self::Assistant(_) => "assistant",
            Self::ToolResult(_) => "toolResult",
        }
    }

    pub fn timestamp(&self) -> i64 {
        match self {
            Self::User(m) => m.timestamp,
            Self::Assistant(m) => m.timestamp,
            Self::ToolResult(m) => m.timestamp,
        }
    }

    /// Adds the message's place in its transcript to its `__openclaw` block (user and
    /// assistant messages; a page shows them so).
    pub fn place(&mut self, id: String, seq: i64) {
        let (origin, kind) = match self {
            Self::User(m) => {
                // A compaction summary is marked so: the reference's Control UI shows it as a
                // "Context compacted" divider, not as something a person wrote.
                let compaction = m.provenance.as_ref().filter(|p| p.kind == "compaction");
                (&mut m.origin, compaction.map(|p| p.kind.clone()))
            }
            Self::Assistant(m) => (&mut m.origin, None),
            Self::ToolResult(_) => return,
        };
        let origin = origin.get_or_insert_with(Box::default);
        origin.id = Some(id);
        origin.seq = Some(seq);
        origin.kind = kind;
    }
}

/// A stored transcript message with its place in the transcript (`seq`: from 1, no gaps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeqMessage {
    pub seq: i64,
    #[serde(flatten)]
    pub message: TranscriptMessage,
}

/// One message of a transcript page (`chat.history`, `sessions.list` rows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HistoryMessage {
    /// A transcript message and its `seq`.
    Transcript(SeqMessage),
    /// A stored row that is not in the transcript format (written into the database by hand),
    /// with its `seq`, shown as it is stored: it is not ours to type.
    Unrecognised(Value),
}

impl HistoryMessage {
    /// The message's place in its transcript (`None` only for a foreign row without one).
    pub fn seq(&self) -> Option<i64> {
        match self {
            Self::Transcript(m) => Some(m.seq),
            Self::Unrecognised(v) => v.get("seq").and_then(Value::as_i64),
        }
    }
}

/// A user-role message: a person, or another session/agent (then `provenance` says which).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    pub content: UserContent,
    pub timestamp: i64,
    pub provenance: Option<Provenance>,
    /// The run this message started (`idempotencyKey` `<runId>:user`), and its place once read.
    #[serde(rename = "__openclaw")]
    pub origin: Option<Box<MessageOrigin>>,
}

/// A message's identity in the reference's `__openclaw` block. The run's part is stored with
/// the message; `id` and `seq` are its place in the transcript, added when a page is read. The
/// reference's Control UI matches the message it sent (`idempotencyKey` `<runId>:user`) and the
/// reply it streamed (`runId`) with the stored ones by these; without them it kept "Sending
/// message..." and showed each reply twice.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageOrigin {
    /// The message's id (`msg-<seq>`, as `chat.inject` answers), on a page only.
    pub id: Option<String>,
    /// The message's place in its transcript, on a page only.
    pub seq: Option<i64>,
    /// The run that wrote it (assistant messages).
    pub run_id: Option<String>,
    /// `<runId>:user` on the message that started a run.
    pub idempotency_key: Option<String>,
    /// `compaction` on a compaction summary, on a page only.
    pub kind: Option<String>,
}

impl MessageOrigin {
    /// The origin of the message that starts run `run_id`.
    pub fn run_input(run_id: &str) -> Box<Self> {
        Box::new(Self {
            idempotency_key: Some(format!("{run_id}:user")),
            ..Self::default()
        })
    }

    /// The origin of a message run `run_id` wrote.
    pub fn run_output(run_id: &str) -> Box<Self> {
        Box::new(Self {
            run_id: Some(run_id.to_string()),
            ..Self::default()
        })
    }
}

/// A user message's content: plain text or content blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

/// Reads what an untagged `String | Vec<ContentBlock>` would, with an error that says which
/// shapes are accepted (and which block is wrong) instead of "did not match any variant".
impl<'de> Deserialize<'de> for UserContent {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(de)? {
            Value::String(text) => Ok(Self::Text(text)),
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    serde_json::from_value(item).map_err(|e| {
                        D::Error::custom(format!(
                            "content[{i}]: {}",
                            crate::decode::explain(&e.to_string())
                        ))
                    })
                })
                .collect::<Result<_, _>>()
                .map(Self::Blocks),
            other => Err(D::Error::custom(format!(
                "content: expected text or an array of content blocks ({{\"type\": \"text\", \
                 \"text\"}}, …), got {}",
                crate::decode::kind_of(&other)
            ))),
        }
    }
}

/// Where a user-role message came from when it was not a person.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// `agent` (another session's run), `cron`, `hook`, `inject` (an operator injection), or the
    /// kind of the delivery that brought it (`reply`, `announce`, `subagent-announce`, `send`).
    pub kind: String,
    /// The session the message came from (`agent` and deliveries).
    pub from_session_key: Option<String>,
    /// The run that sent it (`agent`: the sender's run; deliveries: the run that produced it).
    pub run_id: Option<String>,
    /// The cron job that fired (`cron`).
    pub job_id: Option<String>,
    /// What fired the cron job: `schedule` or `manual` (`cron.run`).
    pub trigger: Option<String>,
    /// The schedule slot that fired (ms; `trigger: "schedule"` only).
    pub scheduled_at: Option<i64>,
    /// `compaction`: the summary stands for the messages before this `seq` (they stay in the
    /// transcript; the model is sent the summary instead).
    pub covers_until_seq: Option<i64>,
}

/// An assistant message with its provider, model, usage and stop reason.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<ContentBlock>,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub usage: Usage,
    #[serde(default)]
    pub stop_reason: StopReason,
    pub error_message: Option<String>,
    pub timestamp: i64,
    /// The run that wrote this reply, and its place once read.
    #[serde(rename = "__openclaw")]
    pub origin: Option<Box<MessageOrigin>>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub cost: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    #[default]
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
}

/// The result of one tool call, answering the assistant's `toolCall` block with the same id.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<ContentBlock>,
    #[serde(default)]
    pub is_error: bool,
    /// Structured data the tool attached for programs (not sent to the model; `sessions_history`
    /// strips it).
    pub details: Option<Value>,
    pub timestamp: i64,
}

/// A content block inside a message.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        #[serde(rename = "thinkingSignature")]
        signature: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    #[serde(rename_all = "camelCase")]
    Image {
        data: String,
        mime_type: String,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_keep_the_reference_shapes() {
        let raw = json!({
            "role": "assistant",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "toolCall", "id": "c1", "name": "sessions_list", "arguments": {"limit": 5}}
            ],
            "provider": "openai", "model": "gpt-4o-mini",
            "usage": {"input": 3, "output": 4, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 7},
            "stopReason": "toolUse", "timestamp": 1
        });
        let message: TranscriptMessage = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(message.role(), "assistant");
        assert_eq!(serde_json::to_value(&message).unwrap(), raw);

        let user: TranscriptMessage = serde_json::from_value(json!({
            "role": "user", "content": "hello", "timestamp": 2,
            "provenance": {"kind": "agent", "fromSessionKey": "agent:main:main", "runId": "r"}
        }))
        .unwrap();
        assert_eq!(user.timestamp(), 2);
    }

    #[test]
    fn a_placed_compaction_summary_is_marked_as_one() {
        let mut summary: TranscriptMessage = serde_json::from_value(json!({
            "role": "user", "content": "summary of 40 messages", "timestamp": 4,
            "provenance": {"kind": "compaction", "coversUntilSeq": 41}
        }))
        .unwrap();
        summary.place("msg-42".into(), 42);
        let page = serde_json::to_value(&summary).unwrap();
        assert_eq!(
            page["__openclaw"],
            json!({"id": "msg-42", "seq": 42, "kind": "compaction"})
        );

        let mut person: TranscriptMessage = serde_json::from_value(json!({
            "role": "user", "content": "hello", "timestamp": 5
        }))
        .unwrap();
        person.place("msg-43".into(), 43);
        let page = serde_json::to_value(&person).unwrap();
        assert_eq!(page["__openclaw"], json!({"id": "msg-43", "seq": 43}));
    }

    #[test]
    fn cron_provenance_round_trips() {
        let scheduled = json!({
            "role": "user", "content": "report", "timestamp": 3,
            "provenance": {
                "kind": "cron", "jobId": "daily", "trigger": "schedule",
                "scheduledAt": 1_700_000_000_000_i64
            }
        });
        let message: TranscriptMessage = serde_json::from_value(scheduled.clone()).unwrap();
        let TranscriptMessage::User(user) = &message else {
            panic!("not a user message: {message:?}");
        };
        assert_eq!(
            user.provenance,
            Some(Provenance {
                kind: "cron".into(),
                job_id: Some("daily".into()),
                trigger: Some("schedule".into()),
                scheduled_at: Some(1_700_000_000_000),
                ..Provenance::default()
            })
        );
        assert_eq!(serde_json::to_value(&message).unwrap(), scheduled);

        let manual = Provenance {
            kind: "cron".into(),
            job_id: Some("daily".into()),
            trigger: Some("manual".into()),
            ..Provenance::default()
        };
        assert_eq!(
            serde_json::to_value(&manual).unwrap(),
            json!({"kind": "cron", "jobId": "daily", "trigger": "manual"})
        );
        assert_eq!(
            serde_json::to_value(Provenance {
                kind: "hook".into(),
                ..Provenance::default()
            })
            .unwrap(),
            json!({"kind": "hook"})
        );
    }

    #[test]
    fn tool_results_keep_their_details() {
        let with_details = json!({
            "role": "toolResult", "toolCallId": "c1", "toolName": "exec",
            "content": [{"type": "text", "text": "ok"}], "isError": false,
            "details": {"exitCode": 0, "durationMs": 12}, "timestamp": 4
        });
        let message: TranscriptMessage = serde_json::from_value(with_details.clone()).unwrap();
        let TranscriptMessage::ToolResult(result) = &message else {
            panic!("not a tool result: {message:?}");
        };
        assert_eq!(
            result.details,
            Some(json!({"exitCode": 0, "durationMs": 12}))
        );
        assert_eq!(serde_json::to_value(&message).unwrap(), with_details);

        let without = json!({
            "role": "toolResult", "toolCallId": "c1", "toolName": "exec",
            "content": [{"type": "text", "text": "ok"}], "isError": true, "timestamp": 4
        });
        let message: TranscriptMessage = serde_json::from_value(without.clone()).unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap(), without);
    }
}
