//! What a run needs to start, or to be resumed, after a restart: stored with its record when it
//! is acknowledged, kept without its message while it runs (the message is in the transcript by
//! then, SPEC §6.3), cleared when it ends.

use serde::{Deserialize, Serialize};
use switchboard_protocol::message::TranscriptMessage;
use switchboard_protocol::sessions::DeliveryContext;

/// The input of a queued run, as JSON in the `runs.input` column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInput {
    /// The user-role message the run starts with, stamped when it was acknowledged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<TranscriptMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Session keys that led to the run (the cycle guard), the requester's first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliver: Option<DeliverInput>,
    /// The `traceparent` the run's span continues (SPEC §10b).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// How many times the run has started (a run resumed after a stop starts again).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub starts: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Where the run's reply goes once it ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliverInput {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<DeliveryContext>,
}

/// Which runs [`RunStore::list_runs`] answers: those of the sessions whose key is `key` (or
/// starts with it, with `prefix`), newest first, after `before` (the last run of the previous
/// page: its `created_at` and id), at most `limit`.
///
/// [`RunStore::list_runs`]: crate::store::RunStore::list_runs
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunQuery {
    pub key: String,
    pub prefix: bool,
    pub before: Option<(i64, String)>,
    pub limit: usize,
}

/// [`WriteOp::Ended`](super::WriteOp::Ended)'s check: `stored`, the run's stored status, is the
/// final `status` the batch was written for.
pub(crate) fn ended_as(
    run_id: &crate::ids::RunId,
    status: super::RunStatus,
    stored: Option<super::RunStatus>,
) -> Result<(), super::StoreError> {
    match stored {
        Some(stored) if stored == status => Ok(()),
        stored => Err(super::StoreError::Conflict(format!(
            "the run {run_id} is stored {}, not ended {}: what quotes its end is not written",
            stored.map_or("nowhere", super::RunStatus::as_str),
            status.as_str()
        ))),
    }
}
