//! DM pairing: whom a request admits, and which pending request an owner's code approves.
//!
//! An admission reads the sender's row and decides ([`known`]); when that decides nothing, it
//! counts the bot's pending requests and decides again ([`fresh`]). A backend keeps the two
//! reads and the write one step (SQLite's single writer; PostgreSQL's lock of the bot).

use crate::store::dialect::Param;
use crate::store::{PairingAdmission, PairingAsk, PairingRecord, StoreError};

/// Requests made after this are still good.
pub(crate) fn since(ask: &PairingAsk, now: i64) -> i64 {
    now - ask.ttl_ms
}

/// Whether a sender's stored request lets it talk to the bot: an owner approved it.
pub(crate) fn is_approved(found: Option<&PairingRecord>) -> bool {
    found.is_some_and(|r| r.approved_at.is_some())
}

/// What the sender's stored request decides: approved before, or a request still pending
/// (answered again, code and all); `None` when a new request may be due.
pub(crate) fn known(found: Option<PairingRecord>, since: i64) -> Option<PairingAdmission> {
    let found = found?;
    if found.approved_at.is_some() {
        return Some(PairingAdmission::Approved);
    }
    (found.created_at > since).then_some(PairingAdmission::Pending(found))
}

/// The count of a bot's requests made after `?3` and not approved.
pub(crate) const COUNT_PENDING: &str = "SELECT count(*) FROM channel_pairings \
     WHERE channel = ?1 AND account_id = ?2 AND approved_at IS NULL AND created_at > ?3";

/// The values of [`COUNT_PENDING`] for `ask` at `since`.
pub(crate) fn count_params(ask: &PairingAsk, since: i64) -> Vec<Param> {
    let r = &ask.record;
    vec![
        r.channel.as_str().into(),
        r.account_id.as_str().into(),
        since.into(),
    ]
}

/// With `pending` requests of the bot pending: no room, or the new request to store (made
/// `now`, not approved; a stored expired one of the sender is replaced).
pub(crate) fn fresh(ask: &PairingAsk, pending: i64, now: i64) -> PairingAdmission {
    if usize::try_from(pending).unwrap_or(0) >= ask.max_pending {
        return PairingAdmission::Full;
    }
    PairingAdmission::Created(PairingRecord {
        created_at: now,
        approved_at: None,
        ..ask.record.clone()
    })
}

/// The values of a new request's row (`channel` … `source`, `approved_at` NULL).
pub(crate) fn request_params(r: &PairingRecord) -> Vec<Param> {
    vec![
        r.channel.as_str().into(),
        r.account_id.as_str().into(),
        r.sender_id.as_str().into(),
        r.username.clone().into(),
        r.code.as_str().into(),
        r.created_at.into(),
        Param::Int(None),
        r.source.as_str().into(),
    ]
}

/// Of the pending requests, the one `code` names (codes compare without case), approved at
/// `now`; `NotFound` says why none is: no such code, or one code on several accounts.
pub(crate) fn approve(
    pending: Vec<PairingRecord>,
    (channel, code): (&str, &str),
    now: i64,
) -> Result<PairingRecord, StoreError> {
    let mut matching: Vec<PairingRecord> = pending
        .into_iter()
        .filter(|r| r.code.eq_ignore_ascii_case(code))
        .collect();
    if matching.len() != 1 {
        let why = if matching.is_empty() {
            format!(
                "no pending {channel} pairing request has code {code} (codes expire after an \
                 hour; `switchboard pairing list {channel}` shows the pending ones)"
            )
        } else {
            format!("code {code} is pending on several {channel} accounts; name one with --account")
        };
        return Err(StoreError::NotFound(why));
    }
    let mut found = matching.remove(0);
    found.approved_at = Some(now);
    Ok(found)
}

/// The statement that approves one sender's request (`?4` the time).
pub(crate) const APPROVE: &str = "UPDATE channel_pairings SET approved_at = ?4 \
     WHERE channel = ?1 AND account_id = ?2 AND sender_id = ?3";

/// The values of [`APPROVE`] for the approved record.
pub(crate) fn approve_params(r: &PairingRecord, now: i64) -> Vec<Param> {
    vec![
        r.channel.as_str().into(),
        r.account_id.as_str().into(),
        r.sender_id.as_str().into(),
        now.into(),
    ]
}
