//! Runs and the work they drive, the outbox and cron: which records are still live work, the
//! refusals their writes answer, what a stored run's input becomes when it is read back, and
//! the counters that only move forward.

use crate::keys::SessionKey;
use crate::store::dialect::{Dialect, Param};
use crate::store::{
    DeliveryUpdate, RunInput, RunQuery, RunRecord, StoreError, WriteOp, WriteOutcome,
};

/// The refusal of a run whose idempotency key another run holds.
pub(crate) fn idempotency_taken(run: &RunRecord) -> StoreError {
    StoreError::Conflict(format!(
        "idempotencyKey {:?} already names another run",
        run.idempotency_key.as_deref().unwrap_or("")
    ))
}

/// A run's write refused by a unique index: a new run's id or idempotency key is a stored run's
/// ([`super::super::WriteOp::NewRun`]), or a run's idempotency key names another run.
pub(crate) fn run_taken(run: &RunRecord, new: bool) -> StoreError {
    match new {
        true => StoreError::Conflict(format!(
            "run {:?} (idempotencyKey {:?}) is stored already",
            run.run_id.as_str(),
            run.idempotency_key.as_deref().unwrap_or("")
        )),
        false => idempotency_taken(run),
    }
}

/// Gives a new run's record without a session id the id of its session as the batch's earlier
/// writes (`before`, what they answered) created it or appended to it.
pub(crate) fn take_session(op: &mut WriteOp, before: &[WriteOutcome]) {
    let WriteOp::NewRun(record, _) = op else {
        return;
    };
    if record.session_id.is_some() {
        return;
    }
    record.session_id = before
        .iter()
        .rev()
        .filter_map(WriteOutcome::session)
        .find(|entry| entry.key == record.session_key)
        .map(|entry| entry.session_id.clone());
}

/// What a PostgreSQL run write does when its id is stored: a new run's is refused; any other
/// record replaces the stored one while it still carries the writer's epoch (fenced).
pub(crate) fn run_conflict(new: bool) -> String {
    match new {
        true => String::new(),
        false => format!(
            " ON CONFLICT (run_id) DO UPDATE SET {} \
             WHERE runs.epoch IS NOT DISTINCT FROM excluded.epoch",
            super::rows::RUN_UPDATE
        ),
    }
}

/// The pending records counted by channel (`OutboxStore::pending_by_channel`).
pub(crate) const PENDING_BY_CHANNEL: &str = "SELECT channel, count(*) FROM deliveries \
     WHERE status = 'pending' GROUP BY channel ORDER BY channel";

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

/// The runs a start takes up again: still `queued` or `running` (a stopped process left them),
/// or aborted while queued with their message still only in their input.
pub(crate) const LIVE_RUN: &str = "(status IN ('queued', 'running') OR input IS NOT NULL)";

/// The sub-agents whose announce or cleanup is not finished.
pub(crate) const UNFINISHED_SUBAGENT: &str = "state != 'done'";

/// The exchanges still to drive on: neither done nor failed.
pub(crate) const UNFINISHED_EXCHANGE: &str = "state NOT IN ('done', 'failed')";

/// Kept sub-agents due to leave the lists at `?1` and not archived yet, soonest first (after
/// the columns and table).
pub(crate) const TO_ARCHIVE: &str = "WHERE archive_at IS NOT NULL AND archived_at IS NULL \
     AND archive_at <= ?1 ORDER BY archive_at";

/// A channel account's cursor.
pub(crate) const CURSOR: &str = "SELECT position FROM channel_cursors WHERE name = ?1";

/// The cursors whose name lies in `?1 <= name < ?2` (a prefix's range, [`prefix_end`]).
pub(crate) const CURSORS: &str =
    "SELECT name, position FROM channel_cursors WHERE name >= ?1 AND name < ?2 ORDER BY name";

/// The first string after every string that starts with `prefix` (its last character moved
/// one on): the end of the prefix's range in a byte-ordered index.
pub(crate) fn prefix_end(prefix: &str) -> String {
    let mut end: Vec<char> = prefix.chars().collect();
    while let Some(last) = end.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            end.push(next);
            return end.into_iter().collect();
        }
    }
    String::from(char::MAX)
}

/// A channel account's token.
pub(crate) const TOKEN: &str = "SELECT token FROM channel_tokens WHERE name = ?1";

/// Sets a channel account's token (`?1` its name, `?2` the token); the last write wins.
pub(crate) const SET_TOKEN: &str = "INSERT INTO channel_tokens (name, token) VALUES (?1, ?2) \
     ON CONFLICT (name) DO UPDATE SET token = excluded.token";

/// Sets a channel account's cursor (`?1` its name, `?2` the position): it only moves forward
/// (a gateway that read an older position never moves it back).
pub(crate) fn set_cursor(d: Dialect) -> String {
    format!(
        "INSERT INTO channel_cursors (name, position) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE \
         SET position = {}(channel_cursors.position, excluded.position)",
        d.greatest
    )
}

/// Records a cron job's firing (`?1` the job, `?2` its slot or NULL, `?3` the run, `?4` when):
/// a scheduled firing raises `last_slot` and never lowers it; an unscheduled one keeps it.
pub(crate) fn record_firing(d: Dialect) -> String {
    format!(
        "UPDATE cron_jobs SET last_slot = {g}({n}(last_slot, ?2), {n}(?2, last_slot)), \
         last_run_id = ?3, last_fired_at = ?4 WHERE id = ?1",
        g = d.greatest,
        n = d.ifnull
    )
}

/// Changes what a job is (`?1`: id; name, enabled, schedule, message, deliver), not its
/// firings.
pub(crate) const CRON_UPDATE: &str = "UPDATE cron_jobs SET name = ?2, enabled = ?3, \
    schedule = ?4, message = ?5, deliver = ?6 WHERE id = ?1";

/// Raises the count of parts the channel took of a delivery (`?1`) to `?2`, never lowers it.
pub(crate) fn progress(d: Dialect) -> String {
    format!(
        "UPDATE deliveries SET parts_sent = {}(parts_sent, ?2) WHERE id = ?1",
        d.greatest
    )
}

/// What follows `SELECT <columns> FROM exchanges` to list the exchanges `session` took part in
/// (as requester or target; every one when `None`), newest first, at most `limit`; with its
/// values.
pub(crate) fn exchanges_page(
    session: Option<&SessionKey>,
    limit: usize,
) -> (&'static str, Vec<Param>) {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    match session {
        Some(key) => (
            "WHERE requester_key = ?1 OR target_key = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2",
            vec![key.as_str().into(), limit.into()],
        ),
        None => (
            "ORDER BY created_at DESC, id DESC LIMIT ?1",
            vec![limit.into()],
        ),
    }
}

/// What follows `SELECT <columns> FROM runs` to answer a [`RunQuery`], with its values. A
/// prefix is compared with `substr`, not `LIKE`, so `%` and `_` in a key are plain characters.
pub(crate) fn runs_page(query: &RunQuery) -> (&'static str, Vec<Param>) {
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    let key: Param = query.key.clone().into();
    match (&query.before, query.prefix) {
        (None, false) => (
            "WHERE session_key = ?1 ORDER BY created_at DESC, run_id DESC LIMIT ?2",
            vec![key, limit.into()],
        ),
        (None, true) => (
            "WHERE substr(session_key, 1, length(CAST(?1 AS TEXT))) = ?1 \
             ORDER BY created_at DESC, run_id DESC LIMIT ?2",
            vec![key, limit.into()],
        ),
        (Some((at, id)), false) => (
            "WHERE session_key = ?1 AND (created_at < ?2 OR (created_at = ?2 AND run_id < ?3)) \
             ORDER BY created_at DESC, run_id DESC LIMIT ?4",
            vec![key, (*at).into(), id.clone().into(), limit.into()],
        ),
        (Some((at, id)), true) => (
            "WHERE substr(session_key, 1, length(CAST(?1 AS TEXT))) = ?1 \
             AND (created_at < ?2 OR (created_at = ?2 AND run_id < ?3)) \
             ORDER BY created_at DESC, run_id DESC LIMIT ?4",
            vec![key, (*at).into(), id.clone().into(), limit.into()],
        ),
    }
}

/// The statement that records an attempt's outcome, `also` (a backend's own columns, each
/// `, col = …`) set with it. Only the attempt that read the delivery pending with one attempt
/// fewer (`?8`) may write its outcome: a second, stale attempt changes no row, and its batch
/// (a transcript append) rolls back ([`not_pending`]).
pub(crate) fn record_attempt(also: &str) -> String {
    format!(
        "UPDATE deliveries SET status = ?2, attempts = ?3, next_attempt_at = ?4, detail = ?5, \
         delivered_at = ?6, updated_at = ?7{also} \
         WHERE id = ?1 AND status = 'pending' AND attempts = ?8"
    )
}

/// The values of [`record_attempt`] for delivery `id` at `now`.
pub(crate) fn attempt_params(id: &str, update: &DeliveryUpdate, now: i64) -> Vec<Param> {
    let attempts = i64::from(update.attempts);
    vec![
        id.into(),
        update.status.as_str().into(),
        attempts.into(),
        update.next_attempt_at.into(),
        update.detail.clone().into(),
        update.delivered_at.into(),
        now.into(),
        (attempts - 1).into(),
    ]
}
