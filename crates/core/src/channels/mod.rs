//! The channels (SPEC §9.2): every implementation of the channel seam (`crate::channel`) and
//! the inbound doors that start runs. The composition root builds each channel and registers
//! it; nothing else names one.
//!
//! - `webhook` ([`webhook::Webhook`]): `POST`s the message as JSON to the account's `url`; its
//!   inbound door is `POST /channels/webhook/<accountId>` ([`Inbound`]).
//! - `telegram` ([`telegram::Telegram`]): the Bot API; its inbound door is a poller per bot
//!   ([`telegram::Telegram::door`]), owner commands and DM pairing included.
//! - `discord` ([`discord::Discord`]): the REST API out; its inbound door is a Gateway
//!   session per bot ([`discord::Discord::door`]), DM pairing included.
//! - `webchat` and `internal` ([`local`]): the gateway's own, deliveries into a session.
//!
//! Shared by the doors: [`Inbound`] (a chat message → a run, owner commands answered through the
//! outbox, `POST /hooks/agent`), [`pairing::Pairing`], and [`direct_key`].
//!
//! This component sits above the sessions: it may import `delivery` (answers go through the
//! outbox), `sessions` (owner commands), `runtime` and everything below them; nothing but the
//! composition root imports it.

pub mod discord;
mod hooks;
mod inbound;
pub mod local;
mod owner;
pub mod pairing;
mod split;
pub mod telegram;
pub mod webhook;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use inbound::Inbound;

use crate::config::{Config, DmScope};
use crate::error::CoreError;
use crate::keys::SessionKey;
use crate::keys::{self, ChatType};
use crate::runtime::Runtime;
use crate::sessions::Sessions;
use pairing::Pairing;

/// What a channel's inbound door is built from: the components it hands messages to.
pub struct DoorParts {
    pub inbound: Arc<Inbound>,
    /// Owner commands (`/status`, `/new`).
    pub sessions: Arc<Sessions>,
    pub pairing: Arc<Pairing>,
    pub runtime: Runtime,
    pub tasks: TaskTracker,
    /// Cancelled when intake stops: the door takes nothing more in.
    pub stop: CancellationToken,
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
