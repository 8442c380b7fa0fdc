//! The agent runtime (SPEC §6): runs of the tool-call loop, strictly FIFO per session, bounded by
//! lanes, with durable run records.
//!
//! Life of a run: [`Engine::submit_run`] stores a `queued` record (the run is acknowledged only
//! after that commit), registers it as live and puts it in its session's queue. Each session
//! with work has exactly one worker task, which takes runs in order, so runs of one session never
//! overlap and never reorder. The worker waits for a lane slot, marks the run `running`, executes
//! the loop (`run.rs`), stores the final record with its result, and tells waiters. Abort and
//! timeout cancel the loop; what was streamed so far is kept in the transcript.
//!
//! Queued runs hold no lane slot (only the running one does), and a running run that waits on
//! another hands its slot back while it waits (`lanes.rs`), so waits can never deadlock the lanes.

pub mod cancel;
mod conversation;
pub mod lanes;
pub mod providers;
mod run;

pub use run::user_message;

pub(crate) use crate::clock::now_ms;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, watch};

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::store::{NewSession, RunRecord, RunStatus};
use crate::tools::ToolRegistry;
use cancel::CancelToken;
use lanes::{Lane, Lanes};
use providers::Providers;

/// Events buffered per subscriber before a slow one starts missing them.
const EVENT_BUFFER: usize = 4096;

/// A request to run the agent of a session once.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// Canonical session key.
    pub session_key: String,
    /// How to create the session when the key is new; `None` = it must exist.
    pub create: Option<NewSession>,
    /// The user-role message (transcript JSON) appended when the run starts; `None` runs on
    /// the transcript as it is.
    pub message: Option<Value>,
    /// Appended to the agent's system prompt for this run only.
    pub extra_system_prompt: Option<String>,
    pub lane: Lane,
    /// Upper bound of the run; `None` = `agents.defaults.timeoutSeconds`.
    pub timeout: Option<Duration>,
    pub idempotency_key: Option<String>,
    /// `provider/model` for this run; `None` = the session's override, else the agent's model.
    pub model: Option<String>,
    /// Session keys that led to this run, the requester's first (cycle guard, SPEC §6.3).
    pub chain: Vec<String>,
    /// Deliver the run's reply through the outbox when it ends `ok`.
    pub deliver: Option<Deliver>,
    /// The run's id when the caller must know it before submitting (a sub-agent record is
    /// stored first); a new v7 uuid when `None`.
    pub run_id: Option<String>,
}

/// Where a run's reply goes once the run ends (SPEC §9.1).
#[derive(Debug, Clone, PartialEq)]
pub struct Deliver {
    /// The outbox record's kind (`reply`, …).
    pub kind: &'static str,
    /// `None`: the session's route when the run ends.
    pub route: Option<switchboard_protocol::sessions::DeliveryContext>,
}

impl RunRequest {
    pub fn new(session_key: impl Into<String>, lane: Lane) -> Self {
        Self {
            session_key: session_key.into(),
            create: None,
            message: None,
            extra_system_prompt: None,
            lane,
            timeout: None,
            idempotency_key: None,
            model: None,
            chain: Vec::new(),
            deliver: None,
            run_id: None,
        }
    }
}

/// The acknowledgement of a submitted run.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub run_id: String,
    pub session_key: String,
    pub accepted_at: i64,
    /// True when the idempotency key named an earlier run (no new work was done).
    pub deduplicated: bool,
}

/// What `agent.wait` learns about a run.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitOutcome {
    pub record: RunRecord,
    /// The wait ended before the run did; `record.status` says whether it is queued or running.
    pub wait_timed_out: bool,
}

/// What a run reports while it goes (broadcast to gateway clients).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    pub run_id: String,
    pub session_key: String,
    pub data: RunEventData,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunEventData {
    Queued,
    Started,
    /// A piece of assistant text, and all the text of this model turn so far.
    Delta {
        text: String,
        accumulated: String,
    },
    Thinking {
        text: String,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    ToolResult {
        id: String,
        name: String,
        is_error: bool,
        text: String,
    },
    Ended {
        status: RunStatus,
        result: Option<String>,
        error: Option<String>,
    },
}

/// The runtime's shared state (owned by the engine).
pub struct Runtime {
    pub(crate) providers: Providers,
    pub(crate) tools: ToolRegistry,
    pub(crate) conversations: conversation::ConversationCache,
    lanes: Lanes,
    queues: Mutex<HashMap<String, SessionQueue>>,
    live: Mutex<HashMap<String, LiveRun>>,
    /// Idempotency keys of live runs (finished ones are found in the store).
    idempotency: Mutex<HashMap<String, String>>,
    /// Shared, so a receiver's copy is a pointer, not the event's strings.
    events: broadcast::Sender<Arc<RunEvent>>,
}

#[derive(Default)]
struct SessionQueue {
    pending: VecDeque<Queued>,
    active: Option<(String, CancelToken)>,
}

pub(crate) struct Queued {
    pub run_id: String,
    pub request: RunRequest,
    pub cancel: CancelToken,
    pub record: RunRecord,
}

struct LiveRun {
    session_key: String,
    state: watch::Sender<RunRecord>,
    cancel: CancelToken,
}

impl Runtime {
    pub fn new(providers: Providers, tools: ToolRegistry, lanes: Lanes) -> Self {
        Self {
            providers,
            tools,
            conversations: Default::default(),
            lanes,
            queues: Mutex::default(),
            live: Mutex::default(),
            idempotency: Mutex::default(),
            events: broadcast::channel(EVENT_BUFFER).0,
        }
    }

    pub(crate) fn emit(&self, run_id: &str, session_key: &str, data: RunEventData) {
        let _ = self.events.send(Arc::new(RunEvent {
            run_id: run_id.to_string(),
            session_key: session_key.to_string(),
            data,
        }));
    }

    /// Publishes a run's new state to its waiters.
    pub(crate) fn publish(&self, record: &RunRecord) {
        if let Some(live) = lock(&self.live).get(&record.run_id) {
            live.state.send_replace(record.clone());
        }
    }

    /// Forgets a finished run (its final record is in the store by now).
    pub(crate) fn retire(&self, record: &RunRecord) {
        self.publish(record);
        lock(&self.live).remove(&record.run_id);
        if let Some(key) = &record.idempotency_key {
            lock(&self.idempotency).remove(key);
        }
    }
}

/// Locks a std mutex, recovering from poisoning (a panicked holder leaves consistent maps: every
/// critical section here is a single insert, remove or pop).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Engine {
    /// Stores a queued run and puts it in its session's queue. Answers once the record is
    /// committed. A repeated `idempotency_key` answers the first run and does nothing.
    pub async fn submit_run(self: &Arc<Self>, request: RunRequest) -> CoreResult<Accepted> {
        let rt = self.runtime();
        if let Some(key) = &request.idempotency_key
            && let Some(accepted) = self.find_idempotent(key).await?
        {
            return Ok(accepted);
        }
        let store = self.store();
        let entry = match store.get(&request.session_key).await? {
            Some(entry) => entry,
            None => match request.create.clone() {
                Some(new) => store.create(new).await?.0,
                None => return Err(crate::sessions::not_found(&request.session_key)),
            },
        };
        let run_id = request
            .run_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        let now = now_ms();
        let record = RunRecord {
            run_id: run_id.clone(),
            session_key: entry.key.clone(),
            session_id: Some(entry.session_id.clone()),
            status: RunStatus::Queued,
            lane: request.lane.as_str().to_string(),
            created_at: now,
            started_at: None,
            ended_at: None,
            result: None,
            error: None,
            idempotency_key: request.idempotency_key.clone(),
        };
        if let Err(e) = store.put_run(record.clone()).await {
            // Two submits raced with one key: the other one won.
            if let (Some(key), crate::store::StoreError::Conflict(_)) =
                (&request.idempotency_key, &e)
                && let Some(accepted) = self.find_idempotent(key).await?
            {
                return Ok(accepted);
            }
            return Err(e.into());
        }
        let cancel = CancelToken::default();
        lock(&rt.live).insert(
            run_id.clone(),
            LiveRun {
                session_key: entry.key.clone(),
                state: watch::channel(record.clone()).0,
                cancel: cancel.clone(),
            },
        );
        if let Some(key) = &request.idempotency_key {
            lock(&rt.idempotency).insert(key.clone(), run_id.clone());
        }
        rt.emit(&run_id, &entry.key, RunEventData::Queued);
        let queued = Queued {
            run_id: run_id.clone(),
            request,
            cancel,
            record,
        };
        self.enqueue(entry.key.clone(), queued);
        Ok(Accepted {
            run_id,
            session_key: entry.key,
            accepted_at: now,
            deduplicated: false,
        })
    }

    async fn find_idempotent(&self, key: &str) -> CoreResult<Option<Accepted>> {
        let live = lock(&self.runtime().idempotency).get(key).cloned();
        let record = match live {
            Some(run_id) => self.store().get_run(&run_id).await?,
            None => self.store().get_run_by_idempotency(key).await?,
        };
        Ok(record.map(|r| Accepted {
            run_id: r.run_id,
            session_key: r.session_key,
            accepted_at: r.created_at,
            deduplicated: true,
        }))
    }

    /// Appends to the session's queue; starts its worker when the session was idle.
    fn enqueue(self: &Arc<Self>, session_key: String, queued: Queued) {
        let start_worker = {
            let mut queues = lock(&self.runtime().queues);
            let is_new = !queues.contains_key(&session_key);
            queues
                .entry(session_key.clone())
                .or_default()
                .pending
                .push_back(queued);
            is_new
        };
        if start_worker {
            let engine = self.clone();
            tokio::spawn(async move { engine.session_worker(session_key).await });
        }
    }

    /// The one worker of a session: runs its queue in order, then exits.
    async fn session_worker(self: Arc<Self>, session_key: String) {
        loop {
            let next = {
                let mut queues = lock(&self.runtime().queues);
                let Some(queue) = queues.get_mut(&session_key) else {
                    return;
                };
                match queue.pending.pop_front() {
                    Some(job) => {
                        queue.active = Some((job.run_id.clone(), job.cancel.clone()));
                        job
                    }
                    None => {
                        queues.remove(&session_key);
                        return;
                    }
                }
            };
            run::execute(&self, next).await;
            if let Some(queue) = lock(&self.runtime().queues).get_mut(&session_key) {
                queue.active = None;
            }
        }
    }

    /// A slot on `lane` (used by the run loop).
    pub(crate) async fn lease(&self, lane: Lane) -> lanes::LeaseHolder {
        self.runtime().lanes.lease(lane).await
    }

    /// Waits up to `timeout` for the run to end; answers its record either way. Works for any
    /// run that was ever stored, however long ago it finished.
    pub async fn wait_run(&self, run_id: &str, timeout: Duration) -> CoreResult<WaitOutcome> {
        let live = lock(&self.runtime().live)
            .get(run_id)
            .map(|l| l.state.subscribe());
        if let Some(mut state) = live {
            let ended = tokio::time::timeout(timeout, async {
                loop {
                    let record = state.borrow_and_update().clone();
                    if record.status.is_final() {
                        return Some(record);
                    }
                    if state.changed().await.is_err() {
                        return None; // retired: the store has the final record
                    }
                }
            })
            .await;
            match ended {
                Ok(Some(record)) => {
                    return Ok(WaitOutcome {
                        record,
                        wait_timed_out: false,
                    });
                }
                Ok(None) => {}
                Err(_) => {
                    let record = state.borrow().clone();
                    if !record.status.is_final() {
                        return Ok(WaitOutcome {
                            record,
                            wait_timed_out: true,
                        });
                    }
                    return Ok(WaitOutcome {
                        record,
                        wait_timed_out: false,
                    });
                }
            }
        }
        match self.store().get_run(run_id).await? {
            Some(record) => Ok(WaitOutcome {
                record,
                wait_timed_out: false,
            }),
            None => Err(CoreError::NotFound(format!("Run not found: {run_id}"))),
        }
    }

    /// The current record of a run (live state first, then the store).
    pub async fn run_record(&self, run_id: &str) -> CoreResult<Option<RunRecord>> {
        let live = lock(&self.runtime().live)
            .get(run_id)
            .map(|l| l.state.borrow().clone());
        match live {
            Some(record) => Ok(Some(record)),
            None => Ok(self.store().get_run(run_id).await?),
        }
    }

    /// Aborts the session's running run (and, with `run_id`, only that run, queued or running).
    /// Answers the ids of the runs told to stop.
    pub fn abort_runs(&self, session_key: &str, run_id: Option<&str>) -> Vec<String> {
        let rt = self.runtime();
        if let Some(run_id) = run_id {
            let live = lock(&rt.live);
            return match live.get(run_id) {
                Some(run) if run.session_key == session_key => {
                    run.cancel.cancel();
                    vec![run_id.to_string()]
                }
                _ => Vec::new(),
            };
        }
        let queues = lock(&rt.queues);
        match queues.get(session_key).and_then(|q| q.active.as_ref()) {
            Some((id, cancel)) => {
                cancel.cancel();
                vec![id.clone()]
            }
            None => Vec::new(),
        }
    }

    /// Run events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<RunEvent>> {
        self.runtime().events.subscribe()
    }
}
