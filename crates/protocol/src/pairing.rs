//! `pairing.list` and `pairing.approve`: DM pairing on the wire. A channel with
//! `dmPolicy: "pairing"` answers an unknown sender with a one-time code; an operator lists the
//! pending requests and approves one by its code.

use serde::{Deserialize, Serialize};

/// `pairing.list`: the pending requests of a channel.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingListParams {
    /// Default `telegram`; `"*"`: every channel with pairing.
    pub channel: Option<String>,
    /// One bot's requests (`channels.telegram.accounts.<id>`); all bots' when absent.
    pub account_id: Option<String>,
}

/// One pending (or just approved) request.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingRequest {
    pub channel: String,
    pub account_id: String,
    /// The sender's id on the channel (Telegram's user id).
    pub id: String,
    pub username: Option<String>,
    pub code: String,
    pub created_at: i64,
    /// When the code stops being good (ms).
    pub expires_at: i64,
    pub approved_at: Option<i64>,
}

/// The answer of `pairing.list`, oldest request first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingListResult {
    pub channel: String,
    pub requests: Vec<PairingRequest>,
}

/// `pairing.approve`: let the sender of a pending request talk to the bot.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingApproveParams {
    /// Default `telegram`.
    pub channel: Option<String>,
    /// The code the sender was given (any case).
    pub code: String,
    /// Needed only when the same code is pending on two bots.
    pub account_id: Option<String>,
    /// Also tell the sender, in their chat, that they may talk to the bot now.
    #[serde(default)]
    pub notify: bool,
}

/// The answer of `pairing.approve`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingApproveResult {
    pub ok: bool,
    pub approved: PairingRequest,
    /// The id of the outbox record that tells the sender (with `notify`).
    pub notice_delivery_id: Option<String>,
}

/// The answer of `channels.pairing.list` (the reference's Control UI, Channels page): each
/// account that pairs strangers, and the pending requests, in the reference's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelsPairingList {
    pub accounts: Vec<PairingAccount>,
    pub requests: Vec<ChannelPairingRequest>,
    pub limits: PairingLimits,
}

/// An account whose strangers get a pairing code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingAccount {
    pub channel: String,
    pub channel_label: String,
    pub account_id: String,
    /// Whether approving can tell the sender (`pairing.approve` with `notify`): always.
    pub notify_supported: bool,
}

/// A pending request. `requestId` is its code (what `pairing.approve` takes).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelPairingRequest {
    pub request_id: String,
    pub channel: String,
    pub channel_label: String,
    pub account_id: String,
    pub sender_id: String,
    pub sender_label: Option<String>,
    pub code: String,
    /// ISO 8601 times, as the reference writes them.
    pub created_at: String,
    pub last_seen_at: String,
    pub expires_at: String,
    pub notify_supported: bool,
}

/// How many requests may wait per account, and how long a code is good (ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingLimits {
    pub pending_per_account: usize,
    pub ttl_ms: i64,
}
