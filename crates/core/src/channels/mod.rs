//! The channels (SPEC §9.2): every implementation of the channel seam (`crate::channel`) and
//! the inbound doors that start runs. The composition root builds each channel and registers
//! it; nothing else names one.
//!
//! - `webhook` ([`webhook::Webhook`]): `POST`s the message as JSON to the account's `url`; its
//!   inbound door is `POST /channels/webhook/<accountId>` ([`Inbound`]).
//! - `telegram` ([`telegram::Telegram`]): the Bot API; its inbound door is a poller per bot
//!   ([`BotChannel::door`]), owner commands and DM pairing included.
//! - `discord` ([`discord::Discord`]): the REST API out; its inbound door is a Gateway
//!   session per bot, DM pairing included.
//! - `slack` ([`slack::Slack`]): the Web API out; its inbound door is a Socket Mode
//!   connection per app, DM pairing included.
//! - `webchat` and `internal` ([`local`]): the gateway's own, deliveries into a session.
//!
//! Shared by the doors: [`BotChannel`] (how the root builds a bot channel's door), `bot` (link
//! state, sending in parts, WebSockets), `decision` (a run, an owner command or nothing; the
//! pairing gate; carrying it out), `owner` (the owner commands), [`Inbound`] (a chat message →
//! a run, owner commands answered through the outbox, `POST /hooks/agent`),
//! [`pairing::Pairing`], and [`direct_key`].
//!
//! This component sits above the sessions: it may import `delivery` (answers go through the
//! outbox), `sessions` (owner commands), `runtime` and everything below them; nothing but the
//! composition root imports it.

mod bot;
mod decision;
pub mod discord;
mod hooks;
mod inbound;
pub mod local;
mod owner;
pub mod pairing;
pub mod slack;
mod split;
pub mod telegram;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use inbound::Inbound;

use crate::channel::{Channel, Door};
use crate::config::{Config, DmScope};
use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::keys::{self, ChatType};
use crate::runtime::Runtime;
use crate::sessions::Sessions;
use pairing::Pairing;

/// A channel of bots whose inbound door runs by itself (a poller, a socket): the composition
/// root registers it as a [`Channel`] and, once the doors' components exist, builds its door.
pub trait BotChannel: Channel {
    /// The inbound door, handing messages to `parts`.
    fn door(self: Arc<Self>, parts: &DoorParts) -> Arc<dyn Door>;
}

/// What a channel's inbound door is built from: the components it hands messages to.
#[derive(Clone)]
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

impl DoorParts {
    /// The pairing gate of a direct message from `stranger`: `None` when it goes on, else why
    /// nothing runs (the sender was answered with its code in `chat`, or is left unanswered).
    async fn admit(
        &self,
        stranger: pairing::Stranger,
        chat: impl FnOnce() -> inbound::Chat,
    ) -> CoreResult<Option<&'static str>> {
        match self.pairing.check(stranger).await? {
            pairing::Verdict::Pass => Ok(None),
            pairing::Verdict::Answer(text) => {
                self.inbound.answer_command(chat(), text).await?;
                Ok(Some("answered with a pairing code"))
            }
            pairing::Verdict::Silent(why) => Ok(Some(why)),
        }
    }

    /// Calls `typing` every `every` until `run` ends or intake stops (a channel's "typing…").
    fn typing_until_done<F, Fut>(&self, run: RunId, every: Duration, typing: F)
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send,
    {
        let (runtime, stop) = (self.runtime.clone(), self.stop.clone());
        self.tasks.spawn(async move {
            let ended = runtime.wait(&run, Duration::from_secs(3600));
            tokio::pin!(ended);
            loop {
                typing().await;
                tokio::select! {
                    _ = &mut ended => return,
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(every) => {}
                }
            }
        });
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
