//! Queries of the agent-to-agent exchange records.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::keys::SessionKey;
use crate::store::{ExchangeRecord, ExchangeState, StoreError};

const COLUMNS: &str = "id, requester_key, requester_run, target_key, message, chain, state, turn, \
    step_run, attempt, round1, latest, previous_run, detail, created_at, updated_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<ExchangeRecord> {
    let chain: String = row.get(5)?;
    let state: String = row.get(6)?;
    let chain: Vec<String> = serde_json::from_str(&chain).unwrap_or_default();
    Ok(ExchangeRecord {
        id: row.get(0)?,
        requester_key: row.get(1)?,
        requester_run: row.get(2)?,
        target_key: row.get(3)?,
        message: row.get(4)?,
        chain: chain.into_iter().map(SessionKey::from_canonical).collect(),
        // An unknown state (a newer build's) is left alone rather than resumed.
        state: ExchangeState::parse(&state).unwrap_or(ExchangeState::Failed),
        turn: row.get(7)?,
        step_run: row.get(8)?,
        attempt: row.get(9)?,
        round1: row.get(10)?,
        latest: row.get(11)?,
        previous_run: row.get(12)?,
        detail: row.get(13)?,
        created_at: row.get(14)?,
        updated_at: row.get(15)?,
        epoch: 0,
    })
}

pub(super) fn put(conn: &Connection, r: &ExchangeRecord) -> Result<(), StoreError> {
    let chain: Vec<&str> = r.chain.iter().map(SessionKey::as_str).collect();
    let chain = serde_json::to_string(&chain)
        .map_err(|e| StoreError::Backend(format!("could not encode a chain: {e}")))?;
    let sql = format!(
        "INSERT OR REPLACE INTO exchanges ({COLUMNS}) VALUES \
         (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
    );
    conn.prepare_cached(&sql)?.execute(params![
        r.id,
        r.requester_key,
        r.requester_run,
        r.target_key,
        r.message,
        chain,
        r.state.as_str(),
        r.turn,
        r.step_run,
        r.attempt,
        r.round1,
        r.latest,
        r.previous_run,
        r.detail,
        r.created_at,
        r.updated_at,
    ])?;
    Ok(())
}

pub(super) fn get(conn: &Connection, id: &str) -> Result<Option<ExchangeRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM exchanges WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], from_row)
        .optional()?)
}

pub(super) fn unfinished(conn: &Connection) -> Result<Vec<ExchangeRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM exchanges WHERE state NOT IN ('done', 'failed') ORDER BY created_at, id"
    );
    let rows = conn
        .prepare_cached(&sql)?
        .query_map([], from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub(super) fn list(
    conn: &Connection,
    session: Option<&SessionKey>,
    limit: usize,
) -> Result<Vec<ExchangeRecord>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = match session {
        Some(key) => {
            let sql = format!(
                "SELECT {COLUMNS} FROM exchanges WHERE requester_key = ?1 OR target_key = ?1 \
                 ORDER BY created_at DESC, id DESC LIMIT ?2"
            );
            conn.prepare_cached(&sql)?
                .query_map(params![key, limit], from_row)?
                .collect::<Result<Vec<_>, _>>()?
        }
        None => {
            let sql = format!(
                "SELECT {COLUMNS} FROM exchanges ORDER BY created_at DESC, id DESC LIMIT ?1"
            );
            conn.prepare_cached(&sql)?
                .query_map([limit], from_row)?
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    Ok(rows)
}
