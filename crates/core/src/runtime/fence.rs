//! A run's writes are fenced by the epoch it is held under (SPEC §4.3, docs/scale-out.md): on
//! a store several gateways share, a gateway that lost its lease — paused, cut off, or taken
//! for stopped — while another took up its runs commits nothing more of them. A gateway whose
//! lease is not renewed starts no run until it is.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::Runtime;
use crate::store::{RunRecord, StoreError, WriteOp};

/// How often a run waiting for its gateway's lease looks again.
const LEASE_POLL: Duration = Duration::from_millis(250);

/// The op that lets a batch of the run's commit only while the run is still held here.
pub(super) fn fence_of(record: &RunRecord) -> WriteOp {
    WriteOp::Fence {
        run_id: record.run_id.clone(),
        epoch: record.epoch,
    }
}

/// `ops` after the run's fence.
pub(super) fn fenced(record_fence: &WriteOp, ops: Vec<WriteOp>) -> Vec<WriteOp> {
    std::iter::once(record_fence.clone()).chain(ops).collect()
}

/// Waits until this gateway holds its lease (at once alone, or while it is renewed); `false`
/// when `cancel` fired first.
pub(super) async fn wait_leased(rt: &Runtime, cancel: &CancellationToken) -> bool {
    let mut said = false;
    while !rt.inner.cluster.leased() {
        if !said {
            tracing::warn!(
                "this gateway's lease is not renewed (the database does not answer it): runs \
                 wait to start until it is"
            );
            said = true;
        }
        tokio::select! {
            () = tokio::time::sleep(LEASE_POLL) => {}
            () = cancel.cancelled() => return false,
        }
    }
    true
}

/// Logs a write the fence refused: the run is another gateway's now, which carries it on.
pub(super) fn lost(record: &RunRecord, error: &StoreError) -> bool {
    if let StoreError::Fenced(why) = error {
        tracing::warn!(run_id = %record.run_id, "{why}; this gateway writes nothing more of it");
        return true;
    }
    false
}
