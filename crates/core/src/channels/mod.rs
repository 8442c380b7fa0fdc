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
//! - `matrix` ([`matrix::Matrix`]): the client-server API out; its inbound door is a `/sync`
//!   long poll per bot user ([`matrix::Matrix::door`]), DM pairing included.
//! - `slack` ([`slack::Slack`]): the Web API out; its inbound door is a Socket Mode connection
//!   per app ([`slack::Slack::door`]), DM pairing included.
//! - `whatsapp` ([`whatsapp::WhatsApp`]): the Graph API out; its inbound door is the
//!   platform's signed webhook at `/channels/whatsapp` (an HTTP door), DM pairing included.
//! - `signal` ([`signal::Signal`]): a signal-cli daemon's JSON-RPC `send` out; its inbound door
//!   holds the daemon's event stream ([`signal::Signal::doors`]), DM pairing included.
//! - `imessage` ([`imessage::IMessage`]): named by the seeds, not offered (it needs macOS);
//!   every delivery to it fails with that reason.
//! - `webchat` and `internal` ([`local`]): the gateway's own, deliveries into a session.
//!
//! Shared by the doors: [`Inbound`] (a chat message → a run, owner commands answered through the
//! outbox, `POST /hooks/agent`), [`pairing::Pairing`], and [`direct_key`].
//!
//! This component sits above the sessions: it may import `delivery` (answers go through the
//! outbox), `sessions` (owner commands), `runtime` and everything below them; nothing but the
//! composition root imports it.

mod bot;
pub mod discord;
mod gate;
mod hooks;
pub mod imessage;
mod inbound;
pub mod local;
pub mod matrix;
mod owner;
pub mod pairing;
pub mod signal;
pub mod slack;
mod split;
pub mod telegram;
pub mod webhook;
pub mod whatsapp;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use inbound::Inbound;

use crate::channel::{Channel, Door, HttpDoor};
use crate::config::{Config, DmScope};
use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::keys::{self, ChatType};
use crate::runtime::Runtime;
use crate::sessions::Sessions;
use crate::store::{Store, WriteOp};
use gate::Decision;
use pairing::Pairing;
use switchboard_protocol::sessions::DeliveryContext;

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

/// What [`DoorParts::take`] did with a message.
enum Taken {
    /// A run started; its reply goes to this route.
    Run(RunId, DeliveryContext),
    /// Nothing more to do (an owner command answered, a run that had started before).
    Answered,
    /// Nothing, and why (for the log).
    Ignored(String),
}

/// What a channel's inbound door is built from: the components it hands messages to.
#[derive(Clone)]
pub struct DoorParts {
    /// Where a door's cursor (its position in the platform's stream) is kept.
    pub store: Arc<dyn Store>,
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
    /// The pairing gate of a direct message from `stranger` that `decision` would take:
    /// approved before (the decision stands), or answered with its code in the chat (once per
    /// message), or left unanswered.
    async fn admit(&self, decision: Decision, stranger: pairing::Stranger) -> CoreResult<Decision> {
        let turn = match &decision {
            Decision::Run(turn) => turn,
            Decision::Command(command) => &command.chat,
            Decision::Ignore(_) => return Ok(decision),
        };
        let chat = turn.chat(stranger.channel, &stranger.source);
        match self.pairing.check(stranger).await? {
            pairing::Verdict::Pass => Ok(decision),
            pairing::Verdict::Answer(text) => {
                self.inbound.answer_command(chat, text).await?;
                Ok(Decision::ignore("answered with a pairing code"))
            }
            pairing::Verdict::Silent(why) => Ok(Decision::ignore(why)),
        }
    }

    /// Does what a message of `channel` decided: a run committed together with `commit` (the
    /// channel's position past the message, when it keeps one), or an owner command answered
    /// and then `commit` written. An ignored message writes nothing: the caller says whether
    /// its cursor moves.
    /// `source` (the message's id) makes the run and the answer once-only.
    async fn take(
        &self,
        channel: &'static str,
        decision: Decision,
        (source, commit): (String, Vec<WriteOp>),
    ) -> CoreResult<Taken> {
        let turn = match decision {
            Decision::Run(turn) => turn,
            Decision::Command(command) => {
                let chat = command.chat.chat(channel, &source);
                let parts = (self.inbound.as_ref(), self.sessions.as_ref());
                owner::answer(parts, chat, command.owner, command.order).await?;
                self.commit(commit).await?;
                return Ok(Taken::Answered);
            }
            Decision::Ignore(why) => return Ok(Taken::Ignored(why)),
        };
        let route = turn.route.clone();
        let accepted = self
            .inbound
            .chat_turn(inbound::ChatTurn {
                key: turn.key,
                route: turn.route,
                text: turn.text,
                display_name: turn.title,
                idempotency_key: Some(source),
                commit_with: commit.clone(),
            })
            .await?;
        if accepted.deduplicated {
            // The run was committed before, without these writes (another connection's commit).
            self.commit(commit).await?;
            return Ok(Taken::Answered);
        }
        Ok(Taken::Run(accepted.run_id, route))
    }

    async fn commit(&self, writes: Vec<WriteOp>) -> CoreResult<()> {
        if !writes.is_empty() {
            self.store.write_batch(writes).await?;
        }
        Ok(())
    }

    /// Runs `work` (a door's loop) as one of the gateway's tasks, until it ends or intake stops.
    fn spawn_until_stopped(&self, work: impl Future<Output = ()> + Send + 'static) {
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                () = work => {}
                () = stop.cancelled() => {}
            }
        });
    }

    /// Calls `typing` every `every` until `run` ends or intake stops (a channel's "typing…"),
    /// never after the run has ended.
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
                // A run that ended first gets no "typing…" after its reply; one that ends
                // during the call cuts it short.
                tokio::select! {
                    biased;
                    _ = &mut ended => return,
                    () = stop.cancelled() => return,
                    () = typing() => {}
                }
                tokio::select! {
                    _ = &mut ended => return,
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(every) => {}
                }
            }
        });
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
