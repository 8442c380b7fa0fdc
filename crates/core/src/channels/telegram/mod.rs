//! The Telegram channel (SPEC §9.2) over the Bot API: long polling in, `sendMessage` out.
//!
//! In: one task polls `getUpdates` from the stored offset. Each update is decided
//! (`route.rs`); a message that starts a run is committed together with the next offset
//! (`WriteOp::SetCursor` in the run's own commit), anything else advances the offset alone. So
//! an update is handled once: a `kill -9` before the commit sees it again after the restart, one
//! after it does not. The run's idempotency key (`telegram:<update_id>`) guards the same update
//! against a second poller. While the run works the chat shows "typing…".
//!
//! Out: the outbox calls [`send`]: the text in parts of at most 4,096 characters (split on
//! paragraphs, then lines, then sentences, then words), as plain text. A 429 is retried after
//! its `retry_after`; a 403 (the bot was blocked or removed) and other 4xx are permanent.
//!
//! A token the Bot API refuses (401) stops the poller: `health` and the log say so, and the
//! gateway keeps serving.

mod api;
mod route;
mod split;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use api::{ApiError, Bot};

use super::inbound::{Chat, ChatTurn};
use super::{ChannelError, Inbound};
use crate::config::Config;
use crate::error::{CoreError, CoreResult};
use crate::runtime::Runtime;
use crate::sessions::Sessions;
use crate::store::{DeliveryRecord, Store, WriteOp};
use switchboard_protocol::overview::SessionsDescribeParams;
use switchboard_protocol::sessions::SessionKeyParams;

/// The channel's state for `health`: polling, or failed and why.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Off,
    Starting,
    Polling,
    Failed(String),
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Starting => "starting",
            Self::Polling => "polling",
            Self::Failed(_) => "failed",
        }
    }
}

/// The Telegram channel component.
pub struct Telegram {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    inbound: Arc<Inbound>,
    sessions: Arc<Sessions>,
    runtime: Runtime,
    bot: Option<Bot>,
    status: Mutex<Status>,
    tasks: TaskTracker,
    stop: CancellationToken,
}

/// The cursor of the one bot `channels.telegram` configures.
const CURSOR: &str = "telegram:default";
/// Waits between failed polls grow to this.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Telegram shows "typing…" for about 5 s; it is sent again this often while a run works.
const TYPING_EVERY: Duration = Duration::from_secs(4);

impl Telegram {
    pub fn new(
        config: Arc<Config>,
        store: Arc<dyn Store>,
        (inbound, sessions): (Arc<Inbound>, Arc<Sessions>),
        runtime: Runtime,
        http: reqwest::Client,
        (tasks, stop): (TaskTracker, CancellationToken),
    ) -> Arc<Self> {
        let channel = &config.channels.telegram;
        let bot = match (channel.enabled, channel.bot_token.as_deref()) {
            (true, Some(token)) => Some(Bot::new(http, &channel.api_base, token)),
            _ => None,
        };
        Arc::new(Self {
            config,
            store,
            inbound,
            sessions,
            runtime,
            bot,
            status: Mutex::new(Status::Off),
            tasks,
            stop,
        })
    }

    /// Starts polling when the channel is enabled.
    pub fn start(self: &Arc<Self>) {
        if self.bot.is_none() {
            return;
        }
        self.set_status(Status::Starting);
        let this = self.clone();
        self.tasks.spawn(async move {
            let stop = this.stop.clone();
            tokio::select! {
                () = this.poll() => {}
                () = stop.cancelled() => {}
            }
        });
    }

    pub fn status(&self) -> Status {
        self.status.lock().map(|s| s.clone()).unwrap_or(Status::Off)
    }

    fn set_status(&self, status: Status) {
        if let Ok(mut s) = self.status.lock() {
            *s = status;
        }
    }

    /// `getMe`, then `getUpdates` from the stored offset until the gateway stops.
    async fn poll(self: &Arc<Self>) {
        let Some(bot) = self.bot.clone() else { return };
        let mut backoff = Duration::from_millis(500);
        let me = loop {
            match bot.get_me().await {
                Ok(me) => break me,
                Err(e) if self.refused(&e) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "telegram: getMe failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        self.set_status(Status::Polling);
        tracing::info!(
            bot = me.username.as_deref().unwrap_or("?"),
            "telegram: polling"
        );
        let timeout = self.config.channels.telegram.poll_timeout_seconds;
        // Read once; from then on it moves with each update handled (and committed).
        let mut offset = loop {
            match self.store.cursor(CURSOR).await {
                Ok(offset) => break offset.unwrap_or(0),
                Err(e) => {
                    tracing::warn!(error = %e, "telegram: cannot read the update offset");
                    tokio::time::sleep(backoff).await;
                }
            }
        };
        loop {
            let updates = match bot.get_updates(offset, timeout).await {
                Ok(updates) => updates,
                Err(e) if self.refused(&e) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "telegram: getUpdates failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            backoff = Duration::from_millis(500);
            for update in updates {
                let next = update.update_id + 1;
                if let Err(e) = self.handle(&me, update).await {
                    // Not committed: the same update comes again with the next poll.
                    tracing::warn!(error = %e, "telegram: an update could not be handled; retrying");
                    tokio::time::sleep(backoff).await;
                    break;
                }
                offset = offset.max(next);
            }
        }
    }

    /// A 401 (or 404, a token of no bot): the channel is failed until the config changes.
    fn refused(&self, e: &ApiError) -> bool {
        if !matches!(e.code, 401 | 404) {
            return false;
        }
        let why = format!(
            "the Bot API refused channels.telegram.botToken ({e}); fix the token and restart"
        );
        tracing::error!("telegram: {why}");
        self.set_status(Status::Failed(why));
        true
    }

    /// One update: a run committed with the next offset, or the next offset alone.
    async fn handle(self: &Arc<Self>, me: &api::User, update: api::Update) -> CoreResult<()> {
        let cursor = WriteOp::SetCursor {
            name: CURSOR.into(),
            position: update.update_id + 1,
        };
        let idempotency = format!("telegram:{}", update.update_id);
        let channel = &self.config.channels.telegram;
        let decision = match &update.message {
            Some(message) => route::decide(&self.config, channel, me, message)?,
            None => route::Decision::Ignore("not a message"),
        };
        let turn = match decision {
            route::Decision::Run(turn) => turn,
            route::Decision::Command(command) => {
                return self.command(command, idempotency, cursor).await;
            }
            route::Decision::Ignore(why) => {
                tracing::debug!(update = update.update_id, why, "telegram: update ignored");
                self.store.write_batch(vec![cursor]).await?;
                return Ok(());
            }
        };
        let typing = (turn.route.to.clone(), turn.route.thread_id.clone());
        let accepted = self
            .inbound
            .chat_turn(ChatTurn {
                key: turn.key,
                route: turn.route,
                text: turn.text,
                display_name: turn.title,
                idempotency_key: Some(idempotency),
                commit_with: vec![cursor.clone()],
            })
            .await?;
        if accepted.deduplicated {
            // The run was committed before, without this offset (another poller's commit).
            self.store.write_batch(vec![cursor]).await?;
            return Ok(());
        }
        self.show_typing(typing, accepted.run_id);
        Ok(())
    }

    /// An owner command: answered in the chat (through the outbox, once per update), no run.
    async fn command(
        &self,
        command: route::Command,
        idempotency: String,
        cursor: WriteOp,
    ) -> CoreResult<()> {
        let chat = Chat {
            key: command.chat.key,
            route: command.chat.route,
            setting: "channels.telegram.owners".into(),
            idempotency_key: Some(idempotency),
        };
        match command.order {
            route::Order::Send(send) => {
                self.inbound.send_command(chat, command.owner, send).await?;
            }
            _ if !command.owner => {
                let text = "Only an owner of this chat can use /status and /new \
                            (channels.telegram.owners lists them).";
                self.inbound.answer_command(chat, text.into()).await?;
            }
            route::Order::Status => {
                let text = self.status_of(&chat.key).await?;
                self.inbound.answer_command(chat, text).await?;
            }
            route::Order::New => {
                let key = SessionKeyParams {
                    key: chat.key.as_str().to_string(),
                };
                let text = match self.sessions.reset(key).await {
                    Ok(reset) => format!(
                        "New session: {} (sessionId {}).",
                        reset.key, reset.session_id
                    ),
                    Err(CoreError::NotFound(_)) => {
                        "Nothing to reset: this chat has no session yet.".into()
                    }
                    Err(e) => return Err(e),
                };
                self.inbound.answer_command(chat, text).await?;
            }
        }
        self.store.write_batch(vec![cursor]).await?;
        Ok(())
    }

    /// `/status`: the chat's session as one line.
    async fn status_of(&self, key: &crate::keys::SessionKey) -> CoreResult<String> {
        let params = SessionsDescribeParams {
            key: key.as_str().to_string(),
            agent_id: None,
        };
        let Some(row) = self.sessions.describe(params).await?.session else {
            return Ok(format!(
                "{}: no session yet; write to start one.",
                key.display()
            ));
        };
        let policy = row.send_policy.as_deref().unwrap_or("inherit");
        let tokens = row.total_tokens.unwrap_or(0);
        Ok(format!(
            "{} · model {} · send policy {policy} · {} · {tokens} tokens so far",
            row.key,
            row.model.as_deref().unwrap_or("?"),
            row.run_state.as_deref().unwrap_or("idle"),
        ))
    }

    /// "typing…" in the chat until the run ends (bounded by the gateway's stop).
    fn show_typing(self: &Arc<Self>, (chat, thread): (String, Option<String>), run: crate::RunId) {
        let Some(bot) = self.bot.clone() else { return };
        let (runtime, stop) = (self.runtime.clone(), self.stop.clone());
        self.tasks.spawn(async move {
            let ended = runtime.wait(&run, Duration::from_secs(3600));
            tokio::pin!(ended);
            loop {
                let _ = bot.typing(&chat, thread.as_deref()).await;
                tokio::select! {
                    _ = &mut ended => return,
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(TYPING_EVERY) => {}
                }
            }
        });
    }
}

/// One delivery attempt to a Telegram chat: every part of the text, in order.
pub(crate) async fn send(
    config: &Config,
    http: &reqwest::Client,
    record: &DeliveryRecord,
) -> Result<(), ChannelError> {
    let channel = &config.channels.telegram;
    let token = match (channel.enabled, channel.bot_token.as_deref()) {
        (true, Some(token)) => token,
        _ => {
            return Err(ChannelError::Permanent(
                "the telegram channel is off (set channels.telegram.enabled and botToken)".into(),
            ));
        }
    };
    let bot = Bot::new(http.clone(), &channel.api_base, token);
    for part in split::parts(&record.text, split::LIMIT) {
        bot.send_message(&record.to, record.thread_id.as_deref(), &part)
            .await
            .map_err(classify)?;
    }
    Ok(())
}

/// 429 and 5xx (and no answer) are worth another attempt; other refusals are not.
fn classify(e: ApiError) -> ChannelError {
    match (e.code, e.retry_after) {
        (429, Some(after)) => ChannelError::RetryAfter(Duration::from_secs(after), e.to_string()),
        (0 | 429 | 500..=599, _) => ChannelError::Retry(e.to_string()),
        (403, _) => ChannelError::Permanent(format!(
            "{e} (the bot was blocked or removed from the chat)"
        )),
        _ => ChannelError::Permanent(e.to_string()),
    }
}
