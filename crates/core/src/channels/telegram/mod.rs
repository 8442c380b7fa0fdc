//! The Telegram channel (SPEC §9.2) over the Bot API: long polling in, `sendMessage` out, for
//! one bot (`channels.telegram`) or several (`channels.telegram.accounts.<id>`).
//!
//! In ([`Telegram::door`], `poll.rs`): one task per bot polls `getUpdates` from the bot's stored
//! offset. Each update is decided (`route.rs`); a message that starts a run is committed together
//! with the next offset (`WriteOp::SetCursor` in the run's own commit), anything else advances the
//! offset alone. So an update is handled once: a `kill -9` before the commit sees it again after
//! the restart, one after it does not. The run's idempotency key (`telegram:<account>:<update_id>`)
//! guards the same update against a second poller. While the run works the chat shows "typing…". A
//! private sender that `dmPolicy: "pairing"` does not know yet gets a one-time code instead
//! (`super::pairing`).
//!
//! Out: the outbox calls [`Telegram`]'s `send` (the channel seam): the text in parts of at most
//! 4,096 characters (split on paragraphs, then lines, then sentences, then words), as plain text,
//! each part taken recorded so that a retry sends only the rest. A 429 is retried after its
//! `retry_after`; a 403 (the bot was blocked or removed) and other 4xx are permanent.
//!
//! A token the Bot API refuses (401) stops that bot's poller: `health` and the log say so, and
//! the gateway keeps serving.

mod api;
mod poll;
mod route;

use std::sync::Arc;
use std::time::Duration;

pub use api::{ApiError, Bot};
pub use poll::Poller;

use super::{ChannelDoors, ChatChannel, DoorParts};
use crate::channel::{Channel, ChannelError, ChannelStatus, LinkCell, LinkState, Sent};
use crate::config::{Config, TELEGRAM_DEFAULT_ACCOUNT, TelegramChannel};
use crate::store::{DeliveryRecord, Store, WriteOp};

/// The channel's name in keys, routes, records and pairing.
pub const TELEGRAM: &str = "telegram";
/// Telegram's limit for one message's text, in characters.
const LIMIT: usize = 4096;
/// What a bot's link is called while it is up.
const POLLING: &str = "polling";

/// The Telegram channel: its bots, their states, and the outbound sender.
pub struct Telegram {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    http: reqwest::Client,
    accounts: Vec<Arc<Account>>,
}

/// One bot: its account id, its resolved settings, its client and state.
struct Account {
    id: String,
    settings: TelegramChannel,
    bot: Bot,
    status: LinkCell,
}

impl Account {
    /// The bot's cursor in `channel_cursors`.
    fn cursor(&self) -> String {
        format!("{TELEGRAM}:{}", self.id)
    }
}

impl Telegram {
    /// The configured bots (`channels.telegram`), none started; `http` bounds each call by
    /// `delivery.timeoutSeconds`.
    pub fn new(config: Arc<Config>, store: Arc<dyn Store>, http: reqwest::Client) -> Arc<Self> {
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
                    status: LinkCell::new(LinkState::Off),
                }))
            })
            .collect();
        Arc::new(Self {
            config,
            store,
            http,
            accounts,
        })
    }

    /// The inbound door: a poller per bot, handing updates to the doors' components.
    pub fn door(self: &Arc<Self>, parts: &DoorParts) -> Arc<Poller> {
        Arc::new(Poller::new(self.clone(), parts))
    }
}

impl ChatChannel for Telegram {
    fn doors(self: Arc<Self>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::running(self.door(parts))
    }
}

impl Channel for Telegram {
    fn name(&self) -> &'static str {
        TELEGRAM
    }

    fn send<'a>(&'a self, record: &'a DeliveryRecord) -> Sent<'a> {
        Box::pin(async move {
            send(&self.config, (&self.http, &self.store), record)
                .await
                .map(|()| Vec::new())
        })
    }

    /// The bot `send` names must run (the default one when none is named).
    fn check_account(&self, account_id: Option<&str>) -> Result<(), String> {
        let telegram = &self.config.channels.telegram;
        let account = account_id.unwrap_or(TELEGRAM_DEFAULT_ACCOUNT);
        match telegram.bot(account) {
            Some(_) => Ok(()),
            None => Err(off_or_unknown(telegram, account)),
        }
    }

    /// Each bot and its poller's state; the whole as the default bot's.
    fn status(&self) -> Option<ChannelStatus> {
        let bots = self.accounts.iter().map(|a| (a.id.clone(), a.status.get()));
        Some(ChannelStatus::of_bots(
            (TELEGRAM, "Telegram"),
            self.config.channels.telegram.enabled,
            TELEGRAM_DEFAULT_ACCOUNT,
            bots.collect(),
        ))
    }

    fn pairs(&self) -> bool {
        true
    }
}

/// One delivery attempt to a Telegram chat: the parts of the text not taken yet, in order,
/// each one recorded as taken before the next is sent.
async fn send(
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
    let parts = crate::channels::split::parts(&record.text, LIMIT);
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
fn off_or_unknown(channel: &TelegramChannel, account: &str) -> String {
    let running: Vec<String> = channel.bots().into_iter().map(|(id, _)| id).collect();
    crate::channel::no_such_bot(TELEGRAM, account, &running)
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

/// The fuzz targets' door (docs/testing.md): an update as the poller decodes it, and
/// the text of its message (its caption when it has none).
/// Not an API: nothing in the workspace calls it.
#[doc(hidden)]
pub fn fuzz_inbound(body: &[u8]) -> Result<Vec<String>, String> {
    let update: api::Update = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    Ok(update
        .message
        .into_iter()
        .filter_map(|m| m.text.or(m.caption))
        .collect())
}
