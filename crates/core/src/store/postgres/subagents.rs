//! Queries of the sub-agent records.

use std::collections::HashMap;

use tokio_postgres::Row;

use super::cluster::orphaned;
use super::db::Db;
use crate::keys::SessionKey;
use crate::store::dialect::{Columns, POSTGRES};
use crate::store::rules::rows::{self, SUBAGENT_COLUMN_COUNT};
use crate::store::rules::work::{TO_ARCHIVE, UNFINISHED_SUBAGENT};
use crate::store::{StoreError, SubagentRecord};

/// A sub-agent's columns on PostgreSQL: the neutral ones, then the epoch it is held under.
fn columns() -> String {
    format!("{}, epoch", rows::SUBAGENT_COLUMNS)
}

fn from_row(row: &Row) -> Result<SubagentRecord, StoreError> {
    let mut record = rows::subagent(row)?;
    record.epoch = rows::epoch(row.int(SUBAGENT_COLUMN_COUNT)?);
    Ok(record)
}

/// Stores the record, replacing the one of the same child while it still carries the writer's
/// epoch (fenced, SPEC §4.3).
pub(super) async fn put(db: &Db<'_>, r: &SubagentRecord) -> Result<(), StoreError> {
    let mut values = rows::subagent_params(r);
    values.push(r.epoch.into());
    // A new record is this gateway's to drive; a stored one keeps its owner.
    values.push(db.gateway().into());
    let sql = format!(
        "INSERT INTO subagents ({}, owner) VALUES ({}) \
         ON CONFLICT (child_key) DO UPDATE SET {} \
         WHERE subagents.epoch IS NOT DISTINCT FROM excluded.epoch",
        columns(),
        rows::placeholders(POSTGRES, 1, values.len()),
        rows::SUBAGENT_UPDATE,
    );
    let written = db.execute_with(&sql, &values).await?;
    super::cluster::held(written, || format!("the sub-agent {}", r.child_key))
}

pub(super) async fn get(
    db: &Db<'_>,
    child_key: &SessionKey,
) -> Result<Option<SubagentRecord>, StoreError> {
    let sql = format!("SELECT {} FROM subagents WHERE child_key = $1", columns());
    db.query_opt(&sql, &[&child_key.as_str()])
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// The records of those of `child_keys` that exist, in the order of the keys (one query).
pub(super) async fn get_many(
    db: &Db<'_>,
    child_keys: &[SessionKey],
) -> Result<Vec<SubagentRecord>, StoreError> {
    if child_keys.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {} FROM subagents WHERE child_key = ANY($1)",
        columns()
    );
    let keys: Vec<&str> = child_keys.iter().map(SessionKey::as_str).collect();
    let mut found: HashMap<String, SubagentRecord> = HashMap::with_capacity(keys.len());
    for row in db.query(&sql, &[&keys]).await? {
        let record = from_row(&row)?;
        found.insert(record.child_key.as_str().to_string(), record);
    }
    // A key asked twice answers its record twice, as reading them one by one would.
    Ok(child_keys
        .iter()
        .filter_map(|key| found.get(key.as_str()).cloned())
        .collect())
}

/// Takes over the records of `whose` whose announce or cleanup is not finished, oldest first.
pub(super) async fn claim(db: &Db<'_>) -> Result<Vec<SubagentRecord>, StoreError> {
    let sql = format!(
        "UPDATE subagents SET owner = $1, epoch = $2 WHERE {UNFINISHED_SUBAGENT} AND {} RETURNING {}",
        orphaned("subagents"),
        columns()
    );
    let mut claimed = db
        .query(&sql, &[&db.gateway(), &db.epoch()])
        .await?
        .iter()
        .map(from_row)
        .collect::<Result<Vec<_>, _>>()?;
    claimed.sort_by(|a, b| {
        (a.created_at, a.child_key.as_str()).cmp(&(b.created_at, b.child_key.as_str()))
    });
    Ok(claimed)
}

pub(super) async fn to_archive(db: &Db<'_>, now: i64) -> Result<Vec<SubagentRecord>, StoreError> {
    let sql = format!("SELECT {} FROM subagents {TO_ARCHIVE}", columns());
    db.query_with(&sql, &[now.into()])
        .await?
        .iter()
        .map(from_row)
        .collect()
}
