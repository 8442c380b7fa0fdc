//! Several gateways on one database: each says it is alive (a heartbeat row), owns the runs,
//! sub-agents and exchanges it drives, and takes up the work of a gateway that stopped saying
//! so. Times here are the database's own clock, so gateways on machines whose clocks disagree
//! still agree on who is alive.

use std::time::Duration;

use super::db::Db;
use super::schema::{RUN_COLUMNS, get, run_from_row};
use crate::store::{RunInput, RunRecord, StoreError};

/// How often a gateway says it is alive.
pub(super) const HEARTBEAT: Duration = Duration::from_secs(2);
/// How long after its last heartbeat a gateway's work is taken up by another.
pub(super) const LEASE_MS: i64 = 10_000;

/// The database's clock in ms.
pub(super) const DB_NOW: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The gateways alive: their heartbeat is younger than the lease.
pub(super) fn live_gateways() -> String {
    format!("SELECT id FROM gateways WHERE heartbeat_at > {DB_NOW} - {LEASE_MS}")
}

/// Which owners' work a claim takes: the gateways that stopped (and, at a start, this gateway's
/// own from its last process).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Whose {
    /// At start: this gateway's own (same id as its last process) and the stopped ones'.
    OwnAndOrphaned,
    /// While running: only the stopped gateways'.
    Orphaned,
}

impl Whose {
    /// The SQL condition on `owner` ($1 is this gateway).
    pub(super) fn condition(self) -> String {
        let dead = format!("(owner IS NULL OR owner NOT IN ({}))", live_gateways());
        match self {
            Self::OwnAndOrphaned => format!("(owner = $1 OR {dead})"),
            Self::Orphaned => format!("(owner <> $1 AND {dead})"),
        }
    }
}

/// Registers the gateway (or renews it), saying it is alive now.
pub(super) async fn heartbeat(db: &Db<'_>) -> Result<(), StoreError> {
    db.execute(&heartbeat_sql(), &[&db.gateway()]).await?;
    Ok(())
}

/// The heartbeat's statement (`$1`: the gateway).
pub(super) fn heartbeat_sql() -> String {
    format!(
        "INSERT INTO gateways (id, started_at, heartbeat_at) VALUES ($1, {DB_NOW}, {DB_NOW}) \
         ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at"
    )
}

/// The gateway stops: its row goes, so the others take up its queued work at once.
pub(super) async fn retire(db: &Db<'_>) -> Result<(), StoreError> {
    db.execute("DELETE FROM gateways WHERE id = $1", &[&db.gateway()])
        .await?;
    Ok(())
}

/// Claims the live runs of `whose` (queued, running, or aborted with their message unwritten),
/// in submission order, with their stored input.
pub(super) async fn claim_runs(
    db: &Db<'_>,
    whose: Whose,
) -> Result<Vec<(RunRecord, Option<RunInput>)>, StoreError> {
    let sql = format!(
        "UPDATE runs SET owner = $1 WHERE (status IN ('queued', 'running') OR input IS NOT NULL) \
         AND {} RETURNING {RUN_COLUMNS}, input, submitted",
        whose.condition()
    );
    let mut rows = Vec::new();
    for row in db.query(&sql, &[&db.gateway()]).await? {
        let run = run_from_row(&row)?;
        let input: Option<String> = get(&row, 13)?;
        let submitted: i64 = get(&row, 14)?;
        let input = input.and_then(|json| match serde_json::from_str(&json) {
            Ok(input) => Some(input),
            Err(e) => {
                tracing::warn!(run_id = %run.run_id, error = %e, "a queued run's stored input does not decode");
                None
            }
        });
        rows.push((submitted, run, input));
    }
    rows.sort_by_key(|(submitted, _, _)| *submitted);
    Ok(rows
        .into_iter()
        .map(|(_, run, input)| (run, input))
        .collect())
}
