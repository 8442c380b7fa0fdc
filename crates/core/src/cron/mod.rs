//! Cron jobs (SPEC §9.3): scheduled agent turns.
//!
//! Owns: the schedule grammar (`schedule.rs`), the job operations behind `cron.add`,
//! `cron.list`, `cron.remove` and `cron.run` (this file), the scheduler task that fires due
//! slots (`scheduler.rs`), and the clock it reads (`crate::clock`). Jobs live in the store
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

use serde_json::json;
use switchboard_protocol::cron::{
    CronAddParams, CronJob, CronListResult, CronRemoveResult, CronRunResult,
};
use tokio::sync::{Notify, watch};

use crate::clock::{Clock, SystemClock};
use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::keys::normalize_agent_id;
use crate::runtime::Deliver;
use crate::runtime::lanes::Lane;
use crate::runtime::{Accepted, RunRequest, user_message};
use crate::store::CronJobRecord;
use schedule::Schedule;

/// Longest job id.
const MAX_ID_CHARS: usize = 64;

/// The engine's cron state: the clock, the scheduler's wake-up and its progress.
pub struct CronState {
    clock: Arc<dyn Clock>,
    /// Woken by every add and remove, so the scheduler recomputes its next slot.
    wake: Notify,
    /// Counts adds and removes; the scheduler reports which count it has seen.
    changes: AtomicU64,
    /// What the scheduler has evaluated so far (see [`Engine::cron_settled`]).
    settled: watch::Sender<Settled>,
    stop: watch::Sender<bool>,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// A point the scheduler has reached: every slot due at `now`, with every job change up to
/// `changes`, has been fired, and nothing falls due before `next`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Settled {
    now: i64,
    next: i64,
    changes: u64,
}

impl CronState {
    /// `clock`: `None` = the system clock.
    pub fn new(clock: Option<Arc<dyn Clock>>) -> Self {
        Self {
            clock: clock.unwrap_or_else(|| Arc::new(SystemClock)),
            wake: Notify::new(),
            changes: AtomicU64::new(0),
            settled: watch::channel(Settled {
                now: i64::MIN,
                next: i64::MIN,
                changes: 0,
            })
            .0,
            stop: watch::channel(false).0,
            task: std::sync::Mutex::new(None),
        }
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
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

impl Engine {
    /// `cron.add`: validates everything, then stores the job; nothing is stored on bad input.
    pub async fn cron_add(&self, p: CronAddParams) -> CoreResult<CronJob> {
        let id = match p.id.as_deref() {
            Some(id) => check_id(id)?,
            None => uuid::Uuid::new_v4().to_string(),
        };
        let schedule = Schedule::from_param(&p.schedule).map_err(Engine::invalid)?;
        check_tz(p.tz.as_deref())?;
        if p.message.trim().is_empty() {
            return Err(Engine::invalid(
                "message: empty; expected the text the agent receives at each firing",
            ));
        }
        let agent_id = self.cron_agent(p.agent_id.as_deref())?;
        let now = self.cron_state().now_ms();
        if schedule.next_after(now, now).is_none() {
            return Err(Engine::invalid(format!(
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
        self.store().cron_insert(record.clone()).await?;
        self.cron_state().changed();
        Ok(job_view(&record, &schedule, now))
    }

    /// `cron.list`: every job by id, with its next slot.
    pub async fn cron_list(&self) -> CoreResult<CronListResult> {
        let now = self.cron_state().now_ms();
        let jobs = self.store().cron_list().await?;
        Ok(CronListResult {
            enabled: self.config().cron.enabled,
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
    pub async fn cron_remove(&self, id: &str) -> CoreResult<CronRemoveResult> {
        let removed = self.store().cron_remove(id.trim()).await?;
        self.cron_state().changed();
        Ok(CronRemoveResult {
            ok: true,
            id: removed.id,
            removed: true,
        })
    }

    /// `cron.run`: fires the job now, outside its schedule (it does not count as a slot), even
    /// while `cron.enabled` is false.
    pub async fn cron_run(self: &Arc<Self>, id: &str) -> CoreResult<CronRunResult> {
        let id = id.trim();
        let job = self.store().cron_get(id).await?.ok_or_else(|| {
            CoreError::NotFound(format!(
                "cron job not found: {id} (cron.list shows the jobs)"
            ))
        })?;
        let accepted = self.fire_cron(&job, Trigger::Manual).await?;
        Ok(CronRunResult {
            ok: true,
            id: job.id,
            run_id: accepted.run_id,
            session_key: accepted.session_key,
            status: "started".into(),
        })
    }

    /// Submits one firing of `job` as a run and records it on the job. Answers once the run is
    /// stored and queued.
    pub(crate) async fn fire_cron(
        self: &Arc<Self>,
        job: &CronJobRecord,
        trigger: Trigger,
    ) -> CoreResult<Accepted> {
        let key = self.canonical_key(&session_key(job), None)?;
        let mut provenance = json!({"kind": "cron", "jobId": job.id});
        let mut request = RunRequest::new(key.as_str(), Lane::Cron);
        match trigger {
            Trigger::Slot(slot) => {
                provenance["trigger"] = json!("schedule");
                provenance["scheduledAt"] = json!(slot);
                request.idempotency_key = Some(format!("cron:{}:{slot}", job.id));
            }
            Trigger::Manual => provenance["trigger"] = json!("manual"),
        }
        request.create = Some(self.new_session(&key));
        request.message = Some(user_message(&job.message, Some(provenance)));
        if job.deliver {
            // A cron session has no chat of its own: the reply goes where the agent's main
            // session was last talked to (its route), or is recorded when it has none.
            request.deliver = Some(Deliver {
                kind: "reply",
                route: self.main_route(&job.agent_id).await,
            });
        }
        let accepted = self.submit_run(request).await?;
        let slot = match trigger {
            Trigger::Slot(slot) => Some(slot),
            Trigger::Manual => None,
        };
        let now = self.cron_state().now_ms();
        self.store()
            .cron_record_firing(&job.id, slot, &accepted.run_id, now)
            .await?;
        Ok(accepted)
    }

    /// The agent of a new job: the given one (normalised) if configured, else the default.
    fn cron_agent(&self, agent_id: Option<&str>) -> CoreResult<String> {
        let Some(agent_id) = agent_id else {
            return Ok(self.default_agent_id().to_string());
        };
        let id = normalize_agent_id(agent_id);
        let known = self.config().agent_ids();
        if known.contains(&id) {
            return Ok(id);
        }
        Err(Engine::invalid(format!(
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
    Err(Engine::invalid(format!(
        "id: {input:?} is not a valid job id; expected 1–{MAX_ID_CHARS} characters a-z, 0-9, \
         '-' or '_', starting with a letter or digit (or no id: one is generated)"
    )))
}

fn check_tz(tz: Option<&str>) -> CoreResult<()> {
    match tz.map(str::trim) {
        None => Ok(()),
        Some(tz) if ["utc", "etc/utc", "z"].contains(&tz.to_ascii_lowercase().as_str()) => Ok(()),
        Some(tz) => Err(Engine::invalid(format!(
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
        last_run_id: job.last_run_id.clone(),
        last_fired_at: job.last_fired_at,
    }
}

impl Engine {
    /// The delivery route of `agent_id`'s main session, if it has one.
    async fn main_route(
        &self,
        agent_id: &str,
    ) -> Option<switchboard_protocol::sessions::DeliveryContext> {
        let main = crate::keys::main_session_key(agent_id, &self.key_context(agent_id));
        let entry = self.store().get(main.as_str()).await.ok().flatten()?;
        crate::delivery::route_of(&entry)
    }
}
