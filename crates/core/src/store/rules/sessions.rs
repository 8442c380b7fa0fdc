//! What the writes of a session entry change, and the refusals they answer.

use switchboard_protocol::sessions::Patch;

use crate::store::dialect::Param;
use crate::store::{EntryPatch, NewSession, SessionEntry, StoreError};

/// The refusal of a write to a key with no session.
pub(crate) fn not_found(key: &str) -> StoreError {
    StoreError::NotFound(format!("Session not found: {key}"))
}

/// The answer when a session written in a transaction cannot be read back in it.
pub(crate) fn vanished() -> StoreError {
    StoreError::Backend("a session vanished inside its own transaction".into())
}

/// The conflict of a label another session of the agent uses. The other session is not named:
/// the caller may be a sandboxed agent that must not learn a key it cannot see.
pub(crate) fn label_taken(agent_id: &str, label: &str) -> StoreError {
    StoreError::Conflict(format!(
        "label \"{label}\" is already used by another session of agent {agent_id}; labels are unique per agent, choose another"
    ))
}

/// Labels are unique per agent: `holder` (the session of the agent that has `label` now)
/// leaves it free for `key` only when it is `key` itself or nobody.
pub(crate) fn check_label(
    holder: Option<&SessionEntry>,
    agent_id: &str,
    label: &str,
    key: &str,
) -> Result<(), StoreError> {
    match holder {
        Some(other) if other.key.as_str() != key => Err(label_taken(agent_id, label)),
        _ => Ok(()),
    }
}

/// A unique-index conflict met writing a session whose label is `label` is that label's
/// conflict (another gateway took the label between the check and the write).
pub(crate) fn label_conflict(err: StoreError, agent_id: &str, label: Option<&str>) -> StoreError {
    match (err, label) {
        (StoreError::Conflict(_), Some(label)) => label_taken(agent_id, label),
        (err, _) => err,
    }
}

/// The label a patch sets, to check before it is written.
pub(crate) fn label_set(patch: &EntryPatch) -> Option<&str> {
    match &patch.label {
        Patch::Set(label) => Some(label),
        _ => None,
    }
}

/// A write at `now` moves `updatedAt` forward, never back (a clock that stepped back does not
/// reorder the list).
pub(crate) fn touch(e: &mut SessionEntry, now: i64) {
    e.updated_at = now.max(e.updated_at);
}

/// The entry as `patch` leaves it at `now`.
pub(crate) fn patched(
    e: &mut SessionEntry,
    patch: &EntryPatch,
    now: i64,
) -> Result<(), StoreError> {
    patch.apply(e)?;
    touch(e, now);
    Ok(())
}

/// What a reset does to the entry: the new transcript `session_id`; counters, cost and run
/// flags start over; settings, label and route stay.
pub(crate) fn reset(e: &mut SessionEntry, session_id: String, now: i64) {
    e.session_id = session_id;
    touch(e, now);
    e.input_tokens = 0;
    e.output_tokens = 0;
    e.total_tokens = 0;
    e.cost_usd = 0.0;
    e.context_tokens = None;
    e.system_sent = false;
    e.aborted_last_run = false;
}

/// A new transcript's id.
pub(crate) fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The statement that stores a new transcript (`?1` its id, then its session, agent and time).
pub(crate) const INSERT_TRANSCRIPT: &str = "INSERT INTO transcripts (session_id, session_key, agent_id, created_at) VALUES (?1, ?2, ?3, ?4)";

/// The values of [`INSERT_TRANSCRIPT`].
pub(crate) fn transcript_params(
    session_id: &str,
    key: &str,
    agent_id: &str,
    now: i64,
) -> Vec<Param> {
    vec![session_id.into(), key.into(), agent_id.into(), now.into()]
}

/// The statement that stores a new session (`created_at` and `updated_at` both `?5`).
pub(crate) const INSERT_SESSION: &str = "INSERT INTO sessions (key, session_id, agent_id, kind, \
     created_at, updated_at, channel, chat_type, display_name, label, spawned_by) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?10)";

/// The values of [`INSERT_SESSION`] for `new` with its first transcript.
pub(crate) fn session_params(new: &NewSession, session_id: &str, now: i64) -> Vec<Param> {
    vec![
        new.key.as_str().into(),
        session_id.into(),
        new.agent_id.as_str().into(),
        new.kind.as_str().into(),
        now.into(),
        new.channel.clone().into(),
        new.chat_type.map(|c| c.as_str()).into(),
        new.display_name.clone().into(),
        new.label.clone().into(),
        new.spawned_by.as_ref().map(|k| k.as_str()).into(),
    ]
}

/// The statement that keeps what a deleted session was (its transcripts stay).
pub(crate) const INSERT_DELETED: &str = "INSERT INTO deleted_sessions (key, session_id, agent_id, \
     deleted_at, label, display_name) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

/// The values of [`INSERT_DELETED`] for `e` deleted at `now`.
pub(crate) fn deleted_params(e: &SessionEntry, now: i64) -> Vec<Param> {
    vec![
        e.key.as_str().into(),
        e.session_id.as_str().into(),
        e.agent_id.as_str().into(),
        now.into(),
        e.label.clone().into(),
        e.display_name.clone().into(),
    ]
}
