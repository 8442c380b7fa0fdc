//! The SQL of DM pairing (`channel_pairings`). Admissions and approvals run on the writer thread
//! inside its group transaction; reads on pooled connections.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::store::{PairingAdmission, PairingAsk, PairingRecord, StoreError};

const COLUMNS: &str =
    "channel, account_id, sender_id, username, code, created_at, approved_at, source";

fn from_row(row: &Row<'_>) -> rusqlite::Result<PairingRecord> {
    Ok(PairingRecord {
        channel: row.get(0)?,
        account_id: row.get(1)?,
        sender_id: row.get(2)?,
        username: row.get(3)?,
        code: row.get(4)?,
        created_at: row.get(5)?,
        approved_at: row.get(6)?,
        source: row.get(7)?,
    })
}

fn get(
    conn: &Connection,
    (channel, account, sender): (&str, &str, &str),
) -> Result<Option<PairingRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM channel_pairings \
         WHERE channel = ?1 AND account_id = ?2 AND sender_id = ?3"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row(params![channel, account, sender], from_row)
        .optional()?)
}

pub(super) fn approved(conn: &Connection, who: (&str, &str, &str)) -> Result<bool, StoreError> {
    Ok(get(conn, who)?.is_some_and(|r| r.approved_at.is_some()))
}

/// Approved, a pending request of the same sender, no room, or a new request.
pub(super) fn admit(
    conn: &Connection,
    ask: &PairingAsk,
    now: i64,
) -> Result<PairingAdmission, StoreError> {
    let r = &ask.record;
    let since = now - ask.ttl_ms;
    if let Some(found) = get(conn, (&r.channel, &r.account_id, &r.sender_id))? {
        if found.approved_at.is_some() {
            return Ok(PairingAdmission::Approved);
        }
        if found.created_at > since {
            return Ok(PairingAdmission::Pending(found));
        }
    }
    let pending: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM channel_pairings WHERE channel = ?1 AND account_id = ?2 \
             AND approved_at IS NULL AND created_at > ?3",
        )?
        .query_row(params![r.channel, r.account_id, since], |row| row.get(0))?;
    if pending as usize >= ask.max_pending {
        return Ok(PairingAdmission::Full);
    }
    let sql = format!(
        "INSERT OR REPLACE INTO channel_pairings ({COLUMNS}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7)"
    );
    conn.prepare_cached(&sql)?.execute(params![
        r.channel,
        r.account_id,
        r.sender_id,
        r.username,
        r.code,
        now,
        r.source
    ])?;
    Ok(PairingAdmission::Created(PairingRecord {
        created_at: now,
        approved_at: None,
        ..r.clone()
    }))
}

/// Requests made after `since` and not approved, of one channel (and account), oldest first.
pub(super) fn pending(
    conn: &Connection,
    channel: &str,
    account: Option<&str>,
    since: i64,
) -> Result<Vec<PairingRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM channel_pairings WHERE channel = ?1 \
         AND (?2 IS NULL OR account_id = ?2) AND approved_at IS NULL AND created_at > ?3 \
         ORDER BY created_at, sender_id"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![channel, account, since], from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Approves the pending request with `code` (made after `since`); `NotFound` says what is
/// pending instead.
pub(super) fn approve(
    conn: &Connection,
    (channel, account, code): (&str, Option<&str>, &str),
    since: i64,
    now: i64,
) -> Result<PairingRecord, StoreError> {
    let matching: Vec<PairingRecord> = pending(conn, channel, account, since)?
        .into_iter()
        .filter(|r| r.code.eq_ignore_ascii_case(code))
        .collect();
    let [found] = matching.as_slice() else {
        let why = if matching.is_empty() {
            format!(
                "no pending {channel} pairing request has code {code} (codes expire after an \
                 hour; `switchboard pairing list {channel}` shows the pending ones)"
            )
        } else {
            format!("code {code} is pending on several {channel} accounts; name one with --account")
        };
        return Err(StoreError::NotFound(why));
    };
    conn.prepare_cached(
        "UPDATE channel_pairings SET approved_at = ?4 \
         WHERE channel = ?1 AND account_id = ?2 AND sender_id = ?3",
    )?
    .execute(params![channel, found.account_id, found.sender_id, now])?;
    Ok(PairingRecord {
        approved_at: Some(now),
        ..found.clone()
    })
}
