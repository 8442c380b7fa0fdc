//! The Matrix channel (SPEC §9.2) over the client-server API: `/sync` in, `m.room.message` out,
//! for one bot user (`channels.matrix`) or several (`channels.matrix.accounts.<id>`). A thin
//! client over reqwest (docs/decisions.md says why not `matrix-sdk`). Unencrypted rooms only.
//!
//! In ([`Matrix::door`], `sync.rs`): one task per bot long-polls `/sync` from the bot's stored
//! `next_batch` (a channel token in the store). The first sync of a bot that has none reads no
//! history: it accepts pending invitations and records where the stream is, so a fresh start
//! does not answer a room's past. Each `m.room.message` of type `m.text` is decided (`route.rs`);
//! a message that starts a run is committed together with the token — the batch's `next_batch`
//! with its last message, the position before the batch with the others — and the run's
//! idempotency key (`matrix:<account>:<eventId>`) makes a message seen again after a crash in
//! the middle of a batch a no-op. So no message is handled twice and none is lost. Invitations
//! are accepted per `autoJoin`. A room of two members (the bot and one person) is direct; any
//! other is a group room. While a run works the room shows the bot typing.
//!
//! Out: the outbox calls [`Matrix`]'s `send` (the channel seam): the text in parts of at most
//! 16,000 characters, each `PUT …/send/m.room.message/{txnId}` with a transaction id made of the
//! delivery id and the part's index, so a part retried after a lost answer (or a `kill -9`
//! before its progress was recorded) is answered by the homeserver with the first event and
//! posted once. A 429 `M_LIMIT_EXCEEDED` is retried after its `retry_after_ms`; 5xx and no
//! answer are retried; other refusals are permanent, with their `errcode`.
//!
//! A token the homeserver refuses (`M_UNKNOWN_TOKEN`) stops that bot — unless it logs in with a
//! password, when it logs in again: `health` and the log say so, and the gateway keeps serving.
//! The token and the password are never logged.

mod api;
mod route;
mod sync;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
pub use sync::Syncer;

use super::bot::InParts;
use super::{ChannelDoors, ChatChannel, DoorParts};
use crate::channel::{Channel, ChannelError, ChannelStatus, LinkCell, LinkState, Sent};
pub use crate::config::MATRIX;
use crate::config::{Config, MATRIX_DEFAULT_ACCOUNT, MatrixChannel};
use crate::store::{DeliveryRecord, Store};
use api::{ApiError, Client};

/// The most characters one message carries. The homeserver takes events of up to 65,536 bytes
/// of JSON; 16,000 characters stay under it whatever their UTF-8 width (4 bytes at most each)
/// with room for the envelope and escapes, and are still a readable message.
const LIMIT: usize = 16_000;
/// What a bot's link is called while its sync is up.
const CONNECTED: &str = "connected";

/// The Matrix channel: its bots, their states, and the outbound sender.
pub struct Matrix {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    accounts: Vec<Arc<Account>>,
}

/// One bot user: its account id, its resolved settings, its client and state.
struct Account {
    id: String,
    settings: MatrixChannel,
    client: Client,
    status: LinkCell,
    /// The direct room the door last saw with each user: where a message to a user goes.
    direct: Mutex<HashMap<String, String>>,
}

impl Account {
    /// The bot's `next_batch` in the store's channel tokens.
    fn token_name(&self) -> String {
        format!("{MATRIX}:{}", self.id)
    }

    /// The bot logs in with its password (it has no configured token).
    fn logs_in(&self) -> bool {
        self.settings.access_token.is_none() && self.settings.password.is_some()
    }

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

impl Matrix {
    /// The configured bots (`channels.matrix`), none started; `http` carries each call (every
    /// call sets its own timeout).
    pub fn new(config: Arc<Config>, store: Arc<dyn Store>, http: reqwest::Client) -> Arc<Self> {
        let accounts = config
            .channels
            .matrix
            .bots()
            .into_iter()
            .filter_map(|(id, settings)| {
                let user = settings.user_id.clone()?;
                let login = (settings.access_token.clone(), settings.password.clone());
                let client = Client::new(http.clone(), &settings.homeserver, &user, login);
                Some(Arc::new(Account {
                    id,
                    settings,
                    client,
                    status: LinkCell::new(LinkState::Off),
                    direct: Mutex::new(HashMap::new()),
                }))
            })
            .collect();
        Arc::new(Self {
            config,
            store,
            accounts,
        })
    }

    /// The inbound door: a sync per bot, handing messages to the doors' components.
    pub fn door(self: &Arc<Self>, parts: &DoorParts) -> Arc<Syncer> {
        Arc::new(Syncer::new(self.clone(), parts))
    }

    fn account(&self, id: &str) -> Result<&Arc<Account>, String> {
        match self.accounts.iter().find(|a| a.id == id) {
            Some(account) => Ok(account),
            None => {
                let running: Vec<String> = self.accounts.iter().map(|a| a.id.clone()).collect();
                Err(crate::channel::no_such_bot(MATRIX, id, &running))
            }
        }
    }

    /// One delivery attempt: the parts of the text not taken yet, in order, each one recorded
    /// as taken before the next is sent.
    async fn deliver(&self, record: &DeliveryRecord) -> Result<(), ChannelError> {
        let id = record
            .account_id
            .as_deref()
            .unwrap_or(MATRIX_DEFAULT_ACCOUNT);
        let account = self.account(id).map_err(ChannelError::Permanent)?;
        let room = account.room_of(&record.to)?;
        let parts = InParts::new(&self.store, record, LIMIT);
        for (done, part) in parts.rest() {
            let mut content = json!({"msgtype": "m.text", "body": part});
            if let Some(root) = &record.thread_id {
                content["m.relates_to"] = json!({
                    "rel_type": "m.thread", "event_id": root,
                    "is_falling_back": true, "m.in_reply_to": {"event_id": root},
                });
            }
            let txn = format!("switchboard.{}.{done}", record.id);
            let sent = account.client.send(&room, &txn, content).await;
            sent.map_err(|e| match e.errcode.as_deref() {
                // A bot with a password logs in again on the next attempt.
                Some("M_UNKNOWN_TOKEN") if account.logs_in() => ChannelError::Retry(e.to_string()),
                _ => classify(e),
            })?;
            parts.took(done).await?;
        }
        Ok(())
    }
}

impl ChatChannel for Matrix {
    fn doors(self: Arc<Self>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::running(self.door(parts))
    }
}

impl Channel for Matrix {
    fn name(&self) -> &'static str {
        MATRIX
    }

    fn send<'a>(&'a self, record: &'a DeliveryRecord) -> Sent<'a> {
        Box::pin(async move { self.deliver(record).await.map(|()| Vec::new()) })
    }

    /// The bot `send` names must run (the default one when none is named).
    fn check_account(&self, account_id: Option<&str>) -> Result<(), String> {
        self.account(account_id.unwrap_or(MATRIX_DEFAULT_ACCOUNT))
            .map(|_| ())
    }

    /// Each bot and its sync's state; the whole as the default bot's.
    fn status(&self) -> Option<ChannelStatus> {
        let bots = self.accounts.iter().map(|a| (a.id.clone(), a.status.get()));
        Some(ChannelStatus::of_bots(
            (MATRIX, "Matrix"),
            self.config.channels.matrix.enabled,
            MATRIX_DEFAULT_ACCOUNT,
            bots.collect(),
        ))
    }

    fn pairs(&self) -> bool {
        true
    }
}

/// 429 (after its `retry_after_ms`), 5xx and no answer are worth another attempt; other
/// refusals are not.
fn classify(e: ApiError) -> ChannelError {
    match (e.status, e.retry_after) {
        (429, Some(after)) => ChannelError::RetryAfter(after, e.to_string()),
        (429, None) => ChannelError::RetryAfter(Duration::from_secs(1), e.to_string()),
        (0 | 500..=599, _) => ChannelError::Retry(e.to_string()),
        (403, _) => ChannelError::Permanent(format!(
            "{e} (the bot may not write in this room: not joined, or not allowed)"
        )),
        _ => ChannelError::Permanent(e.to_string()),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(status: u16, errcode: &str, retry_ms: Option<u64>) -> ApiError {
        ApiError {
            status,
            errcode: Some(errcode.into()),
            message: "/rooms/x/send: no".into(),
            retry_after: retry_ms.map(Duration::from_millis),
        }
    }

    #[test]
    fn refusals_are_classified_by_status_and_errcode() {
        let limited = classify(refusal(429, "M_LIMIT_EXCEEDED", Some(1500)));
        assert!(
            matches!(limited, ChannelError::RetryAfter(d, _) if d == Duration::from_millis(1500))
        );
        assert!(matches!(
            classify(refusal(502, "M_UNKNOWN", None)),
            ChannelError::Retry(_)
        ));
        let forbidden = classify(refusal(403, "M_FORBIDDEN", None)).to_string();
        assert!(forbidden.contains("M_FORBIDDEN"), "{forbidden}");
        let unknown = classify(refusal(401, "M_UNKNOWN_TOKEN", None));
        assert!(matches!(unknown, ChannelError::Permanent(m) if m.contains("M_UNKNOWN_TOKEN")));
    }
}
