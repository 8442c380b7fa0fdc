//! Recovery at start: the runs a stopped process left live (SPEC §12, docs/decisions.md).
//!
//! A run that never started was acknowledged with its input, so it goes back to its session's
//! queue, in the order it was submitted, and runs as if nothing happened. One aborted while it
//! was queued is not run; its message joins the transcript if it had not yet. A run that was
//! running goes back to its queue too, ahead of the runs queued after it, and is resumed from
//! its transcript as committed (`resume.rs`, SPEC §6.3); streamed text not yet committed died
//! with the process, and the model is asked again. Only a running run stored without its
//! request (by a gateway from before resumption) ends `aborted` with [`RunRecord::INTERRUPTED`],
//! its transcript closed like any cut-off run's.

use super::{RunEventData, Runtime, cut, queue};
use crate::error::CoreResult;
use crate::store::{EntryPatch, RunInput, RunRecord, RunStatus, WriteOp};

/// Messages read back to find a cut-off run's unanswered tool calls.
const TAIL: usize = 64;

/// What recovery found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recovered {
    /// Runs that were running and cannot be resumed, now `aborted`.
    pub interrupted: usize,
    /// Runs back in their queues: queued ones, and running ones to be resumed.
    pub resumed: usize,
}

impl Runtime {
    /// Puts the runs the last process left queued or running back in their sessions' queues
    /// (the running ones to be resumed). Called once, when the engine opens, before anything
    /// submits.
    pub async fn recover(&self) -> CoreResult<Recovered> {
        let live = self.store().live_runs().await?;
        self.take_up(live).await
    }

    /// Queues the `runs` that were queued or running again, in order: the runs of a stopped
    /// process (at start), or of a gateway that stopped sharing the store.
    pub async fn take_up(&self, runs: Vec<(RunRecord, Option<RunInput>)>) -> CoreResult<Recovered> {
        let mut recovered = Recovered::default();
        let mut queued = Vec::new();
        // Every run that ends here is recorded before any queued one starts again: a failure
        // half way must not leave acknowledged runs started and then stopped by the failed open.
        for (record, input) in runs {
            match (record.status, input) {
                // One aborted while queued goes through its queue too, already aborted: its
                // message joins the transcript in its turn, after a resumed run's answer.
                (RunStatus::Queued | RunStatus::Running | RunStatus::Aborted, Some(input)) => {
                    queued.push((record, input))
                }
                (_, _) => {
                    self.end_interrupted(record).await?;
                    recovered.interrupted += 1;
                }
            }
        }
        // (A failure above fails the whole take-up: at a start the open fails and is retried
        // whole; for a stopped gateway's runs the claim stays this gateway's, see scale-out.md.)
        // Every run is live before the first one starts: a resumed run waiting on another
        // (a `sessions_send` made again) must find it live, not stored `running` with nobody
        // on it.
        let mut live = Vec::with_capacity(queued.len());
        for (record, input) in queued {
            let request = queue::request_of(&record, &input);
            let status = record.status;
            // A running run's message is in its transcript already.
            let message = input.message.filter(|_| status != RunStatus::Running);
            let run_id = record.run_id.clone();
            let (accepted, run) = self.make_live(request, record, message, input.starts);
            live.push((accepted.session_key, run));
            match status {
                RunStatus::Aborted => self.cancel_live(&run_id),
                _ => recovered.resumed += 1,
            }
        }
        for (session_key, run) in live {
            self.enqueue(session_key, run);
        }
        Ok(recovered)
    }

    /// Cancels a live run (one put back in its queue already aborted).
    fn cancel_live(&self, run_id: &crate::ids::RunId) {
        if let Some(live) = super::lock(&self.inner.live).get(run_id) {
            live.cancel.cancel();
        }
    }

    /// Records a run the stop cut off as `aborted`, closing its transcript when it had started.
    async fn end_interrupted(&self, mut record: RunRecord) -> CoreResult<()> {
        let started = record.status == RunStatus::Running;
        let key = record.session_key.clone();
        // A gateway that stopped let go of its session: another run may hold it now. Its
        // transcript is closed while no run of any gateway writes to it.
        let _held = self.store().lock_session(&key).await?;
        record.status = RunStatus::Aborted;
        record.ended_at = Some(self.now_ms());
        // A run that never started was not cut off by the stop: its input was lost (a database
        // from before inputs were kept) or it was aborted while queued.
        record.error = Some(match started {
            true => RunRecord::INTERRUPTED.to_string(),
            false => super::abort::ABORTED_QUEUED.to_string(),
        });
        let mut ops = Vec::new();
        let entry = self.store().get(&key).await?;
        if started
            && let Some(closing) = self
                .closing(&record, entry.as_ref(), RunRecord::INTERRUPTED)
                .await?
        {
            ops.push(closing);
        }
        if entry.is_some() {
            let flag = EntryPatch {
                aborted_last_run: Some(true),
                ..EntryPatch::default()
            };
            ops.push(WriteOp::Patch {
                key,
                patch: Box::new(flag),
            });
        }
        ops.push(WriteOp::PutRun(record));
        self.store().write_batch(ops).await?;
        Ok(())
    }
}

impl Runtime {
    /// What closes the transcript of a run the stop cut off, when it is not resumed: an error
    /// result for each tool call left without one, and an `aborted` message saying `reason`.
    /// `entry`: the run's session as stored; nothing when a reset started a newer transcript.
    pub(super) async fn closing(
        &self,
        record: &RunRecord,
        entry: Option<&crate::store::SessionEntry>,
        reason: &str,
    ) -> CoreResult<Option<WriteOp>> {
        // Into the transcript the run worked on (not a newer one a reset started).
        let Some(entry) = entry.filter(|e| Some(&e.session_id) == record.session_id.as_ref())
        else {
            return Ok(None);
        };
        let tail = self.store().history(&entry.session_id, TAIL, None).await?;
        let unanswered = cut::unanswered_calls(&tail.messages);
        let streamed = cut::Streamed::default();
        Ok(Some(WriteOp::Append {
            key: record.session_key.clone(),
            create: None,
            messages: cut::closing_messages(&unanswered, streamed, reason, self.now_ms()),
        }))
    }

    /// The end of a run aborted before it started (`starts`: how many times it started
    /// before). A resumed one's transcript is closed: its cut-off calls would otherwise stay
    /// without results, and the window keeps a call only with its result.
    pub(super) async fn aborted_before_start(
        &self,
        record: &RunRecord,
        starts: u32,
    ) -> super::end::Ending {
        let mut why = super::abort::ABORTED_QUEUED;
        if starts > 0 {
            why = super::abort::ABORTED_UNRESUMED;
            self.close_unresumed(record, why).await;
        }
        super::end::Ending::new(RunStatus::Aborted, None, Some(why.into()))
    }

    async fn close_unresumed(&self, record: &RunRecord, reason: &str) {
        let key = &record.session_key;
        let closed = async {
            let _held = self.store().lock_session(key).await?;
            let entry = self.store().get(key).await?;
            if let Some(closing) = self.closing(record, entry.as_ref(), reason).await? {
                self.store().write_batch(vec![closing]).await?;
            }
            CoreResult::Ok(())
        };
        if let Err(e) = closed.await {
            tracing::warn!(run_id = %record.run_id, error = %e, "could not close the transcript of a run aborted before it was resumed");
        }
    }
}

/// A run whose loop panicked (a bug, in a tool an embedder added for instance): recorded as an
/// error so its waiters, the counters and shutdown never wait on it forever.
pub(super) async fn recover_panicked(rt: &Runtime, run_id: &crate::ids::RunId) {
    let live = super::lock(&rt.inner.live)
        .get(run_id)
        .map(|l| l.state.borrow().clone());
    let Some(mut record) = live else {
        return;
    };
    tracing::error!(%run_id, "a run stopped on a panic; it is recorded as an error");
    let error = "internal error: the run stopped unexpectedly (see the gateway log)".to_string();
    record.status = RunStatus::Error;
    record.error = Some(error.clone());
    record.ended_at = Some(rt.now_ms());
    if let Err(e) = rt.store().put_run(record.clone()).await {
        tracing::error!(%run_id, error = %e, "could not store the end of a run that panicked");
    }
    rt.retire(&record);
    rt.emit(
        run_id,
        &record.session_key,
        RunEventData::Ended {
            status: record.status,
            result: None,
            error: Some(error),
        },
    );
}
