//! How each channel sends (SPEC §9.2). The outbox (`crate::delivery`) decides whether and when;
//! a channel makes one attempt and says whether a failure is worth retrying.
//!
//! - `webhook`: `POST`s the message as JSON to the account's `url` (and routes inbound
//!   `POST /channels/webhook/<accountId>` payloads to sessions, see [`webhook`]).
//! - `webchat`: the gateway's own clients; the text is appended to the session named by `to` and
//!   clients subscribed to it get a `delivery` event.
//! - `internal`: into the transcript of the session named by `to` as a user-role message with
//!   provenance (a sub-agent announce to a requester that has no chat route).
//!
//! Channels named in keys that this gateway does not connect (`discord`, `slack`, …) fail
//! permanently with a message saying so: the record keeps the text and the reason.

pub mod webhook;

use serde_json::json;

use crate::clock::now_ms;
use crate::engine::Engine;
use crate::runtime::user_message;
use crate::store::{DeliveryRecord, WriteOp};

pub const WEBHOOK: &str = "webhook";
pub const WEBCHAT: &str = "webchat";
pub const INTERNAL: &str = "internal";

/// The channels a delivery can go to.
pub const DELIVERABLE: &[&str] = &[WEBHOOK, WEBCHAT, INTERNAL];

/// Why one attempt failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// Worth another attempt later (receiver down, 5xx, 429, timeout).
    #[error("{0}")]
    Retry(String),
    /// Another attempt would fail the same way (no such account, 4xx, unknown channel).
    #[error("{0}")]
    Permanent(String),
}

/// Makes one attempt to deliver `record`. On success answers the store writes that belong to
/// the delivery (committed together with its `delivered` mark, so they happen exactly once).
pub(crate) async fn send(
    engine: &Engine,
    record: &DeliveryRecord,
) -> Result<Vec<WriteOp>, ChannelError> {
    match record.channel.as_str() {
        WEBHOOK => webhook::send(engine, record).await.map(|()| Vec::new()),
        WEBCHAT => Ok(vec![WriteOp::Append {
            key: existing(engine, &record.to).await?,
            create: None,
            messages: vec![delivered_message(&record.text)],
        }]),
        INTERNAL => {
            let provenance = json!({
                "kind": record.kind,
                "fromSessionKey": record.source_key.as_ref().or(record.session_key.as_ref()),
                "runId": record.run_id,
            });
            Ok(vec![WriteOp::Append {
                key: existing(engine, &record.to).await?,
                create: None,
                messages: vec![user_message(&record.text, Some(provenance))],
            }])
        }
        other => Err(ChannelError::Permanent(format!(
            "channel {other} is not connected to this gateway (deliverable channels: {})",
            DELIVERABLE.join(", ")
        ))),
    }
}

/// The key of the session `to` names, which must exist.
async fn existing(engine: &Engine, to: &str) -> Result<String, ChannelError> {
    match engine.store().get(to).await {
        Ok(Some(entry)) => Ok(entry.key),
        Ok(None) => Err(ChannelError::Permanent(format!("No session found: {to}"))),
        Err(e) => Err(ChannelError::Retry(e.to_string())),
    }
}

/// A text delivered to a webchat session, as an assistant message of the gateway.
fn delivered_message(text: &str) -> serde_json::Value {
    json!({
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "provider": "switchboard",
        "model": "delivery",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
        "stopReason": "stop",
        "timestamp": now_ms(),
    })
}
