//! A run's end: its record, its session's flag, its reply's delivery — and its last reply with
//! the reply's token counts — in one commit, then its waiters and subscribers told.
//!
//! The last model reply of a run (one with no tool call) is not committed on its own: it lands
//! with the run's end (issue 38: one commit for the reply and the run's end). Nothing about the
//! reply is acknowledged before that commit (the `chat` final event and the run's waiters come
//! after it), and a crash before it loses an unacknowledged reply only: the next start ends the
//! run `aborted` as any run left running (its input, committed when it started, stays).

use switchboard_protocol::message::TranscriptMessage;

use super::hold::write_end;
use super::{RunEventData, RunRequest, Runtime};
use crate::store::{EntryPatch, RunRecord, RunStatus, WriteOp};

/// How a run ended, before it is written down.
pub(super) struct Ending {
    pub(super) status: RunStatus,
    pub(super) result: Option<String>,
    pub(super) error: Option<String>,
    /// The run's last reply, written with its end.
    pub(super) reply: Option<Reply>,
}

impl Ending {
    pub(super) fn failed(error: String) -> Self {
        Self::new(RunStatus::Error, None, Some(error))
    }

    /// A run the gateway's stop cut off, to be resumed: nothing of its end is written.
    pub(super) fn left_for_resumption() -> Self {
        Self::new(RunStatus::Running, None, None)
    }

    /// Whether the run is left to be resumed ([`Ending::left_for_resumption`]).
    pub(super) fn left(&self) -> bool {
        self.status == RunStatus::Running
    }

    pub(super) fn new(status: RunStatus, result: Option<String>, error: Option<String>) -> Self {
        Self {
            status,
            result,
            error,
            reply: None,
        }
    }
}

/// A run's last reply, not yet written: the run's fence, the reply's append and the session's
/// token counts; and what the conversation cache keeps once it lands.
pub(super) struct Reply {
    pub(super) fence: WriteOp,
    pub(super) append: WriteOp,
    pub(super) tokens: EntryPatch,
    /// The transcript's seq before the reply (`None` once a gap appeared).
    pub(super) last_seq: Option<i64>,
    pub(super) session_id: String,
    /// The model's view of the conversation, the reply included.
    pub(super) messages: Vec<TranscriptMessage>,
}

/// What the conversation cache keeps once a run's last reply lands: the transcript's seq before
/// the reply, the transcript, the model's view with the reply.
type Keeps = (Option<i64>, String, Vec<TranscriptMessage>);

/// The writes of a run's end: its last reply after the run's fence, the message `kept` (of a
/// run whose start never landed), the record, and the session's flag with the reply's token
/// counts (one `Patch`).
fn end_writes(
    record: &RunRecord,
    reply: Option<Reply>,
    kept: Option<WriteOp>,
) -> (Vec<WriteOp>, Option<Keeps>) {
    let key = &record.session_key;
    let aborted = Some(record.status == RunStatus::Aborted);
    let mut end: Vec<WriteOp> = Vec::with_capacity(5);
    // The run's fence heads the batch (a reply commits only while the run is held here).
    let (flag, keeps) = match reply {
        Some(reply) => {
            end.push(reply.fence);
            end.extend(kept);
            end.push(reply.append);
            let keeps = (reply.last_seq, reply.session_id, reply.messages);
            let tokens = EntryPatch {
                aborted_last_run: aborted,
                ..reply.tokens
            };
            (tokens, Some(keeps))
        }
        None => {
            end.extend(kept);
            let flag = EntryPatch {
                aborted_last_run: aborted,
                ..EntryPatch::default()
            };
            (flag, None)
        }
    };
    end.extend([
        WriteOp::PutRun(record.clone()),
        WriteOp::Patch {
            key: key.clone(),
            patch: Box::new(flag),
        },
    ]);
    (end, keeps)
}

/// Writes the run's end (with its last reply, its session flag and its reply's delivery, in one
/// commit), lets the session's lock go (`held`, with that commit where the store can) and frees
/// the session's queue here, then tells waiters and subscribers: a message sent the moment its
/// waiter is told finds the session free.
pub(super) async fn finish(
    rt: &Runtime,
    request: &RunRequest,
    mut record: RunRecord,
    ending: Ending,
    keep: Option<TranscriptMessage>,
    mut held: Option<crate::store::SessionLock>,
) {
    let key = record.session_key.clone();
    let Ending {
        status,
        mut result,
        mut error,
        reply,
    } = ending;
    record.status = status;
    record.result = result.clone();
    record.error = error.clone();
    record.ended_at = Some(rt.now_ms());
    // The message of a run whose start never landed enters the transcript with its end.
    let kept = keep.map(|message| super::run::append(&key, message));
    let (mut end, keeps) = end_writes(&record, reply, kept);
    // The reply's delivery is committed with the run's end: an acknowledged reply is never
    // left undelivered by a crash.
    let delivery = match &request.deliver {
        Some(deliver) => rt.inner.replies.on_end(deliver, &record).await,
        None => None,
    };
    let delivers = delivery.is_some();
    end.extend(delivery);
    match write(rt, &record, end, &mut held).await {
        Ok(Some(outcomes)) => {
            if let (true, Some(outcome)) = (delivers, outcomes.last()) {
                rt.inner.replies.committed(outcome);
            }
            if let Some((last_seq, session_id, messages)) = keeps
                && let Some(seq) = super::run::appended_seq(&outcomes)
                    .and_then(|seq| super::run::follow(last_seq, seq))
            {
                rt.inner.conversations.put(&session_id, seq, messages);
            }
        }
        // An earlier try landed (its answer was lost): the outbox finds the delivery.
        Ok(None) => {}
        Err(e) if super::fence::lost(&record, &e) => return rt.forget(&record),
        Err(e) => {
            // The session may have been deleted meanwhile; the run record alone must still land
            // (an error when its reply could not be kept, as when the reply was written alone).
            let run_id = &record.run_id;
            tracing::debug!(%run_id, error = %e, "could not store the run's end with its session flag");
            if keeps.is_some() {
                record.status = RunStatus::Error;
                (result, error) = (None, Some(e.to_string()));
                record.result = None;
                record.error = error.clone();
            }
            if let Err(e) = rt.store().put_run(record.clone()).await {
                tracing::error!(%run_id, error = %e, "could not store the run's end");
            }
        }
    }
    drop(held);
    rt.vacate(&key, &record.run_id);
    rt.retire(&record);
    let agent = record.session_key.agent_id().unwrap_or("unknown");
    crate::measure::run_ended(agent, record.status.as_str());
    // One line a run for the operator's log (`logs.tail`, `openclaw logs`).
    let ran_ms = record.ended_at.zip(record.started_at).map(|(e, s)| e - s);
    tracing::info!(
        run_id = %record.run_id,
        session = %key,
        status = record.status.as_str(),
        ms = ran_ms.unwrap_or(0),
        model = record.model.as_deref().unwrap_or("-"),
        "run ended"
    );
    rt.emit(
        &record.run_id,
        &key,
        RunEventData::Ended {
            status: record.status,
            result,
            error,
        },
    );
}

/// [`write_end`], queued and told first to the waiters that check it (`told.rs`) where the
/// store lets it; a told end that failed is written again as any end is.
async fn write(
    rt: &Runtime,
    record: &RunRecord,
    end: Vec<WriteOp>,
    held: &mut Option<crate::store::SessionLock>,
) -> Result<Option<Vec<crate::store::WriteOutcome>>, crate::store::StoreError> {
    if held.is_none()
        && let Some(Ok(outcomes)) = rt.commit_told(record, &end).await
    {
        return Ok(Some(outcomes));
    }
    write_end(rt, record, end, held).await
}
