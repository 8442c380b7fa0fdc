//! What the HTTP sources of sessions accept and answer (SPEC §9.2, §9.3):
//! `POST /channels/webhook/<accountId>` ([`WebhookInbound`]) and `POST /hooks/agent`
//! ([`HookAgentParams`]). Both answer `202` with [`InboundAccepted`], or a 4xx/5xx with
//! [`InboundRefused`] that says what was wrong.
//!
//! Bodies come from other programs' chat APIs, so they are read permissively: unknown fields are
//! ignored and ids may be strings or numbers ([`ChatId`]). Emptiness and the chat-type rules are
//! checked by the receiver, which can say which field is at fault.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::frames::ErrorShape;

/// A chat, sender or thread id: chat APIs send strings or integers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ChatId {
    Text(String),
    Number(i64),
}

impl ChatId {
    /// The id as text: a string trimmed, a number in decimal.
    pub fn into_string(self) -> String {
        match self {
            Self::Text(s) => s.trim().to_string(),
            Self::Number(n) => n.to_string(),
        }
    }
}

/// Accepts exactly what an untagged `String | i64` would (a string, or an integer that fits in
/// an `i64`), with an error that says so rather than naming a Rust type.
impl<'de> Deserialize<'de> for ChatId {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct ChatIdVisitor;

        impl Visitor<'_> for ChatIdVisitor {
            type Value = ChatId;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an integer")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<ChatId, E> {
                Ok(ChatId::Text(v.to_string()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<ChatId, E> {
                Ok(ChatId::Text(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ChatId, E> {
                Ok(ChatId::Number(v))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ChatId, E> {
                i64::try_from(v)
                    .map(ChatId::Number)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
        }

        de.deserialize_any(ChatIdVisitor)
    }
}

/// `POST /channels/webhook/<accountId>` body: one message from a chat, with the account's token
/// in `Authorization: Bearer …`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookInbound {
    /// The sender (non-empty). Direct chats are keyed by it; group senders are named to the agent.
    pub from: ChatId,
    /// `direct` (or `dm`), `group` or `channel`.
    pub chat_type: String,
    /// The chat; required for `group` and `channel`. Replies go to it (else to `from`).
    pub chat_id: Option<ChatId>,
    /// The message for the agent (non-empty).
    pub text: String,
    /// The thread inside the chat: a session of its own, and where replies go.
    pub thread_id: Option<ChatId>,
}

/// `POST /hooks/agent` body: a run on a message, with the hook token.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookAgentParams {
    /// The text the agent runs on (non-empty).
    pub message: String,
    /// The session to run in (any accepted key form); absent = a new `hook:<uuid>` session.
    pub session_key: Option<String>,
    /// The agent to run as; must be configured when agents are. Absent = the default agent.
    pub agent_id: Option<String>,
}

/// The `202 Accepted` body: the message is stored and its run queued.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboundAccepted {
    /// Always true.
    pub ok: bool,
    /// The run the message started (none for a chat command such as `/send off`).
    pub run_id: Option<String>,
    /// The session it runs in (canonical key).
    pub session_key: String,
    /// A chat command's confirmation or refusal, also delivered back to the chat.
    pub reply: Option<String>,
}

impl InboundAccepted {
    pub fn new(run_id: impl Into<String>, session_key: impl Into<String>) -> Self {
        Self {
            ok: true,
            run_id: Some(run_id.into()),
            session_key: session_key.into(),
            reply: None,
        }
    }
}

/// The body of a refused inbound request (4xx, or 5xx when the failure is ours); nothing was
/// stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboundRefused {
    /// Always false.
    pub ok: bool,
    /// `code` follows the HTTP status (`UNAUTHORIZED` 401, `FORBIDDEN` 403, `NOT_FOUND` 404,
    /// `INTERNAL` 5xx, else `INVALID_REQUEST`); `message` says what to fix.
    pub error: ErrorShape,
}

impl InboundRefused {
    pub fn new(error: ErrorShape) -> Self {
        Self { ok: false, error }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::ErrorCode;
    use crate::test_support::round_trip;
    use serde_json::{Value, json};

    #[test]
    fn ids_are_strings_or_integers() {
        let id = |v: Value| serde_json::from_value::<ChatId>(v).map_err(|e| e.to_string());
        assert_eq!(id(json!(" 42 ")), Ok(ChatId::Text(" 42 ".into())));
        assert_eq!(id(json!(-7)), Ok(ChatId::Number(-7)));
        assert_eq!(
            id(json!(9_223_372_036_854_775_807_u64)),
            Ok(ChatId::Number(i64::MAX))
        );
        for bad in [
            json!(1.5),
            json!(9_223_372_036_854_775_808_u64),
            json!(true),
            json!(null),
            json!({}),
        ] {
            let error = id(bad.clone()).unwrap_err();
            assert!(
                error.contains("expected a string or an integer"),
                "{bad}: {error}"
            );
        }
        assert_eq!(ChatId::Text(" 42 ".into()).into_string(), "42");
        assert_eq!(ChatId::Number(-7).into_string(), "-7");
        // The same from bytes, as the receiver reads bodies.
        assert_eq!(
            serde_json::from_slice::<ChatId>(b"12").unwrap(),
            ChatId::Number(12)
        );
    }

    #[test]
    fn webhook_bodies_are_read_permissively() {
        round_trip(
            WebhookInbound {
                from: ChatId::Number(12),
                chat_type: "group".into(),
                chat_id: Some(ChatId::Text("dev".into())),
                text: "hi".into(),
                thread_id: Some(ChatId::Number(3)),
            },
            json!({"from": 12, "chatType": "group", "chatId": "dev", "text": "hi", "threadId": 3}),
        );
        let direct: WebhookInbound = serde_json::from_slice(
            br#"{"from": "ann", "chatType": "dm", "text": "yo", "chatId": null, "extra": [1]}"#,
        )
        .unwrap();
        assert_eq!(
            direct,
            WebhookInbound {
                from: ChatId::Text("ann".into()),
                chat_type: "dm".into(),
                chat_id: None,
                text: "yo".into(),
                thread_id: None,
            }
        );
        assert_eq!(
            serde_json::to_value(&direct).unwrap(),
            json!({"from": "ann", "chatType": "dm", "text": "yo"})
        );
        for missing in [
            json!({"chatType": "direct", "text": "t"}),
            json!({"from": "a", "text": "t"}),
            json!({"from": "a", "chatType": "direct"}),
        ] {
            assert!(serde_json::from_value::<WebhookInbound>(missing).is_err());
        }
    }

    #[test]
    fn hook_params_need_only_a_message() {
        round_trip(
            HookAgentParams {
                message: "run".into(),
                session_key: None,
                agent_id: None,
            },
            json!({"message": "run"}),
        );
        round_trip(
            HookAgentParams {
                message: "run".into(),
                session_key: Some("hook:nightly".into()),
                agent_id: Some("ops".into()),
            },
            json!({"message": "run", "sessionKey": "hook:nightly", "agentId": "ops"}),
        );
        assert!(serde_json::from_value::<HookAgentParams>(json!({"sessionKey": "k"})).is_err());
    }

    #[test]
    fn answers_are_accepted_or_refused() {
        round_trip(
            InboundAccepted::new("r1", "agent:main:hook:h1"),
            json!({"ok": true, "runId": "r1", "sessionKey": "agent:main:hook:h1"}),
        );
        round_trip(
            InboundRefused::new(ErrorShape::new(ErrorCode::Unauthorized, "wrong hook token")),
            json!({"ok": false, "error": {"code": "UNAUTHORIZED", "message": "wrong hook token"}}),
        );
    }
}
