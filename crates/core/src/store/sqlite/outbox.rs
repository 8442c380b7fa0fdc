//! Queries of the delivery outbox.

use rusqlite::{Connection, params};

use super::types::{all, bind, first};
use crate::store::dialect::SQLITE;
use crate::store::rules::rows::{self, DELIVERY_COLUMNS};
use crate::store::rules::work;
use crate::store::{DeliveryQuery, DeliveryRecord, DeliveryStatus, DeliveryUpdate, StoreError};

/// Stores `record` unless its idempotency key names a stored one: that first record is answered
/// (`false`) and nothing is stored (the single writer makes the check and the insert one step).
pub(super) fn enqueue(
    conn: &Connection,
    record: &DeliveryRecord,
) -> Result<(DeliveryRecord, bool), StoreError> {
    if let Some(key) = &record.idempotency_key {
        let sql = format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE idempotency_key = ?1");
        if let Some(first) = first(conn, &sql, [key], |r| rows::delivery(r))? {
            return Ok((first, false));
        }
    }
    let values = rows::delivery_params(record);
    let sql = format!(
        "INSERT INTO deliveries ({DELIVERY_COLUMNS}) VALUES ({})",
        rows::placeholders(SQLITE, 1, values.len())
    );
    conn.prepare_cached(&sql)?.execute(bind(&values))?;
    Ok((record.clone(), true))
}

pub(super) fn pending(conn: &Connection, limit: usize) -> Result<Vec<DeliveryRecord>, StoreError> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE status = 'pending' \
         ORDER BY next_attempt_at, id LIMIT ?1"
    );
    all(conn, &sql, [limit as i64], |r| rows::delivery(r))
}

pub(super) fn get(conn: &Connection, id: &str) -> Result<Option<DeliveryRecord>, StoreError> {
    let sql = format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE id = ?1");
    first(conn, &sql, [id], |r| rows::delivery(r))
}

pub(super) fn update(
    conn: &Connection,
    id: &str,
    update: &DeliveryUpdate,
    now: i64,
) -> Result<DeliveryRecord, StoreError> {
    let changed = conn
        .prepare_cached(&work::record_attempt(""))?
        .execute(bind(&work::attempt_params(id, update, now)))?;
    if changed == 0 {
        return Err(work::not_pending(id, update));
    }
    get(conn, id)?.ok_or_else(|| work::delivery_not_found(id))
}

pub(super) fn list(
    conn: &Connection,
    query: &DeliveryQuery,
) -> Result<Vec<DeliveryRecord>, StoreError> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE (?1 IS NULL OR session_key = ?1) \
         AND (?2 IS NULL OR status = ?2) ORDER BY created_at DESC, id DESC LIMIT ?3"
    );
    let values = params![
        query.session_key,
        query.status.map(DeliveryStatus::as_str),
        query.limit as i64
    ];
    all(conn, &sql, values, |r| rows::delivery(r))
}

/// The pending records counted by channel.
pub(super) fn pending_by_channel(conn: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
    all(conn, work::PENDING_BY_CHANNEL, [], |r| {
        Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64))
    })
}

/// Raises the count of parts the channel took (never lowers it).
pub(super) fn progress(conn: &Connection, id: &str, parts_sent: u32) -> Result<(), StoreError> {
    conn.prepare_cached(&work::progress(SQLITE))?
        .execute(params![id, parts_sent])?;
    Ok(())
}

/// A channel account's cursor (`channel_cursors`), if one was set.
pub(super) fn cursor(conn: &Connection, name: &str) -> Result<Option<i64>, StoreError> {
    first(conn, work::CURSOR, [name], |r| Ok(r.get(0)?))
}

/// The cursors whose name starts with `prefix`, by name.
pub(super) fn cursors(conn: &Connection, prefix: &str) -> Result<Vec<(String, i64)>, StoreError> {
    let end = work::prefix_end(prefix);
    all(conn, work::CURSORS, params![prefix, end], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
}

/// A channel account's token (`channel_tokens`), if one was set.
pub(super) fn token(conn: &Connection, name: &str) -> Result<Option<String>, StoreError> {
    first(conn, work::TOKEN, [name], |r| Ok(r.get(0)?))
}

/// Sets a channel account's token; the last write wins.
pub(super) fn set_token(conn: &Connection, name: &str, token: &str) -> Result<(), StoreError> {
    conn.prepare_cached(work::SET_TOKEN)?
        .execute(params![name, token])?;
    Ok(())
}

/// Sets a channel account's cursor; it only moves forward.
pub(super) fn set_cursor(conn: &Connection, name: &str, position: i64) -> Result<(), StoreError> {
    conn.prepare_cached(&work::set_cursor(SQLITE))?
        .execute(params![name, position])?;
    Ok(())
}
