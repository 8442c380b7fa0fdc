//! Recovery at start: the runs a stopped process left live (SPEC §12, docs/decisions.md).
//!
//! A run that never started was acknowledged with its input, so it goes back to its session's
//! queue, in the order it was submitted, and runs as if nothing happened. One aborted while it
//! was queued is not run; its message joins the transcript if it had not yet. A run that was running
//! cannot be resumed mid-stream: it ends `aborted` with [`RunRecord::INTERRUPTED`], its input
//! (appended when it started) and everything it committed stay in the transcript, and the
//! transcript is closed like any cut-off run's (a result for each unanswered tool call, an
//! `aborted` assistant message). Streamed text not yet committed died with the process.

use super::{Runtime, cut, queue};
use crate::error::CoreResult;
use crate::store::{EntryPatch, RunInput, RunRecord, RunStatus, WriteOp};

/// Messages read back to find a cut-off run's unanswered tool calls.
const TAIL: usize = 64;

/// What recovery found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recovered {
    /// Runs that were running, now `aborted`.
    pub interrupted: usize,
    /// Queued runs back in their queues.
    pub resumed: usize,
}

impl Runtime {
    /// Ends the runs the last process left running and puts the ones it left queued back in
    /// their sessions' queues. Called once, when the engine opens, before anything submits.
    pub async fn recover(&self) -> CoreResult<Recovered> {
        let live = self.store().live_runs().await?;
        self.take_up(live).await
    }

    /// Ends the `runs` that were running and queues the queued ones again, in order: the runs
    /// of a stopped process (at start), or of a gateway that stopped sharing the store.
    pub async fn take_up(&self, runs: Vec<(RunRecord, Option<RunInput>)>) -> CoreResult<Recovered> {
        let mut recovered = Recovered::default();
        let mut queued = Vec::new();
        // Every run that ends here is recorded before any queued one starts again: a failure
        // half way must not leave acknowledged runs started and then stopped by the failed open.
        for (record, input) in runs {
            match (record.status, input) {
                (RunStatus::Queued, Some(input)) => queued.push((record, input)),
                (RunStatus::Aborted, Some(input)) => {
                    self.keep_aborted_message(record, input).await?
                }
                (_, _) => {
                    self.end_interrupted(record).await?;
                    recovered.interrupted += 1;
                }
            }
        }
        // (A failure above fails the whole take-up: at a start the open fails and is retried
        // whole; for a stopped gateway's runs the claim stays this gateway's, see scale-out.md.)
        for (record, input) in queued {
            let request = queue::request_of(&record, &input);
            self.admit(request, record, input.message);
            recovered.resumed += 1;
        }
        Ok(recovered)
    }

    /// A run aborted while queued whose message had not reached the transcript: it gets there
    /// now, and the run keeps its `aborted` record.
    async fn keep_aborted_message(&self, record: RunRecord, input: RunInput) -> CoreResult<()> {
        let mut ops = Vec::new();
        if let (Some(message), Some(_)) =
            (input.message, self.store().get(&record.session_key).await?)
        {
            ops.push(WriteOp::Append {
                key: record.session_key.clone(),
                create: None,
                messages: vec![message],
            });
        }
        ops.push(WriteOp::PutRun(record));
        self.store().write_batch(ops).await?;
        Ok(())
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
        // Into the transcript the run worked on (not a newer one a reset started).
        let same =
            |e: &&crate::store::SessionEntry| Some(&e.session_id) == record.session_id.as_ref();
        if let (true, Some(entry)) = (started, entry.as_ref().filter(same)) {
            let tail = self.store().history(&entry.session_id, TAIL, None).await?;
            let unanswered = cut::unanswered_calls(&tail.messages);
            let streamed = cut::Streamed::default();
            let closing =
                cut::closing_messages(&unanswered, streamed, RunRecord::INTERRUPTED, self.now_ms());
            ops.push(WriteOp::Append {
                key: key.clone(),
                create: None,
                messages: closing,
            });
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
