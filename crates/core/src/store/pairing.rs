//! The stored form of DM pairing (`dmPolicy: "pairing"`): who asked to talk to a channel's bot,
//! with which one-time code, and whom an owner let in.

/// One row of `channel_pairings`: a sender of one bot (`channel`, `account_id`).
#[derive(Debug, Clone, PartialEq)]
pub struct PairingRecord {
    pub channel: String,
    pub account_id: String,
    /// The channel's id of the sender (Telegram's user id).
    pub sender_id: String,
    pub username: Option<String>,
    /// The one-time code (8 characters) of the latest request.
    pub code: String,
    /// When the latest request was made (ms); a code is good for [`PairingAsk::ttl_ms`].
    pub created_at: i64,
    /// When an owner approved the sender; from then on the sender may talk to the bot.
    pub approved_at: Option<i64>,
    /// What made the request (the channel's message id): a replay of that message answers the
    /// same code again instead of nothing.
    pub source: String,
}

/// A sender the policy does not know yet asks for a code.
#[derive(Debug, Clone, PartialEq)]
pub struct PairingAsk {
    /// The request to store if a new one is due (`created_at` and `approved_at` are set by
    /// the store).
    pub record: PairingRecord,
    /// How long a code stays good.
    pub ttl_ms: i64,
    /// Pending requests per bot; more are not stored until one expires or is approved.
    pub max_pending: usize,
}

/// What became of a [`PairingAsk`].
#[derive(Debug, Clone, PartialEq)]
pub enum PairingAdmission {
    /// The sender was approved before: let the message through.
    Approved,
    /// A new request with this code was stored.
    Created(PairingRecord),
    /// A request of this sender is still pending (its code, its source).
    Pending(PairingRecord),
    /// Too many requests are pending for this bot; nothing was stored.
    Full,
}
