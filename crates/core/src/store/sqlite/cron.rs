//! The SQL of cron jobs (`cron_jobs`). Writes run on the writer thread inside its group
//! transaction, so a job is acknowledged only once committed; reads run on pooled connections.

use rusqlite::{Connection, params};

use super::types::{all, bind, first};
use crate::store::dialect::SQLITE;
use crate::store::rules::rows::{self, CRON_COLUMNS};
use crate::store::rules::work::{self, cron_id_taken, cron_not_found};
use crate::store::{CronJobRecord, StoreError};

pub(super) fn insert(conn: &Connection, job: &CronJobRecord) -> Result<(), StoreError> {
    let values = rows::cron_params(job);
    let sql = format!(
        "INSERT INTO cron_jobs ({CRON_COLUMNS}) VALUES ({})",
        rows::placeholders(SQLITE, 1, values.len())
    );
    match conn.prepare_cached(&sql)?.execute(bind(&values)) {
        Ok(_) => Ok(()),
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            Err(cron_id_taken(&job.id))
        }
        Err(e) => Err(e.into()),
    }
}

pub(super) fn list(conn: &Connection) -> Result<Vec<CronJobRecord>, StoreError> {
    let sql = format!("SELECT {CRON_COLUMNS} FROM cron_jobs ORDER BY id");
    all(conn, &sql, [], |r| rows::cron_job(r))
}

pub(super) fn get(conn: &Connection, id: &str) -> Result<Option<CronJobRecord>, StoreError> {
    let sql = format!("SELECT {CRON_COLUMNS} FROM cron_jobs WHERE id = ?1");
    first(conn, &sql, [id], |r| rows::cron_job(r))
}

pub(super) fn remove(conn: &Connection, id: &str) -> Result<CronJobRecord, StoreError> {
    let job = get(conn, id)?.ok_or_else(|| cron_not_found(id))?;
    conn.prepare_cached("DELETE FROM cron_jobs WHERE id = ?1")?
        .execute([id])?;
    Ok(job)
}

/// Changes what the job is; false when it is gone.
pub(super) fn update(conn: &Connection, job: &CronJobRecord) -> Result<bool, StoreError> {
    let changed = conn.prepare_cached(work::CRON_UPDATE)?.execute(params![
        job.id,
        job.name,
        job.enabled,
        job.schedule,
        job.message,
        job.deliver
    ])?;
    Ok(changed > 0)
}

/// Records a firing; a scheduled one (`slot`) raises `last_slot` and never lowers it. Answers
/// false when the job is gone (removed while it fired).
pub(super) fn record_firing(
    conn: &Connection,
    id: &str,
    slot: Option<i64>,
    run_id: &crate::ids::RunId,
    at: i64,
) -> Result<bool, StoreError> {
    let changed = conn
        .prepare_cached(&work::record_firing(SQLITE))?
        .execute(params![id, slot, run_id, at])?;
    Ok(changed > 0)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use crate::store::{CronJobRecord, CronStore, SqliteStore, StoreError};

    fn job(id: &str) -> CronJobRecord {
        CronJobRecord {
            id: id.to_string(),
            agent_id: "main".into(),
            name: Some(format!("The {id} job")),
            enabled: id != "off",
            schedule: "every 1m".into(),
            message: "tick".into(),
            deliver: true,
            created_at: 1_000,
            last_slot: None,
            last_run_id: None,
            last_fired_at: None,
        }
    }

    use crate::ids::RunId;

    #[tokio::test]
    async fn jobs_are_stored_once_and_last_slot_only_rises() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        store.cron_insert(job("b")).await.unwrap();
        store.cron_insert(job("a")).await.unwrap();
        let again = store.cron_insert(job("a")).await.unwrap_err();
        assert!(matches!(again, StoreError::Conflict(_)), "{again}");

        assert!(
            store
                .cron_record_firing("a", Some(61_000), &RunId::from_string("r1"), 61_500)
                .await
                .unwrap()
        );
        // A manual firing records its run but takes no slot; an older slot never lowers it.
        assert!(
            store
                .cron_record_firing("a", None, &RunId::from_string("r2"), 70_000)
                .await
                .unwrap()
        );
        assert!(
            store
                .cron_record_firing("a", Some(1_000), &RunId::from_string("r3"), 80_000)
                .await
                .unwrap()
        );
        let a = store.cron_get("a").await.unwrap().unwrap();
        assert_eq!(
            (a.last_slot, a.last_run_id.as_deref(), a.last_fired_at),
            (Some(61_000), Some("r3"), Some(80_000))
        );
        let ids: Vec<String> = store
            .cron_list()
            .await
            .unwrap()
            .into_iter()
            .map(|j| j.id)
            .collect();
        assert_eq!(ids, ["a", "b"]);
        store.cron_insert(job("off")).await.unwrap();
        let off = store.cron_get("off").await.unwrap().unwrap();
        assert_eq!(off, job("off"));
        assert_eq!(
            (off.name.as_deref(), off.enabled),
            (Some("The off job"), false)
        );

        assert_eq!(store.cron_remove("a").await.unwrap().id, "a");
        assert!(matches!(
            store.cron_remove("a").await,
            Err(StoreError::NotFound(_))
        ));
        assert!(
            !store
                .cron_record_firing("a", Some(121_000), &RunId::from_string("r4"), 0)
                .await
                .unwrap()
        );
        store.close().await;
    }
}
