//! `send` and `deliveries.list`: the delivery outbox on the wire (SPEC §5.3, §9.1), and what the
//! webhook channel `POST`s to an account's `url` (SPEC §9.2).

use serde::{Deserialize, Serialize};

use crate::lenient;

/// What produced a delivery. Kinds are read back from outbox records, which a newer gateway
/// sharing the database may have written: a kind this build does not know is kept as it is
/// ([`DeliveryKind::Other`]), shown and sent under its own name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeliveryKind {
    /// A run's reply to its own route.
    Reply,
    /// An agent-to-agent exchange's announce.
    Announce,
    /// A sub-agent's result announced to its requester.
    SubagentAnnounce,
    /// An operator's `send`.
    Send,
    /// An agent's `message` tool.
    Message,
    /// An owner command's answer in a chat.
    Command,
    /// A DM pairing code or its approval.
    Pairing,
    /// An A2A task's state, pushed to the task's push-notification configs.
    A2aPush,
    /// A kind this build does not know, as stored.
    Other(String),
}

impl DeliveryKind {
    /// The name on the wire and in the store.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Reply => "reply",
            Self::Announce => "announce",
            Self::SubagentAnnounce => "subagent-announce",
            Self::Send => "send",
            Self::Message => "message",
            Self::Command => "command",
            Self::Pairing => "pairing",
            Self::A2aPush => "a2a-push",
            Self::Other(kind) => kind,
        }
    }
}

impl From<&str> for DeliveryKind {
    fn from(kind: &str) -> Self {
        match kind {
            "reply" => Self::Reply,
            "announce" => Self::Announce,
            "subagent-announce" => Self::SubagentAnnounce,
            "send" => Self::Send,
            "message" => Self::Message,
            "command" => Self::Command,
            "pairing" => Self::Pairing,
            "a2a-push" => Self::A2aPush,
            other => Self::Other(other.to_string()),
        }
    }
}

impl From<String> for DeliveryKind {
    fn from(kind: String) -> Self {
        match Self::from(kind.as_str()) {
            Self::Other(_) => Self::Other(kind),
            known => known,
        }
    }
}

impl std::fmt::Display for DeliveryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DeliveryKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DeliveryKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::from)
    }
}

wire_names! {
    /// Where a delivery stands.
    pub enum DeliveryStatus {
        /// Stored; attempted at `nextAttemptAt`.
        Pending = "pending",
        /// The channel took it.
        Delivered = "delivered",
        /// Given up: a permanent channel error, or every attempt failed.
        Failed = "failed",
        /// Refused by the session's send policy; never attempted.
        Denied = "denied",
        /// There was no route to deliver to; the text stays in the session's transcript.
        Recorded = "recorded",
    }
}

/// `send`: deliver a text to a channel target through the outbox.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    /// `webhook`, `webchat` (then `to` is a session key) or `internal` (likewise).
    pub channel: String,
    /// The chat (webhook) or session (webchat, internal) to deliver to.
    pub to: String,
    /// Webhook account; may be left out when exactly one is configured.
    pub account_id: Option<String>,
    pub thread_id: Option<String>,
    pub message: String,
    /// A repeated key answers the first delivery and sends nothing twice.
    pub idempotency_key: String,
}

/// `deliveries.list`: outbox records, newest first.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveriesListParams {
    /// Only the records of this session (a key in any accepted form).
    pub session_key: Option<String>,
    /// `pending`, `delivered`, `failed`, `denied` or `recorded`.
    pub status: Option<String>,
    /// Default 50, at most 500.
    #[serde(deserialize_with = "lenient::opt_positive")]
    pub limit: Option<i64>,
}

/// One outbox record.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryInfo {
    pub id: String,
    /// `reply`, `announce`, `subagent-announce`, `send`, `command` or `pairing`.
    pub kind: DeliveryKind,
    /// `pending`, `delivered`, `failed`, `denied` or `recorded`.
    pub status: DeliveryStatus,
    pub channel: String,
    pub to: String,
    pub account_id: Option<String>,
    pub thread_id: Option<String>,
    pub session_key: Option<String>,
    pub run_id: Option<String>,
    pub text: String,
    pub attempts: u32,
    /// When a pending record is attempted next (ms).
    pub next_attempt_at: Option<i64>,
    /// Why it failed, was denied or only recorded; the last error while pending.
    pub detail: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub delivered_at: Option<i64>,
}

/// The answer of `deliveries.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveriesListResult {
    /// Outbox records, newest first.
    pub deliveries: Vec<DeliveryInfo>,
}

/// The JSON body the webhook channel `POST`s to an account's `url` for one delivery. The same
/// `id` is sent in the `Idempotency-Key` header: an attempt repeated after a crash carries it
/// again, so the receiver can drop the repeat.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookOutbound {
    /// The delivery's id (also the `Idempotency-Key` header).
    pub id: String,
    /// `reply`, `announce`, `subagent-announce`, `send`, `command` or `pairing`.
    pub kind: DeliveryKind,
    /// The webhook account sending it.
    pub account_id: String,
    /// The chat to deliver to (as the inbound `chatId`, or the sender of a direct chat).
    pub to: String,
    /// The thread inside the chat, when the conversation is in one.
    pub thread_id: Option<String>,
    /// The text to post.
    pub text: String,
    /// The session the text comes from.
    pub session_key: Option<String>,
    /// The run that produced the text.
    pub run_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::round_trip;
    use serde_json::json;

    #[test]
    fn deliveries_list_wraps_the_records() {
        let info = DeliveryInfo {
            id: "d1".into(),
            kind: "reply".into(),
            status: DeliveryStatus::Pending,
            channel: "webhook".into(),
            to: "chat-1".into(),
            account_id: Some("acme".into()),
            thread_id: None,
            session_key: Some("agent:main:webhook:group:chat-1".into()),
            run_id: Some("r1".into()),
            text: "hi".into(),
            attempts: 1,
            next_attempt_at: Some(5),
            detail: Some("connection refused".into()),
            created_at: 1,
            updated_at: 2,
            delivered_at: None,
        };
        round_trip(
            DeliveriesListResult {
                deliveries: vec![info],
            },
            json!({"deliveries": [{
                "id": "d1", "kind": "reply", "status": "pending", "channel": "webhook",
                "to": "chat-1", "accountId": "acme",
                "sessionKey": "agent:main:webhook:group:chat-1", "runId": "r1", "text": "hi",
                "attempts": 1, "nextAttemptAt": 5, "detail": "connection refused",
                "createdAt": 1, "updatedAt": 2,
            }]}),
        );
        round_trip(
            DeliveriesListResult { deliveries: vec![] },
            json!({"deliveries": []}),
        );
    }

    #[test]
    fn the_webhook_body_carries_optional_fields_only_when_known() {
        round_trip(
            WebhookOutbound {
                id: "d1".into(),
                kind: "reply".into(),
                account_id: "acme".into(),
                to: "chat-1".into(),
                thread_id: Some("t9".into()),
                text: "hi".into(),
                session_key: Some("agent:main:webhook:group:chat-1".into()),
                run_id: Some("r1".into()),
            },
            json!({
                "id": "d1", "kind": "reply", "accountId": "acme", "to": "chat-1",
                "threadId": "t9", "text": "hi", "sessionKey": "agent:main:webhook:group:chat-1",
                "runId": "r1",
            }),
        );
        round_trip(
            WebhookOutbound {
                id: "d2".into(),
                kind: "send".into(),
                account_id: "acme".into(),
                to: "chat-1".into(),
                thread_id: None,
                text: "hello".into(),
                session_key: None,
                run_id: None,
            },
            json!({"id": "d2", "kind": "send", "accountId": "acme", "to": "chat-1", "text": "hello"}),
        );
    }
}
