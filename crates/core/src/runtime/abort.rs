//! `chat.abort`: stopping a running run, or one still waiting in its queue.
//!
//! A queued run's abort is committed before it is answered: the run is taken out of its queue
//! (so its worker cannot start it meanwhile), its record is stored `aborted` — keeping its
//! input, so its acknowledged message still reaches the transcript — and it goes back to its
//! place, where its turn appends the message and ends it. A restart in between finds the record
//! `aborted` and appends the message itself (`recover.rs`); it never runs the run.

use super::queue::{Queued, input_of};
use super::{Runtime, lock};
use crate::error::CoreResult;
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{RunStatus, WriteOp};

/// The error of a run stopped before it started.
pub(super) const ABORTED_QUEUED: &str = "aborted before it started";
/// The error of a run cut off by a stop and aborted before it went on.
pub(super) const ABORTED_UNRESUMED: &str = "aborted before it went on after the gateway's stop";

/// A run taken out of its queue, and where it stood.
struct Held {
    job: Queued,
    index: usize,
    popped: u64,
}

impl Runtime {
    /// Aborts the session's running run (and, with `run_id`, only that run, queued or running).
    /// Answers the ids of the runs told to stop; a queued one's abort is committed by then. On
    /// a shared store, a run this gateway does not run is told to stop through the bus: the
    /// gateway running it stops it (answered here when the stored run is live).
    pub async fn abort(
        &self,
        session_key: &SessionKey,
        run_id: Option<&RunId>,
    ) -> CoreResult<Vec<RunId>> {
        let aborted = self.abort_local(session_key, run_id).await?;
        if !aborted.is_empty() || !self.inner.cluster.shared() {
            return Ok(aborted);
        }
        self.publish_abort(session_key, run_id);
        let Some(run_id) = run_id else {
            return Ok(Vec::new());
        };
        let stored = self.inner.store.get_run(run_id).await?;
        Ok(stored
            .filter(|r| r.session_key == *session_key && !r.status.is_final())
            .map(|r| vec![r.run_id])
            .unwrap_or_default())
    }

    /// [`Runtime::abort`] of the runs of this gateway only.
    pub(super) async fn abort_local(
        &self,
        session_key: &SessionKey,
        run_id: Option<&RunId>,
    ) -> CoreResult<Vec<RunId>> {
        let Some(run_id) = run_id else {
            let queues = lock(&self.inner.queues);
            let active = queues.get(session_key).and_then(|q| q.active.as_ref());
            return Ok(match active {
                Some((id, cancel)) => {
                    cancel.cancel();
                    vec![id.clone()]
                }
                None => Vec::new(),
            });
        };
        let cancel = match lock(&self.inner.live).get(run_id) {
            Some(run) if run.session_key == *session_key => run.cancel.clone(),
            _ => return Ok(Vec::new()),
        };
        let Some(held) = self.hold(session_key, run_id) else {
            cancel.cancel();
            return Ok(vec![run_id.clone()]);
        };
        let mut record = held.job.record.clone();
        record.status = RunStatus::Aborted;
        record.ended_at = Some(self.now_ms());
        record.error = Some(ABORTED_QUEUED.to_string());
        let input = input_of(&held.job.request, held.job.message.clone());
        let written = self
            .store()
            .write_batch(vec![WriteOp::QueueRun(record, Box::new(input))])
            .await;
        cancel.cancel();
        let at = Some((held.index, held.popped));
        self.insert(session_key.clone(), held.job, at);
        written?;
        Ok(vec![run_id.clone()])
    }

    /// Takes a queued run out of its session's queue (`None` when it is not waiting there).
    fn hold(&self, session_key: &SessionKey, run_id: &RunId) -> Option<Held> {
        let mut queues = lock(&self.inner.queues);
        let queue = queues.get_mut(session_key)?;
        let index = queue.pending.iter().position(|q| q.run_id == *run_id)?;
        let job = queue.pending.remove(index)?;
        Some(Held {
            job,
            index,
            popped: queue.popped,
        })
    }
}
