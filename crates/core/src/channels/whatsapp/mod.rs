//! The WhatsApp channel (SPEC §9.2) through the WhatsApp Business Cloud API, for one business
//! phone number (`channels.whatsapp`) or several (`channels.whatsapp.accounts.<id>`), on the
//! channel kit (`super::kit`). A thin client over reqwest (docs/decisions.md says why no
//! WhatsApp library).
//!
//! In ([`door::Webhook`], served at `/channels/whatsapp`): the platform's verification request
//! (`GET` with `hub.mode=subscribe`, `hub.verify_token`, `hub.challenge`: the challenge is
//! answered when the token is a served number's `verifyToken`), and its notifications (`POST`,
//! refused 401 unless `X-Hub-Signature-256` is the body's HMAC-SHA256 with a served number's
//! `appSecret`). Each text message is mapped to the kit's view (`route.rs`) and a run committed
//! with the run's idempotency key `whatsapp:<account>:<messageId>`; the platform redelivers what
//! it was not answered 200 for, and a message seen again starts nothing twice. The answer is 200
//! only once every message of the notification is committed (503 otherwise, so the platform
//! tries again).
//!
//! Out: each part (at most 4,096 characters, the Cloud API's limit for a text body) is one
//! message. A one-to-one reply goes only inside WhatsApp's 24-hour customer-service window: the
//! time of the user's last message is committed with each run
//! (`whatsapp:<account>:window:<waId>` in `channel_cursors`), and a delivery after the window
//! fails for good with the reason (templates, the only way to write after it, are not offered).
//! A 429 or a throughput error is retried (after `Retry-After` when given); 5xx and no answer
//! are retried; a refused token marks the number failed.

mod api;
mod door;
mod route;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::ChannelDoors;
use super::kit::{Bot, Chat, ChatPlatform, DoorParts, Reach};
use crate::channel::ChannelError;
use crate::config::{Platform, WhatsAppNumber};
use crate::store::DeliveryRecord;
use api::{ApiError, Graph};

/// The channel's name in keys, routes, records and pairing.
pub const WHATSAPP: &str = WhatsAppNumber::NAME;
/// WhatsApp's customer-service window: a business may write freely this long after the user.
const WINDOW_SECONDS: i64 = 24 * 3600;
/// The Graph error code of a message outside the window ("re-engagement message").
const OUTSIDE_WINDOW: &str = "131047";
/// Graph error codes that mean "too many, later": rate and throughput limits.
const SLOW_DOWN: [&str; 5] = ["4", "80007", "130429", "131048", "131056"];

/// The WhatsApp platform.
pub(crate) struct WhatsApp;

/// The cursor holding when user `wa_id` last wrote to number `account` (seconds).
fn window(account: &str, wa_id: &str) -> String {
    format!("{WHATSAPP}:{account}:window:{wa_id}")
}

impl ChatPlatform for WhatsApp {
    type Settings = WhatsAppNumber;
    type Api = Graph;
    const LABEL: &'static str = "WhatsApp";
    const ID_NAME: &'static str = "WhatsApp id";

    fn api(number: &WhatsAppNumber, reach: &Reach<'_>) -> Option<Graph> {
        let token = number.access_token.as_deref().unwrap_or_default();
        let base = number.api_base.as_deref().unwrap_or_default();
        Some(Graph::new(reach.http.clone(), base, token))
    }

    /// A one-to-one message may go only within 24 hours of the user's last message.
    async fn before_post(
        chat: &Chat<Self>,
        bot: &Bot<Self>,
        record: &DeliveryRecord,
    ) -> Result<(), ChannelError> {
        if record.to.starts_with(route::GROUP_PREFIX) {
            return Ok(());
        }
        let wa_id = &record.to;
        let last = chat.store.cursor(&window(&bot.id, wa_id)).await;
        let last = last.map_err(|e| ChannelError::Retry(e.to_string()))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let since = match last {
            Some(at) if now - at <= WINDOW_SECONDS => return Ok(()),
            Some(_) => {
                "last wrote more than 24 hours ago (message templates, the only way to write after it, are not offered)"
            }
            None => {
                "has not written to this number (message templates, the only way to start a chat, are not offered)"
            }
        };
        Err(ChannelError::Permanent(format!(
            "outside WhatsApp's 24-hour customer-service window: {wa_id} {since}"
        )))
    }

    async fn post(
        bot: &Bot<Self>,
        record: &DeliveryRecord,
        (_, part): (usize, &str),
    ) -> Result<(), ChannelError> {
        let to = match record.to.strip_prefix(route::GROUP_PREFIX) {
            Some(group) => (group, true),
            None => (record.to.as_str(), false),
        };
        let phone_number_id = bot.settings.phone_number_id.as_deref().unwrap_or_default();
        let sent = bot.api.send_text(phone_number_id, to, part).await;
        sent.map_err(|e| verdict(bot, e))
    }

    fn doors(chat: Arc<Chat<Self>>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::http(Arc::new(door::Webhook::new(chat, parts)))
    }
}

/// Rate and throughput limits and 5xx are worth another attempt; the window and other 4xx not;
/// a refused token also marks the number failed.
fn verdict(number: &Bot<WhatsApp>, e: ApiError) -> ChannelError {
    let code = e.code.clone().unwrap_or_default();
    if SLOW_DOWN.contains(&code.as_str()) {
        let wait = e.retry_after.unwrap_or(Duration::from_secs(1));
        return ChannelError::RetryAfter(wait, e.to_string());
    }
    match (e.status, code.as_str()) {
        (0 | 429 | 500..=599, _) => e.verdict("-"),
        (_, OUTSIDE_WINDOW) => ChannelError::Permanent(format!(
            "{e} (outside WhatsApp's 24-hour customer-service window; templates are not offered)"
        )),
        (401, _) | (_, "190") => number.refused(number.refusal("the Graph API", "accessToken", &e)),
        _ => e.verdict("the number may not write to this chat"),
    }
}

/// The fuzz targets' door (docs/testing.md): a webhook notification as the door
/// decodes it, and each text message's body without mentions of the number `15550001111`.
/// Not an API: nothing in the workspace calls it.
#[doc(hidden)]
pub fn fuzz_inbound(body: &[u8]) -> Result<Vec<String>, String> {
    let notification: api::Notification =
        serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let mut texts = Vec::new();
    let changes = notification.entry.into_iter().flat_map(|e| e.changes);
    for change in changes.filter(|c| c.field == "messages") {
        let value: api::Messages =
            serde_json::from_value(change.value).map_err(|e| e.to_string())?;
        for message in value.messages {
            if let Some(text) = message.text {
                texts.push(route::strip_mention(&text.body, "15550001111").0);
            }
        }
    }
    Ok(texts)
}
