//! The Matrix channel (SPEC §9.2) over the client-server API: `/sync` in, `m.room.message` out,
//! for one bot user (`channels.matrix`) or several (`channels.matrix.accounts.<id>`), on the
//! channel kit (`super::kit`) and `matrix-sdk` (`client.rs`; docs/decisions.md says why). With
//! `encryption: true` the bot is a device with its own keys: events come decrypted, and messages
//! to encrypted rooms go encrypted; one it cannot decrypt gets a notice.
//!
//! In (`sync.rs`): each bot long-polls `/sync` from its stored `next_batch` (a channel token in
//! the store). The first sync of a bot that has none reads no history: it accepts pending
//! invitations and records where the stream is, so a fresh start does not answer a room's past.
//! Each `m.room.message` of type `m.text` (or `m.notice`, a bot's) is mapped to the kit's view
//! (`route.rs`); a message that starts a run is committed together with the token — the batch's
//! `next_batch` with its last message, the position before the batch with the others — and the
//! run's idempotency key (`matrix:<account>:<eventId>`) makes a message seen again after a crash
//! in the middle of a batch a no-op. So no message is handled twice and none is lost.
//! Invitations are accepted per `autoJoin`. A room of two members (the bot and one person) is
//! direct; any other is a group room. While a run works the room shows the bot typing.
//!
//! Out: each part (at most 16,000 characters) is one `m.notice` — a bot's output, which other
//! bots do not answer — `PUT …/send/m.room.message/{txnId}` with a transaction id made of the
//! delivery id and the part's index, so a part retried after a lost answer (or a `kill -9`
//! before its progress was recorded) is answered by the homeserver with the first event and
//! posted once. A 429 `M_LIMIT_EXCEEDED` is retried after its `retry_after_ms`; 5xx and no
//! answer are retried; other refusals are permanent, with their `errcode`.
//!
//! A token the homeserver refuses (`M_UNKNOWN_TOKEN`) fails that bot — unless it logs in with a
//! password, when it logs in again: `health` and the log say so, the gateway keeps serving, and
//! the bot is tried again seldom until the token is taken (`kit/link.rs`).
//! The token and the password are never logged.

mod api;
mod client;
mod route;
mod sync;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::ChannelDoors;
use super::kit::{Bot, Chat, ChatPlatform, DoorParts, Reach, link};
use crate::channel::ChannelError;
pub use crate::config::MATRIX;
use crate::config::MatrixBot;
use crate::store::DeliveryRecord;

/// How long one "typing" lasts.
const TYPING_FOR: Duration = Duration::from_secs(30);
/// What a 403 means on Matrix.
const FORBIDDEN: &str = "the bot may not write in this room: not joined, or not allowed";

/// The Matrix platform.
pub(crate) struct Matrix;

/// One bot user's client, and the direct rooms it knows.
pub(crate) struct MatrixApi {
    client: client::Client,
    /// The direct room the door last saw with each user: where a message to a user goes.
    direct: Mutex<HashMap<String, String>>,
}

impl MatrixApi {
    /// Remembers that `room` is the direct room with `user`.
    fn direct_room(&self, user: &str, room: &str) {
        if let Ok(mut rooms) = self.direct.lock() {
            rooms.insert(user.to_string(), room.to_string());
        }
    }

    /// The room a delivery to `to` goes to: `to` itself, or for a user id (a pairing notice)
    /// the direct room last seen with them.
    fn room_of(&self, to: &str) -> Result<String, ChannelError> {
        if !to.starts_with('@') {
            return Ok(to.to_string());
        }
        let known = self.direct.lock().ok().and_then(|r| r.get(to).cloned());
        known.ok_or_else(|| {
            ChannelError::Permanent(format!(
                "no direct room with {to} is known since the gateway started (send to a room id)"
            ))
        })
    }
}

/// A user id as a directory name: `@bot:example.org` → `bot_example.org`.
fn dir_name(user_id: &str) -> String {
    let name = user_id.trim_start_matches('@');
    name.chars()
        .map(|c| match c.is_ascii_alphanumeric() || "-._".contains(c) {
            true => c,
            false => '_',
        })
        .collect()
}

/// What the homeserver is called in messages.
const API: &str = "the homeserver";

/// The bot logs in with its password (it has no configured token).
fn logs_in(bot: &MatrixBot) -> bool {
    bot.access_token.is_none() && bot.password.is_some()
}

/// The setting of the credential the bot uses.
fn credential(bot: &MatrixBot) -> &'static str {
    match logs_in(bot) {
        true => "password",
        false => "accessToken",
    }
}

impl ChatPlatform for Matrix {
    type Settings = MatrixBot;
    type Api = MatrixApi;
    const LABEL: &'static str = "Matrix";
    const ID_NAME: &'static str = "Matrix user id";
    const TYPING_EVERY: Option<Duration> = Some(Duration::from_secs(20));

    fn api(bot: &MatrixBot, reach: &Reach<'_>) -> Option<MatrixApi> {
        let user_id = bot.user_id.clone()?;
        let settings = client::Settings {
            homeserver: bot.homeserver.clone().unwrap_or_default(),
            store_dir: reach.home.join(MATRIX).join(dir_name(&user_id)),
            user_id,
            access_token: bot.access_token.clone(),
            password: bot.password.clone(),
            encryption: bot.encryption.unwrap_or(false),
            device_name: bot.device_name.clone(),
        };
        let client = client::Client::new(reach.http.clone(), settings);
        Some(MatrixApi {
            client,
            direct: Mutex::new(HashMap::new()),
        })
    }

    async fn post(
        bot: &Bot<Self>,
        record: &DeliveryRecord,
        (index, part): (usize, &str),
    ) -> Result<(), ChannelError> {
        let room = bot.api.room_of(&record.to)?;
        // A bot's output is a notice: other bots do not answer it (SPEC §9.2, no loops).
        let mut content = json!({"msgtype": "m.notice", "body": part});
        if let Some(root) = &record.thread_id {
            content["m.relates_to"] = json!({
                "rel_type": "m.thread", "event_id": root,
                "is_falling_back": true, "m.in_reply_to": {"event_id": root},
            });
        }
        let txn = format!("switchboard.{}.{index}", record.id);
        let sent = bot.api.client.send(&room, &txn, content).await;
        sent.map_err(
            |e| match (e.is("M_UNKNOWN_TOKEN"), logs_in(&bot.settings)) {
                // A bot with a password logs in again on the next attempt.
                (true, true) => ChannelError::Retry(e.to_string()),
                (true, false) => bot.refused(bot.refusal(API, credential(&bot.settings), &e)),
                _ => e.verdict(FORBIDDEN),
            },
        )
    }

    async fn typing(bot: &Bot<Self>, to: &str, _thread: Option<&str>) {
        let _ = bot.api.client.typing(to, TYPING_FOR).await;
    }

    fn doors(chat: Arc<Chat<Self>>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::running(link::Links::new(chat, parts))
    }
}

/// The fuzz targets' door (docs/testing.md): a `/sync` answer as the syncer decodes
/// it, and each joined room's text message as routing reads it for the bot `@bot:hs` (named `Bot`).
/// Not an API: nothing in the workspace calls it.
#[doc(hidden)]
pub fn fuzz_inbound(body: &[u8]) -> Result<Vec<String>, String> {
    let sync: api::Sync = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let me = route::Me {
        user_id: "@bot:hs".into(),
        display_name: Some("Bot".into()),
    };
    let events = sync
        .rooms
        .join
        .values()
        .flat_map(|room| &room.timeline.events);
    Ok(events
        .filter_map(|event| route::text(event, &me).ok())
        .map(|text| text.body)
        .collect())
}
