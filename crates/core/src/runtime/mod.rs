//! The agent runtime (SPEC §6): runs of the tool-call loop, strictly FIFO per session, bounded by
//! lanes, with durable run records. A component: [`Runtime`] owns submit, wait and abort, the
//! per-session queues, the lanes, the providers, the tool contract (`tool.rs`) and the run loop
//! (`run.rs`). It is given the store, the config and the clock, and it never reaches up: tools are
//! installed into it, and what becomes of a run's reply is decided above it, behind
//! [`ReplyHandler`].
//!
//! Life of a run: [`Runtime::submit`] stores a `queued` record (the run is acknowledged only
//! after that commit), registers it as live and puts it in its session's queue (`queue.rs`). Each
//! session with work has exactly one worker task, which takes runs in order, so runs of one
//! session never overlap and never reorder. The worker waits for a lane slot, marks the run
//! `running`, executes the loop, stores the final record with its result, and tells waiters.
//! Abort and timeout cancel the loop; what was streamed so far is kept in the transcript.
//!
//! Queued runs hold no lane slot (only the running one does), and a running run that waits on
//! another hands its slot back while it waits (`lanes.rs`), so waits can never deadlock the lanes.
//!
//! Concurrency: every worker is a task of the engine's `TaskTracker`; each live run has its own
//! `CancellationToken` (abort, shutdown). [`Runtime::shutdown`] refuses new runs, lets live ones
//! finish for a grace period, then stops the rest without writing anything for them: each stays
//! `running` with its request in the store and is resumed at the next start (`resume.rs`).

mod abort;
pub mod compact;
mod conversation;
mod cut;
mod end;
mod fence;
mod hold;
mod joined;
pub mod lanes;
mod pieces;
pub mod providers;
mod queue;
mod recent;
mod recover;
mod remote;
mod resume;
mod run;
mod start;
mod told;
pub mod tool;
mod views;
pub mod window;

pub use joined::Joined;
pub use views::{LastEnded, RunView};

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use switchboard_protocol::delivery::DeliveryKind;

use serde_json::Value;
use switchboard_protocol::message::{ContentBlock, Provenance};
use switchboard_protocol::sessions::DeliveryContext;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::access;
use crate::clock::Clock;
use crate::config::{Config, ResolvedAgent};
use crate::error::CoreResult;
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{NewSession, RunRecord, RunStatus, SessionEntry, Store, WriteOp, WriteOutcome};
use lanes::{Lane, Lanes};
use providers::Providers;
use tool::{Caller, Tool, ToolContext, ToolOutput, ToolRegistry, ToolSource};

/// A map keyed by session: foldhash, seeded per process and per map (from addresses and the
/// clock; docs/decisions.md says why that is enough for session keys).
type FoldMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Events buffered per subscriber before a slow one starts missing them.
const EVENT_BUFFER: usize = 4096;

/// A request to run the agent of a session once.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    pub session_key: SessionKey,
    /// How to create the session when the key is new; `None` = it must exist.
    pub create: Option<NewSession>,
    /// The user-role message the run starts with, stamped when the run is submitted; `None` runs
    /// on the transcript as it is.
    pub message: Option<RunMessage>,
    /// Appended to the agent's system prompt for this run only.
    pub extra_system_prompt: Option<String>,
    pub lane: Lane,
    /// Upper bound of the run; `None` = `agents.defaults.timeoutSeconds`.
    pub timeout: Option<Duration>,
    pub idempotency_key: Option<String>,
    /// `provider/model` for this run; `None` = the session's override, else the agent's model.
    pub model: Option<String>,
    /// Session keys that led to this run, the requester's first (cycle guard, SPEC §6.3).
    pub chain: Vec<SessionKey>,
    /// Deliver the run's reply through the outbox when it ends `ok`.
    pub deliver: Option<Deliver>,
    /// The run's id when the caller must know it before submitting (a sub-agent record is
    /// stored first); a new v7 uuid when `None`.
    pub run_id: Option<RunId>,
    /// Writes committed in the same transaction as the run's acknowledgement (an exchange's
    /// record), so neither exists without the other.
    pub commit_with: Vec<WriteOp>,
    /// The `traceparent` of the span that asked for the run (SPEC §10b); `None` takes the
    /// current span's when the run is submitted. Stored with the queued run.
    pub trace: Option<String>,
    /// The session as the caller read it just before (to check its send policy); the submit
    /// reads it when `None`. Boxed: a request is moved often, and an entry is large.
    pub entry: Option<Box<SessionEntry>>,
    /// The reply of the tool call that submits the run, committed with the run's start when
    /// it waits for that (`joined.rs`).
    pub joined: Option<Joined>,
}

/// The user-role message of a run, before it has a time.
#[derive(Debug, Clone, PartialEq)]
pub struct RunMessage {
    pub text: String,
    /// Image blocks sent with the text (`chat.send` attachments).
    pub images: Vec<ContentBlock>,
    /// Where it came from when not from a person (SPEC §4.2).
    pub provenance: Option<Provenance>,
}

/// Where a run's reply goes once the run ends (SPEC §9.1).
#[derive(Debug, Clone, PartialEq)]
pub struct Deliver {
    /// The outbox record's kind: `reply` or `announce`.
    pub kind: DeliveryKind,
    /// `None`: the session's route when the run ends.
    pub route: Option<DeliveryContext>,
}

impl Deliver {
    /// The kind stored as `kind` (a queued run read back after a restart): a run delivers a
    /// reply to its own route, an exchange's announce or an A2A task's push; `reply` for any
    /// other kind.
    pub fn kind_named(kind: &str) -> DeliveryKind {
        match DeliveryKind::from(kind) {
            DeliveryKind::Announce => DeliveryKind::Announce,
            DeliveryKind::A2aPush => DeliveryKind::A2aPush,
            _ => DeliveryKind::Reply,
        }
    }

    /// Whether its run's start is told too (an A2A task's `WORKING` push, when the task has push
    /// configs): what the start tells is decided from what was committed before it, so such a
    /// run is queued first and never stored running in its submit's commit.
    pub fn told_at_start(&self) -> bool {
        self.kind == DeliveryKind::A2aPush
    }
}

impl RunRequest {
    pub fn new(session_key: SessionKey, lane: Lane) -> Self {
        Self {
            session_key,
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
            commit_with: Vec::new(),
            trace: None,
            entry: None,
            joined: None,
        }
    }

    /// The run starts with `text` as a user-role message (with `provenance` when not from a
    /// person).
    pub fn with_message(mut self, text: impl Into<String>, provenance: Option<Provenance>) -> Self {
        self.message = Some(RunMessage {
            text: text.into(),
            images: Vec::new(),
            provenance,
        });
        self
    }

    /// Adds image blocks to the run's user message.
    pub fn add_images(&mut self, images: Vec<ContentBlock>) {
        if let Some(message) = &mut self.message {
            message.images.extend(images);
        }
    }
}

/// The acknowledgement of a submitted run.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub run_id: RunId,
    pub session_key: SessionKey,
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
    pub run_id: RunId,
    pub session_key: SessionKey,
    pub data: RunEventData,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunEventData {
    Queued,
    Started,
    /// A piece of assistant text, numbered from 1 in its run, and now and then all the text of
    /// this model turn so far (`runtime/pieces.rs`).
    Delta {
        text: String,
        seq: u64,
        so_far: Option<String>,
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
    /// A model call answered: the output tokens of the run's calls so far.
    Usage {
        output_tokens: u64,
    },
    Ended {
        status: RunStatus,
        result: Option<String>,
        error: Option<String>,
    },
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What becomes of a run's reply once the run ended. The runtime owns this interface and calls
/// it for every run that asked for delivery; the decision — which replies stay silent, where the
/// others go — is made above it (`crate::delivery::replies`).
pub trait ReplyHandler: Send + Sync {
    /// The write that commits together with the run's end record (the reply's outbox record),
    /// or none when the reply goes nowhere.
    fn on_end<'a>(
        &'a self,
        deliver: &'a Deliver,
        record: &'a RunRecord,
    ) -> BoxFuture<'a, Option<WriteOp>>;
    /// Called once the run's end committed, with the outcome of the write `on_end` gave (and
    /// once its start committed, with the outcome of the write `on_start` gave).
    fn committed(&self, outcome: &WriteOutcome);
    /// The write that commits together with the run's start (an A2A task's `WORKING` push), or
    /// none: most deliveries wait for the end.
    fn on_start<'a>(
        &'a self,
        _deliver: &'a Deliver,
        _record: &'a RunRecord,
    ) -> BoxFuture<'a, Option<WriteOp>> {
        Box::pin(async { None })
    }
}

/// What the runtime is built from.
pub struct RuntimeParts {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub providers: Arc<Providers>,
    pub clock: Arc<dyn Clock>,
    pub replies: Arc<dyn ReplyHandler>,
    /// Where the runtime's tasks are tracked (the engine's, so shutdown waits for them).
    pub tasks: TaskTracker,
}

/// The runtime component; cheap to clone (a handle).
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    /// The gateways sharing the store: whose runs end elsewhere, under which epoch runs here
    /// are held, whether this gateway may start one now.
    cluster: Arc<dyn crate::store::Cluster>,
    providers: Arc<Providers>,
    clock: Arc<dyn Clock>,
    replies: Arc<dyn ReplyHandler>,
    tasks: TaskTracker,
    /// Installed once by the composition root (tools are built from components that need the
    /// runtime themselves).
    tools: OnceLock<ToolRegistry>,
    /// Tools that change while the gateway runs (MCP), installed once if configured.
    tool_source: OnceLock<Arc<dyn ToolSource>>,
    /// Each model's real token counts against the window's estimates.
    calibration: window::Calibration,
    lanes: Lanes,
    conversations: conversation::ConversationCache,
    /// Keyed with foldhash ([`FoldMap`]): a list page looks up each of its rows here and in
    /// `last_ended`, and SipHash was a tenth of a kept page's instructions.
    queues: Mutex<FoldMap<SessionKey, queue::SessionQueue>>,
    /// The last session worker's number ([`queue::SessionQueue::worker`]).
    workers: std::sync::atomic::AtomicU64,
    live: Mutex<HashMap<RunId, LiveRun>>,
    /// Idempotency keys of live runs (finished ones are found in the store).
    idempotency: Mutex<HashMap<String, RunId>>,
    /// Each session's last ended run since start (its row's `status`, `lastRunId`, `runtimeMs`).
    last_ended: Mutex<FoldMap<SessionKey, Arc<views::LastEnded>>>,
    /// The last runs that ended here, for a wait that comes just after (`recent.rs`).
    recent: Mutex<recent::RecentRuns>,
    /// Shared, so a receiver's copy is a pointer, not the event's strings.
    events: broadcast::Sender<Arc<RunEvent>>,
    /// The bus to the gateways sharing the store, and this runtime's name on it.
    bus: Option<Arc<dyn crate::store::Bus>>,
    origin: String,
    /// Cancelled when shutdown begins: no new run is accepted after it.
    closing: CancellationToken,
    /// Cancelled when the shutdown's grace period is over; every run's own token is a child of
    /// it, so a run registered even after that moment starts out cancelled.
    abort_all: CancellationToken,
    /// Counts live runs, so shutdown can wait until none is left.
    live_count: watch::Sender<usize>,
    /// Counts submits in progress: a submit that passed the `closing` check before shutdown
    /// began is waited for, so no run registers behind shutdown's back.
    admitting: watch::Sender<usize>,
    /// Counts work in flight around runs (an exchange's follow-up, a sub-agent's supervisor):
    /// with no live run and nothing busy, the engine is idle.
    busy: watch::Sender<usize>,
}

/// Counts one unit of work in flight until dropped (see [`Runtime::busy`]).
pub struct Busy {
    count: watch::Sender<usize>,
}

impl Busy {
    fn enter(count: &watch::Sender<usize>) -> Self {
        count.send_modify(|n| *n += 1);
        Self {
            count: count.clone(),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.count.send_modify(|n| *n = n.saturating_sub(1));
    }
}

struct LiveRun {
    session_key: SessionKey,
    state: watch::Sender<RunRecord>,
    cancel: CancellationToken,
    /// Its end once queued, before it commits, for waiters whose own write checks it
    /// (`told.rs`); made by the first such waiter.
    ending: Option<watch::Sender<Option<RunRecord>>>,
}

/// Lets what a run's end woke (an `agent.wait` answer and its connection's writer) go out
/// before the work that follows that end on this worker: the next queued run of its session,
/// or an exchange's next step. Starting one is a commit and a model request, which would
/// otherwise run first, the client's answer waiting behind them. Twice: the connection's
/// writer yields once itself to the work that woke it (`ws::write_out`), so one yield only
/// puts it behind this task again.
pub(crate) async fn answers_first() {
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
}

impl Runtime {
    pub fn new(parts: RuntimeParts) -> Self {
        let lanes = Lanes::from_config(&parts.config);
        let bus = parts.store.bus();
        Self {
            inner: Arc::new(Inner {
                config: parts.config,
                cluster: parts.store.cluster(),
                store: parts.store,
                providers: parts.providers,
                clock: parts.clock,
                replies: parts.replies,
                tasks: parts.tasks,
                tools: OnceLock::new(),
                tool_source: OnceLock::new(),
                calibration: Default::default(),
                lanes,
                conversations: Default::default(),
                queues: Mutex::default(),
                workers: Default::default(),
                live: Mutex::default(),
                idempotency: Mutex::default(),
                last_ended: Mutex::default(),
                recent: Mutex::default(),
                events: broadcast::channel(EVENT_BUFFER).0,
                bus,
                origin: uuid::Uuid::new_v4().to_string(),
                closing: CancellationToken::new(),
                abort_all: CancellationToken::new(),
                live_count: watch::channel(0).0,
                admitting: watch::channel(0).0,
                busy: watch::channel(0).0,
            }),
        }
    }

    /// Installs the tools; only the first call counts (the composition root makes it once,
    /// before any run).
    pub fn install_tools(&self, tools: ToolRegistry) {
        if self.inner.tools.set(tools).is_err() {
            tracing::warn!("the runtime's tools were already installed; ignoring a second set");
        }
    }

    /// Adds the tools of `source` (MCP servers) to every offer, after the registry's.
    pub fn install_tool_source(&self, source: Arc<dyn ToolSource>) {
        if self.inner.tool_source.set(source).is_err() {
            tracing::warn!("the runtime's tool source was already installed; ignoring a second");
        }
    }

    /// Waits until the tool source loaded what it could at start (see [`ToolSource::ready`]).
    pub async fn tools_ready(&self) {
        if let Some(source) = self.inner.tool_source.get() {
            source.ready().await;
        }
    }

    /// Every tool: the registry's, then the source's.
    fn all_tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut all: Vec<Arc<dyn Tool>> = self
            .inner
            .tools
            .get()
            .map(|r| r.all().cloned().collect())
            .unwrap_or_default();
        if let Some(source) = self.inner.tool_source.get() {
            all.extend(source.tools());
        }
        all
    }

    pub fn providers(&self) -> &Arc<Providers> {
        &self.inner.providers
    }

    pub(crate) fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    pub(crate) fn config(&self) -> &Config {
        &self.inner.config
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    /// Run events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<RunEvent>> {
        self.inner.events.subscribe()
    }

    /// Waits up to `timeout` for the run to end; answers its record either way. Works for any
    /// run that was ever stored, however long ago it finished.
    pub async fn wait(&self, run_id: &RunId, timeout: Duration) -> CoreResult<WaitOutcome> {
        let live = lock(&self.inner.live)
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
                    let wait_timed_out = !record.status.is_final();
                    return Ok(WaitOutcome {
                        record,
                        wait_timed_out,
                    });
                }
            }
        }
        // It ended here a moment ago (a fast turn ends before its client's wait comes).
        if let Some(record) = lock(&self.inner.recent).get(run_id) {
            return Ok(WaitOutcome {
                record,
                wait_timed_out: false,
            });
        }
        // A run left queued by a shutdown is still queued in the store: the wait ended first.
        // On a shared store, another gateway may be running it.
        self.wait_stored(run_id, timeout).await
    }

    /// Waits until the run ends when it is live on this gateway (queued or running); at once
    /// otherwise.
    pub(crate) async fn ended_here(&self, run_id: &RunId) {
        let live = lock(&self.inner.live)
            .get(run_id)
            .map(|l| l.state.subscribe());
        if let Some(mut state) = live {
            while !state.borrow_and_update().status.is_final() {
                if state.changed().await.is_err() {
                    return; // retired: it ended
                }
            }
        }
    }

    /// The current record of a run (live state first, then the store).
    pub async fn record(&self, run_id: &RunId) -> CoreResult<Option<RunRecord>> {
        let live = lock(&self.inner.live)
            .get(run_id)
            .map(|l| l.state.borrow().clone());
        match live {
            Some(record) => Ok(Some(record)),
            None => Ok(self.inner.store.get_run(run_id).await?),
        }
    }

    /// The tools `agent` may call in the session `key` (access decides, SPEC §6.5).
    pub fn tools_for(&self, key: &SessionKey, agent: &ResolvedAgent) -> Vec<Arc<dyn Tool>> {
        let config = &self.inner.config;
        self.all_tools()
            .into_iter()
            .filter(|t| access::tool_allowed(config, key, agent, t.name()).is_ok())
            .collect()
    }

    /// The tool named `name`, whoever may call it.
    pub fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(tool) = self.inner.tools.get().and_then(|r| r.get(name)) {
            return Some(tool.clone());
        }
        let source = self.inner.tool_source.get()?;
        source.tools().into_iter().find(|t| t.name() == name)
    }

    /// Calls `tool` outside a run, as `caller` (`tools.invoke`, MCP): with a slot on lane `main`
    /// for the call's own work, and `stop_waiting` making a wait on another run end early.
    pub async fn call_tool(
        &self,
        caller: Caller,
        tool: &dyn Tool,
        arguments: Value,
        stop_waiting: CancellationToken,
    ) -> ToolOutput {
        let lease = self.inner.lanes.lease(Lane::Main).await;
        let ctx = ToolContext::new(caller, self.clone(), lease, stop_waiting);
        tool::traced(tool.name(), "", tool.call(&ctx, arguments)).await
    }

    /// Refuses new runs from now on, lets live runs (and submits already past the check) go on
    /// for up to `grace`, then stops every run still live and waits until each has let go: a
    /// stopped run stays `running` in the store, to be resumed at the next start (SPEC §6.3).
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.closing.cancel();
        if tokio::time::timeout(grace, self.drained()).await.is_err() {
            let live = *self.inner.live_count.borrow();
            tracing::info!(
                runs = live,
                "shutdown: aborting the runs still live after the grace period"
            );
            self.inner.abort_all.cancel();
            self.drained().await;
        }
    }

    /// Resolves once no run is live and no submit is in progress at the same moment.
    async fn drained(&self) {
        let mut live = self.inner.live_count.subscribe();
        let mut admitting = self.inner.admitting.subscribe();
        loop {
            let _ = live.wait_for(|n| *n == 0).await;
            let _ = admitting.wait_for(|n| *n == 0).await;
            if *live.borrow() == 0 && *admitting.borrow() == 0 {
                return;
            }
        }
    }

    /// Marks work that will submit or wait on runs (an agent-to-agent follow-up, a sub-agent's
    /// supervisor) as in flight until the guard is dropped, so [`Runtime::idle`] waits for it.
    pub fn busy(&self) -> Busy {
        Busy::enter(&self.inner.busy)
    }

    /// Resolves once no run is live, no submit is in progress and no follow-up work is in flight
    /// at the same moment: everything submitted so far, and everything it led to, has ended.
    pub async fn idle(&self) {
        let mut busy = self.inner.busy.subscribe();
        loop {
            self.drained().await;
            let _ = busy.wait_for(|n| *n == 0).await;
            if *busy.borrow() == 0
                && *self.inner.live_count.borrow() == 0
                && *self.inner.admitting.borrow() == 0
            {
                return;
            }
        }
    }

    /// True once shutdown began.
    pub fn is_closing(&self) -> bool {
        self.inner.closing.is_cancelled()
    }

    /// Tells subscribers a reply no model wrote (a slash command's) as the events of a run of id
    /// `run_id` that starts and ends at once; nothing is stored.
    pub fn tell_reply(&self, run_id: &RunId, session_key: &SessionKey, text: String) {
        self.emit(run_id, session_key, RunEventData::Started);
        let ended = RunEventData::Ended {
            status: RunStatus::Ok,
            result: Some(text),
            error: None,
        };
        self.emit(run_id, session_key, ended);
    }

    fn emit(&self, run_id: &RunId, session_key: &SessionKey, data: RunEventData) {
        let event = Arc::new(RunEvent {
            run_id: run_id.clone(),
            session_key: session_key.clone(),
            data,
        });
        self.publish_remote(&event);
        let _ = self.inner.events.send(event);
    }

    /// Publishes a run's new state to its waiters.
    fn publish(&self, record: &RunRecord) {
        if let Some(live) = lock(&self.inner.live).get(&record.run_id) {
            live.state.send_replace(record.clone());
        }
    }

    /// Forgets a queued run that shutdown keeps from starting: its record stays `queued` with
    /// its input, and the next start resumes it.
    fn forget(&self, record: &RunRecord) {
        let removed = lock(&self.inner.live).remove(&record.run_id).is_some();
        if removed {
            self.inner
                .live_count
                .send_modify(|n| *n = n.saturating_sub(1));
        }
        if let Some(key) = &record.idempotency_key {
            lock(&self.inner.idempotency).remove(key);
        }
    }

    /// Why a cancelled run ended: the gateway's stop, or someone's abort.
    fn abort_reason(&self) -> String {
        match self.inner.abort_all.is_cancelled() {
            true => RunRecord::INTERRUPTED.to_string(),
            false => "aborted".to_string(),
        }
    }

    /// Forgets a finished run (its final record is in the store by now). The session's last
    /// ended run is noted before the waiters are told: one that lists the sessions as soon as
    /// its wait ends sees the run's end on the row.
    fn retire(&self, record: &RunRecord) {
        let ended = Arc::new(views::LastEnded::of(record));
        lock(&self.inner.last_ended).insert(record.session_key.clone(), ended);
        lock(&self.inner.recent).keep(record);
        self.publish(record);
        self.forget(record);
    }
}

/// Locks a std mutex, recovering from poisoning (a panicked holder leaves consistent maps: every
/// critical section here is a single insert, remove or pop).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
