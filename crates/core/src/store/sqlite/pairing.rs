//! The SQL of DM pairing (`channel_pairings`); whom it admits and approves is decided in
//! `rules::pairing`. Admissions and approvals run on the writer thread inside its group
//! transaction (the single writer makes an admission one step); reads on pooled connections.

use rusqlite::{Connection, params};

use super::types::{all, bind, first};
use crate::store::rules::pairing as rules;
use crate::store::rules::rows::{self, PAIRING_COLUMNS};
use crate::store::{PairingAdmission, PairingAsk, PairingRecord, StoreError};

fn get(
    conn: &Connection,
    (channel, account, sender): (&str, &str, &str),
) -> Result<Option<PairingRecord>, StoreError> {
    let sql = format!(
        "SELECT {PAIRING_COLUMNS} FROM channel_pairings \
         WHERE channel = ?1 AND account_id = ?2 AND sender_id = ?3"
    );
    first(conn, &sql, params![channel, account, sender], |r| {
        rows::pairing(r)
    })
}

pub(super) fn approved(conn: &Connection, who: (&str, &str, &str)) -> Result<bool, StoreError> {
    Ok(rules::is_approved(get(conn, who)?.as_ref()))
}

/// Approved, a pending request of the same sender, no room, or a new request.
pub(super) fn admit(
    conn: &Connection,
    ask: &PairingAsk,
    now: i64,
) -> Result<PairingAdmission, StoreError> {
    let r = &ask.record;
    let since = rules::since(ask, now);
    let found = get(conn, (&r.channel, &r.account_id, &r.sender_id))?;
    if let Some(decided) = rules::known(found, since) {
        return Ok(decided);
    }
    let pending: i64 = conn
        .prepare_cached(rules::COUNT_PENDING)?
        .query_row(bind(&rules::count_params(ask, since)), |row| row.get(0))?;
    let admission = rules::fresh(ask, pending, now);
    if let PairingAdmission::Created(request) = &admission {
        let sql = format!(
            "INSERT OR REPLACE INTO channel_pairings ({PAIRING_COLUMNS}) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        );
        conn.prepare_cached(&sql)?
            .execute(bind(&rules::request_params(request)))?;
    }
    Ok(admission)
}

/// Requests made after `since` and not approved, of one channel (and account), oldest first.
pub(super) fn pending(
    conn: &Connection,
    channel: &str,
    account: Option<&str>,
    since: i64,
) -> Result<Vec<PairingRecord>, StoreError> {
    let sql = format!(
        "SELECT {PAIRING_COLUMNS} FROM channel_pairings WHERE channel = ?1 \
         AND (?2 IS NULL OR account_id = ?2) AND approved_at IS NULL AND created_at > ?3 \
         ORDER BY created_at, sender_id"
    );
    all(conn, &sql, params![channel, account, since], |r| {
        rows::pairing(r)
    })
}

/// Approves the pending request with `code` (made after `since`).
pub(super) fn approve(
    conn: &Connection,
    (channel, account, code): (&str, Option<&str>, &str),
    since: i64,
    now: i64,
) -> Result<PairingRecord, StoreError> {
    let pending = pending(conn, channel, account, since)?;
    let approved = rules::approve(pending, (channel, code), now)?;
    conn.prepare_cached(rules::APPROVE)?
        .execute(bind(&rules::approve_params(&approved, now)))?;
    Ok(approved)
}
