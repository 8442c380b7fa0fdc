//! The Slack channel (SPEC §9.2): Socket Mode in, the Web API out, for one app
//! (`channels.slack`) or several (`channels.slack.accounts.<id>`), on the channel kit
//! (`super::kit`). A thin client over reqwest and tokio-tungstenite, like Discord's
//! (docs/decisions.md says why no Slack library).
//!
//! In (`socket.rs`): each app asks `auth.test` who the bot is, and each session opens a Socket
//! Mode connection (`apps.connections.open` with the app-level token → a WebSocket URL), waits
//! for `hello`, and reads envelopes. An `events_api` envelope's `message` or `app_mention` is
//! mapped to the kit's view (`route.rs`) and acknowledged (`{"envelope_id"}`) only once what it
//! asks for is committed: a run is committed with its idempotency key
//! (`slack:<account>:<channel>:<ts>`), so an envelope Slack delivers again (unacknowledged
//! before a crash or a drop, or a `message` that also came as `app_mention`) starts no second
//! run. A `disconnect` (`refresh_requested`, `warning`) opens a new connection; a dropped
//! socket reconnects with backoff; `link_disabled` and a refused token stop that app, and
//! `health` says why.
//!
//! Out: each part (at most 4,000 characters, Slack's recommended limit for `text`) is one
//! `chat.postMessage` with the bot token, in the thread (`thread_ts`) when the route names one.
//! A 429 is retried after its `Retry-After`; 5xx and no answer are retried; Slack's other errors
//! (`channel_not_found`, `not_in_channel`, `is_archived`, `invalid_auth`, …) are permanent. No
//! token is ever logged.

mod api;
mod route;
mod socket;

use std::sync::Arc;
use std::time::Duration;

use super::ChannelDoors;
use super::kit::http::ApiError;
use super::kit::{Bot, Chat, ChatPlatform, DoorParts, Reach, link};
use crate::channel::ChannelError;
use crate::config::{Platform, SlackApp};
use crate::store::DeliveryRecord;

/// The channel's name in keys, routes, records and pairing.
pub const SLACK: &str = SlackApp::NAME;

/// The Slack platform.
pub(crate) struct Slack;

/// One app's Web API clients.
pub(crate) struct SlackApi {
    /// With the bot token: `auth.test`, `chat.postMessage`.
    web: api::WebApi,
    /// With the app-level token: `apps.connections.open`.
    app: api::WebApi,
}

impl ChatPlatform for Slack {
    type Settings = SlackApp;
    type Api = SlackApi;
    const LABEL: &'static str = "Slack";
    const ID_NAME: &'static str = "Slack user id";

    fn api(app: &SlackApp, reach: &Reach<'_>) -> Option<SlackApi> {
        let base = app.api_base.as_deref().unwrap_or_default();
        let client = |token: &Option<String>| {
            Some(api::WebApi::new(
                reach.http.clone(),
                base,
                token.as_deref()?,
            ))
        };
        Some(SlackApi {
            web: client(&app.bot_token)?,
            app: client(&app.app_token)?,
        })
    }

    async fn post(
        bot: &Bot<Self>,
        record: &DeliveryRecord,
        (_, part): (usize, &str),
    ) -> Result<(), ChannelError> {
        let thread = record.thread_id.as_deref();
        let sent = bot.api.web.post_message(&record.to, part, thread).await;
        sent.map_err(|e| match refused(&e) {
            true => bot.refused(bot.refusal("Slack", "botToken", &e)),
            false => verdict(e),
        })
    }

    fn doors(chat: Arc<Chat<Self>>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::running(link::Links::new(chat, parts))
    }
}

/// Slack's errors that no retry mends: the token is wrong, revoked, or of the wrong kind.
const REFUSED: &[&str] = &[
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "not_allowed_token_type",
    "missing_scope",
];

/// Slack refused the token it was called with.
fn refused(e: &ApiError) -> bool {
    REFUSED.contains(&e.code.as_deref().unwrap_or_default())
}

/// Slack's errors that a later attempt may not meet.
const PASSING: &[&str] = &[
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
];

/// 429, 5xx, no answer and Slack's passing errors are worth another attempt; the rest
/// (`channel_not_found`, `not_in_channel`, `invalid_auth`, …) are not.
fn verdict(e: ApiError) -> ChannelError {
    let code = e.code.clone().unwrap_or_default();
    let failing = matches!(e.status, 0 | 429 | 500..=599);
    match code.as_str() {
        _ if failing => e.verdict("the app may not post here"),
        "ratelimited" => ChannelError::RetryAfter(Duration::from_secs(1), e.to_string()),
        _ if PASSING.contains(&code.as_str()) => ChannelError::Retry(e.to_string()),
        "not_in_channel" | "channel_not_found" => ChannelError::Permanent(format!(
            "{e} (invite the app to the channel, or check the channel id)"
        )),
        _ => e.verdict("the app may not post here"),
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
