//! The Telegram channel (SPEC §9.2) over the Bot API: long polling in, `sendMessage` out, for
//! one bot (`channels.telegram`) or several (`channels.telegram.accounts.<id>`), on the channel
//! kit (`super::kit`).
//!
//! In (`poll.rs`): each bot polls `getUpdates` from its stored offset. Each update is mapped to
//! the kit's view (`route.rs`); a message that starts a run is committed together with the next
//! offset (`WriteOp::SetCursor` in the run's own commit), anything else advances the offset
//! alone. So an update is handled once: a `kill -9` before the commit sees it again after the
//! restart, one after it does not. The run's idempotency key (`telegram:<account>:<update_id>`)
//! guards the same update against a second poller. While the run works the chat shows
//! "typing…". A token the Bot API refuses (401) fails that bot: `health` and the log say
//! so, and it is tried again seldom until the token is taken (`kit/link.rs`).
//!
//! Out: each part (at most 4,096 characters) is one `sendMessage` of plain text. A 429 is
//! retried after its `retry_after`; a 403 (the bot was blocked or removed) and other 4xx are
//! permanent.

mod api;
mod poll;
mod route;

use std::sync::Arc;
use std::time::Duration;

use super::ChannelDoors;
use super::kit::http::ApiError;
use super::kit::{Bot, Chat, ChatPlatform, DoorParts, Reach, link};
use crate::channel::ChannelError;
use crate::config::{Platform, TelegramBot};
use crate::store::DeliveryRecord;

/// The channel's name in keys, routes, records and pairing.
pub const TELEGRAM: &str = TelegramBot::NAME;

/// The Telegram platform.
pub(crate) struct Telegram;

/// What the platform's API is called in messages.
const API: &str = "the Bot API";

/// A 401 (or a 404: a token of no bot): the Bot API refused the token.
fn refused(e: &ApiError) -> bool {
    matches!(e.status, 401 | 404)
}

impl ChatPlatform for Telegram {
    type Settings = TelegramBot;
    type Api = api::Client;
    const LABEL: &'static str = "Telegram";
    const ID_NAME: &'static str = "Telegram user id";
    /// Telegram shows "typing…" for about 5 s.
    const TYPING_EVERY: Option<Duration> = Some(Duration::from_secs(4));

    fn api(bot: &TelegramBot, reach: &Reach<'_>) -> Option<api::Client> {
        let base = bot.api_base.as_deref().unwrap_or_default();
        Some(api::Client::new(
            reach.http.clone(),
            base,
            bot.bot_token.as_deref()?,
        ))
    }

    async fn post(
        bot: &Bot<Self>,
        record: &DeliveryRecord,
        (_, part): (usize, &str),
    ) -> Result<(), ChannelError> {
        let thread = record.thread_id.as_deref();
        let sent = bot.api.send_message(&record.to, thread, part).await;
        sent.map_err(|e| match refused(&e) {
            true => bot.refused(bot.refusal(API, "botToken", &e)),
            false => e.verdict("the bot was blocked or removed from the chat"),
        })
    }

    async fn typing(bot: &Bot<Self>, to: &str, thread: Option<&str>) {
        let _ = bot.api.typing(to, thread).await;
    }

    fn doors(chat: Arc<Chat<Self>>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::running(link::Links::new(chat, parts))
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
