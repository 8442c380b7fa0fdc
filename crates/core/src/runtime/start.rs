//! The commit that starts a run: its message into the transcript and its record (running, or
//! ended when it was aborted while it waited) — and what its start delivers, in the same commit
//! (an A2A task's `WORKING` push, `ReplyHandler::on_start`), so a start is never told twice or
//! not at all.

use super::{RunRequest, Runtime};
use crate::store::{RunRecord, StoreError, WriteOp};

/// Commits `start` (the run's writes) with what the start of a `running` run delivers.
pub(super) async fn commit(
    rt: &Runtime,
    request: &RunRequest,
    record: &RunRecord,
    mut start: Vec<WriteOp>,
    running: bool,
) -> Result<(), StoreError> {
    let delivery = match (running, &request.deliver) {
        (true, Some(deliver)) => rt.inner.replies.on_start(deliver, record).await,
        _ => None,
    };
    let delivers = delivery.is_some();
    start.extend(delivery);
    let outcomes = rt.store().write_batch(start).await?;
    if let (true, Some(outcome)) = (delivers, outcomes.last()) {
        rt.inner.replies.committed(outcome);
    }
    Ok(())
}
