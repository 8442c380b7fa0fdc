//! Queries of the agent-to-agent exchange records.

use rusqlite::{Connection, params};

use super::types::{all, bind, first};
use crate::keys::SessionKey;
use crate::store::dialect::SQLITE;
use crate::store::rules::rows::{self, EXCHANGE_COLUMNS};
use crate::store::{ExchangeRecord, StoreError};

pub(super) fn put(conn: &Connection, r: &ExchangeRecord) -> Result<(), StoreError> {
    let values = rows::exchange_params(r)?;
    let sql = format!(
        "INSERT OR REPLACE INTO exchanges ({EXCHANGE_COLUMNS}) VALUES ({})",
        rows::placeholders(SQLITE, 1, values.len())
    );
    conn.prepare_cached(&sql)?.execute(bind(&values))?;
    Ok(())
}

pub(super) fn get(conn: &Connection, id: &str) -> Result<Option<ExchangeRecord>, StoreError> {
    let sql = format!("SELECT {EXCHANGE_COLUMNS} FROM exchanges WHERE id = ?1");
    first(conn, &sql, [id], |r| rows::exchange(r))
}

pub(super) fn unfinished(conn: &Connection) -> Result<Vec<ExchangeRecord>, StoreError> {
    let sql = format!(
        "SELECT {EXCHANGE_COLUMNS} FROM exchanges WHERE state NOT IN ('done', 'failed') \
         ORDER BY created_at, id"
    );
    all(conn, &sql, [], |r| rows::exchange(r))
}

pub(super) fn list(
    conn: &Connection,
    session: Option<&SessionKey>,
    limit: usize,
) -> Result<Vec<ExchangeRecord>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    match session {
        Some(key) => {
            let sql = format!(
                "SELECT {EXCHANGE_COLUMNS} FROM exchanges WHERE requester_key = ?1 OR target_key = ?1 \
                 ORDER BY created_at DESC, id DESC LIMIT ?2"
            );
            all(conn, &sql, params![key, limit], |r| rows::exchange(r))
        }
        None => {
            let sql = format!(
                "SELECT {EXCHANGE_COLUMNS} FROM exchanges ORDER BY created_at DESC, id DESC LIMIT ?1"
            );
            all(conn, &sql, [limit], |r| rows::exchange(r))
        }
    }
}
