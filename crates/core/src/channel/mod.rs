//! The channel seam (SPEC §9.2): what every channel is to the rest of the engine. A channel is
//! one implementation of [`Channel`] — its outbound sender (one attempt, with a verdict the
//! outbox acts on), its status for `health` and `status`, the check of a `send` target, and its
//! pairing hook — and, when it has an inbound door that runs by itself (a poller), one [`Door`].
//! The composition root builds every channel and puts it in the registry ([`Channels`]); the
//! outbox, `send`, pairing, health and overview know channels only through it.
//!
//! This module sits low, beside `access` and `resolve`: it holds only the interfaces, the
//! registry and their value types, and imports nothing above `store`. The implementations live
//! in `crate::channels` (above the sessions, since their inbound doors start runs), so senders
//! sit below delivery and inbound doors above the sessions without an import loop.
//!
//! Two channels are the gateway's own rather than chats outside it: `webchat` (the gateway's
//! clients) and `internal` (a session's transcript). They are registry entries like the others,
//! but they are never a session's delivery route ([`is_route`]) and an `internal` delivery is
//! not subject to the send policy.

mod http;
mod registry;
mod status;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

pub use http::{HttpCall, HttpDoor, HttpReply};
pub use registry::Channels;
pub use status::{AccountStatus, ChannelStatus, Link, LinkCell, LinkState};

use crate::store::{DeliveryRecord, WriteOp};

/// The gateway's clients: delivered into the session named by `to`, with a `delivery` event.
pub const WEBCHAT: &str = "webchat";
/// A session's transcript, as a user-role message with provenance (a sub-agent announce to a
/// requester that has no chat route).
pub const INTERNAL: &str = "internal";

/// Whether deliveries to `channel` leave the gateway, so that it can be a session's route:
/// every channel but the gateway's own two ([`WEBCHAT`], [`INTERNAL`]).
pub fn is_route(channel: &str) -> bool {
    channel != WEBCHAT && channel != INTERNAL
}

/// Why one attempt failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// Worth another attempt later (receiver down, 5xx, 429, timeout).
    #[error("{0}")]
    Retry(String),
    /// Worth another attempt, not before this long (a 429's `retry_after`).
    #[error("{1}")]
    RetryAfter(Duration, String),
    /// Another attempt would fail the same way (no such account, 4xx, unknown channel).
    #[error("{0}")]
    Permanent(String),
}

/// One attempt's outcome: on success, the store writes that belong to the delivery (committed
/// together with its `delivered` mark, so they happen exactly once).
pub type Sent<'a> = BoxFuture<'a, Result<Vec<WriteOp>, ChannelError>>;

/// One channel, as the outbox, `send`, pairing and health see it.
pub trait Channel: Send + Sync {
    /// The name routes, session keys and delivery records use (`telegram`).
    fn name(&self) -> &'static str;

    /// Makes one attempt to deliver `record` and says whether a failure is worth retrying. The
    /// outbox decides whether and when; the channel only how.
    fn send<'a>(&'a self, record: &'a DeliveryRecord) -> Sent<'a>;

    /// Whether `send` may name this account (`None`: the channel's default); when not, why,
    /// and what is configured. Checked before the record is made.
    fn check_account(&self, _account_id: Option<&str>) -> Result<(), String> {
        Ok(())
    }

    /// The channel's state for `health` and `status`, from its own config section and its
    /// accounts; `None` for a channel that is the gateway's own (not listed there).
    fn status(&self) -> Option<ChannelStatus> {
        None
    }

    /// False for a channel the gateway names but does not offer (`imessage`): a delivery to it
    /// fails with its reason, and it is not listed among the deliverable channels.
    fn offered(&self) -> bool {
        true
    }

    /// Whether deliveries to one recipient go one at a time, oldest first (a chat's replies
    /// arrive in the order the runs made them). False for a channel whose attempt waits on the
    /// other side's work (an A2A task): one slow task must not hold the next message.
    fn in_order(&self) -> bool {
        true
    }

    /// The pairing hook: whether a private sender its DM policy does not know gets a pairing
    /// code (`pairing.list`, `pairing.approve` accept the channel).
    fn pairs(&self) -> bool {
        false
    }
}

/// A channel's inbound door that runs by itself (a poller, a socket). It is built above the
/// sessions, once the components it hands messages to exist, and started by the gateway;
/// HTTP doors ([`HttpDoor`]) are served by the server instead. It stops with the engine.
pub trait Door: Send + Sync {
    /// Starts taking messages in.
    fn start(self: Arc<Self>);
}

/// A reqwest error, briefly, for a message that already names the URL: what every channel
/// that speaks HTTP says when a call did not get an answer.
pub fn describe_http_error(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection refused or unreachable".into()
    } else {
        let text = e.to_string();
        match e.url() {
            Some(url) => text.replace(url.as_str(), "").trim().to_string(),
            None => text,
        }
    }
}
