//! Sub-agents after `sessions_spawn` (SPEC §7.4): the child's session and durable record, the
//! task run, watching it, the announce step, its durable delivery to the requester, cleanup and
//! archiving.
//!
//! Every step is recorded in the child's [`SubagentRecord`] before the next one starts, so a
//! restart resumes each unfinished record where it stood ([`Subagents::resume`]):
//!
//! 1. `running` — wait for the task run to end (a run interrupted by a crash is `aborted` after
//!    the restart, so the wait always ends); record the outcome and, for `keep`, `archive_at` =
//!    finish + `archiveAfterMinutes`.
//! 2. `announcing` — run the announce step in the child (idempotency key per child, so a resumed
//!    step waits on the same run instead of starting a second), normalise its reply
//!    (`announce.rs`) and hand it to the outbox with the idempotency key
//!    `subagent-announce:<child>`: to the requester's route, else `internal` into the requester
//!    session. The outbox delivers it exactly once and keeps retrying across restarts.
//! 3. `announced` — `delete` removes the child; then `done`.
//!
//! Archiving kept children is a sweep over records whose `archive_at` has passed, on the engine's
//! clock (a manual clock in tests). Supervisors and the sweeper are tasks of the engine's
//! tracker; a supervisor stopped by shutdown resumes at the next start.

mod announce;

use std::sync::Arc;
use std::time::Duration;
use switchboard_protocol::delivery::DeliveryKind;

use switchboard_protocol::message::Provenance;
use switchboard_protocol::sessions::{DeliveryContext, Patch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::channel;
use crate::clock::Clock;
use crate::config::Config;
use crate::delivery::{Outbound, Outbox};
use crate::ids::RunId;
use crate::keys::{SessionKey, SessionKind};
use crate::runtime::lanes::Lane;
use crate::runtime::tool::Origin;
use crate::runtime::{RunRequest, Runtime};
use crate::store::{
    EntryPatch, NewSession, Store, StoreError, SubagentRecord, SubagentState, WriteOp,
};

/// How often kept children are checked for archiving.
const SWEEP_EVERY: Duration = Duration::from_secs(30);
/// Follows of one sub-agent before it is left for the next start, and the wait after the
/// first failed one (doubled after each: 1 + 2 + 4 + 8 s).
const FOLLOW_TRIES: u32 = 5;
const FOLLOW_WAIT: Duration = Duration::from_secs(1);

/// What the sub-agents component is built from.
pub struct SubagentsParts {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub runtime: Runtime,
    pub outbox: Arc<Outbox>,
    pub clock: Arc<dyn Clock>,
    pub tasks: TaskTracker,
    /// Cancelled when the engine stops: the sweeper ends.
    pub stop: CancellationToken,
}

/// A checked spawn, ready to store.
#[derive(Debug, Clone)]
pub struct Spawn {
    pub requester: SessionKey,
    /// The requester's run that spawns.
    pub requester_run: RunId,
    pub agent_id: String,
    pub task: String,
    pub label: Option<String>,
    /// `provider/model` the child runs on (already checked).
    pub model: String,
    pub delete_after: bool,
    /// Stops the task run after this long; `None`: the agent's own timeout.
    pub timeout: Option<Duration>,
    /// The name of the tool call that spawns it ([`ToolContext::call_name`]): the child's
    /// session and run are named by it, so the call made again after a stop finds the child it
    /// started.
    ///
    /// [`ToolContext::call_name`]: crate::runtime::tool::ToolContext::call_name
    pub call: Option<String>,
    /// The call is made again by its run resumed after a stop: its child may exist already.
    pub again: bool,
    /// Where the spawn's message came from: the announce goes there.
    pub origin: Origin,
}

/// The session key of the child `agent_id` spawns in the tool call named `call` (a new one
/// without a name).
pub fn child_key(agent_id: &str, call: Option<&str>) -> SessionKey {
    let id = call.map_or_else(uuid::Uuid::new_v4, crate::ids::uuid_named);
    SessionKey::from_canonical(format!("agent:{agent_id}:subagent:{id}"))
}

/// The sub-agents component.
pub struct Subagents {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    runtime: Runtime,
    outbox: Arc<Outbox>,
    clock: Arc<dyn Clock>,
    tasks: TaskTracker,
    stop: CancellationToken,
}

impl Subagents {
    pub fn new(parts: SubagentsParts) -> Arc<Self> {
        Arc::new(Self {
            config: parts.config,
            store: parts.store,
            runtime: parts.runtime,
            outbox: parts.outbox,
            clock: parts.clock,
            tasks: parts.tasks,
            stop: parts.stop,
        })
    }

    /// Whether `model` (`provider/model`) can run a sub-agent; the error names the valid models.
    pub fn check_model(&self, model: &str) -> Result<(), String> {
        self.runtime.providers().resolve(model).map(|_| ())
    }

    /// Stores the child session (`spawnedBy` = requester, its model override set) and its
    /// durable record in one commit, queues the task run on lane `subagent`, and follows the
    /// child to its announce. Answers the task run's id and the child's key.
    pub async fn spawn(self: &Arc<Self>, spawn: Spawn) -> Result<(RunId, SessionKey), String> {
        // Nothing is stored for a child whose task run could not be queued any more.
        if self.runtime.is_closing() {
            return Err("the gateway is shutting down; no sub-agent was started".into());
        }
        let child = child_key(&spawn.agent_id, spawn.call.as_deref());
        if spawn.again
            && let Ok(Some(started)) = self.store.get_subagent(&child).await
        {
            // The call made again after a stop: its child was started the first time.
            return Ok((started.run_id, child));
        }
        let run_id = match &spawn.call {
            Some(call) => RunId::named(&format!("{call}:run")),
            None => RunId::new(),
        };
        let new = NewSession {
            key: child.clone(),
            agent_id: spawn.agent_id.clone(),
            kind: SessionKind::Other,
            // A sub-agent is the gateway's own work: `internal`, as cron's and hooks' are.
            channel: Some(channel::INTERNAL.into()),
            chat_type: None,
            label: spawn.label.clone(),
            display_name: None,
            spawned_by: Some(spawn.requester.clone()),
        };
        let trace = crate::trace::current();
        let origin = self.origin_route(&spawn).await?;
        let record = SubagentRecord {
            child_key: child.clone(),
            requester_key: spawn.requester.clone(),
            run_id: run_id.clone(),
            task: spawn.task.clone(),
            label: spawn.label,
            model: spawn.model.clone(),
            delete_after: spawn.delete_after,
            state: SubagentState::Running,
            outcome: None,
            created_at: self.clock.now_ms(),
            ended_at: None,
            delivery_id: None,
            archive_at: None,
            archived_at: None,
            trace: trace.clone(),
            origin,
            epoch: self.store.cluster().epoch(),
        };
        let model_override = EntryPatch {
            model: Patch::Set(spawn.model),
            ..EntryPatch::default()
        };
        self.store
            .write_batch(vec![
                WriteOp::Create(Box::new(new)),
                WriteOp::Patch {
                    key: child.clone(),
                    patch: Box::new(model_override),
                },
                WriteOp::PutSubagent(Box::new(record)),
            ])
            .await
            .map_err(|e| format!("could not store the sub-agent: {e}"))?;

        let provenance = Provenance {
            kind: "agent".into(),
            from_session_key: Some(spawn.requester.display().to_string()),
            run_id: Some(spawn.requester_run.as_str().to_string()),
            ..Provenance::default()
        };
        let mut request = RunRequest::new(child.clone(), Lane::Subagent)
            .with_message(spawn.task.clone(), Some(provenance));
        request.run_id = Some(run_id.clone());
        request.extra_system_prompt = Some(format!(
            "You are a sub-agent spawned by session {} for one task: {}\nWork on it, then end \
             with your final answer: your final message is reported back to that session. You \
             cannot spawn sub-agents.",
            spawn.requester, spawn.task
        ));
        request.timeout = spawn.timeout;
        if let Err(e) = self.runtime.submit(request).await {
            // The record stays: the supervisor announces the failure to the requester.
            tracing::warn!(child = %child, error = %e, "could not queue a sub-agent's task run");
        }
        self.supervise(child.clone(), trace);
        Ok((run_id, child))
    }

    /// Follows one sub-agent to the end of its life on its own task. A follow that failed (a
    /// store that did not answer) is tried again from the stored record a few times, as a
    /// restart would; past that, or once the gateway stops, it resumes at the next start.
    /// With traces on, the follow is a span in the trace of the spawn (`trace`), so the
    /// announce run is part of it.
    pub(crate) fn supervise(self: &Arc<Self>, child: SessionKey, trace: Option<String>) {
        let subagents = self.clone();
        let busy = self.runtime.busy();
        let span = tracing::info_span!("subagent", otel.name = "follow_subagent", child = %child);
        crate::trace::adopt(&span, trace.as_deref());
        let follow = async move {
            let mut wait = FOLLOW_WAIT;
            for tries in 1.. {
                let Err(problem) = subagents.follow(&child).await else {
                    break;
                };
                if tries >= FOLLOW_TRIES || subagents.runtime.is_closing() {
                    tracing::warn!(child = %child, %problem, "sub-agent announce stopped; it resumes at the next start");
                    break;
                }
                tracing::warn!(child = %child, %problem, "sub-agent announce stopped; trying again");
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = subagents.stop.cancelled() => break,
                }
                wait *= 2;
            }
            drop(busy);
        };
        self.tasks
            .spawn(tracing::Instrument::instrument(follow, span));
    }

    /// The sub-agents a stopped process left unfinished (read when the engine opens).
    pub async fn unfinished(&self) -> Result<Vec<SubagentRecord>, StoreError> {
        self.store.unfinished_subagents().await
    }

    /// Follows each of `records` (from [`Subagents::unfinished`]) to its end.
    pub fn resume(self: &Arc<Self>, records: Vec<SubagentRecord>) {
        for record in records {
            self.supervise(record.child_key, record.trace);
        }
    }

    async fn follow(&self, child: &SessionKey) -> Result<(), String> {
        let mut record = self
            .store
            .get_subagent(child)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("no sub-agent record")?;
        if record.epoch != self.store.cluster().epoch() {
            return Err("another gateway drives it now".into());
        }
        if record.state == SubagentState::Running {
            let outcome = match self.runtime.wait(&record.run_id, Duration::MAX).await {
                Ok(wait) if !wait.record.status.is_final() => {
                    return Err("the gateway stopped before the child's run ended".into());
                }
                Ok(wait) => wait.record.status.as_str().to_string(),
                // The run was never stored: the process stopped between the record and the run.
                Err(_) => "error".to_string(),
            };
            let ended = self.clock.now_ms();
            record.outcome = Some(outcome);
            record.ended_at = Some(ended);
            if !record.delete_after {
                let minutes = self.config.agents.defaults.subagents.archive_after_minutes;
                record.archive_at = Some(ended + minutes as i64 * 60_000);
            }
            record.state = SubagentState::Announcing;
            self.save(&record).await?;
        }
        if record.state == SubagentState::Announcing {
            if let Some(text) = self.announce_text(&record).await? {
                let route = record
                    .origin
                    .clone()
                    .unwrap_or_else(|| into_session(&record.requester_key));
                let delivery = self
                    .outbox
                    .deliver(Outbound {
                        kind: DeliveryKind::SubagentAnnounce,
                        session_key: Some(record.requester_key.clone()),
                        source_key: Some(record.child_key.clone()),
                        run_id: Some(record.run_id.clone()),
                        route: Some(route),
                        text,
                        idempotency_key: Some(format!("subagent-announce:{}", record.child_key)),
                    })
                    .await
                    .map_err(|e| e.to_string())?;
                record.delivery_id = Some(delivery.id);
            }
            record.state = SubagentState::Announced;
            self.save(&record).await?;
        }
        if record.state == SubagentState::Announced {
            if record.delete_after {
                match self.store.delete(&record.child_key).await {
                    Ok(_) | Err(StoreError::NotFound(_)) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            record.state = SubagentState::Done;
            self.save(&record).await?;
        }
        Ok(())
    }

    async fn save(&self, record: &SubagentRecord) -> Result<(), String> {
        self.store
            .put_subagent(record.clone())
            .await
            .map_err(|e| e.to_string())
    }

    /// The chat a spawn's announce goes to: the one its message came from; none (into the
    /// requester session) when it came from no chat; the requester's route for a call made on
    /// the session itself.
    async fn origin_route(&self, spawn: &Spawn) -> Result<Option<DeliveryContext>, String> {
        Ok(match &spawn.origin {
            Origin::Chat(route) => Some(route.clone()),
            Origin::Elsewhere => None,
            Origin::Session => {
                let entry = self.store.get(&spawn.requester).await;
                let entry = entry.map_err(|e| format!("could not read the requester: {e}"))?;
                entry.as_ref().and_then(crate::delivery::route_of)
            }
        })
    }

    /// Archives every kept sub-agent whose `archive_at` has passed on the engine's clock;
    /// answers how many. Archived sessions leave lists but stay readable by key.
    pub async fn sweep_archives(&self) -> Result<usize, StoreError> {
        let now = self.clock.now_ms();
        let due = self.store.subagents_to_archive(now).await?;
        let mut archived = 0;
        for mut record in due {
            let patch = EntryPatch {
                archived_at: Patch::Set(now),
                ..EntryPatch::default()
            };
            match self.store.patch(&record.child_key, patch).await {
                Ok(_) => archived += 1,
                Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
            record.archived_at = Some(now);
            self.store.put_subagent(record).await?;
        }
        Ok(archived)
    }

    /// Starts the archive sweeper: every [`SWEEP_EVERY`] until the engine stops.
    pub fn start_sweeper(self: &Arc<Self>) {
        let subagents = self.clone();
        self.tasks.spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(SWEEP_EVERY) => {}
                    () = subagents.stop.cancelled() => return,
                }
                if let Err(e) = subagents.sweep_archives().await {
                    tracing::warn!(error = %e, "could not archive finished sub-agents");
                }
            }
        });
    }
}

/// The route `internal` into the requester session itself.
fn into_session(requester: &SessionKey) -> DeliveryContext {
    DeliveryContext {
        channel: channel::INTERNAL.into(),
        to: requester.as_str().to_string(),
        account_id: None,
        thread_id: None,
    }
}
