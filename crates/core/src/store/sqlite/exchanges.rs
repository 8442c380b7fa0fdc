//! Queries of the agent-to-agent exchange records.

use rusqlite::Connection;

use super::types::{all, bind, first, once};
use crate::keys::SessionKey;
use crate::store::dialect::SQLITE;
use crate::store::rules::rows::{self, EXCHANGE_COLUMNS};
use crate::store::rules::work::{self, UNFINISHED_EXCHANGE};
use crate::store::{ExchangeRecord, StoreError};

pub(super) fn put(conn: &Connection, r: &ExchangeRecord) -> Result<(), StoreError> {
    let values = rows::exchange_params(r)?;
    debug_assert_eq!(
        values.len(),
        rows::EXCHANGE_COLUMN_COUNT,
        "one value a placeholder"
    );
    let sql = once!(
        "INSERT INTO exchanges ({EXCHANGE_COLUMNS}) VALUES ({}) ON CONFLICT (id) DO UPDATE SET {}",
        rows::placeholders(SQLITE, 1, rows::EXCHANGE_COLUMN_COUNT),
        rows::EXCHANGE_UPDATE
    );
    conn.prepare_cached(sql)?.execute(bind(&values))?;
    Ok(())
}

pub(super) fn get(conn: &Connection, id: &str) -> Result<Option<ExchangeRecord>, StoreError> {
    let sql = once!("SELECT {EXCHANGE_COLUMNS} FROM exchanges WHERE id = ?1");
    first(conn, sql, [id], |r| rows::exchange(r))
}

pub(super) fn unfinished(conn: &Connection) -> Result<Vec<ExchangeRecord>, StoreError> {
    let sql = format!(
        "SELECT {EXCHANGE_COLUMNS} FROM exchanges WHERE {UNFINISHED_EXCHANGE} \
         ORDER BY created_at, id"
    );
    all(conn, &sql, [], |r| rows::exchange(r))
}

pub(super) fn list(
    conn: &Connection,
    session: Option<&SessionKey>,
    limit: usize,
) -> Result<Vec<ExchangeRecord>, StoreError> {
    let (page, values) = work::exchanges_page(session, limit);
    let sql = format!("SELECT {EXCHANGE_COLUMNS} FROM exchanges {page}");
    all(conn, &sql, bind(&values), |r| rows::exchange(r))
}
