//! What an inbound door hands a message to, and what the message then does: the pairing gate
//! for a stranger, a run committed together with the platform's cursor, an owner command
//! answered, "typing…" in the chat while the run works.

use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::sessions::DeliveryContext;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::gate::Decision;
use super::guard::{Breaker, notice};
use super::{Bot, Chat, ChatMessage, ChatPlatform, route};
use crate::channels::inbound::{self, Inbound};
use crate::channels::owner;
use crate::channels::pairing::{self, Pairing};
use crate::error::CoreResult;
use crate::ids::RunId;
use crate::runtime::Runtime;
use crate::sessions::Sessions;
use crate::store::{Store, WriteOp};

/// What became of a message.
pub(crate) enum Taken {
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

    /// Does what a message of `channel` decided (see [`DoorParts::receive`]).
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

    /// Writes `writes` in one commit (nothing for none).
    pub(crate) async fn commit(&self, writes: Vec<WriteOp>) -> CoreResult<()> {
        if !writes.is_empty() {
            self.store.write_batch(writes).await?;
        }
        Ok(())
    }

    /// Runs `work` (a door's loop) as one of the gateway's tasks, until it ends or intake stops.
    pub(crate) fn spawn_until_stopped(&self, work: impl Future<Output = ()> + Send + 'static) {
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                () = work => {}
                () = stop.cancelled() => {}
            }
        });
    }

    /// "typing…" by `bot` where the reply to `route` goes, every [`ChatPlatform::TYPING_EVERY`]
    /// until `run` ends or intake stops, never after the run has ended.
    fn show_typing<P: ChatPlatform>(&self, bot: &Arc<Bot<P>>, route: &DeliveryContext, run: RunId) {
        let Some(every) = P::TYPING_EVERY else {
            return;
        };
        let bot = bot.clone();
        let (to, thread) = (route.to.clone(), route.thread_id.clone());
        self.typing_until_done(run, every, move || {
            let (bot, to, thread) = (bot.clone(), to.clone(), thread.clone());
            async move { P::typing(&bot, &to, thread.as_deref()).await }
        });
    }

    /// Calls `typing` every `every` until `run` ends or intake stops, never after the run has
    /// ended.
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

/// What the platform ignored, logged.
fn ignored(channel: &str, source: &str, why: String) -> Taken {
    tracing::debug!(channel, source, why, "message ignored");
    Taken::Ignored(why)
}

/// What one bot's inbound link works with: its channel, the bot, and the components messages
/// are handed to.
pub(crate) struct BotDoor<P: ChatPlatform> {
    pub chat: Arc<Chat<P>>,
    pub bot: Arc<Bot<P>>,
    pub parts: DoorParts,
}

impl<P: ChatPlatform> BotDoor<P> {
    /// One message the bot received (`Err`: what the platform already ignored, and why):
    /// decided, a stranger's pairing code answered, then taken — a run committed with `commit`
    /// (the platform's position past the message), or an owner command answered and `commit`
    /// written. An ignored message writes nothing: the caller says whether its cursor moves.
    /// `source` (the message's id) makes the run and every answer once-only.
    pub async fn receive(
        &self,
        message: Result<ChatMessage, String>,
        source: String,
        commit: Vec<WriteOp>,
    ) -> CoreResult<Taken> {
        let channel = P::name();
        let message = match message {
            Ok(message) => message,
            Err(why) => return Ok(ignored(channel, &source, why)),
        };
        if self.chat.guard.is_own(&message.sender) {
            return Ok(ignored(
                channel,
                &source,
                "one of this gateway's own bots".into(),
            ));
        }
        let bot = self.bot.as_ref();
        let stranger = route::stranger(bot, &message, &source);
        let (from_bot, chat) = (message.from_bot, self.chat_of(&message));
        let mut decision = route::decide(&self.chat.config, bot, message)?;
        decision = self.breaker(decision, (&chat, from_bot), &source).await?;
        if let Some(stranger) = stranger {
            decision = self.parts.admit(decision, stranger).await?;
        }
        let taken = self.parts.take(channel, decision, (source.clone(), commit));
        let taken = taken.await?;
        match &taken {
            Taken::Run(run, route) => self.parts.show_typing(&self.bot, route, run.clone()),
            Taken::Answered => {}
            Taken::Ignored(why) => {
                tracing::debug!(channel, source, why, "message ignored");
            }
        }
        Ok(taken)
    }

    /// A message the bot cannot read (Matrix: one it cannot decrypt): where the bot would have
    /// answered it, the chat is told `notice` once (keyed by `source`), then `commit` is
    /// written; elsewhere nothing is written. `message`'s text is a placeholder, and it counts
    /// as addressed to the bot (whether it mentions the bot cannot be read).
    pub async fn unreadable(
        &self,
        message: ChatMessage,
        (source, notice): (String, String),
        commit: Vec<WriteOp>,
    ) -> CoreResult<Taken> {
        if self.chat.guard.is_own(&message.sender) || message.from_bot {
            return Ok(ignored(P::name(), &source, "a bot's message".into()));
        }
        let turn = match route::decide(&self.chat.config, self.bot.as_ref(), message)? {
            Decision::Run(turn) => turn,
            Decision::Command(command) => command.chat,
            Decision::Ignore(why) => return Ok(ignored(P::name(), &source, why)),
        };
        let chat = turn.chat(P::name(), &source);
        self.parts.inbound.answer_command(chat, notice).await?;
        self.parts.commit(commit).await?;
        Ok(Taken::Answered)
    }

    /// The chat `message` was written in, as the breaker counts it: by this bot, in one chat
    /// and thread.
    fn chat_of(&self, message: &ChatMessage) -> String {
        let (to, thread) = &message.reply_to;
        format!("{}:{to}:{}", self.bot.id, thread.as_deref().unwrap_or(""))
    }

    /// `decision` on a message in `chat` (`from_bot`: a bot wrote it) past the chat's breaker:
    /// a bot's message once the breaker is open is not answered, and the chat is told once; a
    /// person's message closes it.
    async fn breaker(
        &self,
        decision: Decision,
        (chat, from_bot): (&str, bool),
        source: &str,
    ) -> CoreResult<Decision> {
        let turn = match (&decision, from_bot) {
            (Decision::Run(turn), true) => turn,
            (Decision::Run(_) | Decision::Command(_), false) => {
                self.chat.guard.person(chat);
                return Ok(decision);
            }
            _ => return Ok(decision),
        };
        match self.chat.guard.bot_turn(chat) {
            Breaker::Closed => Ok(decision),
            Breaker::Opened => {
                let answer = turn.chat(P::name(), source);
                self.parts.inbound.answer_command(answer, notice()).await?;
                Ok(Decision::ignore("a bot's message past the chat's breaker"))
            }
            Breaker::Open => Ok(Decision::ignore("a bot's message past the chat's breaker")),
        }
    }

    /// `id` is the platform's id of this bot (so that the channel's other bots ignore it).
    pub fn own(&self, id: &str) {
        self.chat.guard.own(id);
    }

    /// The bot's client of the platform's API.
    pub fn api(&self) -> &P::Api {
        &self.bot.api
    }

    /// The bot's resolved platform settings.
    pub fn settings(&self) -> &P::Settings {
        &self.bot.settings
    }

    /// The bot's account id.
    pub fn account(&self) -> &str {
        &self.bot.id
    }

    /// The chats the bot answered before, by their cursors (`<channel>:<account>:<chat>`, a
    /// position that grows with time): the `most` most recently active, as (chat, position) —
    /// where a new session looks back for what came while the bot was away. None when the
    /// store cannot say (logged).
    pub async fn known_chats(&self, most: usize) -> Vec<(String, i64)> {
        let prefix = format!("{}:{}:", P::name(), self.account());
        let mut chats = match self.chat.store.cursors(&prefix).await {
            Ok(chats) => chats,
            Err(e) => {
                tracing::warn!(channel = P::name(), account = self.account(), error = %e, "cannot read the chats to look back into");
                return Vec::new();
            }
        };
        chats.sort_by_key(|(_, position)| std::cmp::Reverse(*position));
        chats.truncate(most);
        chats
            .into_iter()
            .map(|(name, position)| (name[prefix.len()..].to_string(), position))
            .collect()
    }

    /// The bot's link is up; `word` says how (`polling`, `connected`).
    pub fn up(&self, word: &'static str) {
        self.bot.link.set(crate::channel::LinkState::Up(word));
    }
}
