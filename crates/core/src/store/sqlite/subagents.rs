//! Queries of the sub-agent records.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::store::{StoreError, SubagentRecord, SubagentState};

const COLUMNS: &str = "child_key, requester_key, run_id, task, label, model, delete_after, state, \
    outcome, created_at, ended_at, delivery_id, archive_at, archived_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<SubagentRecord> {
    let state: String = row.get(7)?;
    Ok(SubagentRecord {
        child_key: row.get(0)?,
        requester_key: row.get(1)?,
        run_id: row.get(2)?,
        task: row.get(3)?,
        label: row.get(4)?,
        model: row.get(5)?,
        delete_after: row.get(6)?,
        state: SubagentState::parse(&state).unwrap_or(SubagentState::Announcing),
        outcome: row.get(8)?,
        created_at: row.get(9)?,
        ended_at: row.get(10)?,
        delivery_id: row.get(11)?,
        archive_at: row.get(12)?,
        archived_at: row.get(13)?,
        epoch: 0,
    })
}

pub(super) fn put(conn: &Connection, r: &SubagentRecord) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT OR REPLACE INTO subagents ({COLUMNS}) VALUES \
         (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
    );
    conn.prepare_cached(&sql)?.execute(params![
        r.child_key,
        r.requester_key,
        r.run_id,
        r.task,
        r.label,
        r.model,
        r.delete_after,
        r.state.as_str(),
        r.outcome,
        r.created_at,
        r.ended_at,
        r.delivery_id,
        r.archive_at,
        r.archived_at,
    ])?;
    Ok(())
}

pub(super) fn get(
    conn: &Connection,
    child_key: &crate::keys::SessionKey,
) -> Result<Option<SubagentRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM subagents WHERE child_key = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([child_key], from_row)
        .optional()?)
}

pub(super) fn unfinished(conn: &Connection) -> Result<Vec<SubagentRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM subagents WHERE state != 'done' ORDER BY created_at, child_key"
    );
    let rows = conn
        .prepare_cached(&sql)?
        .query_map([], from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub(super) fn to_archive(conn: &Connection, now: i64) -> Result<Vec<SubagentRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM subagents WHERE archive_at IS NOT NULL AND archived_at IS NULL \
         AND archive_at <= ?1 ORDER BY archive_at"
    );
    let rows = conn
        .prepare_cached(&sql)?
        .query_map([now], from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}
