//! The channels (SPEC §9.2): every implementation of the channel seam (`crate::channel`) and
//! the inbound doors that start runs. The composition root builds each channel and registers
//! it; nothing else names one.
//!
//! - `webhook` ([`webhook::Webhook`]): `POST`s the message as JSON to the account's `url`; its
//!   inbound door is `POST /channels/webhook/<accountId>` ([`Inbound`]).
//! - the chat channels, each its platform's code on the channel kit ([`kit`]: its bots, its
//!   sender in parts, its inbound driver, its routing, pairing and owner commands):
//!   `telegram` (the Bot API, a long poll per bot), `discord` (the REST API out, a Gateway
//!   session per bot in), `slack` (the Web API out, Socket Mode in), `matrix` (the
//!   client-server API, a `/sync` long poll per bot user), `whatsapp` (the Graph API out, its
//!   signed webhook at `/channels/whatsapp` in) and `signal` (a signal-cli daemon's JSON-RPC
//!   out, its event stream in).
//! - `imessage` ([`imessage::IMessage`]): named by the seeds, not offered (it needs macOS);
//!   every delivery to it fails with that reason.
//! - `webchat` and `internal` ([`local`]): the gateway's own, deliveries into a session.
//!
//! Shared by the doors: [`Inbound`] (a chat message → a run, owner commands answered through the
//! outbox, `POST /hooks/agent`), [`pairing::Pairing`], and [`direct_key`]. docs/architecture.md
//! ("Writing a channel") says what a new platform writes.
//!
//! This component sits above the sessions: it may import `delivery` (answers go through the
//! outbox), `sessions` (owner commands), `runtime` and everything below them; nothing but the
//! composition root imports it.

pub mod discord;
mod hooks;
pub mod imessage;
mod inbound;
pub(crate) mod kit;
pub mod local;
pub mod matrix;
mod owner;
pub mod pairing;
pub mod signal;
pub mod slack;
pub mod telegram;
pub mod webhook;
pub mod whatsapp;

use std::sync::Arc;

pub use inbound::Inbound;
pub(crate) use kit::DoorParts;

use crate::channel::{Channel, Door, HttpDoor};
use crate::config::{Config, DmScope};
use crate::error::CoreError;
use crate::keys::SessionKey;
use crate::keys::{self, ChatType};

/// A channel with inbound doors of its own, built above the sessions once their parts exist.
pub trait ChatChannel: Channel {
    /// The channel's doors: one that runs by itself (a poller, a socket), one the server
    /// serves at `/channels/<name>` (a webhook), or both.
    fn doors(self: Arc<Self>, parts: &DoorParts) -> ChannelDoors;
}

/// What [`ChatChannel::doors`] answers.
#[derive(Default)]
pub struct ChannelDoors {
    pub running: Option<Arc<dyn Door>>,
    pub http: Option<Arc<dyn HttpDoor>>,
}

impl ChannelDoors {
    pub fn running(door: Arc<dyn Door>) -> Self {
        Self {
            running: Some(door),
            http: None,
        }
    }

    pub fn http(door: Arc<dyn HttpDoor>) -> Self {
        Self {
            running: None,
            http: Some(door),
        }
    }
}

/// Why a platform's API did not answer, in words for an error (no URL, no secret).
pub(crate) fn why_no_answer(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection refused or unreachable"
    } else {
        "the request failed"
    }
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
