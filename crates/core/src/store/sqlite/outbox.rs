//! Queries of the delivery outbox.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::store::{DeliveryQuery, DeliveryRecord, DeliveryStatus, DeliveryUpdate, StoreError};

const COLUMNS: &str = "id, idempotency_key, kind, session_key, run_id, channel, recipient, \
    account_id, thread_id, body, status, attempts, next_attempt_at, detail, created_at, \
    updated_at, delivered_at, source_key, parts_sent";

fn from_row(row: &Row<'_>) -> rusqlite::Result<DeliveryRecord> {
    let status: String = row.get(10)?;
    Ok(DeliveryRecord {
        id: row.get(0)?,
        idempotency_key: row.get(1)?,
        kind: row.get(2)?,
        session_key: row.get(3)?,
        run_id: row.get(4)?,
        channel: row.get(5)?,
        to: row.get(6)?,
        account_id: row.get(7)?,
        thread_id: row.get(8)?,
        text: row.get(9)?,
        status: DeliveryStatus::parse(&status).unwrap_or(DeliveryStatus::Failed),
        attempts: row.get::<_, i64>(11)?.clamp(0, u32::MAX as i64) as u32,
        next_attempt_at: row.get(12)?,
        detail: row.get(13)?,
        created_at: row.get(14)?,
        updated_at: row.get(15)?,
        delivered_at: row.get(16)?,
        source_key: row.get(17)?,
        parts_sent: row.get::<_, i64>(18)?.clamp(0, u32::MAX as i64) as u32,
    })
}

pub(super) fn enqueue(
    conn: &Connection,
    record: &DeliveryRecord,
) -> Result<(DeliveryRecord, bool), StoreError> {
    if let Some(key) = &record.idempotency_key {
        let sql = format!("SELECT {COLUMNS} FROM deliveries WHERE idempotency_key = ?1");
        if let Some(first) = conn
            .prepare_cached(&sql)?
            .query_row([key], from_row)
            .optional()?
        {
            return Ok((first, false));
        }
    }
    let sql = format!(
        "INSERT INTO deliveries ({COLUMNS}) VALUES \
         (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
    );
    conn.prepare_cached(&sql)?.execute(params![
        record.id,
        record.idempotency_key,
        record.kind,
        record.session_key,
        record.run_id,
        record.channel,
        record.to,
        record.account_id,
        record.thread_id,
        record.text,
        record.status.as_str(),
        record.attempts,
        record.next_attempt_at,
        record.detail,
        record.created_at,
        record.updated_at,
        record.delivered_at,
        record.source_key,
        record.parts_sent,
    ])?;
    Ok((record.clone(), true))
}

pub(super) fn pending(conn: &Connection, limit: usize) -> Result<Vec<DeliveryRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM deliveries WHERE status = 'pending' \
         ORDER BY next_attempt_at, id LIMIT ?1"
    );
    let rows = conn
        .prepare_cached(&sql)?
        .query_map([limit as i64], from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub(super) fn get(conn: &Connection, id: &str) -> Result<Option<DeliveryRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM deliveries WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], from_row)
        .optional()?)
}

pub(super) fn update(
    conn: &Connection,
    id: &str,
    update: &DeliveryUpdate,
    now: i64,
) -> Result<DeliveryRecord, StoreError> {
    // Only the attempt that read the record pending with one attempt fewer may write its outcome:
    // a second, stale attempt fails here and its batch (a transcript append) rolls back.
    let changed = conn
        .prepare_cached(
            "UPDATE deliveries SET status = ?2, attempts = ?3, next_attempt_at = ?4, detail = ?5, \
             delivered_at = ?6, updated_at = ?7 \
             WHERE id = ?1 AND status = 'pending' AND attempts = ?3 - 1",
        )?
        .execute(params![
            id,
            update.status.as_str(),
            update.attempts,
            update.next_attempt_at,
            update.detail,
            update.delivered_at,
            now,
        ])?;
    if changed == 0 {
        return Err(StoreError::Conflict(format!(
            "delivery {id} is not pending with {} attempts (already attempted)",
            update.attempts.saturating_sub(1)
        )));
    }
    get(conn, id)?.ok_or_else(|| StoreError::NotFound(format!("Delivery not found: {id}")))
}

pub(super) fn list(
    conn: &Connection,
    query: &DeliveryQuery,
) -> Result<Vec<DeliveryRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM deliveries WHERE (?1 IS NULL OR session_key = ?1) \
         AND (?2 IS NULL OR status = ?2) ORDER BY created_at DESC, id DESC LIMIT ?3"
    );
    let rows = conn
        .prepare_cached(&sql)?
        .query_map(
            params![
                query.session_key,
                query.status.map(DeliveryStatus::as_str),
                query.limit as i64
            ],
            from_row,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Raises the count of parts the channel took (never lowers it).
pub(super) fn progress(conn: &Connection, id: &str, parts_sent: u32) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE deliveries SET parts_sent = max(parts_sent, ?2) WHERE id = ?1")?
        .execute(params![id, parts_sent])?;
    Ok(())
}
