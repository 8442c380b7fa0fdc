//! `send` and `deliveries.list`: the delivery outbox on the wire (SPEC §5.3, §9.1).

use serde::{Deserialize, Serialize};

use crate::lenient;

/// `send`: deliver a text to a channel target through the outbox.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    /// `webhook`, `webchat` (then `to` is a session key) or `internal` (likewise).
    pub channel: String,
    /// The chat (webhook) or session (webchat, internal) to deliver to.
    pub to: String,
    /// Webhook account; may be left out when exactly one is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    pub message: String,
    /// A repeated key answers the first delivery and sends nothing twice.
    pub idempotency_key: String,
}

/// `deliveries.list`: outbox records, newest first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveriesListParams {
    /// Only the records of this session (a key in any accepted form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// `pending`, `delivered`, `failed`, `denied` or `recorded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Default 50, at most 500.
    #[serde(
        default,
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub limit: Option<i64>,
}

/// One outbox record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryInfo {
    pub id: String,
    /// `reply`, `announce`, `subagent-announce` or `send`.
    pub kind: String,
    /// `pending`, `delivered`, `failed`, `denied` or `recorded`.
    pub status: String,
    pub channel: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub text: String,
    pub attempts: u32,
    /// When a pending record is attempted next (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<i64>,
    /// Why it failed, was denied or only recorded; the last error while pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<i64>,
}
