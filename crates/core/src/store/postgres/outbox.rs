//! Queries of the delivery outbox, and of the channel cursors written with it.

use super::db::Db;
use super::schema::get as col;
use crate::store::dialect::POSTGRES;
use crate::store::rules::rows::{self, DELIVERY_COLUMN_COUNT, DELIVERY_COLUMNS as COLUMNS};
use crate::store::rules::work;
use crate::store::{DeliveryQuery, DeliveryRecord, DeliveryStatus, DeliveryUpdate, StoreError};

/// Stores `record` unless its idempotency key names a stored one: that first record is answered
/// (`false`) and nothing is stored. A concurrent gateway storing the same key waits on the
/// unique index, so exactly one of them stores it.
pub(super) async fn enqueue(
    db: &Db<'_>,
    record: &DeliveryRecord,
) -> Result<(DeliveryRecord, bool), StoreError> {
    let values = rows::delivery_params(record);
    let sql = format!(
        "INSERT INTO deliveries ({COLUMNS}) VALUES ({}) ON CONFLICT DO NOTHING RETURNING id",
        rows::placeholders(POSTGRES, 1, values.len())
    );
    if db.query_opt_with(&sql, &values).await?.is_some() {
        return Ok((record.clone(), true));
    }
    // Nothing was inserted: the key (or, without one, the id) is stored already.
    let first = match &record.idempotency_key {
        Some(key) => by_idempotency_key(db, key).await?,
        None => None,
    };
    let first = match first {
        Some(first) => Some(first),
        None => get(db, &record.id).await?,
    };
    first.map(|first| (first, false)).ok_or_else(|| {
        StoreError::Backend(format!(
            "delivery {} was neither stored nor found stored",
            record.id
        ))
    })
}

async fn by_idempotency_key(db: &Db<'_>, key: &str) -> Result<Option<DeliveryRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM deliveries WHERE idempotency_key = $1");
    db.query_opt(&sql, &[&key])
        .await?
        .as_ref()
        .map(rows::delivery)
        .transpose()
}

/// Claims up to `limit` pending deliveries due by `now` that no live claim holds, for `lease`
/// ms (one statement: two gateways never claim one record), and adds the soonest pending ones
/// not yet due, unclaimed (they say when to look again).
pub(super) async fn claim(
    db: &Db<'_>,
    limit: usize,
    now: i64,
    lease: i64,
) -> Result<Vec<DeliveryRecord>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // A claim of a gateway that stopped is void: its deliveries go on at once. Claims are
    // timed by the database's clock, so gateways whose clocks disagree never both hold one.
    let db_now = super::cluster::DB_NOW;
    let claim = format!(
        "UPDATE deliveries SET claimed_by = $1, claimed_until = {db_now} + $3 WHERE id IN \
         (SELECT id FROM deliveries WHERE status = 'pending' AND next_attempt_at <= $2 \
          AND (claimed_until IS NULL OR claimed_until < {db_now} OR claimed_by = $1 \
               OR claimed_by NOT IN ({})) \
          ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED) RETURNING {COLUMNS}",
        super::cluster::live_gateways()
    );
    let mut due: Vec<DeliveryRecord> = db
        .query(&claim, &[&db.gateway(), &now, &lease, &limit])
        .await?
        .iter()
        .map(rows::delivery)
        .collect::<Result<_, _>>()?;
    due.sort_by(|a, b| (a.next_attempt_at, &a.id).cmp(&(b.next_attempt_at, &b.id)));
    // One another gateway holds is answered as due a little later, when this gateway looks
    // again (and attempts it, should that gateway have stopped).
    let later = format!(
        "SELECT {COLUMNS}, CASE WHEN next_attempt_at > $1 THEN next_attempt_at ELSE $1 + $3 END AS wake \
         FROM deliveries WHERE status = 'pending' \
         AND (next_attempt_at > $1 OR (claimed_until >= {db_now} AND claimed_by <> $4)) \
         ORDER BY wake, id LIMIT $2"
    );
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&now, &limit, &HELD_RECHECK_MS, &db.gateway()];
    for row in db.query(&later, &params).await? {
        let mut record = rows::delivery(&row)?;
        record.next_attempt_at = col(&row, DELIVERY_COLUMN_COUNT)?;
        due.push(record);
    }
    Ok(due)
}

/// How soon a gateway looks again at a due delivery another gateway holds.
const HELD_RECHECK_MS: i64 = 3_000;

pub(super) async fn get(db: &Db<'_>, id: &str) -> Result<Option<DeliveryRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM deliveries WHERE id = $1");
    db.query_opt(&sql, &[&id])
        .await?
        .as_ref()
        .map(rows::delivery)
        .transpose()
}

pub(super) async fn update(
    db: &Db<'_>,
    id: &str,
    update: &DeliveryUpdate,
    now: i64,
) -> Result<DeliveryRecord, StoreError> {
    // One statement: a concurrent gateway's update of the same record waits for this one,
    // then finds the attempts moved on. The attempt's claim ends with it.
    let sql = format!(
        "{} RETURNING {COLUMNS}",
        work::record_attempt(", claimed_by = NULL, claimed_until = NULL")
    );
    let row = db
        .query_opt_with(&sql, &work::attempt_params(id, update, now))
        .await?;
    match row {
        Some(row) => rows::delivery(&row),
        None => Err(work::not_pending(id, update)),
    }
}

pub(super) async fn list(
    db: &Db<'_>,
    query: &DeliveryQuery,
) -> Result<Vec<DeliveryRecord>, StoreError> {
    // The casts type the parameters where they are first seen (`IS NULL` says nothing of it).
    let sql = format!(
        "SELECT {COLUMNS} FROM deliveries WHERE ($1::TEXT IS NULL OR session_key = $1) \
         AND ($2::TEXT IS NULL OR status = $2) ORDER BY created_at DESC, id DESC LIMIT $3"
    );
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    db.query(
        &sql,
        &[
            &query.session_key.as_deref(),
            &query.status.map(DeliveryStatus::as_str),
            &limit,
        ],
    )
    .await?
    .iter()
    .map(rows::delivery)
    .collect()
}

/// The pending records counted by channel.
pub(super) async fn pending_by_channel(db: &Db<'_>) -> Result<Vec<(String, u64)>, StoreError> {
    db.query(work::PENDING_BY_CHANNEL, &[])
        .await?
        .iter()
        .map(|row| Ok((col(row, 0)?, col::<i64>(row, 1)?.max(0) as u64)))
        .collect()
}

/// Raises the count of parts the channel took (never lowers it).
pub(super) async fn progress(db: &Db<'_>, id: &str, parts_sent: u32) -> Result<(), StoreError> {
    let values = [id.into(), i64::from(parts_sent).into()];
    db.execute_with(&work::progress(POSTGRES), &values).await?;
    Ok(())
}

/// A channel account's cursor (`channel_cursors`), if one was set.
pub(super) async fn cursor(db: &Db<'_>, name: &str) -> Result<Option<i64>, StoreError> {
    db.query_opt_with(work::CURSOR, &[name.into()])
        .await?
        .as_ref()
        .map(|row| col(row, 0))
        .transpose()
}

/// The cursors whose name starts with `prefix`, by name.
pub(super) async fn cursors(db: &Db<'_>, prefix: &str) -> Result<Vec<(String, i64)>, StoreError> {
    let end = work::prefix_end(prefix);
    let rows = db
        .query_with(work::CURSORS, &[prefix.into(), end.as_str().into()])
        .await?;
    rows.iter()
        .map(|row| Ok((col(row, 0)?, col(row, 1)?)))
        .collect()
}

/// A channel account's token (`channel_tokens`), if one was set.
pub(super) async fn token(db: &Db<'_>, name: &str) -> Result<Option<String>, StoreError> {
    db.query_opt_with(work::TOKEN, &[name.into()])
        .await?
        .as_ref()
        .map(|row| col(row, 0))
        .transpose()
}

/// Sets a channel account's token; the last write wins.
pub(super) async fn set_token(db: &Db<'_>, name: &str, token: &str) -> Result<(), StoreError> {
    let values = [name.into(), token.into()];
    db.execute_with(work::SET_TOKEN, &values).await?;
    Ok(())
}

/// Sets a channel account's cursor; it only moves forward.
pub(super) async fn set_cursor(db: &Db<'_>, name: &str, position: i64) -> Result<(), StoreError> {
    let values = [name.into(), position.into()];
    db.execute_with(&work::set_cursor(POSTGRES), &values)
        .await?;
    Ok(())
}
