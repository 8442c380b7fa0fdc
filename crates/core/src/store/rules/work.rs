//! Runs, the outbox and cron: the refusals their writes answer, and what a stored run's input
//! becomes when it is read back.

use crate::store::{DeliveryUpdate, RunInput, RunRecord, StoreError};

/// The refusal of a run whose idempotency key another run holds.
pub(crate) fn idempotency_taken(run: &RunRecord) -> StoreError {
    StoreError::Conflict(format!(
        "idempotencyKey {:?} already names another run",
        run.idempotency_key.as_deref().unwrap_or("")
    ))
}

/// A run's stored input, to store: `None` clears a stored one (the run started).
pub(crate) fn encode_input(input: Option<&RunInput>) -> Result<Option<String>, StoreError> {
    input
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| StoreError::Backend(format!("could not encode a run's input: {e}")))
}

/// A stored input read back. One that no longer decodes (a newer build's) is `None`: the run
/// cannot start again, and the warning says which.
pub(crate) fn decode_input(run: &RunRecord, json: Option<String>) -> Option<RunInput> {
    match serde_json::from_str(&json?) {
        Ok(input) => Some(input),
        Err(e) => {
            tracing::warn!(run_id = %run.run_id, error = %e, "a queued run's stored input does not decode");
            None
        }
    }
}

/// Only the attempt that read a delivery pending with one attempt fewer may write its outcome:
/// the refusal of a second, stale attempt (its batch rolls back).
pub(crate) fn not_pending(id: &str, update: &DeliveryUpdate) -> StoreError {
    StoreError::Conflict(format!(
        "delivery {id} is not pending with {} attempts (already attempted)",
        update.attempts.saturating_sub(1)
    ))
}

/// The answer for a delivery id with no record.
pub(crate) fn delivery_not_found(id: &str) -> StoreError {
    StoreError::NotFound(format!("Delivery not found: {id}"))
}

/// The refusal of a cron job whose id is in use (the stored job is left as it is).
pub(crate) fn cron_id_taken(id: &str) -> StoreError {
    StoreError::Conflict(format!(
        "id: a cron job with id \"{id}\" already exists; pick another id, or remove it first (cron.remove)"
    ))
}

/// The answer for a cron job id with no job.
pub(crate) fn cron_not_found(id: &str) -> StoreError {
    StoreError::NotFound(format!(
        "cron job not found: {id} (cron.list shows the jobs)"
    ))
}
