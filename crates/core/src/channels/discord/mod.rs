//! The Discord channel (SPEC §9.2): the Gateway in, the REST API out, for one bot
//! (`channels.discord`) or several (`channels.discord.accounts.<id>`). A thin client over
//! reqwest and tokio-tungstenite (docs/decisions.md says why no Discord library).
//!
//! In ([`Discord::door`], `gateway.rs`): one task per bot holds a Gateway session — HELLO,
//! IDENTIFY with the guild, guild-message, DM and message-content intents, heartbeats at the
//! interval HELLO gives (the first one after a random part of it), and after a drop (or op 7, or
//! a resumable op 9) a RESUME with the session id and the last sequence handled, so the events
//! missed in between are replayed rather than lost. A MESSAGE_CREATE is decided (`route.rs`); a
//! message that starts a run is committed together with its channel's cursor (the message id,
//! `WriteOp::SetCursor` in the run's own commit), and the run's idempotency key
//! (`discord:<account>:<messageId>`) guards it too; a message at or below the cursor was handled
//! before and is skipped. So no message is handled twice after a resume or a restart. A DM
//! sender `dmPolicy: "pairing"` does not know gets a one-time code instead (`super::pairing`).
//!
//! Out: the outbox calls [`Discord`]'s `send` (the channel seam): the text in parts of at most
//! 2,000 characters, in order, each part taken recorded so that a retry sends only the rest. A
//! 429 is retried after its `retry_after`; 5xx and no answer are retried; other 4xx are permanent.
//! A route whose `to` is a user id rather than a channel's (a pairing notice) goes to the user's
//! DM channel, opened on the way.
//!
//! A token the Gateway refuses (close code 4004) stops that bot: `health` and the log say so, and
//! the gateway keeps serving. The token is never logged.

mod api;
mod gateway;
mod route;

use std::sync::Arc;
use std::time::Duration;

pub use gateway::Gateway;

use super::{ChannelDoors, ChatChannel, DoorParts};
use crate::channel::{Channel, ChannelError, ChannelStatus, LinkCell, LinkState, Sent};
use crate::config::{Config, DISCORD_DEFAULT_ACCOUNT, DiscordChannel};
use crate::store::{DeliveryRecord, Store, WriteOp};
use api::{ApiError, Rest};

/// The channel's name in keys, routes, records and pairing.
pub const DISCORD: &str = "discord";
/// Discord's limit for one message's content, in characters.
const LIMIT: usize = 2000;
/// Discord's error code for a channel id it does not know.
const UNKNOWN_CHANNEL: u64 = 10003;
/// What a bot's link is called while its Gateway session is up.
const CONNECTED: &str = "connected";

/// The Discord channel: its bots, their states, and the outbound sender.
pub struct Discord {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    http: reqwest::Client,
    accounts: Vec<Arc<Account>>,
}

/// One bot: its account id, its resolved settings, its REST client and state.
struct Account {
    id: String,
    settings: DiscordChannel,
    rest: Rest,
    status: LinkCell,
}

impl Account {
    /// The cursor of one of the bot's channels in `channel_cursors`: the last message id handled.
    fn cursor(&self, channel_id: &str) -> String {
        format!("{DISCORD}:{}:{channel_id}", self.id)
    }
}

impl Discord {
    /// The configured bots (`channels.discord`), none connected; `http` bounds each call by
    /// `delivery.timeoutSeconds`.
    pub fn new(config: Arc<Config>, store: Arc<dyn Store>, http: reqwest::Client) -> Arc<Self> {
        let accounts = config
            .channels
            .discord
            .bots()
            .into_iter()
            .filter_map(|(id, settings)| {
                let token = settings.bot_token.clone()?;
                let rest = Rest::new(http.clone(), &settings.api_base, &token);
                Some(Arc::new(Account {
                    id,
                    settings,
                    rest,
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

    /// The inbound door: a Gateway session per bot, handing messages to the doors' components.
    pub fn door(self: &Arc<Self>, parts: &DoorParts) -> Arc<Gateway> {
        Arc::new(Gateway::new(self.clone(), parts))
    }
}

impl ChatChannel for Discord {
    fn doors(self: Arc<Self>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::running(self.door(parts))
    }
}

impl Channel for Discord {
    fn name(&self) -> &'static str {
        DISCORD
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
        let discord = &self.config.channels.discord;
        let account = account_id.unwrap_or(DISCORD_DEFAULT_ACCOUNT);
        match discord.bot(account) {
            Some(_) => Ok(()),
            None => Err(off_or_unknown(discord, account)),
        }
    }

    /// Each bot and its Gateway session's state; the whole as the default bot's.
    fn status(&self) -> Option<ChannelStatus> {
        let bots = self.accounts.iter().map(|a| (a.id.clone(), a.status.get()));
        Some(ChannelStatus::of_bots(
            (DISCORD, "Discord"),
            self.config.channels.discord.enabled,
            DISCORD_DEFAULT_ACCOUNT,
            bots.collect(),
        ))
    }

    fn pairs(&self) -> bool {
        true
    }
}

/// One delivery attempt to a Discord channel (the thread when the route names one): the parts
/// of the text not taken yet, in order, each one recorded as taken before the next is sent.
async fn send(
    config: &Config,
    (http, store): (&reqwest::Client, &Arc<dyn Store>),
    record: &DeliveryRecord,
) -> Result<(), ChannelError> {
    let channel = &config.channels.discord;
    let account = record
        .account_id
        .as_deref()
        .unwrap_or(DISCORD_DEFAULT_ACCOUNT);
    let Some(settings) = channel.bot(account) else {
        return Err(ChannelError::Permanent(off_or_unknown(channel, account)));
    };
    let token = settings.bot_token.as_deref().unwrap_or_default();
    let rest = Rest::new(http.clone(), &settings.api_base, token);
    let mut target = record.thread_id.clone().unwrap_or(record.to.clone());
    let parts = super::split::parts(&record.text, LIMIT);
    let last = parts.len();
    for (done, part) in parts.iter().enumerate().skip(record.parts_sent as usize) {
        let nonce = nonce(&record.id, done);
        match rest.create_message(&target, part, &nonce).await {
            // A user id rather than a channel's (a pairing notice, `send` to a user): their DM.
            Err(e) if e.code == Some(UNKNOWN_CHANNEL) && record.thread_id.is_none() => {
                target = rest.open_dm(&record.to).await.map_err(classify)?;
                rest.create_message(&target, part, &nonce)
                    .await
                    .map_err(classify)?;
            }
            sent => sent.map_err(classify)?,
        }
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

/// The nonce of part `part` of delivery `id`: the same on every attempt, so that with
/// `enforce_nonce` Discord answers a retried part (its answer lost, or the process killed before
/// the attempt was recorded) with the message it created and creates none. At most 25
/// characters, as Discord accepts: the delivery id (a UUID) plus the part, in base 36.
fn nonce(id: &str, part: usize) -> String {
    let base = uuid::Uuid::parse_str(id)
        .map(|u| u.as_u128())
        .unwrap_or_else(|_| {
            id.bytes().fold(0xcbf2_9ce4_8422_2325_u128, |h, b| {
                (h ^ u128::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
        });
    let mut n = base.wrapping_add(part as u128);
    let mut digits = Vec::new();
    loop {
        digits.push(char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.iter().rev().collect()
}

/// Why there is no bot to send with (also `send`'s refusal).
fn off_or_unknown(channel: &DiscordChannel, account: &str) -> String {
    let running: Vec<String> = channel.bots().into_iter().map(|(id, _)| id).collect();
    crate::channel::no_such_bot(DISCORD, account, &running)
}

/// 429 (after its `retry_after`), 5xx and no answer are worth another attempt; other 4xx not.
fn classify(e: ApiError) -> ChannelError {
    match (e.status, e.retry_after) {
        (429, Some(after)) => ChannelError::RetryAfter(after, e.to_string()),
        (429, None) => ChannelError::RetryAfter(Duration::from_secs(1), e.to_string()),
        (0 | 500..=599, _) => ChannelError::Retry(e.to_string()),
        (403, _) => ChannelError::Permanent(format!(
            "{e} (the bot may not write in this channel, or the user does not take DMs from it)"
        )),
        _ => ChannelError::Permanent(e.to_string()),
    }
}

/// The fuzz targets' door (docs/testing.md): a Gateway payload as the gateway
/// decodes it, and a `MESSAGE_CREATE`'s text without the mention of the bot (user id `1`).
/// Not an API: nothing in the workspace calls it.
#[doc(hidden)]
pub fn fuzz_inbound(body: &[u8]) -> Result<Vec<String>, String> {
    let payload: api::Payload = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    if payload.t.as_deref() != Some("MESSAGE_CREATE") {
        return Ok(Vec::new());
    }
    let message: api::Message = serde_json::from_value(payload.d).map_err(|e| e.to_string())?;
    let me: api::User = serde_json::from_value(serde_json::json!({"id": "1", "username": "bot"}))
        .map_err(|e| e.to_string())?;
    Ok(vec![route::strip_mention(&message.content, &me)])
}
