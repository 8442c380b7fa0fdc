//! Cron jobs (SPEC §9.3): scheduled agent turns.
//!
//! Owns: the schedule grammar (`schedule.rs`), the job operations behind `cron.add`,
//! `cron.list`, `cron.remove` and `cron.run` ([`Cron`], this file), and the scheduler task that
//! fires due slots (`scheduler.rs`) on the engine's clock. Jobs live in the store
//! (`cron_jobs`); a firing is an ordinary run submitted to the runtime, on lane `cron`, in the
//! job's session `agent:<agentId>:cron:<jobId>`.
//!
//! Must not: run agent turns itself (the runtime does), talk to channels (reply delivery belongs
//! to the outbox; `deliver` is only stored and handed on), or fire a slot twice. Exactly-once
//! per slot rests on two durable facts: the run's idempotency key `cron:<jobId>:<slotMs>` (a
//! second submit of the same slot answers the first run) and the job's `last_slot` (slots at or
//! before it are never due again). See `docs/cron.md` for the missed-slot rule.

pub mod schedule;
mod scheduler;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use switchboard_protocol::cron::{
    CronAddParams, CronJob, CronListResult, CronRemoveResult, CronRunResult,
};
use switchboard_protocol::message::Provenance;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::clock::Clock;
use crate::config::Config;
use crate::delivery::route_of;
use crate::error::{CoreError, CoreResult};
use crate::keys::normalize_agent_id;
use crate::runtime::lanes::Lane;
use crate::runtime::{Accepted, Deliver, RunRequest, Runtime};
use crate::sessions::Resolver;
use crate::store::{CronJobRecord, Store};
use schedule::Schedule;

/// Longest job id.
const MAX_ID_CHARS: usize = 64;

/// What the cron component is built from.
pub struct CronParts {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub runtime: Runtime,
    pub resolver: Arc<Resolver>,
    pub clock: Arc<dyn Clock>,
    pub tasks: TaskTracker,
    /// Cancelled when the engine stops: the scheduler ends.
    pub stop: CancellationToken,
}

/// The cron component: the jobs, the scheduler's wake-up and its progress.
pub struct Cron {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    runtime: Runtime,
    resolver: Arc<Resolver>,
    clock: Arc<dyn Clock>,
    tasks: TaskTracker,
    stop: CancellationToken,
    /// Woken by every add and remove, so the scheduler recomputes its next slot.
    wake: Notify,
    /// Counts adds and removes; the scheduler reports which count it has seen.
    changes: AtomicU64,
    /// What the scheduler has evaluated so far (see [`Cron::settled`]).
    settled: watch::Sender<Settled>,
    /// Whether the scheduler task runs (set when started, cleared when it ends).
    running: watch::Sender<bool>,
}

/// A point the scheduler has reached: every slot due at `now`, with every job change up to
/// `changes`, has been fired, and nothing falls due before `next`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Settled {
    now: i64,
    next: i64,
    changes: u64,
}

impl Cron {
    pub fn new(parts: CronParts) -> Arc<Self> {
        Arc::new(Self {
            config: parts.config,
            store: parts.store,
            runtime: parts.runtime,
            resolver: parts.resolver,
            clock: parts.clock,
            tasks: parts.tasks,
            stop: parts.stop,
            wake: Notify::new(),
            changes: AtomicU64::new(0),
            settled: watch::channel(Settled {
                now: i64::MIN,
                next: i64::MIN,
                changes: 0,
            })
            .0,
            running: watch::channel(false).0,
        })
    }

    /// Tells the scheduler the jobs changed.
    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::SeqCst);
        self.wake.notify_one();
    }
}

/// Why a job fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// The schedule's slot at this time (ms).
    Slot(i64),
    /// `cron.run`.
    Manual,
}

impl Cron {
    /// `cron.add`: validates everything, then stores the job; nothing is stored on bad input.
    pub async fn add(&self, p: CronAddParams) -> CoreResult<CronJob> {
        let id = match p.id.as_deref() {
            Some(id) => check_id(id)?,
            None => uuid::Uuid::new_v4().to_string(),
        };
        let schedule = Schedule::from_param(&p.schedule).map_err(CoreError::Invalid)?;
        check_tz(p.tz.as_deref())?;
        if p.message.trim().is_empty() {
            return Err(CoreError::invalid(
                "message: empty; expected the text the agent receives at each firing",
            ));
        }
        let agent_id = self.job_agent(p.agent_id.as_deref())?;
        let now = self.clock.now_ms();
        if schedule.next_after(now, now).is_none() {
            return Err(CoreError::invalid(format!(
                "schedule: {:?} matches no date, so it would never fire; {}",
                schedule.to_string(),
                schedule::ACCEPTED
            )));
        }
        let record = CronJobRecord {
            id,
            agent_id,
            schedule: schedule.to_string(),
            message: p.message,
            deliver: p.deliver.unwrap_or(false),
            created_at: now,
            last_slot: None,
            last_run_id: None,
            last_fired_at: None,
        };
        self.store.cron_insert(record.clone()).await?;
        self.changed();
        Ok(job_view(&record, &schedule, now))
    }

    /// `cron.list`: every job by id, with its next slot.
    pub async fn list(&self) -> CoreResult<CronListResult> {
        let now = self.clock.now_ms();
        let jobs = self.store.cron_list().await?;
        Ok(CronListResult {
            enabled: self.config.cron.enabled,
            jobs: jobs
                .iter()
                .filter_map(|job| match Schedule::parse(&job.schedule) {
                    Ok(schedule) => Some(job_view(job, &schedule, now)),
                    Err(e) => {
                        tracing::warn!(job = %job.id, error = %e, "stored cron job has a bad schedule");
                        None
                    }
                })
                .collect(),
        })
    }

    /// `cron.remove`: deletes the job (its session and transcript stay).
    pub async fn remove(&self, id: &str) -> CoreResult<CronRemoveResult> {
        let removed = self.store.cron_remove(id.trim()).await?;
        self.changed();
        Ok(CronRemoveResult {
            ok: true,
            id: removed.id,
            removed: true,
        })
    }

    /// `cron.run`: fires the job now, outside its schedule (it does not count as a slot), even
    /// while `cron.enabled` is false.
    pub async fn run(&self, id: &str) -> CoreResult<CronRunResult> {
        let id = id.trim();
        let job = self.store.cron_get(id).await?.ok_or_else(|| {
            CoreError::NotFound(format!(
                "cron job not found: {id} (cron.list shows the jobs)"
            ))
        })?;
        let accepted = self.fire(&job, Trigger::Manual).await?;
        Ok(CronRunResult {
            ok: true,
            id: job.id,
            run_id: accepted.run_id.into_string(),
            session_key: accepted.session_key.display().to_string(),
            status: "started".into(),
        })
    }

    /// Submits one firing of `job` as a run and records it on the job. Answers once the run is
    /// stored and queued.
    pub(crate) async fn fire(&self, job: &CronJobRecord, trigger: Trigger) -> CoreResult<Accepted> {
        let key = self.resolver.canonical(&session_key(job), None)?;
        let mut provenance = Provenance {
            kind: "cron".into(),
            job_id: Some(job.id.clone()),
            ..Provenance::default()
        };
        let mut idempotency_key = None;
        match trigger {
            Trigger::Slot(slot) => {
                provenance.trigger = Some("schedule".into());
                provenance.scheduled_at = Some(slot);
                idempotency_key = Some(format!("cron:{}:{slot}", job.id));
            }
            Trigger::Manual => provenance.trigger = Some("manual".into()),
        }
        let mut request = RunRequest::new(key.clone(), Lane::Cron)
            .with_message(job.message.clone(), Some(provenance));
        request.idempotency_key = idempotency_key;
        request.create = Some(self.resolver.new_session(&key));
        if job.deliver {
            // A cron session has no chat of its own: the reply goes where the agent's main
            // session was last talked to (its route), or is recorded when it has none.
            request.deliver = Some(Deliver {
                kind: "reply",
                route: self.main_route(&job.agent_id).await,
            });
        }
        let accepted = self.runtime.submit(request).await?;
        let slot = match trigger {
            Trigger::Slot(slot) => Some(slot),
            Trigger::Manual => None,
        };
        let now = self.clock.now_ms();
        self.store
            .cron_record_firing(&job.id, slot, &accepted.run_id, now)
            .await?;
        Ok(accepted)
    }

    /// The delivery route of `agent_id`'s main session, if it has one.
    async fn main_route(
        &self,
        agent_id: &str,
    ) -> Option<switchboard_protocol::sessions::DeliveryContext> {
        let main = self.config.main_session_key(agent_id);
        let entry = self.store.get(&main).await.ok().flatten()?;
        route_of(&entry)
    }

    /// The agent of a new job: the given one (normalised) if configured, else the default.
    fn job_agent(&self, agent_id: Option<&str>) -> CoreResult<String> {
        let Some(agent_id) = agent_id else {
            return Ok(self.config.default_agent_id());
        };
        let id = normalize_agent_id(agent_id);
        let known = self.config.agent_ids();
        if known.contains(&id) {
            return Ok(id);
        }
        Err(CoreError::invalid(format!(
            "agentId: unknown agent {agent_id:?}; expected one of the configured agents: {}",
            known.join(", ")
        )))
    }
}

/// The session a job's firings run in.
fn session_key(job: &CronJobRecord) -> String {
    format!("agent:{}:cron:{}", job.agent_id, job.id)
}

/// A job id: trimmed, lower-cased, `[a-z0-9][a-z0-9_-]{0,63}`.
fn check_id(input: &str) -> CoreResult<String> {
    let id = input.trim().to_ascii_lowercase();
    let ok = id.len() <= MAX_ID_CHARS
        && id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        return Ok(id);
    }
    Err(CoreError::invalid(format!(
        "id: {input:?} is not a valid job id; expected 1–{MAX_ID_CHARS} characters a-z, 0-9, \
         '-' or '_', starting with a letter or digit (or no id: one is generated)"
    )))
}

fn check_tz(tz: Option<&str>) -> CoreResult<()> {
    match tz.map(str::trim) {
        None => Ok(()),
        Some(tz) if ["utc", "etc/utc", "z"].contains(&tz.to_ascii_lowercase().as_str()) => Ok(()),
        Some(tz) => Err(CoreError::invalid(format!(
            "tz: {tz:?} is not supported; schedules are evaluated in UTC (expected \"UTC\" or no tz)"
        ))),
    }
}

fn job_view(job: &CronJobRecord, schedule: &Schedule, now: i64) -> CronJob {
    let after = job.last_slot.unwrap_or(job.created_at);
    let next_run_at = schedule
        .due(after, now, job.created_at)
        .or_else(|| schedule.next_after(after.max(now), job.created_at));
    CronJob {
        id: job.id.clone(),
        agent_id: job.agent_id.clone(),
        session_key: session_key(job),
        schedule: job.schedule.clone(),
        kind: schedule.kind().into(),
        every_ms: schedule.every_ms(),
        tz: "UTC".into(),
        message: job.message.clone(),
        deliver: job.deliver,
        created_at: job.created_at,
        next_run_at,
        last_slot: job.last_slot,
        last_run_id: job.last_run_id.as_ref().map(|r| r.as_str().to_string()),
        last_fired_at: job.last_fired_at,
    }
}
