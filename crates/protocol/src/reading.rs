//! Transcript messages as another session's model reads them (`sessions_history`, the rows of
//! `sessions_list`): the heavy fields left out (usage and its cost, a tool result's `details`,
//! thinking signatures, image data), long texts cut with a visible marker, and a message too
//! large even so replaced by a placeholder that names it. The shapes are the transcript's
//! ([`crate::message`]) minus what was left out, so a reader's tooling reads both alike.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{Provenance, StopReason};

/// One message as a reader gets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReadMessage {
    /// A message too large to return even trimmed (tried first when reading: a trimmed message
    /// has no `omitted`).
    Omitted(OmittedMessage),
    /// A message with the heavy fields left out and long texts cut.
    Trimmed(TrimmedMessage),
}

impl ReadMessage {
    /// The message's place in its transcript.
    pub fn seq(&self) -> i64 {
        match self {
            Self::Omitted(m) => m.seq,
            Self::Trimmed(m) => m.seq,
        }
    }
}

/// A trimmed transcript message and its `seq`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrimmedMessage {
    pub seq: i64,
    #[serde(flatten)]
    pub message: TrimmedBody,
}

/// A transcript message without its heavy fields, told apart by `role`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role")]
pub enum TrimmedBody {
    #[serde(rename = "user", rename_all = "camelCase")]
    User {
        content: TrimmedContent,
        timestamp: i64,
        provenance: Option<Provenance>,
    },
    /// An assistant message without its `usage`.
    #[serde(rename = "assistant", rename_all = "camelCase")]
    Assistant {
        content: Vec<TrimmedBlock>,
        provider: String,
        model: String,
        stop_reason: StopReason,
        error_message: Option<String>,
        timestamp: i64,
    },
    /// A tool result without its `details`.
    #[serde(rename = "toolResult", rename_all = "camelCase")]
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        content: Vec<TrimmedBlock>,
        is_error: bool,
        timestamp: i64,
    },
}

/// A user message's content: plain text or blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TrimmedContent {
    Text(String),
    Blocks(Vec<TrimmedBlock>),
}

/// A content block without its heavy fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum TrimmedBlock {
    Text {
        text: String,
    },
    /// Thinking without its signature.
    Thinking {
        thinking: String,
    },
    /// A tool call; arguments too long are replaced by their cut JSON text (a string).
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    /// An image: its size instead of its data.
    #[serde(rename_all = "camelCase")]
    Image {
        data: OmittedData,
        mime_type: String,
    },
}

/// What stands for left-out data: `{"omitted": true, "bytes": n}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OmittedData {
    /// Always true.
    pub omitted: bool,
    /// The size of what was left out.
    pub bytes: usize,
}

impl OmittedData {
    pub fn new(bytes: usize) -> Self {
        Self {
            omitted: true,
            bytes,
        }
    }
}

/// Stands for a message too large to return even trimmed; its text names the message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OmittedMessage {
    /// `user`, `assistant` or `toolResult`: the role of the message left out.
    pub role: String,
    pub seq: i64,
    /// Always true.
    pub omitted: bool,
    /// The trimmed message's size.
    pub bytes: usize,
    /// One text block saying what was left out and why.
    pub content: Vec<TrimmedBlock>,
    pub timestamp: i64,
}
