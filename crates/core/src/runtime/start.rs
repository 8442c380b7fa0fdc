//! The commit that starts a run: its message into the transcript and its record (running, or
//! ended when it was aborted while it waited) — and what its start delivers, in the same commit
//! (an A2A task's `WORKING` push, `ReplyHandler::on_start`), so a start is never told twice or
//! not at all.
//!
//! A run that can start the moment it is submitted — its session idle here, a slot free on its
//! lane, this gateway leased, the session's lock free — is stored already running: one commit
//! holds what queueing it and starting it would have written ([`Runtime::start_now`]).

use switchboard_protocol::message::TranscriptMessage;
use tokio_util::sync::CancellationToken;

use super::lanes::LeaseHolder;
use super::queue::SessionQueue;
use super::run::Begun;
use super::{Accepted, RunRequest, Runtime, lock};
use crate::error::CoreResult;
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{
    NewSession, RunRecord, RunStatus, SessionEntry, SessionLock, StoreError, TryLock, WriteOp,
    WriteOutcome,
};

/// The writes that start a run: its input appended first (when it has one), then its record
/// (`run`: a queued run's [`WriteOp::PutRun`], a new run's [`WriteOp::NewRun`]). `create`: the
/// session, when it does not exist yet, made by the same commit (by the append, or first).
pub(super) fn writes(
    key: &SessionKey,
    run: WriteOp,
    input: Option<TranscriptMessage>,
    create: Option<NewSession>,
) -> Vec<WriteOp> {
    let mut start = Vec::with_capacity(3);
    match (input, create) {
        (Some(message), create) => start.push(WriteOp::Append {
            key: key.clone(),
            create,
            messages: vec![message],
        }),
        (None, Some(new)) => start.push(WriteOp::Create(Box::new(new))),
        (None, None) => {}
    }
    start.push(run);
    start
}

/// Commits `start` (the run's writes) with what the start of a `running` run delivers, while
/// `held`, the session's lock, is held ([`crate::store::Store::write_start`]; it is back in
/// `held` after). The run's `input`, when `start` appends it first, joins its session's kept
/// conversation once written: the run does not read back what it has in hand. Answers the
/// session's entry as the append left it, when `start` appended, or as `start` created it.
pub(super) async fn commit(
    rt: &Runtime,
    request: &RunRequest,
    record: &RunRecord,
    mut start: Vec<WriteOp>,
    held: &mut Option<SessionLock>,
    running: bool,
    input: Option<&TranscriptMessage>,
) -> Result<Option<SessionEntry>, StoreError> {
    let delivery = match (running, &request.deliver) {
        (true, Some(deliver)) => rt.inner.replies.on_start(deliver, record).await,
        _ => None,
    };
    // The reply of the tool call that asked for the run, when it waits for this commit
    // (`joined.rs`): sent below, in this same poll, before the delivery's outcome (the last).
    let joined = request.joined.as_ref();
    if let Some(joined) = joined {
        joined.send_with(&mut start);
    }
    let delivers = delivery.is_some();
    start.extend(delivery);
    let (written, kept) = rt.store().write_start(start, held.take()).await;
    *held = kept;
    if let Some(joined) = joined {
        joined.answered(written.is_ok());
    }
    let outcomes = written?;
    if let (true, Some(outcome)) = (delivers, outcomes.last()) {
        rt.inner.replies.committed(outcome);
    }
    match (input, outcomes.into_iter().next()) {
        (Some(message), Some(WriteOutcome::Appended(appended))) => {
            if let Some(&seq) = appended.seqs.last() {
                rt.inner
                    .conversations
                    .push(&appended.entry.session_id, seq, message);
            }
            Ok(Some(appended.entry))
        }
        (_, Some(WriteOutcome::Created(entry, _))) => Ok(Some(*entry)),
        _ => Ok(None),
    }
}

/// What a run that starts as it is submitted holds: its lane slot and its session's lock.
pub(super) struct Now {
    pub lease: LeaseHolder,
    /// The worker of the session's queue the claim made.
    pub worker: u64,
    pub held: Option<SessionLock>,
    pub cancel: CancellationToken,
}

impl Runtime {
    /// Claims `key` for `run_id` when its run can start at once: the session has no run here
    /// (its queue is taken, so runs submitted meanwhile queue behind it), its lane has a free
    /// slot, this gateway holds its lease, and no other gateway runs the session (`asked`:
    /// what asking for its lock found already, else it is asked now). `None` otherwise: the
    /// run is queued as usual (and a lock `asked` holds is let go).
    pub(super) async fn start_now(
        &self,
        key: &SessionKey,
        request: &RunRequest,
        run_id: &RunId,
        asked: Option<TryLock>,
    ) -> Option<Now> {
        let told = request
            .deliver
            .as_ref()
            .is_some_and(super::Deliver::told_at_start);
        if told || !self.inner.cluster.leased() || self.is_closing() {
            return None;
        }
        let lease = self.inner.lanes.try_lease(request.lane)?;
        let cancel = self.inner.abort_all.child_token();
        let worker;
        {
            let mut queues = lock(&self.inner.queues);
            if queues.contains_key(key) {
                return None;
            }
            let queue = SessionQueue {
                active: Some((run_id.clone(), cancel.clone())),
                ..self.new_queue()
            };
            worker = queue.worker;
            queues.insert(key.clone(), queue);
        }
        let found = match asked {
            Some(found) => Ok(found),
            None => self.store().try_lock_session(key).await,
        };
        match found {
            Ok(TryLock::Held(held)) => Some(Now {
                lease,
                worker,
                held,
                cancel,
            }),
            Ok(TryLock::Unasked(lock)) => Some(Now {
                lease,
                worker,
                held: Some(lock),
                cancel,
            }),
            Ok(TryLock::Busy) | Err(_) => {
                self.unclaim(key);
                None
            }
        }
    }

    /// Stores a run claimed by [`Runtime::start_now`] already running — its input appended and
    /// what its request commits with, in one commit — and hands it to its session's worker.
    /// Answers once that is committed, as a queued run's submit does.
    pub(super) async fn submit_started(
        &self,
        mut request: RunRequest,
        mut record: RunRecord,
        input: Option<TranscriptMessage>,
        create: Option<NewSession>,
        mut now: Now,
    ) -> CoreResult<Accepted> {
        let key = record.session_key.clone();
        record.status = RunStatus::Running;
        record.started_at = Some(record.created_at);
        // Kept while it runs, to be resumed after a stop (SPEC §6.3).
        let resume = super::queue::resume_input(&request, 1);
        let run = WriteOp::NewRun(record.clone(), Some(Box::new(resume)));
        let mut start = writes(&key, run, input.clone(), create);
        start.append(&mut request.commit_with);
        let written = commit(
            self,
            &request,
            &record,
            start,
            &mut now.held,
            true,
            input.as_ref(),
        );
        let entry = match written.await {
            Ok(entry) => {
                if record.session_id.is_none() {
                    record.session_id = entry.as_ref().map(|e| e.session_id.clone());
                }
                entry
            }
            Err(e) => {
                drop(now);
                self.unclaim(&key);
                // Two submits raced with one key: the other one won.
                if let (Some(idempotency), StoreError::Conflict(_)) = (&request.idempotency_key, &e)
                    && let Some(accepted) = self.find_idempotent(idempotency).await?
                {
                    return Ok(accepted);
                }
                return Err(e.into());
            }
        };
        crate::measure::started_at_once(request.lane.as_str());
        let accepted = self.register(&request, &record, &now.cancel);
        let worker = now.worker;
        let begun = Box::new(Begun {
            request,
            record,
            cancel: now.cancel,
            lease: Some(now.lease),
            held: now.held,
            started: Ok(entry),
            keep: None,
            starts: 0,
        });
        self.spawn_worker(key, Some(begun), worker);
        Ok(accepted)
    }

    /// Gives up a claim of [`Runtime::start_now`] whose run did not start: runs queued behind
    /// it meanwhile get the session's worker.
    pub(super) fn unclaim(&self, key: &SessionKey) {
        let worker = {
            let mut queues = lock(&self.inner.queues);
            let Some(queue) = queues.get_mut(key) else {
                return;
            };
            queue.active = None;
            if queue.pending.is_empty() {
                queues.remove(key);
                return;
            }
            queue.worker
        };
        self.spawn_worker(key.clone(), None, worker);
    }
}
