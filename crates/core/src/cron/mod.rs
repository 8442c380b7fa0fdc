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

mod reference;
mod runs;
pub mod schedule;
mod scheduler;
mod view;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use switchboard_protocol::delivery::DeliveryKind;

use switchboard_protocol::cron::{
    CronAddParams, CronJob, CronListParams, CronListResult, CronRemoveResult, CronRunResult,
    CronStatusResult, CronUpdateParams, DeliveryPreview,
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
use crate::resolve::Resolver;
use crate::runtime::lanes::Lane;
use crate::runtime::{Accepted, Deliver, RunRequest, Runtime};
use crate::store::{CronJobRecord, Store};
use schedule::Schedule;
use view::{job_view, next_run_at, session_key};

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

/// The record stored for `p` (ours, its reference fields folded in) as job `id` of
/// `agent_id`, added at `now`: every check of `cron.add` but those against the store and the
/// config (the id's and the agent's).
fn record_of(
    p: CronAddParams,
    id: String,
    agent_id: String,
    now: i64,
) -> CoreResult<CronJobRecord> {
    let schedule = Schedule::from_param(&p.schedule).map_err(CoreError::Invalid)?;
    check_tz(p.tz.as_deref())?;
    if p.message.trim().is_empty() {
        return Err(CoreError::invalid(
            "message: empty; expected the text the agent receives at each firing",
        ));
    }
    if schedule.next_after(now, now).is_none() {
        return Err(CoreError::invalid(format!(
            "schedule: {:?} matches no date, so it would never fire; {}",
            schedule.to_string(),
            schedule::ACCEPTED
        )));
    }
    let name = p.name.as_deref().map(str::trim).filter(|n| !n.is_empty());
    Ok(CronJobRecord {
        id,
        agent_id,
        name: name.map(str::to_string),
        enabled: p.enabled.unwrap_or(true),
        schedule: schedule.to_string(),
        message: p.message,
        deliver: p.deliver.unwrap_or(false),
        created_at: now,
        last_slot: None,
        last_run_id: None,
        last_fired_at: None,
    })
}

/// A job the reference stored (its `job_json`: the shape of its `cron.add` with its own
/// bookkeeping beside) as the record stored here, for the import: its id, name, agent
/// (`default_agent` when it names none), schedule, message and delivery; refused as `cron.add`
/// refuses what this gateway cannot do as asked.
pub fn reference_record(
    job: &serde_json::Value,
    default_agent: &str,
    now: i64,
) -> CoreResult<CronJobRecord> {
    const READ: [&str; 9] = [
        "id",
        "name",
        "agentId",
        "enabled",
        "schedule",
        "sessionTarget",
        "wakeMode",
        "payload",
        "delivery",
    ];
    let kept: serde_json::Map<String, serde_json::Value> = job
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| READ.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let p: CronAddParams = serde_json::from_value(serde_json::Value::Object(kept))
        .map_err(|e| CoreError::invalid(format!("the job is not in the reference's shape: {e}")))?;
    let p = reference::fold(p)?;
    let id = check_id(p.id.as_deref().unwrap_or_default())?;
    let agent_id = p
        .agent_id
        .as_deref()
        .map_or_else(|| default_agent.to_owned(), normalize_agent_id);
    record_of(p, id, agent_id, now)
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
    /// Takes our shape and the reference's (`reference.rs` folds it into ours).
    pub async fn add(&self, p: CronAddParams) -> CoreResult<CronJob> {
        let p = reference::fold(p)?;
        let name = p.name.as_deref().map(str::trim).filter(|n| !n.is_empty());
        let id = match (p.id.as_deref(), name) {
            (Some(id), _) => check_id(id)?,
            (None, Some(name)) => self.id_from_name(name).await?,
            (None, None) => uuid::Uuid::new_v4().to_string(),
        };
        let agent_id = self.job_agent(p.agent_id.as_deref())?;
        let now = self.clock.now_ms();
        let record = record_of(p, id, agent_id, now)?;
        let schedule = Schedule::parse(&record.schedule).map_err(CoreError::Invalid)?;
        self.store.cron_insert(record.clone()).await?;
        self.changed();
        Ok(job_view(&record, &schedule, now, None))
    }

    /// The id of a job added by name only: the name itself when it is a valid id no job has,
    /// so its session reads `agent:<agentId>:cron:<name>`; else a generated one.
    async fn id_from_name(&self, name: &str) -> CoreResult<String> {
        if let Ok(id) = check_id(name)
            && self.store.cron_get(&id).await?.is_none()
        {
            return Ok(id);
        }
        Ok(uuid::Uuid::new_v4().to_string())
    }

    /// `cron.list`: the jobs by id (enabled ones unless `includeDisabled`), a page at a time.
    pub async fn list(&self, p: CronListParams) -> CoreResult<CronListResult> {
        let agent = p.agent_id.as_deref().map(normalize_agent_id);
        let mut jobs: Vec<CronJob> = self
            .views()
            .await?
            .into_iter()
            .filter(|j| j.enabled || p.include_disabled == Some(true))
            .filter(|j| agent.as_ref().is_none_or(|a| &j.agent_id == a))
            .collect();
        let total = jobs.len();
        let snapshot_revision = revision(&jobs);
        let offset = p.offset.unwrap_or(0).clamp(0, total as i64) as usize;
        let limit = match p.limit {
            Some(limit) if limit < 1 => {
                return Err(CoreError::invalid(format!(
                    "limit: {limit}; expected at least 1 (or no limit: every job)"
                )));
            }
            Some(limit) => limit as usize,
            None => total.max(1),
        };
        let page: Vec<CronJob> = jobs.drain(offset..).take(limit).collect();
        let end = offset + page.len();
        let delivery_previews = page
            .iter()
            .map(|j| (j.id.clone(), DeliveryPreview::of(j.deliver)))
            .collect();
        Ok(CronListResult {
            enabled: self.config.cron.enabled,
            jobs: page,
            total,
            offset,
            limit,
            has_more: end < total,
            next_offset: (end < total).then_some(end),
            snapshot_revision,
            delivery_previews,
        })
    }

    /// `cron.get`: one job. An unknown id is `INVALID_REQUEST` "cron job not found: <id>", as the
    /// reference answers (its CLI tells a missing job by that text).
    pub async fn get(&self, id: &str) -> CoreResult<CronJob> {
        let job = self.job(id).await?;
        let schedule = Schedule::parse(&job.schedule).map_err(CoreError::Invalid)?;
        let last_run = self.last_run(&job).await?;
        Ok(job_view(
            &job,
            &schedule,
            self.clock.now_ms(),
            last_run.as_ref(),
        ))
    }

    /// The stored job `id`. An unknown id is `INVALID_REQUEST` "cron job not found: <id>", as
    /// the reference answers (its CLI tells a missing job by that text).
    async fn job(&self, id: &str) -> CoreResult<CronJobRecord> {
        let id = id.trim();
        self.store.cron_get(id).await?.ok_or_else(|| {
            CoreError::Invalid(format!(
                "cron job not found: {id} (cron.list shows the jobs)"
            ))
        })
    }

    /// `cron.status`: whether the scheduler fires, how many jobs, when it next wakes (from the
    /// stored jobs alone: no run is read).
    pub async fn status(&self) -> CoreResult<CronStatusResult> {
        let now = self.clock.now_ms();
        let jobs = self.store.cron_list().await?;
        let next_wake_at_ms = jobs
            .iter()
            .filter_map(|job| {
                let schedule = Schedule::parse(&job.schedule).ok()?;
                next_run_at(job, &schedule, now)
            })
            .min();
        Ok(CronStatusResult {
            enabled: self.config.cron.enabled,
            jobs: jobs.len(),
            next_wake_at_ms,
        })
    }

    /// Every stored job answered, by id; a job whose stored schedule no longer parses is left
    /// out with a warning.
    async fn views(&self) -> CoreResult<Vec<CronJob>> {
        let now = self.clock.now_ms();
        let mut views = Vec::new();
        for job in self.store.cron_list().await? {
            match Schedule::parse(&job.schedule) {
                Ok(schedule) => {
                    let last_run = self.last_run(&job).await?;
                    views.push(job_view(&job, &schedule, now, last_run.as_ref()));
                }
                Err(e) => {
                    tracing::warn!(job = %job.id, error = %e, "stored cron job has a bad schedule");
                }
            }
        }
        Ok(views)
    }

    /// The job's last run (`None` before its first firing); a store error is the caller's, not
    /// a job that never ran.
    async fn last_run(&self, job: &CronJobRecord) -> CoreResult<Option<crate::store::RunRecord>> {
        let Some(run) = job.last_run_id.as_ref() else {
            return Ok(None);
        };
        Ok(self.store.get_run(run).await?)
    }

    /// `cron.update`: changes what the job is (its firings stay); the patch is checked as
    /// `cron.add` checks a job, and nothing is stored on bad input.
    pub async fn update(&self, p: CronUpdateParams) -> CoreResult<CronJob> {
        let id = p.id.trim();
        let mut job = self.job(id).await?;
        let patch = reference::fold(p.patch)?;
        if !patch.schedule.is_null() {
            check_tz(patch.tz.as_deref())?;
            let schedule = Schedule::from_param(&patch.schedule).map_err(CoreError::Invalid)?;
            job.schedule = schedule.to_string();
        }
        if !patch.message.trim().is_empty() {
            job.message = patch.message;
        }
        if let Some(name) = patch.name.as_deref().map(str::trim) {
            job.name = (!name.is_empty()).then(|| name.to_string());
        }
        job.enabled = patch.enabled.unwrap_or(job.enabled);
        job.deliver = patch.deliver.unwrap_or(job.deliver);
        if !self.store.cron_update(job.clone()).await? {
            return Err(CoreError::Invalid(format!(
                "cron job not found: {id} (it was removed meanwhile)"
            )));
        }
        self.changed();
        self.get(id).await
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
            enqueued: true,
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
                kind: DeliveryKind::Reply,
                route: self.main_route(&job.agent_id).await?,
            });
        }
        // A schedule's firing starts a trace of its own; a manual one is part of its request's.
        let span = match trigger {
            Trigger::Slot(_) => {
                tracing::info_span!("cron", otel.name = %format_args!("cron {}", job.id), job = %job.id)
            }
            Trigger::Manual => tracing::Span::current(),
        };
        let accepted = tracing::Instrument::instrument(self.runtime.submit(request), span).await?;
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

    /// The delivery route of `agent_id`'s main session, if it has one. A store error fails the
    /// firing (the scheduler tries again) rather than record the reply with no route.
    async fn main_route(
        &self,
        agent_id: &str,
    ) -> CoreResult<Option<switchboard_protocol::sessions::DeliveryContext>> {
        let main = self.config.main_session_key(agent_id);
        let entry = self.store.get(&main).await?;
        Ok(entry.as_ref().and_then(route_of))
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

/// A revision of the job set: it changes when a job is added, removed or toggled.
fn revision(jobs: &[CronJob]) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for job in jobs {
        (&job.id, job.created_at, job.enabled).hash(&mut hasher);
    }
    format!("{}-{:016x}", jobs.len(), hasher.finish())
}
