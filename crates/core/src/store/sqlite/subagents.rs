//! Queries of the sub-agent records.

use rusqlite::Connection;

use super::types::{all, bind, first};
use crate::keys::SessionKey;
use crate::store::dialect::SQLITE;
use crate::store::rules::rows::{self, SUBAGENT_COLUMNS};
use crate::store::rules::work::{TO_ARCHIVE, UNFINISHED_SUBAGENT};
use crate::store::{StoreError, SubagentRecord};

pub(super) fn put(conn: &Connection, r: &SubagentRecord) -> Result<(), StoreError> {
    let values = rows::subagent_params(r);
    let sql = format!(
        "INSERT INTO subagents ({SUBAGENT_COLUMNS}) VALUES ({}) \
         ON CONFLICT (child_key) DO UPDATE SET {}",
        rows::placeholders(SQLITE, 1, values.len()),
        rows::SUBAGENT_UPDATE
    );
    conn.prepare_cached(&sql)?.execute(bind(&values))?;
    Ok(())
}

pub(super) fn get(
    conn: &Connection,
    child_key: &SessionKey,
) -> Result<Option<SubagentRecord>, StoreError> {
    let sql = format!("SELECT {SUBAGENT_COLUMNS} FROM subagents WHERE child_key = ?1");
    first(conn, &sql, [child_key], |r| rows::subagent(r))
}

pub(super) fn unfinished(conn: &Connection) -> Result<Vec<SubagentRecord>, StoreError> {
    let sql = format!(
        "SELECT {SUBAGENT_COLUMNS} FROM subagents WHERE {UNFINISHED_SUBAGENT} \
         ORDER BY created_at, child_key"
    );
    all(conn, &sql, [], |r| rows::subagent(r))
}

pub(super) fn to_archive(conn: &Connection, now: i64) -> Result<Vec<SubagentRecord>, StoreError> {
    let sql = format!("SELECT {SUBAGENT_COLUMNS} FROM subagents {TO_ARCHIVE}");
    all(conn, &sql, [now], |r| rows::subagent(r))
}
