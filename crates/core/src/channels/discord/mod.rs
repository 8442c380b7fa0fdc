//! The Discord channel (SPEC §9.2): the Gateway in, the REST API out, for one bot
//! (`channels.discord`) or several (`channels.discord.accounts.<id>`), on the channel kit
//! (`super::kit`). A thin client over reqwest and tokio-tungstenite (docs/decisions.md says why
//! no Discord library).
//!
//! In (`gateway.rs`): each bot holds a Gateway session — HELLO, IDENTIFY with the guild,
//! guild-message, DM and message-content intents, heartbeats at the interval HELLO gives (the
//! first one after a random part of it), and after a drop (or op 7, or a resumable op 9) a
//! RESUME with the session id and the last sequence handled, so the events missed in between are
//! replayed rather than lost. A MESSAGE_CREATE is mapped to the kit's view (`route.rs`); a
//! message that starts a run is committed together with its channel's cursor (the message id,
//! `WriteOp::SetCursor` in the run's own commit), and the run's idempotency key
//! (`discord:<account>:<messageId>`) guards it too; a message at or below the cursor was
//! handled before and is skipped. So no message is handled twice after a resume or a restart.
//!
//! Out: each part (at most 2,000 characters) is one message created with a nonce the same on
//! every attempt, so a retried part is answered with the message it created. A 429 is retried
//! after its `retry_after`; 5xx and no answer are retried; other 4xx are permanent. A route
//! whose `to` is a user id rather than a channel's (a pairing notice) goes to the user's DM
//! channel, opened on the way.
//!
//! A token the Gateway refuses (close code 4004) fails that bot: `health` and the log say so,
//! the gateway keeps serving, and the kit tries the bot again seldom until the token is taken
//! (`kit/link.rs`). The token is never logged.

mod api;
mod gateway;
mod route;

use std::sync::Arc;
use std::time::Duration;

use super::ChannelDoors;
use super::kit::{Bot, Chat, ChatPlatform, DoorParts, Reach, link};
use crate::channel::ChannelError;
use crate::config::{DiscordBot, Platform};
use crate::store::DeliveryRecord;

/// The channel's name in keys, routes, records and pairing.
pub const DISCORD: &str = DiscordBot::NAME;
/// Discord's error code for a channel id it does not know.
const UNKNOWN_CHANNEL: &str = "10003";
/// What a 403 means on Discord.
const FORBIDDEN: &str =
    "the bot may not write in this channel, or the user does not take DMs from it";

/// The Discord platform.
pub(crate) struct Discord;

impl ChatPlatform for Discord {
    type Settings = DiscordBot;
    type Api = api::Rest;
    const LABEL: &'static str = "Discord";
    const ID_NAME: &'static str = "Discord user id";
    /// Discord shows "typing…" for about 10 s.
    const TYPING_EVERY: Option<Duration> = Some(Duration::from_secs(8));

    fn api(bot: &DiscordBot, reach: &Reach<'_>) -> Option<api::Rest> {
        let base = bot.api_base.as_deref().unwrap_or_default();
        Some(api::Rest::new(
            reach.http.clone(),
            base,
            bot.bot_token.as_deref()?,
        ))
    }

    /// In the thread when the route names one; a user id's DM channel when the channel is
    /// unknown (a pairing notice, `send` to a user).
    async fn post(
        bot: &Bot<Self>,
        record: &DeliveryRecord,
        (index, part): (usize, &str),
    ) -> Result<(), ChannelError> {
        let target = record.thread_id.as_deref().unwrap_or(&record.to);
        let nonce = nonce(&record.id, index);
        match bot.api.create_message(target, part, &nonce).await {
            Err(e) if e.is(UNKNOWN_CHANNEL) && record.thread_id.is_none() => {
                let dm = bot.api.open_dm(&record.to).await;
                let dm = dm.map_err(|e| e.verdict(FORBIDDEN))?;
                bot.api.create_message(&dm, part, &nonce).await
            }
            sent => sent,
        }
        .map_err(|e| match e.status {
            401 => bot.refused(bot.refusal("the Discord API", "botToken", &e)),
            _ => e.verdict(FORBIDDEN),
        })
    }

    async fn typing(bot: &Bot<Self>, to: &str, thread: Option<&str>) {
        let _ = bot.api.typing(thread.unwrap_or(to)).await;
    }

    fn doors(chat: Arc<Chat<Self>>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::running(link::Links::new(chat, parts))
    }
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
