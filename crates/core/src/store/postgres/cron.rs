//! The SQL of cron jobs (`cron_jobs`). Writes run inside the write's transaction, so a job is
//! acknowledged only once committed; reads run on pooled connections. Each write is one
//! statement, so gateways sharing the database cannot interleave within it.

use super::db::Db;
use crate::ids::RunId;
use crate::store::dialect::{POSTGRES, spell};
use crate::store::rules::rows::{self, CRON_COLUMNS};
use crate::store::rules::work::{self, cron_id_taken, cron_not_found};
use crate::store::{CronJobRecord, StoreError};

/// Stores a new job; an id in use is a conflict (the stored job is left as it is).
pub(super) async fn insert(db: &Db<'_>, job: &CronJobRecord) -> Result<(), StoreError> {
    // `DO NOTHING` rather than a unique violation: the conflict is answered without aborting
    // the transaction.
    let values = rows::cron_params(job);
    let sql = format!(
        "INSERT INTO cron_jobs ({CRON_COLUMNS}) VALUES ({}) ON CONFLICT (id) DO NOTHING",
        rows::placeholders(POSTGRES, 1, values.len())
    );
    if db.execute_with(&sql, &values).await? == 0 {
        return Err(cron_id_taken(&job.id));
    }
    Ok(())
}

pub(super) async fn list(db: &Db<'_>) -> Result<Vec<CronJobRecord>, StoreError> {
    let sql = format!("SELECT {CRON_COLUMNS} FROM cron_jobs ORDER BY id");
    db.query(&sql, &[])
        .await?
        .iter()
        .map(rows::cron_job)
        .collect()
}

pub(super) async fn get(db: &Db<'_>, id: &str) -> Result<Option<CronJobRecord>, StoreError> {
    let sql = format!("SELECT {CRON_COLUMNS} FROM cron_jobs WHERE id = $1");
    db.query_opt(&sql, &[&id])
        .await?
        .as_ref()
        .map(rows::cron_job)
        .transpose()
}

/// Removes the job and answers it as it was (one statement: of two gateways removing it, one
/// answers the job and the other `NotFound`).
pub(super) async fn remove(db: &Db<'_>, id: &str) -> Result<CronJobRecord, StoreError> {
    let sql = format!("DELETE FROM cron_jobs WHERE id = $1 RETURNING {CRON_COLUMNS}");
    match db.query_opt(&sql, &[&id]).await? {
        Some(row) => rows::cron_job(&row),
        None => Err(cron_not_found(id)),
    }
}

/// Changes what the job is; false when it is gone.
pub(super) async fn update(db: &Db<'_>, job: &CronJobRecord) -> Result<bool, StoreError> {
    let sql = spell(work::CRON_UPDATE, POSTGRES).into_owned();
    let changed = db
        .execute(
            &sql,
            &[
                &job.id,
                &job.name,
                &job.enabled,
                &job.schedule,
                &job.message,
                &job.deliver,
            ],
        )
        .await?;
    Ok(changed > 0)
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
    let sql = spell(&work::record_firing(POSTGRES), POSTGRES).into_owned();
    let changed = db
        .execute(&sql, &[&id, &slot, &run_id.as_str(), &at])
        .await?;
    Ok(changed > 0)
}
