//! A run's end told to its waiting `sessions_send` once queued, before it commits
//! (docs/decisions.md, "A send's reply is told once its end is queued").
//!
//! Where the store commits writes in the order they were sent
//! ([`Store::commits_in_order`](crate::store::Store::commits_in_order)), a run's end that a
//! tool call of another run waits for is queued on the store's writer, and the waiter is told
//! the end at once: the caller's next model call goes out while the end commits. The waiter's
//! run writes the call's result with a check ([`WriteOp::Ended`]) queued after the end: the
//! result commits only with the end it quotes, and fails the waiter's run when that end did not
//! land as told (the waiter's write then fails as any failed write of a run does). Nothing is
//! acknowledged sooner: the end's own events, its other waiters and what follows it still wait
//! for its commit, and the result's event for the result's. A stop between the two commits
//! keeps the end alone; the resumed caller makes its call again and finds the run ended.
//!
//! Only a run's tool call waits this way ([`ToolContext::wait_run`](super::tool::ToolContext)):
//! an operator's `tools.invoke` or an MCP client's call answers its client at once, so it waits
//! for the commit.

use std::time::Duration;

use tokio::sync::watch;

use super::{Runtime, WaitOutcome, lock};
use crate::error::CoreResult;
use crate::ids::RunId;
use crate::store::{RunRecord, StoreError, WriteOp, WriteOutcome};

/// How a wait that may be told a queued end ended.
pub(crate) struct Told {
    pub(crate) outcome: WaitOutcome,
    /// The check the waiter's write must carry: the end it was told is not committed yet.
    pub(crate) requires: Option<WriteOp>,
}

impl Runtime {
    /// [`Runtime::wait`], answering as soon as the run's end is queued where the store commits
    /// in order; the answer then says what the waiter's write must check.
    pub(crate) async fn wait_told(&self, run_id: &RunId, timeout: Duration) -> CoreResult<Told> {
        let watched = self.store().commits_in_order().then(|| {
            let mut live = lock(&self.inner.live);
            live.get_mut(run_id).map(|l| {
                let ending = l.ending.get_or_insert_with(|| watch::channel(None).0);
                (l.state.subscribe(), ending.subscribe())
            })
        });
        let Some((state, ending)) = watched.flatten() else {
            let outcome = self.wait(run_id, timeout).await?;
            return Ok(Told {
                outcome,
                requires: None,
            });
        };
        let told = tokio::time::timeout(timeout, told(state, ending)).await;
        match told.ok().flatten() {
            Some(record) => Ok(Told {
                requires: Some(WriteOp::Ended {
                    run_id: record.run_id.clone(),
                    status: record.status,
                }),
                outcome: WaitOutcome {
                    record,
                    wait_timed_out: false,
                },
            }),
            // Committed, gone (it ended) or timed out: the usual wait answers at once.
            None => {
                let outcome = self.wait(run_id, Duration::ZERO).await?;
                Ok(Told {
                    outcome,
                    requires: None,
                })
            }
        }
    }

    /// Commits `end`, the writes of `record`'s end, queued on the store's writer, having told
    /// the waiters that check it (see the module doc) once it was queued; `None` when none
    /// waits that way (nothing was written).
    pub(super) async fn commit_told(
        &self,
        record: &RunRecord,
        end: &[WriteOp],
    ) -> Option<Result<Vec<WriteOutcome>, StoreError>> {
        let ending = lock(&self.inner.live)
            .get(&record.run_id)
            .and_then(|l| l.ending.clone())
            .filter(|ending| ending.receiver_count() > 0)?;
        let queued = self.store().write_batch_beside(end.to_vec()).ok()?;
        ending.send_replace(Some(record.clone()));
        Some(queued.await)
    }
}

/// The run's record once it ended (`None`: it is gone): its committed end, or its end queued.
async fn told(
    mut state: watch::Receiver<RunRecord>,
    mut ending: watch::Receiver<Option<RunRecord>>,
) -> Option<RunRecord> {
    loop {
        // A committed end is no longer only told: the usual wait answers it.
        if state.borrow_and_update().status.is_final() {
            return None;
        }
        if let Some(record) = ending.borrow_and_update().clone() {
            return Some(record);
        }
        tokio::select! {
            changed = state.changed() => changed.ok()?,
            changed = ending.changed() => changed.ok()?,
        }
    }
}
