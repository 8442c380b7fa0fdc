//! Submitting runs and the per-session queues: one FIFO queue and at most one worker task per
//! session with work, so runs of one session never overlap and never reorder.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;

use switchboard_protocol::message::{
    ContentBlock, MessageOrigin, TranscriptMessage, UserContent, UserMessage,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::lanes::Lane;
use super::run::Begun;
use super::{Accepted, Busy, Deliver, LiveRun, RunEventData, RunRequest, Runtime, lock, run};
use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{DeliverInput, RunInput, RunRecord, StoreError, TryLock, WriteOp, WriteOutcome};

/// A session's pending runs and the one it is running.
#[derive(Default)]
pub(super) struct SessionQueue {
    /// The worker that serves it. A worker that finds its session's queue served by another
    /// (made for a message sent once its last run freed the session, [`Runtime::vacate`])
    /// ends.
    pub(super) worker: u64,
    pub(super) pending: VecDeque<Queued>,
    pub(super) active: Option<(RunId, CancellationToken)>,
    /// Runs taken from the front so far (where a run held out of the queue goes back).
    pub(super) popped: u64,
}

/// A run waiting for its session's worker.
pub(super) struct Queued {
    pub run_id: RunId,
    pub request: RunRequest,
    /// The run's message, stamped when it was acknowledged.
    pub message: Option<TranscriptMessage>,
    pub cancel: CancellationToken,
    pub record: RunRecord,
    /// How many times the run started before (a run resumed after a stop: at least one).
    pub starts: u32,
}

impl Runtime {
    /// Sessions with a run active now, and runs queued behind them (a metric).
    pub fn queue_depth(&self) -> (usize, usize) {
        let queues = lock(&self.inner.queues);
        let active = queues.values().filter(|q| q.active.is_some()).count();
        (active, queues.values().map(|q| q.pending.len()).sum())
    }

    /// Stores a queued run with everything it needs to start (its message, stamped now) and
    /// puts it in its session's queue. Answers once that is committed: an acknowledged run
    /// starts even after a restart. A repeated `idempotency_key` answers the first run and does
    /// nothing.
    ///
    /// Errors: `NotFound` when the session does not exist and the request does not create it;
    /// `Unavailable` once shutdown began; store failures.
    pub async fn submit(&self, request: RunRequest) -> CoreResult<Accepted> {
        self.submit_asked(request, None).await
    }

    /// [`Runtime::submit`] with what asking for the session's lock found already
    /// ([`crate::resolve::Resolver::check_send_for_run`], which asked with its read): a run
    /// that starts at once keeps a lock held, any other lets it go.
    pub async fn submit_locked(&self, request: RunRequest, lock: TryLock) -> CoreResult<Accepted> {
        self.submit_asked(request, Some(lock)).await
    }

    async fn submit_asked(
        &self,
        mut request: RunRequest,
        asked: Option<TryLock>,
    ) -> CoreResult<Accepted> {
        // Counted before the check: a shutdown that begins from here on waits for this submit.
        let _admission = Busy::enter(&self.inner.admitting);
        if self.is_closing() {
            return Err(CoreError::Unavailable(
                "the gateway is shutting down; the run was not started".into(),
            ));
        }
        // A key repeated while its run is live here is answered from memory. A new key is not
        // looked up: the run's insert is refused when a stored run has it (or the run id), and
        // the first run is read only then.
        if let Some(key) = &request.idempotency_key
            && let Some(accepted) = self.find_live(key).await?
        {
            return Ok(accepted);
        }
        let store = self.store();
        let known = match request.entry.take() {
            Some(entry) => Some(*entry),
            None => store.get(&request.session_key).await?,
        };
        // A session that does not exist yet is created by the run's own commit, which gives
        // the run its transcript's id (`WriteOp::NewRun` without one).
        let (session_key, session_id, create) = match known {
            Some(entry) => (entry.key, Some(entry.session_id), None),
            None => match request.create.clone() {
                Some(new) => (new.key.clone(), None, Some(new)),
                None => {
                    return Err(CoreError::session_not_found(request.session_key.as_str()));
                }
            },
        };
        let now = self.now_ms();
        let run_id = request.run_id.clone().unwrap_or_default();
        let mut record = RunRecord {
            session_id,
            idempotency_key: request.idempotency_key.clone(),
            epoch: self.inner.cluster.epoch(),
            ..RunRecord::queued(run_id, session_key, request.lane.as_str(), now)
        };
        let message = request
            .message
            .take()
            .map(|m| user_message(m, now, &record.run_id));
        if request.trace.is_none() {
            request.trace = crate::trace::current();
        }
        let unasked = matches!(asked, Some(TryLock::Unasked(_)));
        if let Some(now) = self
            .start_now(&record.session_key, &request, &record.run_id, asked)
            .await
        {
            // Boxed: its commit's future would make every submit's as large.
            let started = self.submit_started(request, record, message, create, now);
            return Box::pin(started).await;
        }
        // Judged on a kept entry that only a start at once checks: read the session again.
        if unasked {
            return Err(StoreError::Stale("the run does not start at once".into()).into());
        }
        let input = Some(Box::new(input_of(&request, message.clone())));
        let run = WriteOp::NewRun(record.clone(), input);
        let mut batch = super::start::writes(&record.session_key, run, None, create);
        batch.append(&mut request.commit_with);
        if let Some(joined) = &request.joined {
            joined.send_with(&mut batch);
        }
        let written = store.write_batch(batch).await;
        if let Some(joined) = &request.joined {
            joined.answered(written.is_ok());
        }
        match written {
            // The session this commit created: the batch's first write.
            Ok(outcomes) if record.session_id.is_none() => {
                let created = outcomes.first().and_then(WriteOutcome::session);
                record.session_id = created.map(|entry| entry.session_id.clone());
            }
            Ok(_) => {}
            // Two submits raced with one key: the other one won.
            Err(e) => {
                if let (Some(key), StoreError::Conflict(_)) = (&request.idempotency_key, &e)
                    && let Some(accepted) = self.find_idempotent(key).await?
                {
                    return Ok(accepted);
                }
                return Err(e.into());
            }
        }
        Ok(self.admit(request, record, message, 0))
    }

    /// Registers a stored queued run as live and puts it in its session's queue.
    pub(super) fn admit(
        &self,
        request: RunRequest,
        record: RunRecord,
        message: Option<TranscriptMessage>,
        starts: u32,
    ) -> Accepted {
        let (accepted, queued) = self.make_live(request, record, message, starts);
        self.enqueue(accepted.session_key.clone(), queued);
        accepted
    }

    /// Makes a run live (its waiters find it from now on) without queueing it yet: recovery
    /// makes every run it takes up live before the first starts, so a resumed run that waits
    /// on another taken-up run finds it live, not `running` in the store with nobody on it.
    pub(super) fn make_live(
        &self,
        request: RunRequest,
        record: RunRecord,
        message: Option<TranscriptMessage>,
        starts: u32,
    ) -> (Accepted, Queued) {
        let cancel = self.inner.abort_all.child_token();
        let accepted = self.register(&request, &record, &cancel);
        let queued = Queued {
            run_id: record.run_id.clone(),
            request,
            message,
            cancel,
            record,
            starts,
        };
        (accepted, queued)
    }

    /// Makes a stored run live: its waiters, its idempotency key, its `queued` event.
    pub(super) fn register(
        &self,
        request: &RunRequest,
        record: &RunRecord,
        cancel: &CancellationToken,
    ) -> Accepted {
        let (run_id, session_key) = (record.run_id.clone(), record.session_key.clone());
        lock(&self.inner.live).insert(
            run_id.clone(),
            LiveRun {
                session_key: session_key.clone(),
                state: watch::channel(record.clone()).0,
                cancel: cancel.clone(),
                ending: None,
            },
        );
        self.inner.live_count.send_modify(|n| *n += 1);
        if let Some(key) = &request.idempotency_key {
            lock(&self.inner.idempotency).insert(key.clone(), run_id.clone());
        }
        self.emit(&run_id, &session_key, RunEventData::Queued);
        Accepted {
            run_id,
            session_key,
            accepted_at: record.created_at,
            deduplicated: false,
        }
    }

    /// The run an idempotency key names, live here or stored.
    pub(super) async fn find_idempotent(&self, key: &str) -> CoreResult<Option<Accepted>> {
        if let Some(accepted) = self.find_live(key).await? {
            return Ok(Some(accepted));
        }
        let record = self.store().get_run_by_idempotency(key).await?;
        Ok(record.map(deduplicated))
    }

    /// The run an idempotency key names when it is live here (no read for a key it does not
    /// know).
    async fn find_live(&self, key: &str) -> CoreResult<Option<Accepted>> {
        let Some(run_id) = lock(&self.inner.idempotency).get(key).cloned() else {
            return Ok(None);
        };
        Ok(self.store().get_run(&run_id).await?.map(deduplicated))
    }

    /// Appends to the session's queue; starts its worker when the session was idle.
    pub(super) fn enqueue(&self, session_key: SessionKey, queued: Queued) {
        self.insert(session_key, queued, None);
    }

    /// Puts a run in its session's queue — at the back, or `at` `(index, popped then)`: where
    /// it stood when it was taken out, moved up by the runs taken from the front since — and
    /// starts the session's worker when it was idle.
    pub(super) fn insert(&self, session_key: SessionKey, queued: Queued, at: Option<(usize, u64)>) {
        let start_worker = {
            let mut queues = lock(&self.inner.queues);
            let is_new = !queues.contains_key(&session_key);
            let queue = queues
                .entry(session_key.clone())
                .or_insert_with(|| self.new_queue());
            match at {
                Some((index, popped)) if !is_new => {
                    let moved_up =
                        usize::try_from(queue.popped.saturating_sub(popped)).unwrap_or(usize::MAX);
                    let index = index.saturating_sub(moved_up).min(queue.pending.len());
                    queue.pending.insert(index, queued);
                }
                Some(_) => queue.pending.push_front(queued),
                None => queue.pending.push_back(queued),
            }
            is_new.then_some(queue.worker)
        };
        if let Some(worker) = start_worker {
            self.spawn_worker(session_key, None, worker);
        }
    }

    /// A session's queue, served by a new worker.
    pub(super) fn new_queue(&self) -> SessionQueue {
        let worker = self
            .inner
            .workers
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        SessionQueue {
            worker: worker + 1,
            ..SessionQueue::default()
        }
    }

    /// Frees the session for the next message as its run `run_id` ends, before the run's
    /// waiters are told: when no run waits in its queue, the queue goes and its worker ends.
    /// A message sent the moment a waiter is told then starts at once, instead of queueing
    /// behind a run that is over.
    pub(super) fn vacate(&self, session_key: &SessionKey, run_id: &RunId) {
        let mut queues = lock(&self.inner.queues);
        let done = queues.get(session_key).is_some_and(|q| {
            q.pending.is_empty()
                && q.active
                    .as_ref()
                    .is_some_and(|(active, _)| active == run_id)
        });
        if done {
            queues.remove(session_key);
        }
    }

    /// Starts the session's worker (see [`Runtime::session_worker`]). The worker's future is
    /// spawned as it is, not inside another `async` block, and `first` comes boxed: tokio copies
    /// a task's whole future as it spawns it and again as it ends, and the block and the run's
    /// start held inline made it 9 KB (docs/decisions.md, "Small futures where tasks start").
    pub(super) fn spawn_worker(
        &self,
        session_key: SessionKey,
        first: Option<Box<Begun>>,
        worker: u64,
    ) {
        let runtime = self.clone();
        self.inner
            .tasks
            .spawn(runtime.session_worker(session_key, first, worker));
    }

    /// The one worker of a session: runs `first` (a run that started as it was submitted),
    /// then its queue in order, then exits.
    async fn session_worker(self, session_key: SessionKey, first: Option<Box<Begun>>, worker: u64) {
        let session = (&session_key, worker);
        // Whether a run of this worker has ended: only then may its answers still be going out.
        let mut ended = first.is_some();
        if let Some(begun) = first {
            let (run_id, trace) = (begun.record.run_id.clone(), begun.request.trace.clone());
            let work = Box::pin(run::carry_out(&self, *begun));
            self.guarded(session, &run_id, trace.as_deref(), work).await;
        }
        loop {
            let next = {
                let mut queues = lock(&self.inner.queues);
                let mine = queues.get_mut(&session_key).filter(|q| q.worker == worker);
                let Some(queue) = mine else {
                    return;
                };
                match queue.pending.pop_front() {
                    Some(job) => {
                        queue.popped += 1;
                        queue.active = Some((job.run_id.clone(), job.cancel.clone()));
                        job
                    }
                    None => {
                        queues.remove(&session_key);
                        return;
                    }
                }
            };
            let (run_id, trace) = (next.run_id.clone(), next.request.trace.clone());
            if ended {
                super::answers_first().await;
            }
            ended = true;
            let work = Box::pin(run::execute(&self, next));
            self.guarded(session, &run_id, trace.as_deref(), work).await;
        }
    }

    /// Runs one run's `work` in its span; a panic ends the run as failed. The session's active
    /// run is cleared after, when its queue is still `worker`'s. `work` comes boxed: a run's
    /// future is large, and each wrapper would copy it.
    async fn guarded(
        &self,
        (session_key, worker): (&SessionKey, u64),
        run_id: &RunId,
        trace: Option<&str>,
        work: std::pin::Pin<Box<impl std::future::Future<Output = ()>>>,
    ) {
        let span = run_span(run_id, session_key, trace);
        let ran = AssertUnwindSafe(tracing::Instrument::instrument(work, span))
            .catch_unwind()
            .await;
        if ran.is_err() {
            super::recover::recover_panicked(self, run_id).await;
        }
        if let Some(queue) = lock(&self.inner.queues).get_mut(session_key)
            && queue.worker == worker
        {
            queue.active = None;
        }
    }
}

/// The span a run executes in: every line it logs carries its ids (JSON logs: the `span`
/// object), and with traces on it is the run's span in the trace of the work that asked for it
/// (OpenTelemetry's GenAI `invoke_agent`).
fn run_span(run_id: &RunId, session_key: &SessionKey, parent: Option<&str>) -> tracing::Span {
    let agent = session_key.agent_id().unwrap_or("unknown");
    let span = tracing::info_span!(
        "run",
        run_id = %run_id,
        session = %session_key,
        trace_id = tracing::field::Empty,
        otel.name = %format_args!("invoke_agent {agent}"),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.id = agent,
    );
    crate::trace::adopt(&span, parent);
    if let Some(trace_id) = crate::trace::trace_id(&span) {
        span.record("trace_id", trace_id);
    }
    span
}

/// A run's message as its transcript keeps it, with the run it started.
fn user_message(m: super::RunMessage, now: i64, run_id: &RunId) -> TranscriptMessage {
    TranscriptMessage::User(UserMessage {
        content: match m.images.is_empty() {
            true => UserContent::Text(m.text),
            false => UserContent::Blocks(
                std::iter::once(ContentBlock::text(m.text))
                    .chain(m.images)
                    .collect(),
            ),
        },
        timestamp: now,
        provenance: m.provenance,
        // Its run's client matches it with the message it sent by this.
        origin: Some(MessageOrigin::run_input(run_id.as_str())),
    })
}

/// What a queued run stores to start after a restart.
pub(super) fn input_of(request: &RunRequest, message: Option<TranscriptMessage>) -> RunInput {
    RunInput {
        message,
        extra_system_prompt: request.extra_system_prompt.clone(),
        timeout_ms: request
            .timeout
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        model: request.model.clone(),
        chain: request
            .chain
            .iter()
            .map(|k| k.as_str().to_string())
            .collect(),
        deliver: request.deliver.as_ref().map(|d| DeliverInput {
            kind: d.kind.to_string(),
            route: d.route.clone(),
        }),
        trace: request.trace.clone(),
        starts: 0,
    }
}

/// What a running run keeps in the store to be resumed after a stop (SPEC §6.3): its request,
/// without its message (the transcript has it), and how many times it has started now.
pub(super) fn resume_input(request: &RunRequest, starts: u32) -> RunInput {
    RunInput {
        starts,
        ..input_of(request, None)
    }
}

/// A repeated request's answer: the first run.
fn deduplicated(r: RunRecord) -> Accepted {
    Accepted {
        run_id: r.run_id,
        session_key: r.session_key,
        accepted_at: r.created_at,
        deduplicated: true,
    }
}

/// The request of a queued run read back from the store (the inverse of [`input_of`]).
pub(super) fn request_of(record: &RunRecord, input: &RunInput) -> RunRequest {
    let lane = Lane::parse(&record.lane).unwrap_or(Lane::Main);
    let mut request = RunRequest::new(record.session_key.clone(), lane);
    request.extra_system_prompt = input.extra_system_prompt.clone();
    request.timeout = input.timeout_ms.map(std::time::Duration::from_millis);
    request.idempotency_key = record.idempotency_key.clone();
    request.model = input.model.clone();
    request.chain = input
        .chain
        .iter()
        .map(|k| SessionKey::from_canonical(k.clone()))
        .collect();
    request.deliver = input.deliver.as_ref().map(|d| Deliver {
        kind: Deliver::kind_named(&d.kind),
        route: d.route.clone(),
    });
    request.run_id = Some(record.run_id.clone());
    // It goes on in the trace of the work that asked for it (SPEC §10b).
    request.trace = input.trace.clone();
    request
}
