//! Durable agent-to-agent exchanges (SPEC §7.3): what a `sessions_send` started, and how far its
//! reply-back loop and announce step got, so a restart resumes each one where it stopped and
//! its announce is delivered exactly once.

use crate::ids::RunId;
use crate::keys::SessionKey;

/// How far an exchange has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeState {
    /// The primary run in the target has not ended.
    Primary,
    /// A reply-back turn is next or running (`turn` of them are done).
    Replying,
    /// The announce step is next or running.
    Announcing,
    /// Finished: announced, or silent by `ANNOUNCE_SKIP` (`detail` says which).
    Done,
    /// Stopped by a step that could not run or did not end well (`detail` says why).
    Failed,
}

impl ExchangeState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Primary => "primary",
            Self::Replying => "replying",
            Self::Announcing => "announcing",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "primary" => Self::Primary,
            "replying" => Self::Replying,
            "announcing" => Self::Announcing,
            "done" => Self::Done,
            "failed" => Self::Failed,
            _ => return None,
        })
    }

    pub fn is_final(self) -> bool {
        matches!(self, Self::Done | Self::Failed)
    }
}

/// One exchange. Its id is the primary run's id.
#[derive(Debug, Clone, PartialEq)]
pub struct ExchangeRecord {
    pub id: String,
    pub requester_key: SessionKey,
    /// The requester's run that sent it.
    pub requester_run: RunId,
    pub target_key: SessionKey,
    /// The original message.
    pub message: String,
    /// The chain every step carries (the sender's chain plus the sender).
    pub chain: Vec<SessionKey>,
    pub state: ExchangeState,
    /// Reply-back turns finished so far.
    pub turn: u32,
    /// The run of the current step (the primary run, a reply turn, the announce).
    pub step_run: RunId,
    /// Starts of the current step: a step interrupted by a stop of the gateway runs again.
    pub attempt: u32,
    /// The target's reply to the original message.
    pub round1: Option<String>,
    /// The latest reply of the loop (the round-1 reply until a turn answers).
    pub latest: Option<String>,
    /// The run whose reply the next step answers (provenance of its message).
    pub previous_run: Option<RunId>,
    /// Why it failed, or how it ended.
    pub detail: Option<String>,
    /// The W3C `traceparent` of the span that made it; its own spans continue that trace
    /// (SPEC §10b). `None` with traces off.
    pub trace: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The ownership epoch its driver holds it under (SPEC §4.3): an update commits only while
    /// the stored record still carries it. `0` on a store of one gateway.
    pub epoch: i64,
}
