//! Queries of the sub-agent records.

use std::collections::HashMap;

use tokio_postgres::Row;

use super::cluster::orphaned;
use super::db::Db;
use super::schema::get as col;
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{StoreError, SubagentRecord, SubagentState};

const COLUMNS: &str = "child_key, requester_key, run_id, task, label, model, delete_after, state, \
    outcome, created_at, ended_at, delivery_id, archive_at, archived_at, epoch";

fn from_row(row: &Row) -> Result<SubagentRecord, StoreError> {
    let state: String = col(row, 7)?;
    Ok(SubagentRecord {
        child_key: SessionKey::from_canonical(col(row, 0)?),
        requester_key: SessionKey::from_canonical(col(row, 1)?),
        run_id: RunId::from_string(col::<String>(row, 2)?),
        task: col(row, 3)?,
        label: col(row, 4)?,
        model: col(row, 5)?,
        delete_after: col(row, 6)?,
        state: SubagentState::parse(&state).unwrap_or(SubagentState::Announcing),
        outcome: col(row, 8)?,
        created_at: col(row, 9)?,
        ended_at: col(row, 10)?,
        delivery_id: col(row, 11)?,
        archive_at: col(row, 12)?,
        archived_at: col(row, 13)?,
        // A record from before epochs is held by nobody: the next claim takes it.
        epoch: col::<Option<i64>>(row, 14)?.unwrap_or(0),
    })
}

/// Stores the record, replacing the one of the same child.
pub(super) async fn put(db: &Db<'_>, r: &SubagentRecord) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO subagents ({COLUMNS}, owner) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
         ON CONFLICT (child_key) DO UPDATE SET requester_key = excluded.requester_key, \
         run_id = excluded.run_id, task = excluded.task, label = excluded.label, \
         model = excluded.model, delete_after = excluded.delete_after, state = excluded.state, \
         outcome = excluded.outcome, created_at = excluded.created_at, \
         ended_at = excluded.ended_at, delivery_id = excluded.delivery_id, \
         archive_at = excluded.archive_at, archived_at = excluded.archived_at \
         WHERE subagents.epoch IS NOT DISTINCT FROM excluded.epoch"
    );
    let written = db
        .execute(
            &sql,
            &[
                &r.child_key.as_str(),
                &r.requester_key.as_str(),
                &r.run_id.as_str(),
                &r.task,
                &r.label,
                &r.model,
                &r.delete_after,
                &r.state.as_str(),
                &r.outcome,
                &r.created_at,
                &r.ended_at,
                &r.delivery_id,
                &r.archive_at,
                &r.archived_at,
                &r.epoch,
                // A new record is this gateway's to drive; a stored one keeps its owner.
                &db.gateway(),
            ],
        )
        .await?;
    super::cluster::held(written, || format!("the sub-agent {}", r.child_key))
}

pub(super) async fn get(
    db: &Db<'_>,
    child_key: &SessionKey,
) -> Result<Option<SubagentRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM subagents WHERE child_key = $1");
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
    let sql = format!("SELECT {COLUMNS} FROM subagents WHERE child_key = ANY($1)");
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
        "UPDATE subagents SET owner = $1, epoch = $2 WHERE state != 'done' AND {} RETURNING {COLUMNS}",
        orphaned("subagents")
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
    let sql = format!(
        "SELECT {COLUMNS} FROM subagents WHERE archive_at IS NOT NULL AND archived_at IS NULL \
         AND archive_at <= $1 ORDER BY archive_at"
    );
    db.query(&sql, &[&now])
        .await?
        .iter()
        .map(from_row)
        .collect()
}
