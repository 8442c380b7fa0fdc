//! Queries of the agent-to-agent exchange records.

use tokio_postgres::Row;

use super::cluster::orphaned;
use super::db::Db;
use crate::keys::SessionKey;
use crate::store::dialect::{Columns, POSTGRES};
use crate::store::rules::rows::{self, EXCHANGE_COLUMN_COUNT};
use crate::store::rules::work::{self, UNFINISHED_EXCHANGE};
use crate::store::{ExchangeRecord, StoreError};

/// An exchange's columns on PostgreSQL: the neutral ones, then the epoch it is held under.
fn columns() -> String {
    format!("{}, epoch", rows::EXCHANGE_COLUMNS)
}

fn from_row(row: &Row) -> Result<ExchangeRecord, StoreError> {
    let mut record = rows::exchange(row)?;
    record.epoch = rows::epoch(row.int(EXCHANGE_COLUMN_COUNT)?);
    Ok(record)
}

/// Stores the record, replacing the one of the same id while it still carries the writer's
/// epoch (fenced, SPEC §4.3).
pub(super) async fn put(db: &Db<'_>, r: &ExchangeRecord) -> Result<(), StoreError> {
    let mut values = rows::exchange_params(r)?;
    values.push(r.epoch.into());
    // A new exchange is this gateway's to drive; a stored one keeps its owner.
    values.push(db.gateway().into());
    let sql = format!(
        "INSERT INTO exchanges ({}, owner) VALUES ({}) \
         ON CONFLICT (id) DO UPDATE SET {} \
         WHERE exchanges.epoch IS NOT DISTINCT FROM excluded.epoch",
        columns(),
        rows::placeholders(POSTGRES, 1, values.len()),
        rows::EXCHANGE_UPDATE,
    );
    let written = db.execute_with(&sql, &values).await?;
    super::cluster::held(written, || format!("the exchange {}", r.id))
}

pub(super) async fn get(db: &Db<'_>, id: &str) -> Result<Option<ExchangeRecord>, StoreError> {
    let sql = format!("SELECT {} FROM exchanges WHERE id = $1", columns());
    db.query_opt(&sql, &[&id])
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// Takes over the exchanges of `whose` that are not done nor failed, oldest first.
pub(super) async fn claim(db: &Db<'_>) -> Result<Vec<ExchangeRecord>, StoreError> {
    let sql = format!(
        "UPDATE exchanges SET owner = $1, epoch = $2 WHERE {UNFINISHED_EXCHANGE} AND {} \
         RETURNING {}",
        orphaned("exchanges"),
        columns()
    );
    let mut claimed = db
        .query(&sql, &[&db.gateway(), &db.epoch()])
        .await?
        .iter()
        .map(from_row)
        .collect::<Result<Vec<_>, _>>()?;
    claimed.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    Ok(claimed)
}

pub(super) async fn list(
    db: &Db<'_>,
    session: Option<&SessionKey>,
    limit: usize,
) -> Result<Vec<ExchangeRecord>, StoreError> {
    let (page, values) = work::exchanges_page(session, limit);
    let sql = format!("SELECT {} FROM exchanges {page}", columns());
    db.query_with(&sql, &values)
        .await?
        .iter()
        .map(from_row)
        .collect()
}
