//! The gateway's own two channels, deliveries into a session of this gateway (never a route):
//!
//! - `webchat` ([`Local::webchat`]): the gateway's clients; the text is appended to the session
//!   named by `to` as an assistant message of the gateway, and clients subscribed to it get a
//!   `delivery` event.
//! - `internal` ([`Local::internal`]): into the transcript of the session named by `to` as a
//!   user-role message with provenance (a sub-agent announce to a requester that has no chat
//!   route).
//!
//! Both answer their append as the delivery's own write, committed with its `delivered` mark, so
//! it happens exactly once.

use std::sync::Arc;

use switchboard_protocol::message::{
    AssistantMessage, ContentBlock, Provenance, StopReason, TranscriptMessage, Usage, UserContent,
    UserMessage,
};

use crate::channel::{self, Channel, ChannelError, Sent};
use crate::clock::Clock;
use crate::keys::SessionKey;
use crate::store::{DeliveryRecord, Store, WriteOp};

/// One of the gateway's own two channels.
pub struct Local {
    kind: Kind,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

/// Which one.
#[derive(Clone, Copy)]
enum Kind {
    /// [`channel::WEBCHAT`]: an assistant message of the gateway.
    Webchat,
    /// [`channel::INTERNAL`]: a user-role message with provenance.
    Internal,
}

impl Local {
    /// The `webchat` channel.
    pub fn webchat(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        let kind = Kind::Webchat;
        Self { kind, store, clock }
    }

    /// The `internal` channel.
    pub fn internal(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        let kind = Kind::Internal;
        Self { kind, store, clock }
    }

    /// What a delivery of `record` adds to its session's transcript.
    fn message(&self, record: &DeliveryRecord) -> TranscriptMessage {
        let now = self.clock.now_ms();
        if let Kind::Webchat = self.kind {
            return delivered_message(&record.text, now);
        }
        let provenance = Provenance {
            kind: record.kind.clone(),
            from_session_key: record
                .source_key
                .as_ref()
                .or(record.session_key.as_ref())
                .map(|k| k.display().to_string()),
            run_id: record.run_id.as_ref().map(|r| r.as_str().to_string()),
            ..Provenance::default()
        };
        TranscriptMessage::User(UserMessage {
            content: UserContent::Text(record.text.clone()),
            timestamp: now,
            provenance: Some(provenance),
            origin: None,
        })
    }
}

impl Channel for Local {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Webchat => channel::WEBCHAT,
            Kind::Internal => channel::INTERNAL,
        }
    }

    fn send<'a>(&'a self, record: &'a DeliveryRecord) -> Sent<'a> {
        Box::pin(async move {
            Ok(vec![WriteOp::Append {
                key: existing(self.store.as_ref(), &record.to).await?,
                create: None,
                messages: vec![self.message(record)],
            }])
        })
    }
}

/// The key of the session `to` names, which must exist.
async fn existing(store: &dyn Store, to: &str) -> Result<SessionKey, ChannelError> {
    let key = SessionKey::from_canonical(to.to_string());
    match store.get(&key).await {
        Ok(Some(entry)) => Ok(entry.key),
        Ok(None) => Err(ChannelError::Permanent(format!("No session found: {to}"))),
        Err(e) => Err(ChannelError::Retry(e.to_string())),
    }
}

/// A text delivered to a webchat session, as an assistant message of the gateway.
fn delivered_message(text: &str, now: i64) -> TranscriptMessage {
    TranscriptMessage::Assistant(AssistantMessage {
        content: vec![ContentBlock::text(text)],
        provider: "switchboard".into(),
        model: "delivery".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Stop,
        error_message: None,
        timestamp: now,
        origin: None,
    })
}
