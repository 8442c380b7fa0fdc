//! The channels (SPEC §9.2): how each one sends ([`Channels`], used by the outbox, which decides
//! whether and when), and the HTTP sources of sessions ([`Inbound`]: the webhook channel's
//! `POST /channels/webhook/<accountId>` and `POST /hooks/agent`). A channel makes one attempt
//! and says whether a failure is worth retrying.
//!
//! - `webhook`: `POST`s the message as JSON to the account's `url` (and routes inbound
//!   payloads to sessions, see [`webhook`]).
//! - `webchat`: the gateway's own clients; the text is appended to the session named by `to` and
//!   clients subscribed to it get a `delivery` event.
//! - `internal`: into the transcript of the session named by `to` as a user-role message with
//!   provenance (a sub-agent announce to a requester that has no chat route).
//!
//! Channels named in keys that this gateway does not connect (`discord`, `slack`, …) fail
//! permanently with a message saying so: the record keeps the text and the reason.

mod hooks;
mod inbound;
pub mod pairing;
pub mod telegram;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::message::{
    AssistantMessage, ContentBlock, Provenance, StopReason, TranscriptMessage, Usage, UserContent,
    UserMessage,
};

pub use inbound::Inbound;

use crate::clock::Clock;
use crate::config::{Config, DmScope};
use crate::error::CoreError;
use crate::keys::SessionKey;
use crate::keys::{self, ChatType};
use crate::store::{DeliveryRecord, Store, WriteOp};

pub const WEBHOOK: &str = "webhook";
pub const WEBCHAT: &str = "webchat";
pub const INTERNAL: &str = "internal";
pub const TELEGRAM: &str = "telegram";

/// The channels a delivery can go to.
pub const DELIVERABLE: &[&str] = &[WEBHOOK, WEBCHAT, INTERNAL, TELEGRAM];

/// Why one attempt failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// Worth another attempt later (receiver down, 5xx, 429, timeout).
    #[error("{0}")]
    Retry(String),
    /// Worth another attempt, not before this long (a 429's `retry_after`).
    #[error("{1}")]
    RetryAfter(Duration, String),
    /// Another attempt would fail the same way (no such account, 4xx, unknown channel).
    #[error("{0}")]
    Permanent(String),
}

/// The senders of every connected channel.
#[derive(Clone)]
pub struct Channels {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    http: reqwest::Client,
}

impl Channels {
    /// `delivery.timeoutSeconds` bounds each outbound HTTP attempt.
    pub fn new(
        config: Arc<Config>,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, String> {
        let timeout = Duration::from_secs(config.delivery.timeout_seconds);
        let http = crate::runtime::providers::http::client(timeout)?;
        Ok(Self {
            config,
            store,
            clock,
            http,
        })
    }

    /// Makes one attempt to deliver `record`. On success answers the store writes that belong to
    /// the delivery (committed together with its `delivered` mark, so they happen exactly once).
    pub(crate) async fn send(&self, record: &DeliveryRecord) -> Result<Vec<WriteOp>, ChannelError> {
        let now = self.clock.now_ms();
        match record.channel.as_str() {
            WEBHOOK => webhook::send(&self.config, &self.http, record)
                .await
                .map(|()| Vec::new()),
            WEBCHAT => Ok(vec![WriteOp::Append {
                key: self.existing(&record.to).await?,
                create: None,
                messages: vec![delivered_message(&record.text, now)],
            }]),
            INTERNAL => {
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
                let message = TranscriptMessage::User(UserMessage {
                    content: UserContent::Text(record.text.clone()),
                    timestamp: now,
                    provenance: Some(provenance),
                });
                Ok(vec![WriteOp::Append {
                    key: self.existing(&record.to).await?,
                    create: None,
                    messages: vec![message],
                }])
            }
            TELEGRAM => telegram::send(&self.config, (&self.http, &self.store), record)
                .await
                .map(|()| Vec::new()),
            other => Err(ChannelError::Permanent(format!(
                "channel {other} is not connected to this gateway (deliverable channels: {})",
                DELIVERABLE.join(", ")
            ))),
        }
    }

    /// The key of the session `to` names, which must exist.
    async fn existing(&self, to: &str) -> Result<SessionKey, ChannelError> {
        let key = SessionKey::from_canonical(to.to_string());
        match self.store.get(&key).await {
            Ok(Some(entry)) => Ok(entry.key),
            Ok(None) => Err(ChannelError::Permanent(format!("No session found: {to}"))),
            Err(e) => Err(ChannelError::Retry(e.to_string())),
        }
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
    })
}

/// The session of a direct chat with `peer` on `channel`, per `session.dmScope` (SPEC §2.1).
pub(crate) fn direct_key(
    config: &Config,
    agent_id: &str,
    channel: &str,
    account_id: &str,
    peer: &str,
    thread: Option<&str>,
) -> Result<SessionKey, CoreError> {
    let peer_part = webhook::peer_segment(peer);
    let rest = match config.session.dm_scope {
        DmScope::Main => return Ok(config.main_session_key(agent_id)),
        DmScope::PerChannelPeer => {
            return Ok(keys::group_key(
                agent_id,
                channel,
                ChatType::Direct,
                peer,
                thread,
            ));
        }
        DmScope::PerAccountChannelPeer => format!(
            "{channel}:{}:direct:{peer_part}",
            webhook::peer_segment(account_id)
        ),
        DmScope::PerPeer => format!("direct:{peer_part}"),
    };
    keys::canonicalize(
        &format!("agent:{agent_id}:{rest}"),
        &config.key_context(agent_id),
    )
    .map_err(|e| CoreError::Invalid(format!("from: {e}")))
}
