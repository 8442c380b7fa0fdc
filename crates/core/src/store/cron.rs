//! The stored form of a cron job (SPEC §9.3). The schedule is kept in its canonical text form and
//! parsed by the cron component when read, so the store knows nothing of schedules.

use crate::ids::RunId;

/// One row of `cron_jobs`.
#[derive(Debug, Clone, PartialEq)]
pub struct CronJobRecord {
    /// Unique; names the session `agent:<agent_id>:cron:<id>`.
    pub id: String,
    pub agent_id: String,
    /// A name for people (the reference's); `None` = the id.
    pub name: Option<String>,
    /// False = the scheduler skips the job (`cron.run` still fires it).
    pub enabled: bool,
    /// Canonical schedule text (`"*/5 * * * *"`, `"every 30s"`).
    pub schedule: String,
    pub message: String,
    /// Reply delivery requested (the outbox acts on it).
    pub deliver: bool,
    /// When the job was added (ms); interval slots are counted from here.
    pub created_at: i64,
    /// The newest slot the schedule fired (ms): slots at or before it never fire again.
    pub last_slot: Option<i64>,
    /// The run of the last firing (scheduled or manual).
    pub last_run_id: Option<RunId>,
    /// When the last firing was submitted (ms).
    pub last_fired_at: Option<i64>,
}
