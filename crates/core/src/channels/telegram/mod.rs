//! The Telegram channel (SPEC §9.2) over the Bot API: long polling in, `sendMessage` out, for
//! one bot (`channels.telegram`) or several (`channels.telegram.accounts.<id>`).
//!
//! In: one task per bot polls `getUpdates` from the bot's stored offset. Each update is decided
//! (`route.rs`); a message that starts a run is committed together with the next offset
//! (`WriteOp::SetCursor` in the run's own commit), anything else advances the offset alone. So
//! an update is handled once: a `kill -9` before the commit sees it again after the restart, one
//! after it does not. The run's idempotency key (`telegram:<account>:<update_id>`) guards the
//! same update against a second poller. While the run works the chat shows "typing…". A private
//! sender that `dmPolicy: "pairing"` does not know yet gets a one-time code instead
//! (`super::pairing`).
//!
//! Out: the outbox calls [`send`]: the text in parts of at most 4,096 characters (split on
//! paragraphs, then lines, then sentences, then words), as plain text, each part taken recorded
//! so that a retry sends only the rest. A 429 is retried after its `retry_after`; a 403 (the bot
//! was blocked or removed) and other 4xx are permanent.
//!
//! A token the Bot API refuses (401) stops that bot's poller: `health` and the log say so, and
//! the gateway keeps serving.

mod api;
mod commands;
mod route;
mod split;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use api::{ApiError, Bot};

use super::inbound::ChatTurn;
use super::pairing::{Pairing, Stranger, Verdict};
use super::{ChannelError, Inbound, TELEGRAM};
use crate::config::{Config, TelegramChannel};
use crate::error::CoreResult;
use crate::runtime::Runtime;
use crate::sessions::Sessions;
use crate::store::{DeliveryRecord, Store, WriteOp};

/// A bot's state for `health`: polling, or failed and why.
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
    pairing: Arc<Pairing>,
    runtime: Runtime,
    accounts: Vec<Arc<Account>>,
    tasks: TaskTracker,
    stop: CancellationToken,
}

/// One bot: its account id, its resolved settings, its client and state.
struct Account {
    id: String,
    settings: TelegramChannel,
    bot: Bot,
    status: Mutex<Status>,
}

impl Account {
    fn set_status(&self, status: Status) {
        if let Ok(mut s) = self.status.lock() {
            *s = status;
        }
    }

    /// The bot's cursor in `channel_cursors`.
    fn cursor(&self) -> String {
        format!("{TELEGRAM}:{}", self.id)
    }
}

/// Waits between failed polls grow to this.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Telegram shows "typing…" for about 5 s; it is sent again this often while a run works.
const TYPING_EVERY: Duration = Duration::from_secs(4);

impl Telegram {
    pub fn new(
        config: Arc<Config>,
        store: Arc<dyn Store>,
        (inbound, sessions, pairing): (Arc<Inbound>, Arc<Sessions>, Arc<Pairing>),
        runtime: Runtime,
        http: reqwest::Client,
        (tasks, stop): (TaskTracker, CancellationToken),
    ) -> Arc<Self> {
        let accounts = config
            .channels
            .telegram
            .bots()
            .into_iter()
            .filter_map(|(id, settings)| {
                let token = settings.bot_token.clone()?;
                let bot = Bot::new(http.clone(), &settings.api_base, &token);
                Some(Arc::new(Account {
                    id,
                    settings,
                    bot,
                    status: Mutex::new(Status::Off),
                }))
            })
            .collect();
        Arc::new(Self {
            config,
            store,
            inbound,
            sessions,
            pairing,
            runtime,
            accounts,
            tasks,
            stop,
        })
    }

    /// Starts polling with every configured bot.
    pub fn start(self: &Arc<Self>) {
        for account in &self.accounts {
            account.set_status(Status::Starting);
            let (this, account) = (self.clone(), account.clone());
            self.tasks.spawn(async move {
                let stop = this.stop.clone();
                tokio::select! {
                    () = this.poll(&account) => {}
                    () = stop.cancelled() => {}
                }
            });
        }
    }

    /// Each bot's account id and state.
    pub fn statuses(&self) -> Vec<(String, Status)> {
        self.accounts
            .iter()
            .map(|a| {
                let status = a.status.lock().map(|s| s.clone()).unwrap_or(Status::Off);
                (a.id.clone(), status)
            })
            .collect()
    }

    /// The channel's state: failed when a bot failed, polling when all poll, else the first
    /// bot's (off with none).
    pub fn status(&self) -> Status {
        let all = self.statuses();
        if let Some((id, Status::Failed(why))) =
            all.iter().find(|(_, s)| matches!(s, Status::Failed(_)))
        {
            return Status::Failed(if all.len() > 1 {
                format!("{id}: {why}")
            } else {
                why.clone()
            });
        }
        all.first().map_or(Status::Off, |(_, s)| s.clone())
    }

    /// DM pairing, for `pairing.list` and `pairing.approve`.
    pub fn pairing(&self) -> &Arc<Pairing> {
        &self.pairing
    }

    /// `getMe`, then `getUpdates` from the bot's stored offset until the gateway stops.
    async fn poll(self: &Arc<Self>, account: &Arc<Account>) {
        let bot = &account.bot;
        let mut backoff = Duration::from_millis(500);
        let me = loop {
            match bot.get_me().await {
                Ok(me) => break me,
                Err(e) if refused(account, &e) => return,
                Err(e) => {
                    tracing::warn!(account = %account.id, error = %e, "telegram: getMe failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        account.set_status(Status::Polling);
        let name = me.username.as_deref().unwrap_or("?");
        tracing::info!(account = %account.id, bot = name, "telegram: polling");
        let timeout = account.settings.poll_timeout_seconds;
        // Read once; from then on it moves with each update handled (and committed).
        let mut offset = loop {
            match self.store.cursor(&account.cursor()).await {
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
                Err(e) if refused(account, &e) => return,
                Err(e) => {
                    tracing::warn!(account = %account.id, error = %e, "telegram: getUpdates failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            backoff = Duration::from_millis(500);
            for update in updates {
                let next = update.update_id + 1;
                if let Err(e) = self.handle(account, &me, update).await {
                    // Not committed: the same update comes again with the next poll.
                    tracing::warn!(error = %e, "telegram: an update could not be handled; retrying");
                    tokio::time::sleep(backoff).await;
                    break;
                }
                offset = offset.max(next);
            }
        }
    }

    /// One update: a run committed with the next offset, or the next offset alone.
    async fn handle(
        self: &Arc<Self>,
        account: &Arc<Account>,
        me: &api::User,
        update: api::Update,
    ) -> CoreResult<()> {
        let cursor = WriteOp::SetCursor {
            name: account.cursor(),
            position: update.update_id + 1,
        };
        let source = match account.id.as_str() {
            crate::config::TELEGRAM_DEFAULT_ACCOUNT => format!("telegram:{}", update.update_id),
            id => format!("telegram:{id}:{}", update.update_id),
        };
        let (settings, id) = (&account.settings, account.id.as_str());
        let mut decision = match &update.message {
            Some(message) => route::decide(&self.config, (id, settings), me, message)?,
            None => route::Decision::Ignore("not a message"),
        };
        if let Some(stranger) = update
            .message
            .as_ref()
            .and_then(|m| route::stranger(settings, m))
        {
            decision = self.admit(decision, stranger, (id, &source)).await?;
        }
        let turn = match decision {
            route::Decision::Run(turn) => turn,
            route::Decision::Command(command) => {
                return self.command(command, source, cursor).await;
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
                idempotency_key: Some(source),
                commit_with: vec![cursor.clone()],
            })
            .await?;
        if accepted.deduplicated {
            // The run was committed before, without this offset (another poller's commit).
            self.store.write_batch(vec![cursor]).await?;
            return Ok(());
        }
        self.show_typing(account, typing, accepted.run_id);
        Ok(())
    }

    /// A private sender `dmPolicy: "pairing"` does not know: approved before (the decision
    /// stands), or a code answered (once per update), or nothing.
    async fn admit(
        &self,
        decision: route::Decision,
        (id, username): (String, Option<String>),
        (account, source): (&str, &str),
    ) -> CoreResult<route::Decision> {
        let chat = match &decision {
            route::Decision::Run(turn) => turn,
            route::Decision::Command(command) => &command.chat,
            route::Decision::Ignore(_) => return Ok(decision),
        };
        let stranger = Stranger {
            channel: TELEGRAM,
            account_id: account.into(),
            id,
            username,
            source: source.into(),
        };
        match self.pairing.check(stranger).await? {
            Verdict::Pass => Ok(decision),
            Verdict::Answer(text) => {
                let chat = commands::chat_of(chat, source);
                self.inbound.answer_command(chat, text).await?;
                Ok(route::Decision::Ignore("answered with a pairing code"))
            }
            Verdict::Silent(why) => Ok(route::Decision::Ignore(why)),
        }
    }

    /// "typing…" in the chat until the run ends (bounded by the gateway's stop).
    fn show_typing(
        self: &Arc<Self>,
        account: &Arc<Account>,
        (chat, thread): (String, Option<String>),
        run: crate::RunId,
    ) {
        let bot = account.bot.clone();
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

/// A 401 (or 404, a token of no bot): the bot is failed until the config changes.
fn refused(account: &Account, e: &ApiError) -> bool {
    if !matches!(e.code, 401 | 404) {
        return false;
    }
    let setting = match account.id.as_str() {
        crate::config::TELEGRAM_DEFAULT_ACCOUNT => "channels.telegram.botToken".to_string(),
        id => format!("channels.telegram.accounts.{id}.botToken"),
    };
    let why = format!("the Bot API refused {setting} ({e}); fix the token and restart");
    tracing::error!("telegram: {why}");
    account.set_status(Status::Failed(why));
    true
}

/// One delivery attempt to a Telegram chat: the parts of the text not taken yet, in order,
/// each one recorded as taken before the next is sent.
pub(crate) async fn send(
    config: &Config,
    (http, store): (&reqwest::Client, &Arc<dyn Store>),
    record: &DeliveryRecord,
) -> Result<(), ChannelError> {
    let channel = &config.channels.telegram;
    let account = record
        .account_id
        .as_deref()
        .unwrap_or(crate::config::TELEGRAM_DEFAULT_ACCOUNT);
    let Some(settings) = channel.bot(account) else {
        return Err(ChannelError::Permanent(off_or_unknown(channel, account)));
    };
    let token = settings.bot_token.as_deref().unwrap_or_default();
    let bot = Bot::new(http.clone(), &settings.api_base, token);
    let parts = split::parts(&record.text, split::LIMIT);
    let last = parts.len();
    for (done, part) in parts.iter().enumerate().skip(record.parts_sent as usize) {
        bot.send_message(&record.to, record.thread_id.as_deref(), part)
            .await
            .map_err(classify)?;
        if done + 1 < last {
            let progress = WriteOp::DeliveryProgress {
                id: record.id.clone(),
                parts_sent: (done + 1) as u32,
            };
            store
                .write_batch(vec![progress])
                .await
                .map_err(|e| ChannelError::Retry(e.to_string()))?;
        }
    }
    Ok(())
}

/// Why there is no bot to send with (also `send`'s refusal).
pub(crate) fn off_or_unknown(channel: &TelegramChannel, account: &str) -> String {
    let bots: Vec<String> = channel.bots().into_iter().map(|(id, _)| id).collect();
    if bots.is_empty() {
        "the telegram channel is off (set channels.telegram.enabled and botToken)".into()
    } else {
        format!(
            "no telegram bot has account id {account} (running: {})",
            bots.join(", ")
        )
    }
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
