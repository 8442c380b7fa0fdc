//! Records of the delivery outbox (SPEC §9.1): every outbound message is stored before it is
//! attempted, and its outcome stays recorded.

use crate::ids::RunId;
use crate::keys::SessionKey;

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Stored; the outbox attempts it at `next_attempt_at`.
    Pending,
    /// The channel took it.
    Delivered,
    /// Given up: a permanent channel error, or every attempt failed.
    Failed,
    /// Refused by the session's send policy; never attempted.
    Denied,
    /// There was no route to deliver to; the text stays in the session's transcript.
    Recorded,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
            Self::Denied => "denied",
            Self::Recorded => "recorded",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "delivered" => Self::Delivered,
            "failed" => Self::Failed,
            "denied" => Self::Denied,
            "recorded" => Self::Recorded,
            _ => return None,
        })
    }

    pub const ALL: [Self; 5] = [
        Self::Pending,
        Self::Delivered,
        Self::Failed,
        Self::Denied,
        Self::Recorded,
    ];
}

/// One outbound message and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryRecord {
    pub id: String,
    /// A repeated key names the first record; nothing is stored or sent twice.
    pub idempotency_key: Option<String>,
    /// What produced it: `reply`, `announce`, `subagent-announce`, `send`.
    pub kind: String,
    /// The session it is delivered for: its route and send policy apply, if any.
    pub session_key: Option<SessionKey>,
    /// The session that produced the text when it is not `session_key` (a sub-agent child).
    pub source_key: Option<SessionKey>,
    /// The run whose text it carries, if any.
    pub run_id: Option<RunId>,
    pub channel: String,
    pub to: String,
    pub account_id: Option<String>,
    pub thread_id: Option<String>,
    pub text: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub next_attempt_at: i64,
    /// Why it failed, was denied or recorded, or the last attempt's error while pending.
    pub detail: Option<String>,
    /// The W3C `traceparent` of the span that made it; its own spans continue that trace
    /// (SPEC §10b). `None` with traces off.
    pub trace: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub delivered_at: Option<i64>,
    /// Parts of a long text the channel already took ([`WriteOp::DeliveryProgress`]).
    ///
    /// [`WriteOp::DeliveryProgress`]: crate::store::WriteOp::DeliveryProgress
    pub parts_sent: u32,
}

/// The outcome of one attempt, written back to the record.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryUpdate {
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub next_attempt_at: i64,
    pub detail: Option<String>,
    pub delivered_at: Option<i64>,
}

/// Filters of `deliveries.list`, newest first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeliveryQuery {
    pub session_key: Option<SessionKey>,
    pub status: Option<DeliveryStatus>,
    pub limit: usize,
}
