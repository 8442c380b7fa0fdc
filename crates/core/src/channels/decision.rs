//! What a channel of bots' door decided about one message, and carrying it out — shared by the
//! doors of Discord and Slack: a run in the chat's session (committed with the message's id and
//! whatever the channel commits with it), an owner command answered in the chat, or nothing; a
//! DM from a sender the pairing gate does not know yet goes through it first.

use switchboard_protocol::sessions::DeliveryContext;

use super::DoorParts;
use super::inbound::{Chat, ChatTurn};
use super::owner::{self, Order};
use super::pairing::Stranger;
use crate::error::CoreResult;
use crate::keys::SessionKey;
use crate::runtime::Accepted;
use crate::store::WriteOp;

/// A message that starts a run.
pub(super) struct Turn {
    pub key: SessionKey,
    pub route: DeliveryContext,
    pub text: String,
    pub title: Option<String>,
}

/// An owner command from a chat the bot may talk in.
pub(super) struct Command {
    pub chat: Turn,
    /// The sender is one of the bot's owners.
    pub owner: bool,
    pub order: Order,
}

/// What a message asks for.
pub(super) enum Decision {
    /// A run in the chat's session.
    Run(Turn),
    /// An owner command (it needs no mention in a channel).
    Command(Command),
    /// Nothing, and why (for the log).
    Ignore(&'static str),
}

impl Decision {
    /// A run, or an owner command when `order` is one (`owner`: the sender is an owner).
    pub fn of(turn: Turn, order: Option<Order>, owner: bool) -> Self {
        match order {
            Some(order) => Decision::Command(Command {
                chat: turn,
                owner,
                order,
            }),
            None => Decision::Run(turn),
        }
    }
}

/// The message a decision is about.
pub(super) struct Source<'a> {
    /// Its id, unique in the channel: the run's idempotency key, the answers' too.
    pub id: &'a str,
    /// The setting that lists the bot's owners (`channels.slack.owners`).
    pub owners_setting: &'a str,
}

impl Source<'_> {
    /// The chat `turn` came from, to answer in (once per message).
    fn chat(&self, turn: &Turn) -> Chat {
        Chat {
            key: turn.key.clone(),
            route: turn.route.clone(),
            setting: self.owners_setting.into(),
            idempotency_key: Some(self.id.to_string()),
        }
    }
}

impl DoorParts {
    /// The pairing gate of a DM from `stranger`, in front of `decision`: approved before (the
    /// decision stands), or a code answered (once per message), or nothing.
    pub(super) async fn gate(
        &self,
        decision: Decision,
        stranger: Stranger,
        source: &Source<'_>,
    ) -> CoreResult<Decision> {
        let turn = match &decision {
            Decision::Run(turn) => turn,
            Decision::Command(command) => &command.chat,
            Decision::Ignore(_) => return Ok(decision),
        };
        match self.admit(stranger, || source.chat(turn)).await? {
            None => Ok(decision),
            Some(why) => Ok(Decision::Ignore(why)),
        }
    }

    /// Carries `decision` out: a run committed with `commit` (answered: `None` when the run
    /// was started before, by the same message), or an owner command answered and `commit`
    /// written after it, or nothing done but `commit` (an ignored message).
    pub(super) async fn carry_out(
        &self,
        decision: Decision,
        source: &Source<'_>,
        commit: Vec<WriteOp>,
    ) -> CoreResult<Option<Accepted>> {
        let turn = match decision {
            Decision::Run(turn) => turn,
            Decision::Command(command) => {
                let chat = source.chat(&command.chat);
                let parts = (self.inbound.as_ref(), self.sessions.as_ref());
                owner::answer(parts, chat, command.owner, command.order).await?;
                self.commit(commit).await?;
                return Ok(None);
            }
            Decision::Ignore(why) => {
                tracing::debug!(message = source.id, why, "message ignored");
                self.commit(commit).await?;
                return Ok(None);
            }
        };
        let accepted = self
            .inbound
            .chat_turn(ChatTurn {
                key: turn.key,
                route: turn.route,
                text: turn.text,
                display_name: turn.title,
                idempotency_key: Some(source.id.to_string()),
                commit_with: commit.clone(),
            })
            .await?;
        if accepted.deduplicated {
            // The run was committed before, perhaps without `commit` (another connection's).
            self.commit(commit).await?;
            return Ok(None);
        }
        Ok(Some(accepted))
    }

    async fn commit(&self, ops: Vec<WriteOp>) -> CoreResult<()> {
        if !ops.is_empty() {
            self.runtime.store().write_batch(ops).await?;
        }
        Ok(())
    }
}
