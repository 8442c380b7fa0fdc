//! The SQL of DM pairing (`channel_pairings`). Admissions and approvals run inside the write's
//! transaction; reads on pooled connections.
//!
//! SQLite's single writer makes an admission one step; here several gateways may admit senders
//! of the same bot at once, so an admission first takes a lock of its bot (a transaction-scoped
//! advisory lock) and the rows an approval decides on are locked (`FOR UPDATE`).

use super::db::Db;
use crate::store::rules::pairing as rules;
use crate::store::rules::rows::{self, PAIRING_COLUMNS};
use crate::store::{PairingAdmission, PairingAsk, PairingRecord, StoreError};

/// The first key of the bots' advisory locks (`SWBP`); the second is a hash of the bot.
const BOT_LOCK: &str =
    "SELECT pg_advisory_xact_lock(1398227536, hashtext($1::TEXT || chr(10) || $2::TEXT))";

/// The sender's row; `lock` holds it until the transaction ends.
async fn get(
    db: &Db<'_>,
    (channel, account, sender): (&str, &str, &str),
    lock: bool,
) -> Result<Option<PairingRecord>, StoreError> {
    let sql = format!(
        "SELECT {PAIRING_COLUMNS} FROM channel_pairings \
         WHERE channel = $1 AND account_id = $2 AND sender_id = $3{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    db.query_opt(&sql, &[&channel, &account, &sender])
        .await?
        .as_ref()
        .map(rows::pairing)
        .transpose()
}

pub(super) async fn approved(db: &Db<'_>, who: (&str, &str, &str)) -> Result<bool, StoreError> {
    Ok(rules::is_approved(get(db, who, false).await?.as_ref()))
}

/// Approved, a pending request of the same sender, no room, or a new request.
pub(super) async fn admit(
    db: &Db<'_>,
    ask: &PairingAsk,
    now: i64,
) -> Result<PairingAdmission, StoreError> {
    let r = &ask.record;
    let since = rules::since(ask, now);
    // One admission per bot at a time: the count of pending requests and a sender's first
    // request (no row to lock yet) are decided by one gateway.
    db.execute(BOT_LOCK, &[&r.channel, &r.account_id]).await?;
    let found = get(db, (&r.channel, &r.account_id, &r.sender_id), true).await?;
    if let Some(decided) = rules::known(found, since) {
        return Ok(decided);
    }
    let count = db
        .query_opt_with(rules::COUNT_PENDING, &rules::count_params(ask, since))
        .await?
        .ok_or_else(|| StoreError::Backend("a count answered no row".into()))?;
    let pending: i64 = super::schema::get(&count, 0)?;
    let admission = rules::fresh(ask, pending, now);
    if let PairingAdmission::Created(request) = &admission {
        let sql = format!(
            "INSERT INTO channel_pairings ({PAIRING_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (channel, account_id, sender_id) DO UPDATE SET \
             username = excluded.username, code = excluded.code, created_at = excluded.created_at, \
             approved_at = excluded.approved_at, source = excluded.source"
        );
        db.execute_with(&sql, &rules::request_params(request))
            .await?;
    }
    Ok(admission)
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
        "SELECT {PAIRING_COLUMNS} FROM channel_pairings WHERE channel = $1 \
         AND ($2::TEXT IS NULL OR account_id = $2) AND approved_at IS NULL AND created_at > $3 \
         ORDER BY created_at, sender_id COLLATE \"C\"{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    db.query(&sql, &[&channel, &account, &since])
        .await?
        .iter()
        .map(rows::pairing)
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

/// Approves the pending request with `code` (made after `since`).
pub(super) async fn approve(
    db: &Db<'_>,
    (channel, account, code): (&str, Option<&str>, &str),
    since: i64,
    now: i64,
) -> Result<PairingRecord, StoreError> {
    // Locked: a concurrent admission renewing one of them (a new code) is seen, not overwritten.
    let pending = select_pending(db, (channel, account), since, true).await?;
    let approved = rules::approve(pending, (channel, code), now)?;
    db.execute_with(rules::APPROVE, &rules::approve_params(&approved, now))
        .await?;
    Ok(approved)
}
