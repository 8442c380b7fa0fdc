//! The Signal channel (SPEC §9.2) through a `signal-cli` daemon's HTTP interface
//! (`signal-cli -a +NUMBER daemon --http 127.0.0.1:8080`), for the one account the daemon runs
//! (`channels.signal`), on the channel kit (`super::kit`). The gateway does not run signal-cli;
//! docs/channels/signal.md says how.
//!
//! In (`events.rs`): each session holds `GET /api/v1/events` (Server-Sent Events), sending
//! `Last-Event-ID` so the daemon replays what came since the last one handled. Each `receive`
//! event's data message is mapped to the kit's view (`route.rs`) and a run committed with the
//! idempotency key `signal:<sender>:<timestamp>` (a Signal message is its sender and send time),
//! so a replayed event — after a reconnect, or all the daemon kept after it restarted and no
//! longer knows the id — starts nothing twice. The last event id handled is kept in the store
//! (`signal:events:daemon` = the daemon's start time, `signal:events:<start>` = the sequence),
//! so a gateway restart asks for what it missed too.
//!
//! Out: each part (at most 2,000 characters: longer bodies reach Signal's apps as attachments)
//! is one JSON-RPC `send`, whose id is `<delivery id>:<part>`. A rate limit (error -5,
//! `RATE_LIMIT_FAILURE`), an I/O error (-3, `NETWORK_FAILURE`), 5xx and no answer are retried;
//! an unregistered or untrusted recipient and other errors fail for good with the reason.

mod api;
mod events;
mod route;

use std::sync::Arc;
use std::time::Duration;

use super::ChannelDoors;
use super::kit::{Bot, Chat, ChatPlatform, DoorParts, Reach, link};
use crate::channel::ChannelError;
use crate::config::{Platform, SignalAccount};
use crate::store::DeliveryRecord;
use api::{Daemon, RpcError};

/// The channel's name in keys, routes, records and pairing.
pub const SIGNAL: &str = SignalAccount::NAME;

/// The Signal platform.
pub(crate) struct Signal;

impl ChatPlatform for Signal {
    type Settings = SignalAccount;
    type Api = Daemon;
    const LABEL: &'static str = "Signal";
    const ID_NAME: &'static str = "Signal number";
    /// Signal shows "typing…" for about 15 s.
    const TYPING_EVERY: Option<Duration> = Some(Duration::from_secs(10));

    /// Its number, as Signal's keys were before the kit (`signal:<number>:direct:<peer>`).
    fn key_account(bot: &Bot<Self>) -> &str {
        bot.settings.account.as_deref().unwrap_or(&bot.id)
    }

    fn api(account: &SignalAccount, reach: &Reach<'_>) -> Option<Daemon> {
        account.account.as_ref()?;
        let base = account.http_url.as_deref().unwrap_or_default();
        Some(Daemon::new(reach.http.clone(), base))
    }

    async fn post(
        bot: &Bot<Self>,
        record: &DeliveryRecord,
        (index, part): (usize, &str),
    ) -> Result<(), ChannelError> {
        let id = format!("{}:{index}", record.id);
        let sent = bot.api.send(target(&record.to), part, &id).await;
        sent.map_err(classify)
    }

    async fn typing(bot: &Bot<Self>, to: &str, _thread: Option<&str>) {
        let _ = bot.api.typing(target(to), &format!("typing:{to}")).await;
    }

    fn doors(chat: Arc<Chat<Self>>, parts: &DoorParts) -> ChannelDoors {
        ChannelDoors::running(link::Links::new(chat, parts))
    }
}

/// A route's `to` as signal-cli addresses it: a group's id, or a number or UUID.
fn target(to: &str) -> (&str, bool) {
    match to.strip_prefix(route::GROUP_PREFIX) {
        Some(group) => (group, true),
        None => (to, false),
    }
}

/// signal-cli's error codes follow its exit codes: -3 (I/O, the server) and -5 (rate limit) are
/// worth another attempt, as are 5xx and no answer; the rest (-1 user error, -4 untrusted
/// identity, …, an unregistered recipient) would fail the same way again.
fn classify(e: RpcError) -> ChannelError {
    match &e {
        RpcError::Http(0 | 500..=599, _) | RpcError::Rpc(-3, _) => {
            ChannelError::Retry(e.to_string())
        }
        RpcError::Rpc(-5, _) => ChannelError::RetryAfter(Duration::from_secs(1), e.to_string()),
        RpcError::Recipient(kind) if kind == "NETWORK_FAILURE" => {
            ChannelError::Retry(e.to_string())
        }
        RpcError::Recipient(kind) if kind == "RATE_LIMIT_FAILURE" => {
            ChannelError::RetryAfter(Duration::from_secs(1), e.to_string())
        }
        RpcError::Recipient(kind) if kind == "UNREGISTERED_FAILURE" => {
            ChannelError::Permanent(format!("{e} (the recipient has no Signal account)"))
        }
        RpcError::Recipient(kind) if kind == "IDENTITY_FAILURE" => ChannelError::Permanent(
            format!("{e} (the recipient's safety number changed; trust it with signal-cli trust)"),
        ),
        _ => ChannelError::Permanent(e.to_string()),
    }
}

/// The fuzz targets' door (docs/testing.md): the daemon's event stream as the reader
/// frames it, each `receive` event as it is decoded, and the text of its message as routing reads
/// it for the account `+15550001111` (its own mentions dropped, others' written as `@name`).
/// Not an API: nothing in the workspace calls it.
#[doc(hidden)]
pub fn fuzz_inbound(body: &[u8]) -> Result<Vec<String>, String> {
    let mut texts = Vec::new();
    for event in api::events(&mut crate::sse::Decoder::default(), body) {
        if !api::is_receive(&event) {
            continue;
        }
        let received: api::Received =
            serde_json::from_str(&event.data).map_err(|e| e.to_string())?;
        if let Some(message) = &received.envelope.data_message {
            texts.push(route::text_of(message, "+15550001111").0);
        }
    }
    Ok(texts)
}

/// The events of `body` framed as the door frames them (`crate::sse`) fed in two pieces, split
/// at `at` (clamped), as `(id, event name, data)`: how the stream arrives in chunks must not
/// change what is read.
#[doc(hidden)]
pub fn fuzz_frames(body: &[u8], at: usize) -> Vec<(Option<String>, String, String)> {
    let at = at.min(body.len());
    let mut reader = crate::sse::Decoder::default();
    let mut events = api::events(&mut reader, &body[..at]);
    events.extend(api::events(&mut reader, &body[at..]));
    events
        .into_iter()
        .map(|e| (e.id, e.event, e.data))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_and_rate_limits_are_retried_and_the_rest_is_permanent() {
        let kind = |e: RpcError| match classify(e) {
            ChannelError::Retry(_) => "retry",
            ChannelError::RetryAfter(..) => "later",
            ChannelError::Permanent(_) => "permanent",
        };
        let recipient = |t: &str| RpcError::Recipient(t.into());
        let got = [
            kind(RpcError::Http(0, "refused".into())),
            kind(RpcError::Http(503, "down".into())),
            kind(RpcError::Http(404, "no".into())),
            kind(RpcError::Rpc(-3, "io".into())),
            kind(RpcError::Rpc(-5, "rate".into())),
            kind(RpcError::Rpc(-1, "user".into())),
            kind(RpcError::Rpc(-4, "untrusted".into())),
            kind(recipient("NETWORK_FAILURE")),
            kind(recipient("RATE_LIMIT_FAILURE")),
            kind(recipient("UNREGISTERED_FAILURE")),
            kind(recipient("IDENTITY_FAILURE")),
        ];
        assert_eq!(
            got,
            [
                "retry",
                "retry",
                "permanent",
                "retry",
                "later",
                "permanent",
                "permanent",
                "retry",
                "later",
                "permanent",
                "permanent"
            ]
        );
        assert_eq!(target("group:abc=="), ("abc==", true));
        assert_eq!(target("+15551234567"), ("+15551234567", false));
    }
}
