//! `chat.history` and `chat.inject` (SPEC §5.3).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lenient;
use crate::message::HistoryMessage;

#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatHistoryParams {
    pub session_key: String,
    /// The agent `main` and legacy keys belong to (the reference's clients send it); a key that
    /// names its agent must name this one.
    pub agent_id: Option<String>,
    /// Messages per page: default 200, clamped to 1–1000.
    #[serde(deserialize_with = "lenient::opt_positive")]
    pub limit: Option<i64>,
    /// Only messages with a `seq` below this one (page backwards with `nextBefore`).
    #[serde(deserialize_with = "lenient::opt_positive")]
    pub before: Option<i64>,
}

#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatHistoryResult {
    pub session_key: String,
    /// Absent when the key names no session yet (the history is then empty).
    pub session_id: Option<String>,
    /// Transcript messages, oldest first, each with its `seq`.
    pub messages: Vec<HistoryMessage>,
    /// Pass as `before` to read the older messages; absent when none are left.
    pub next_before: Option<i64>,
}

/// What `chat.inject` appends: text (as `role`, default `assistant`) or a whole transcript message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum InjectMessage {
    Text(String),
    Message(Value),
}

#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatInjectParams {
    pub session_key: String,
    pub message: InjectMessage,
    /// For a text message: `assistant` (default) or `user`.
    pub role: Option<String>,
    /// Agent for a new session whose key does not name one.
    pub agent_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatInjectResult {
    pub ok: bool,
    pub session_key: String,
    pub session_id: String,
    /// The message's `seq` in the transcript.
    pub seq: i64,
    /// The message's id in the JSONL mirror.
    pub message_id: String,
}
