//! The Slack channel (SPEC §9.2): Socket Mode in, the Web API out, for one app
//! (`channels.slack`) or several (`channels.slack.accounts.<id>`). A thin client over reqwest
//! and tokio-tungstenite, like Discord's (docs/decisions.md says why no Slack library).
//!
//! In ([`Slack`]'s door, `socket.rs`): one task per app asks `auth.test` who the bot is, opens a
//! Socket Mode connection (`apps.connections.open` with the app-level token → a WebSocket URL),
//! waits for `hello`, and reads envelopes. An `events_api` envelope's `message` or
//! `app_mention` is decided (`route.rs`) and acknowledged (`{"envelope_id"}`) only once what it
//! asks for is committed: a run is committed with its idempotency key
//! (`slack:<account>:<channel>:<ts>`), so an envelope Slack delivers again (unacknowledged
//! before a crash or a drop, or a `message` that also came as `app_mention`) starts no second
//! run. A `disconnect` (`refresh_requested`, `warning`) opens a new connection; a dropped
//! socket reconnects with backoff; `link_disabled` and a refused token stop that app, and
//! `health` says why. A DM sender `dmPolicy: "pairing"` does not know gets a one-time code.
//!
//! Out: the outbox calls [`Slack`]'s `send` (the channel seam): `chat.postMessage` with the bot
//! token, the text in parts of at most 4,000 characters (Slack's recommended limit for `text`),
//! in order, each part taken recorded so that a retry sends only the rest; in the thread
//! (`thread_ts`) when the route names one. A 429 is retried after its `Retry-After`; 5xx and no
//! answer are retried; Slack's other errors (`channel_not_found`, `not_in_channel`,
//! `is_archived`, `invalid_auth`, …) are permanent. No token is ever logged.

mod api;
mod route;
mod socket;

use std::sync::Arc;
use std::time::Duration;

use super::{ChannelDoors, ChatChannel, DoorParts};
use crate::channel::{Channel, ChannelError, ChannelStatus, LinkCell, LinkState, Sent};
use crate::config::{Config, SLACK_DEFAULT_ACCOUNT, SlackChannel};
use crate::store::{DeliveryRecord, Store, WriteOp};
use api::{ApiError, WebApi};

/// The channel's name in keys, routes, records and pairing.
pub const SLACK: &str = "slack";
/// Slack's recommended limit for a message's `text`, in characters.
const LIMIT: usize = 4000;
/// What an app's link is called while its Socket Mode connection is up.
const CONNECTED: &str = "connected";

/// The Slack channel: its apps, their states, and the outbound sender.
pub struct Slack {
    config: Arc<Config>,
    http: reqwest::Client,
    store: Arc<dyn Store>,
    accounts: Vec<Arc<Account>>,
}

/// One app: its account id, its resolved settings, its Web API clients and state.
struct Account {
    id: String,
    settings: SlackChannel,
    /// With the bot token: `auth.test`, `chat.postMessage`.
    web: WebApi,
    /// With the app-level token: `apps.connections.open`.
    app: WebApi,
    link: LinkCell,
}

impl Slack {
    /// The configured apps (`channels.slack`), none connected; `http` bounds each call by
    /// `delivery.timeoutSeconds`.
    pub fn new(config: Arc<Config>, store: Arc<dyn Store>, http: reqwest::Client) -> Arc<Self> {
        let accounts = config
            .channels
            .slack
            .bots()
            .into_iter()
            .filter_map(|(id, settings)| {
                let web = WebApi::new(
                    http.clone(),
                    &settings.api_base,
                    settings.bot_token.as_deref()?,
                );
                let app = WebApi::new(
                    http.clone(),
                    &settings.api_base,
                    settings.app_token.as_deref()?,
                );
                Some(Arc::new(Account {
                    id,
                    settings,
                    web,
                    app,
                    link: LinkCell::new(LinkState::Off),
                }))
            })
            .collect();
        Arc::new(Self {
            config,
            http,
            store,
            accounts,
        })
    }
}

impl Channel for Slack {
    fn name(&self) -> &'static str {
        SLACK
    }

    fn send<'a>(&'a self, record: &'a DeliveryRecord) -> Sent<'a> {
        Box::pin(send(&self.config, (&self.http, &self.store), record))
    }

    /// The app `send` names must run (the default one when none is named).
    fn check_account(&self, account_id: Option<&str>) -> Result<(), String> {
        let slack = &self.config.channels.slack;
        let account = account_id.unwrap_or(SLACK_DEFAULT_ACCOUNT);
        match slack.bot(account) {
            Some(_) => Ok(()),
            None => Err(off_or_unknown(slack, account)),
        }
    }

    /// Each app and its Socket Mode connection's state; the whole as the default app's.
    fn status(&self) -> Option<ChannelStatus> {
        let bots = self.accounts.iter().map(|a| (a.id.clone(), a.link.get()));
        Some(ChannelStatus::of_bots(
            (SLACK, "Slack"),
            self.config.channels.slack.enabled,
            SLACK_DEFAULT_ACCOUNT,
            bots.collect(),
        ))
    }

    fn pairs(&self) -> bool {
        true
    }
}

impl ChatChannel for Slack {
    /// A Socket Mode connection per app, handing messages to the doors' components.
    fn doors(self: Arc<Self>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::running(Arc::new(socket::SocketMode::new(self, parts)))
    }
}

/// One delivery attempt to a Slack conversation (in the thread when the route names one): the
/// parts of the text not taken yet, in order.
async fn send(
    config: &Config,
    (http, store): (&reqwest::Client, &Arc<dyn Store>),
    record: &DeliveryRecord,
) -> Result<Vec<WriteOp>, ChannelError> {
    let channel = &config.channels.slack;
    let account = record
        .account_id
        .as_deref()
        .unwrap_or(SLACK_DEFAULT_ACCOUNT);
    let Some(settings) = channel.bot(account) else {
        return Err(ChannelError::Permanent(off_or_unknown(channel, account)));
    };
    let token = settings.bot_token.as_deref().unwrap_or_default();
    let web = WebApi::new(http.clone(), &settings.api_base, token);
    let thread = record.thread_id.as_deref();
    let parts = super::bot::InParts::new(store, record, LIMIT);
    for (index, part) in parts.rest() {
        web.post_message(&record.to, part, thread)
            .await
            .map_err(classify)?;
        parts.took(index).await?;
    }
    Ok(Vec::new())
}

/// Why there is no app to send with (also `send`'s refusal).
fn off_or_unknown(channel: &SlackChannel, account: &str) -> String {
    let running: Vec<String> = channel.bots().into_iter().map(|(id, _)| id).collect();
    crate::channel::no_such_bot(SLACK, account, &running)
}

/// Slack's errors that a later attempt may not meet.
const PASSING: &[&str] = &[
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
];

/// 429 (after its `Retry-After`), 5xx, no answer and Slack's passing errors are worth another
/// attempt; the rest (`channel_not_found`, `not_in_channel`, `invalid_auth`, …) are not.
fn classify(e: ApiError) -> ChannelError {
    let code = e.error.rsplit(": ").next().unwrap_or_default();
    match (e.status, e.retry_after) {
        (429, after) => {
            ChannelError::RetryAfter(after.unwrap_or(Duration::from_secs(1)), e.to_string())
        }
        (0 | 500..=599, _) => ChannelError::Retry(e.to_string()),
        _ if code == "ratelimited" => {
            ChannelError::RetryAfter(Duration::from_secs(1), e.to_string())
        }
        _ if PASSING.contains(&code) => ChannelError::Retry(e.to_string()),
        _ if matches!(code, "not_in_channel" | "channel_not_found") => ChannelError::Permanent(
            format!("{e} (invite the app to the channel, or check the channel id)"),
        ),
        _ => ChannelError::Permanent(e.to_string()),
    }
}

/// The fuzz targets' door (docs/testing.md): a Socket Mode frame as the socket decodes
/// it, and its event's text without the mention of the app (user id `U1`).
/// Not an API: nothing in the workspace calls it.
#[doc(hidden)]
pub fn fuzz_inbound(body: &[u8]) -> Result<Vec<String>, String> {
    use serde::Deserialize;
    let frame: api::Frame = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    if frame.kind != "events_api" {
        return Ok(Vec::new());
    }
    let event = api::Event::deserialize(&frame.payload["event"]).map_err(|e| e.to_string())?;
    Ok(vec![route::strip_mention(&event.text, "U1")])
}
