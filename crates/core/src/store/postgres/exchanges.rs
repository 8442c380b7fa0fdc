//! Queries of the agent-to-agent exchange records.

use tokio_postgres::Row;

use super::cluster::orphaned;
use super::db::Db;
use super::schema::get as col;
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{ExchangeRecord, ExchangeState, StoreError};

const COLUMNS: &str = "id, requester_key, requester_run, target_key, message, chain, state, turn, \
    step_run, attempt, round1, latest, previous_run, detail, created_at, updated_at, epoch";

/// A stored count as a `u32` (a negative or oversized value is clamped).
fn count(row: &Row, i: usize) -> Result<u32, StoreError> {
    Ok(col::<i64>(row, i)?.clamp(0, i64::from(u32::MAX)) as u32)
}

fn from_row(row: &Row) -> Result<ExchangeRecord, StoreError> {
    let chain: String = col(row, 5)?;
    let state: String = col(row, 6)?;
    let chain: Vec<String> = serde_json::from_str(&chain).unwrap_or_default();
    Ok(ExchangeRecord {
        id: col(row, 0)?,
        requester_key: SessionKey::from_canonical(col(row, 1)?),
        requester_run: RunId::from_string(col::<String>(row, 2)?),
        target_key: SessionKey::from_canonical(col(row, 3)?),
        message: col(row, 4)?,
        chain: chain.into_iter().map(SessionKey::from_canonical).collect(),
        // An unknown state (a newer build's) is left alone rather than resumed.
        state: ExchangeState::parse(&state).unwrap_or(ExchangeState::Failed),
        turn: count(row, 7)?,
        step_run: RunId::from_string(col::<String>(row, 8)?),
        attempt: count(row, 9)?,
        round1: col(row, 10)?,
        latest: col(row, 11)?,
        previous_run: col::<Option<String>>(row, 12)?.map(RunId::from_string),
        detail: col(row, 13)?,
        created_at: col(row, 14)?,
        updated_at: col(row, 15)?,
        // A record from before epochs is held by nobody: the next claim takes it.
        epoch: col::<Option<i64>>(row, 16)?.unwrap_or(0),
    })
}

/// Stores the record, replacing the one of the same id.
pub(super) async fn put(db: &Db<'_>, r: &ExchangeRecord) -> Result<(), StoreError> {
    let chain: Vec<&str> = r.chain.iter().map(SessionKey::as_str).collect();
    let chain = serde_json::to_string(&chain)
        .map_err(|e| StoreError::Backend(format!("could not encode a chain: {e}")))?;
    let sql = format!(
        "INSERT INTO exchanges ({COLUMNS}, owner) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) \
         ON CONFLICT (id) DO UPDATE SET requester_key = excluded.requester_key, \
         requester_run = excluded.requester_run, target_key = excluded.target_key, \
         message = excluded.message, chain = excluded.chain, state = excluded.state, \
         turn = excluded.turn, step_run = excluded.step_run, attempt = excluded.attempt, \
         round1 = excluded.round1, latest = excluded.latest, \
         previous_run = excluded.previous_run, detail = excluded.detail, \
         created_at = excluded.created_at, updated_at = excluded.updated_at \
         WHERE exchanges.epoch IS NOT DISTINCT FROM excluded.epoch"
    );
    let written = db
        .execute(
            &sql,
            &[
                &r.id,
                &r.requester_key.as_str(),
                &r.requester_run.as_str(),
                &r.target_key.as_str(),
                &r.message,
                &chain,
                &r.state.as_str(),
                &i64::from(r.turn),
                &r.step_run.as_str(),
                &i64::from(r.attempt),
                &r.round1,
                &r.latest,
                &r.previous_run.as_deref(),
                &r.detail,
                &r.created_at,
                &r.updated_at,
                &r.epoch,
                // A new exchange is this gateway's to drive; a stored one keeps its owner.
                &db.gateway(),
            ],
        )
        .await?;
    super::cluster::held(written, || format!("the exchange {}", r.id))
}

pub(super) async fn get(db: &Db<'_>, id: &str) -> Result<Option<ExchangeRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM exchanges WHERE id = $1");
    db.query_opt(&sql, &[&id])
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// Takes over the exchanges of `whose` that are not done nor failed, oldest first.
pub(super) async fn claim(db: &Db<'_>) -> Result<Vec<ExchangeRecord>, StoreError> {
    let sql = format!(
        "UPDATE exchanges SET owner = $1, epoch = $2 WHERE state NOT IN ('done', 'failed') AND {} \
         RETURNING {COLUMNS}",
        orphaned("exchanges")
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
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = match session {
        Some(key) => {
            let sql = format!(
                "SELECT {COLUMNS} FROM exchanges WHERE requester_key = $1 OR target_key = $1 \
                 ORDER BY created_at DESC, id DESC LIMIT $2"
            );
            db.query(&sql, &[&key.as_str(), &limit]).await?
        }
        None => {
            let sql = format!(
                "SELECT {COLUMNS} FROM exchanges ORDER BY created_at DESC, id DESC LIMIT $1"
            );
            db.query(&sql, &[&limit]).await?
        }
    };
    rows.iter().map(from_row).collect()
}
