//! The SQL of DM pairing (`channel_pairings`). Admissions and approvals run inside the write's
//! transaction; reads on pooled connections.
//!
//! SQLite's single writer makes an admission one step; here several gateways may admit senders
//! of the same bot at once, so an admission first takes a lock of its bot (a transaction-scoped
//! advisory lock) and the rows an approval decides on are locked (`FOR UPDATE`).

use tokio_postgres::Row;

use super::db::Db;
use super::schema::get as col;
use crate::store::{PairingAdmission, PairingAsk, PairingRecord, StoreError};

const COLUMNS: &str =
    "channel, account_id, sender_id, username, code, created_at, approved_at, source";

/// The first key of the bots' advisory locks (`SWBP`); the second is a hash of the bot.
const BOT_LOCK: &str =
    "SELECT pg_advisory_xact_lock(1398227536, hashtext($1::TEXT || chr(10) || $2::TEXT))";

fn from_row(row: &Row) -> Result<PairingRecord, StoreError> {
    Ok(PairingRecord {
        channel: col(row, 0)?,
        account_id: col(row, 1)?,
        sender_id: col(row, 2)?,
        username: col(row, 3)?,
        code: col(row, 4)?,
        created_at: col(row, 5)?,
        approved_at: col(row, 6)?,
        source: col(row, 7)?,
    })
}

/// The sender's row; `lock` holds it until the transaction ends.
async fn get(
    db: &Db<'_>,
    (channel, account, sender): (&str, &str, &str),
    lock: bool,
) -> Result<Option<PairingRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM channel_pairings \
         WHERE channel = $1 AND account_id = $2 AND sender_id = $3{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    db.query_opt(&sql, &[&channel, &account, &sender])
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

pub(super) async fn approved(db: &Db<'_>, who: (&str, &str, &str)) -> Result<bool, StoreError> {
    Ok(get(db, who, false)
        .await?
        .is_some_and(|r| r.approved_at.is_some()))
}

/// Approved, a pending request of the same sender, no room, or a new request.
pub(super) async fn admit(
    db: &Db<'_>,
    ask: &PairingAsk,
    now: i64,
) -> Result<PairingAdmission, StoreError> {
    let r = &ask.record;
    let since = now - ask.ttl_ms;
    // One admission per bot at a time: the count of pending requests and a sender's first
    // request (no row to lock yet) are decided by one gateway.
    db.execute(BOT_LOCK, &[&r.channel, &r.account_id]).await?;
    if let Some(found) = get(db, (&r.channel, &r.account_id, &r.sender_id), true).await? {
        if found.approved_at.is_some() {
            return Ok(PairingAdmission::Approved);
        }
        if found.created_at > since {
            return Ok(PairingAdmission::Pending(found));
        }
    }
    let pending: i64 = col(
        &db.query_one(
            "SELECT count(*) FROM channel_pairings WHERE channel = $1 AND account_id = $2 \
             AND approved_at IS NULL AND created_at > $3",
            &[&r.channel, &r.account_id, &since],
        )
        .await?,
        0,
    )?;
    if usize::try_from(pending).unwrap_or(0) >= ask.max_pending {
        return Ok(PairingAdmission::Full);
    }
    let sql = format!(
        "INSERT INTO channel_pairings ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, NULL, $7) \
         ON CONFLICT (channel, account_id, sender_id) DO UPDATE SET \
         username = excluded.username, code = excluded.code, created_at = excluded.created_at, \
         approved_at = excluded.approved_at, source = excluded.source"
    );
    db.execute(
        &sql,
        &[
            &r.channel,
            &r.account_id,
            &r.sender_id,
            &r.username,
            &r.code,
            &now,
            &r.source,
        ],
    )
    .await?;
    Ok(PairingAdmission::Created(PairingRecord {
        created_at: now,
        approved_at: None,
        ..r.clone()
    }))
}

/// Requests made after `since` and not approved, of one channel (and account), oldest first;
/// `lock` holds them until the transaction ends.
async fn select_pending(
    db: &Db<'_>,
    (channel, account): (&str, Option<&str>),
    since: i64,
    lock: bool,
) -> Result<Vec<PairingRecord>, StoreError> {
    // The cast types `$2` where it is first seen (`IS NULL` says nothing of it); sender ids
    // compare byte by byte, as SQLite compares them.
    let sql = format!(
        "SELECT {COLUMNS} FROM channel_pairings WHERE channel = $1 \
         AND ($2::TEXT IS NULL OR account_id = $2) AND approved_at IS NULL AND created_at > $3 \
         ORDER BY created_at, sender_id COLLATE \"C\"{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    db.query(&sql, &[&channel, &account, &since])
        .await?
        .iter()
        .map(from_row)
        .collect()
}

/// Requests made after `since` and not approved, of one channel (and account), oldest first.
pub(super) async fn pending(
    db: &Db<'_>,
    channel: &str,
    account: Option<&str>,
    since: i64,
) -> Result<Vec<PairingRecord>, StoreError> {
    select_pending(db, (channel, account), since, false).await
}

/// Approves the pending request with `code` (made after `since`); `NotFound` says what is
/// pending instead.
pub(super) async fn approve(
    db: &Db<'_>,
    (channel, account, code): (&str, Option<&str>, &str),
    since: i64,
    now: i64,
) -> Result<PairingRecord, StoreError> {
    // Locked: a concurrent admission renewing one of them (a new code) is seen, not overwritten.
    let matching: Vec<PairingRecord> = select_pending(db, (channel, account), since, true)
        .await?
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
    db.execute(
        "UPDATE channel_pairings SET approved_at = $4 \
         WHERE channel = $1 AND account_id = $2 AND sender_id = $3",
        &[&channel, &found.account_id, &found.sender_id, &now],
    )
    .await?;
    Ok(PairingRecord {
        approved_at: Some(now),
        ..found.clone()
    })
}
