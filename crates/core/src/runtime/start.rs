//! The commit that starts a run: its message into the transcript and its record (running, or
//! ended when it was aborted while it waited) — and what its start delivers, in the same commit
//! (an A2A task's `WORKING` push, `ReplyHandler::on_start`), so a start is never told twice or
//! not at all.

use switchboard_protocol::message::TranscriptMessage;

use super::{RunRequest, Runtime};
use crate::store::{RunRecord, StoreError, WriteOp, WriteOutcome};

/// Commits `start` (the run's writes) with what the start of a `running` run delivers. The
/// run's `input`, when `start` appends it first, joins its session's kept conversation once
/// written: the run does not read back what it has in hand.
pub(super) async fn commit(
    rt: &Runtime,
    request: &RunRequest,
    record: &RunRecord,
    mut start: Vec<WriteOp>,
    running: bool,
    input: Option<&TranscriptMessage>,
) -> Result<(), StoreError> {
    let delivery = match (running, &request.deliver) {
        (true, Some(deliver)) => rt.inner.replies.on_start(deliver, record).await,
        _ => None,
    };
    let delivers = delivery.is_some();
    start.extend(delivery);
    let outcomes = rt.store().write_batch(start).await?;
    if let (Some(message), Some(WriteOutcome::Appended(appended))) = (input, outcomes.first())
        && let Some(&seq) = appended.seqs.last()
    {
        let session_id = &appended.entry.session_id;
        rt.inner.conversations.push(session_id, seq, message);
    }
    if let (true, Some(outcome)) = (delivers, outcomes.last()) {
        rt.inner.replies.committed(outcome);
    }
    Ok(())
}
