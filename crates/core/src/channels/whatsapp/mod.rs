//! The WhatsApp channel (SPEC §9.2) through the WhatsApp Business Cloud API, for one business
//! phone number (`channels.whatsapp`) or several (`channels.whatsapp.accounts.<id>`). A thin
//! client over reqwest (docs/decisions.md says why no WhatsApp library).
//!
//! In ([`door::Webhook`], served at `/channels/whatsapp`): the platform's verification request
//! (`GET` with `hub.mode=subscribe`, `hub.verify_token`, `hub.challenge`: the challenge is
//! answered when the token is a served number's `verifyToken`), and its notifications (`POST`,
//! refused 401 unless `X-Hub-Signature-256` is the body's HMAC-SHA256 with a served number's
//! `appSecret`). Each text message is decided (`route.rs`) and a run committed with the run's
//! idempotency key `whatsapp:<account>:<messageId>`; the platform redelivers what it was not
//! answered 200 for, and a message seen again starts nothing twice. The answer is 200 only once
//! every message of the notification is committed (503 otherwise, so the platform tries again).
//!
//! Out: the outbox calls [`WhatsApp`]'s `send`: the text in parts of at most 4,096 characters
//! (the Cloud API's limit for a text body), in order, each part taken recorded so a retry sends
//! only the rest. A one-to-one reply goes only inside WhatsApp's 24-hour customer-service
//! window: the time of the user's last message is committed with each run
//! (`whatsapp:<account>:window:<waId>` in `channel_cursors`), and a delivery after the window
//! fails for good with the reason (templates, the only way to write after it, are not offered).
//! A 429 or a throughput error is retried (after `Retry-After` when given); 5xx and no answer
//! are retried; a refused token marks the number failed.

mod api;
mod door;
mod route;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{ChannelDoors, ChatChannel, DoorParts};
use crate::channel::{Channel, ChannelError, ChannelStatus, LinkCell, LinkState, Sent};
use crate::config::{Config, WHATSAPP_DEFAULT_ACCOUNT, WhatsAppChannel};
use crate::store::{DeliveryRecord, Store};
use api::{ApiError, Graph};

/// The channel's name in keys, routes, records and pairing.
pub const WHATSAPP: &str = "whatsapp";
/// The Cloud API's limit for a text message's body, in characters.
const LIMIT: usize = 4096;
/// WhatsApp's customer-service window: a business may write freely this long after the user.
const WINDOW_SECONDS: i64 = 24 * 3600;
/// The Graph error code of a message outside the window ("re-engagement message").
const OUTSIDE_WINDOW: u64 = 131_047;
/// Graph error codes that mean "too many, later": rate and throughput limits.
const SLOW_DOWN: [u64; 5] = [4, 80_007, 130_429, 131_048, 131_056];
/// What a number's link is called while its webhook is served.
const SERVED: &str = "webhook";

/// The WhatsApp channel: its numbers, their states, and the outbound sender.
pub struct WhatsApp {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    numbers: Vec<Arc<Number>>,
}

/// One business phone number: its account id, resolved settings, Graph client and state.
struct Number {
    id: String,
    settings: WhatsAppChannel,
    graph: Graph,
    status: LinkCell,
}

impl Number {
    /// The cursor holding when user `wa_id` last wrote to this number (seconds).
    fn window(&self, wa_id: &str) -> String {
        format!("{WHATSAPP}:{}:window:{wa_id}", self.id)
    }

    fn phone_number_id(&self) -> &str {
        self.settings.phone_number_id.as_deref().unwrap_or_default()
    }
}

impl WhatsApp {
    /// The configured numbers (`channels.whatsapp`); `http` bounds each call by
    /// `delivery.timeoutSeconds`.
    pub fn new(config: Arc<Config>, store: Arc<dyn Store>, http: reqwest::Client) -> Arc<Self> {
        let numbers = config
            .channels
            .whatsapp
            .numbers()
            .into_iter()
            .map(|(id, settings)| {
                let token = settings.access_token.clone().unwrap_or_default();
                Arc::new(Number {
                    graph: Graph::new(http.clone(), &settings.api_base, &token),
                    id,
                    settings,
                    status: LinkCell::new(LinkState::Up(SERVED)),
                })
            })
            .collect();
        Arc::new(Self {
            config,
            store,
            numbers,
        })
    }

    fn number(&self, account: Option<&str>) -> Result<&Arc<Number>, String> {
        let account = account.unwrap_or(WHATSAPP_DEFAULT_ACCOUNT);
        self.numbers
            .iter()
            .find(|n| n.id == account)
            .ok_or_else(|| match self.numbers.is_empty() {
                true => {
                    "the whatsapp channel is off (set channels.whatsapp.enabled and phoneNumberId)"
                        .to_owned()
                }
                false => {
                    let served: Vec<&str> = self.numbers.iter().map(|n| n.id.as_str()).collect();
                    format!(
                        "no whatsapp number has account id {account} (served: {})",
                        served.join(", ")
                    )
                }
            })
    }

    /// One delivery attempt: the window checked for a one-to-one chat, then the parts not
    /// taken yet, in order, each recorded as taken before the next is sent.
    async fn send(&self, record: &DeliveryRecord) -> Result<(), ChannelError> {
        let number = self
            .number(record.account_id.as_deref())
            .map_err(ChannelError::Permanent)?;
        let (to, group) = match record.to.strip_prefix(route::GROUP_PREFIX) {
            Some(group) => (group, true),
            None => (record.to.as_str(), false),
        };
        if !group {
            self.check_window(number, to).await?;
        }
        let parts = super::split::parts(&record.text, LIMIT);
        let last = parts.len();
        for (done, part) in parts.iter().enumerate().skip(record.parts_sent as usize) {
            let sent = number
                .graph
                .send_text(number.phone_number_id(), (to, group), part);
            sent.await.map_err(|e| classify(number, e))?;
            super::split::record_taken(self.store.as_ref(), record, (done + 1, last)).await?;
        }
        Ok(())
    }

    /// A one-to-one message may go only within 24 hours of the user's last message.
    async fn check_window(&self, number: &Number, wa_id: &str) -> Result<(), ChannelError> {
        let last = self
            .store
            .cursor(&number.window(wa_id))
            .await
            .map_err(|e| ChannelError::Retry(e.to_string()))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        match last {
            Some(at) if now - at <= WINDOW_SECONDS => Ok(()),
            Some(_) => Err(ChannelError::Permanent(format!(
                "outside WhatsApp's 24-hour customer-service window: {wa_id} last wrote more than 24 hours ago (message templates, the only way to write after it, are not offered)"
            ))),
            None => Err(ChannelError::Permanent(format!(
                "outside WhatsApp's 24-hour customer-service window: {wa_id} has not written to this number (message templates, the only way to start a chat, are not offered)"
            ))),
        }
    }
}

/// Rate and throughput limits and 5xx are worth another attempt; the window and other 4xx not;
/// a refused token also marks the number failed.
fn classify(number: &Number, e: ApiError) -> ChannelError {
    let slow_down = e.status == 429 || e.code.is_some_and(|c| SLOW_DOWN.contains(&c));
    match (e.status, e.code) {
        _ if slow_down => match e.retry_after {
            Some(after) => ChannelError::RetryAfter(after, e.to_string()),
            None => ChannelError::RetryAfter(Duration::from_secs(1), e.to_string()),
        },
        (0 | 500..=599, _) => ChannelError::Retry(e.to_string()),
        (_, Some(OUTSIDE_WINDOW)) => ChannelError::Permanent(format!(
            "{e} (outside WhatsApp's 24-hour customer-service window; templates are not offered)"
        )),
        (401, _) | (_, Some(190)) => {
            let setting = match number.id.as_str() {
                WHATSAPP_DEFAULT_ACCOUNT => "channels.whatsapp.accessToken".to_owned(),
                id => format!("channels.whatsapp.accounts.{id}.accessToken"),
            };
            let why = format!("the Graph API refused {setting} ({e}); fix the token and restart");
            tracing::error!("whatsapp: {why}");
            number.status.set(LinkState::Failed(why.clone()));
            ChannelError::Permanent(why)
        }
        _ => ChannelError::Permanent(e.to_string()),
    }
}

impl ChatChannel for WhatsApp {
    fn doors(self: Arc<Self>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::http(Arc::new(door::Webhook::new(self, parts)))
    }
}

impl Channel for WhatsApp {
    fn name(&self) -> &'static str {
        WHATSAPP
    }

    fn send<'a>(&'a self, record: &'a DeliveryRecord) -> Sent<'a> {
        Box::pin(async move { WhatsApp::send(self, record).await.map(|()| Vec::new()) })
    }

    /// The number `send` names must be served (the default one when none is named).
    fn check_account(&self, account_id: Option<&str>) -> Result<(), String> {
        self.number(account_id).map(|_| ())
    }

    /// Each number's state; the whole as the default number's.
    fn status(&self) -> Option<ChannelStatus> {
        let numbers = self.numbers.iter().map(|n| (n.id.clone(), n.status.get()));
        Some(ChannelStatus::of_bots(
            (WHATSAPP, "WhatsApp"),
            self.config.channels.whatsapp.enabled,
            WHATSAPP_DEFAULT_ACCOUNT,
            numbers.collect(),
        ))
    }

    fn pairs(&self) -> bool {
        true
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
