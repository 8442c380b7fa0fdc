//! The SQL of cron jobs (`cron_jobs`). Writes run inside the write's transaction, so a job is
//! acknowledged only once committed; reads run on pooled connections. Each write is one
//! statement, so gateways sharing the database cannot interleave within it.

use tokio_postgres::Row;

use super::db::Db;
use super::schema::get as col;
use crate::ids::RunId;
use crate::store::{CronJobRecord, StoreError};

const COLUMNS: &str = "id, agent_id, schedule, message, deliver, created_at, last_slot, \
    last_run_id, last_fired_at, name, enabled";

fn from_row(row: &Row) -> Result<CronJobRecord, StoreError> {
    Ok(CronJobRecord {
        id: col(row, 0)?,
        agent_id: col(row, 1)?,
        schedule: col(row, 2)?,
        message: col(row, 3)?,
        deliver: col(row, 4)?,
        created_at: col(row, 5)?,
        last_slot: col(row, 6)?,
        last_run_id: col::<Option<String>>(row, 7)?.map(RunId::from_string),
        last_fired_at: col(row, 8)?,
        name: col(row, 9)?,
        enabled: col(row, 10)?,
    })
}

/// Stores a new job; an id in use is a conflict (the stored job is left as it is).
pub(super) async fn insert(db: &Db<'_>, job: &CronJobRecord) -> Result<(), StoreError> {
    // `DO NOTHING` rather than a unique violation: the conflict is answered without aborting
    // the transaction.
    let sql = format!(
        "INSERT INTO cron_jobs ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT (id) DO NOTHING"
    );
    let inserted = db
        .execute(
            &sql,
            &[
                &job.id,
                &job.agent_id,
                &job.schedule,
                &job.message,
                &job.deliver,
                &job.created_at,
                &job.last_slot,
                &job.last_run_id.as_deref(),
                &job.last_fired_at,
                &job.name,
                &job.enabled,
            ],
        )
        .await?;
    if inserted == 0 {
        return Err(StoreError::Conflict(format!(
            "id: a cron job with id \"{}\" already exists; pick another id, or remove it first (cron.remove)",
            job.id
        )));
    }
    Ok(())
}

pub(super) async fn list(db: &Db<'_>) -> Result<Vec<CronJobRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM cron_jobs ORDER BY id");
    db.query(&sql, &[]).await?.iter().map(from_row).collect()
}

pub(super) async fn get(db: &Db<'_>, id: &str) -> Result<Option<CronJobRecord>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM cron_jobs WHERE id = $1");
    db.query_opt(&sql, &[&id])
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// Removes the job and answers it as it was (one statement: of two gateways removing it, one
/// answers the job and the other `NotFound`).
pub(super) async fn remove(db: &Db<'_>, id: &str) -> Result<CronJobRecord, StoreError> {
    let sql = format!("DELETE FROM cron_jobs WHERE id = $1 RETURNING {COLUMNS}");
    match db.query_opt(&sql, &[&id]).await? {
        Some(row) => from_row(&row),
        None => Err(not_found(id)),
    }
}

/// Records a firing; a scheduled one (`slot`) raises `last_slot` and never lowers it. Answers
/// false when the job is gone (removed while it fired).
pub(super) async fn record_firing(
    db: &Db<'_>,
    id: &str,
    slot: Option<i64>,
    run_id: &RunId,
    at: i64,
) -> Result<bool, StoreError> {
    // GREATEST ignores NULLs: no slot keeps `last_slot`, and a first slot sets it.
    let changed = db
        .execute(
            "UPDATE cron_jobs SET last_slot = GREATEST(last_slot, $2::BIGINT), \
             last_run_id = $3, last_fired_at = $4 WHERE id = $1",
            &[&id, &slot, &run_id.as_str(), &at],
        )
        .await?;
    Ok(changed > 0)
}

fn not_found(id: &str) -> StoreError {
    StoreError::NotFound(format!(
        "cron job not found: {id} (cron.list shows the jobs)"
    ))
}
