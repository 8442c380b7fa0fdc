//! Several gateways on one database, with fenced ownership (SPEC §4.3, docs/scale-out.md).
//!
//! Each start of a gateway registers a new **epoch** (a number no other start ever had) in its
//! `gateways` row, and says every [`HEARTBEAT`] that it is alive. The work it drives (runs,
//! sub-agents, exchanges) carries the epoch it is held under, and a write for it commits only
//! while the stored record still carries that epoch: a gateway that lost its work commits
//! nothing for it afterwards.
//!
//! Work is taken from a gateway only on **positive evidence** that it stopped: its row is gone
//! (it said goodbye, or it restarted with a new epoch), or another gateway kept beating without
//! a gap through a whole [`LEASE_MS`] after its last beat — the database answered that one all
//! along and not the stopped one. A stall of the database itself breaks every gateway's
//! streak, so it is evidence against nobody. Declaring a gateway stopped deletes its row in the
//! same transaction that takes its work; its next heartbeat finds no row, and it registers a
//! new epoch (its old work stays with whoever took it).
//!
//! Times here are the database's own clock, so gateways on machines whose clocks disagree
//! still agree on who is alive.

use std::time::Duration;

use super::db::Db;
use super::schema::{get, run_columns, run_from_row};
use crate::ids::RunId;
use crate::store::rules::work::{LIVE_RUN, decode_input};
use crate::store::{RunInput, RunRecord, StoreError};

/// How often a gateway says it is alive.
pub(super) const HEARTBEAT: Duration = Duration::from_secs(2);
/// How long another gateway must have beaten without a gap, after a gateway's last beat,
/// before it takes that gateway's work.
pub(super) const LEASE_MS: i64 = 10_000;
/// How long after it sent its last renewing heartbeat a gateway counts its lease as held and
/// starts new runs: another gateway can declare it stopped only a whole lease after that beat
/// landed, which was after it was sent.
pub(super) const LEASE_HELD: Duration = Duration::from_secs(8);
/// A pause between two heartbeats longer than this starts a gateway's streak again: what it
/// saw of the others before the pause is no evidence.
pub(super) const GAP_MS: i64 = 5_000;
/// Held by a transaction that declares gateways stopped and takes work, so claims happen one
/// after another (each sees what the last one took).
const CLAIM_LOCK: i64 = 0x5357_4254_4348_0002;
/// Taken shared by each fenced batch of a run (from before its check until its commit) and
/// exclusive by a claim that is about to take runs: no claim slips between a batch's check of
/// its epoch and its commit. An advisory lock lives in memory only, where a row lock would
/// write the run's row.
const FENCE_LOCK: i64 = 0x5357_4254_4348_0003;

/// The database's clock in ms.
pub(super) const DB_NOW: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The gateways that hold their work: those with a row (a stopped one's row is gone).
pub(super) fn live_gateways() -> &'static str {
    "SELECT id FROM gateways"
}

/// The SQL condition of a record of `table` whose epoch no gateway holds any more.
pub(super) fn orphaned(table: &str) -> String {
    format!(
        "({table}.epoch IS NULL OR NOT EXISTS (SELECT 1 FROM gateways g WHERE g.epoch = {table}.epoch))"
    )
}

/// Fails unless the run is still held under `epoch`. The shared fence lock is taken first and
/// kept until the commit; the check is a statement of its own, so it reads the runs as they are
/// once the lock is held (a claim that committed while this waited is seen).
pub(super) async fn fence(db: &Db<'_>, run_id: &RunId, epoch: i64) -> Result<(), StoreError> {
    db.execute("SELECT pg_advisory_xact_lock_shared($1)", &[&FENCE_LOCK])
        .await?;
    let held = db
        .query_opt(
            "SELECT 1 FROM runs WHERE run_id = $1 AND epoch IS NOT DISTINCT FROM $2",
            &[&run_id.as_str(), &epoch],
        )
        .await?;
    self::held(u64::from(held.is_some()), || format!("run {run_id}"))
}

/// The answer of a write for owned work that touched `written` rows: none means the record no
/// longer carries the writer's epoch, and the write is refused naming `what` (`run R`).
pub(super) fn held(written: u64, what: impl FnOnce() -> String) -> Result<(), StoreError> {
    match written {
        0 => Err(StoreError::Fenced(format!(
            "{} is no longer this gateway's: another gateway took it up while this one could \
             not renew its lease",
            what()
        ))),
        _ => Ok(()),
    }
}

/// Registers this start of the gateway under a new epoch (replacing its last start's row, whose
/// work is then nobody's) and answers the epoch, and whether another gateway holds a row.
pub(super) async fn register(db: &Db<'_>) -> Result<(i64, bool), StoreError> {
    let sql = format!(
        "INSERT INTO gateways (id, epoch, started_at, heartbeat_at, streak_since) \
         VALUES ($1, nextval('gateway_epochs'), {DB_NOW}, {DB_NOW}, {DB_NOW}) \
         ON CONFLICT (id) DO UPDATE SET epoch = excluded.epoch, started_at = excluded.started_at, \
         heartbeat_at = excluded.heartbeat_at, streak_since = excluded.streak_since \
         RETURNING epoch, {OTHERS}"
    );
    let row = db.query_one(&sql, &[&db.gateway()]).await?;
    Ok((get(&row, 0)?, get(&row, 1)?))
}

/// Whether a gateway other than `$1` holds a row (the bus sends only then).
const OTHERS: &str = "EXISTS (SELECT 1 FROM gateways o WHERE o.id <> $1)";

/// The heartbeat's statement (`$1`: the gateway, `$2`: its epoch): one row when the lease was
/// renewed (saying whether another gateway holds a row), none when another gateway declared
/// this one stopped.
pub(super) fn heartbeat_sql() -> String {
    format!(
        "UPDATE gateways SET heartbeat_at = {DB_NOW}, streak_since = CASE \
         WHEN {DB_NOW} - heartbeat_at > {GAP_MS} THEN {DB_NOW} ELSE streak_since END \
         WHERE id = $1 AND epoch = $2 RETURNING {OTHERS}"
    )
}

/// How many gateways hold a row (are alive, as far as the store knows).
pub(super) async fn members(db: &Db<'_>) -> Result<u64, StoreError> {
    let row = db.query_one("SELECT count(*) FROM gateways", &[]).await?;
    let count: i64 = get(&row, 0)?;
    Ok(count.max(0) as u64)
}

/// The gateway stops: its row goes, so the others take up its queued work at once.
pub(super) async fn retire(db: &Db<'_>) -> Result<(), StoreError> {
    db.execute(
        "DELETE FROM gateways WHERE id = $1 AND epoch = $2",
        &[&db.gateway(), &db.epoch()],
    )
    .await?;
    Ok(())
}

/// Starts a claim: waits for the other claims, checks that this gateway still holds its epoch
/// (one declared stopped takes nothing), and declares stopped the gateways this one has
/// positive evidence against. Inside the claim's transaction.
pub(super) async fn begin_claim(db: &Db<'_>) -> Result<(), StoreError> {
    db.execute("SELECT pg_advisory_xact_lock($1)", &[&CLAIM_LOCK])
        .await?;
    let member = db
        .query_opt(
            "SELECT 1 FROM gateways WHERE id = $1 AND epoch = $2 FOR SHARE",
            &[&db.gateway(), &db.epoch()],
        )
        .await?;
    if member.is_none() {
        return Err(StoreError::Fenced(
            "this gateway was declared stopped by another; it takes no work until it registers again"
                .into(),
        ));
    }
    // `me` beat within the gap, and its beats since max(its streak's start, the other's last
    // beat) span a whole lease: the database answered it all that time, and not the other.
    let declare = format!(
        "DELETE FROM gateways g USING gateways me \
         WHERE me.id = $1 AND me.epoch = $2 AND g.id <> $1 \
         AND me.heartbeat_at > {DB_NOW} - {GAP_MS} \
         AND me.heartbeat_at - GREATEST(me.streak_since, g.heartbeat_at) > {LEASE_MS} \
         RETURNING g.id, g.epoch"
    );
    for row in db.query(&declare, &[&db.gateway(), &db.epoch()]).await? {
        let (id, epoch): (String, Option<i64>) = (get(&row, 0)?, get(&row, 1)?);
        tracing::warn!(
            gateway = %id,
            epoch,
            "declared a gateway stopped: it has not renewed its lease for a whole lease while the \
             database answered this one; its work is taken up here"
        );
    }
    Ok(())
}

/// Claims the live runs no gateway holds (queued, running, or aborted with their message
/// unwritten), in submission order, with their stored input. After [`begin_claim`].
pub(super) async fn claim_runs(
    db: &Db<'_>,
) -> Result<Vec<(RunRecord, Option<RunInput>)>, StoreError> {
    // Waits for the fenced batches in flight only when there is a run to take.
    let lock = format!(
        "SELECT pg_advisory_xact_lock($1) WHERE EXISTS (SELECT 1 FROM runs WHERE {} LIMIT 1)",
        orphaned("runs")
    );
    db.execute(&lock, &[&FENCE_LOCK]).await?;
    let sql = format!(
        "UPDATE runs SET owner = $1, epoch = $2 WHERE {} AND {} RETURNING {}, input, submitted",
        LIVE_RUN,
        orphaned("runs"),
        run_columns()
    );
    let mut rows = Vec::new();
    for row in db.query(&sql, &[&db.gateway(), &db.epoch()]).await? {
        let run = run_from_row(&row)?;
        let input: Option<String> = get(&row, 14)?;
        let submitted: i64 = get(&row, 15)?;
        let input = decode_input(&run, input);
        rows.push((submitted, run, input));
    }
    rows.sort_by_key(|(submitted, _, _)| *submitted);
    Ok(rows
        .into_iter()
        .map(|(_, run, input)| (run, input))
        .collect())
}
