//! A reply's last tool result commits beside the next model call (docs/decisions.md, "A tool
//! result commits beside the next model call"). The result is in the model's request before it
//! is written; its write is queued before the call starts and committed off the run's thread, so
//! the call does not wait for the commit. Nothing else changes: the result is reported once it
//! is written, and the call's own events wait for that report; every write the run makes after
//! waits for the commit, and the store commits it before any write queued after it (the
//! closing of a run cut off meanwhile). A stop before the commit leaves the call without a
//! result, as a stop just before the write would have (SPEC §6.3).

use switchboard_protocol::message::TranscriptMessage;

use super::{Ending, ModelRequest, ModelResponse, RunEventData, Turn, lock};
use crate::store::{StoreFuture, WriteOutcome};

/// A tool result whose write was queued and is committing.
pub(super) struct Beside<'a> {
    written: StoreFuture<'a, Vec<WriteOutcome>>,
    /// Its event, sent once it is written.
    event: RunEventData,
}

impl<'a> Turn<'a> {
    /// [`Turn::append`] of a reply's last tool result, left committing beside the next model
    /// call ([`Turn::call_model_beside`]) when the store can (`None`: it was appended as usual).
    pub(super) async fn append_beside(
        &mut self,
        (message, event): (TranscriptMessage, RunEventData),
        request: &mut ModelRequest,
    ) -> Result<Option<Beside<'a>>, Ending> {
        let ops = self
            .result_ops(&message)
            .ok_or_else(Ending::left_for_resumption)?;
        match self.rt.store().write_batch_beside(ops) {
            Ok(written) => {
                request.messages.push(message);
                Ok(Some(Beside { written, event }))
            }
            Err(ops) => self
                .write_result(ops, (message, event), request)
                .await
                .map(|()| None),
        }
    }

    /// [`Turn::call_model`], its first call made while `beside` commits. Fails the run as
    /// [`Turn::append`] does when the result was not written.
    pub(super) async fn call_model_beside(
        &mut self,
        request: &mut ModelRequest,
        beside: Option<Beside<'a>>,
    ) -> Result<ModelResponse, Ending> {
        let Some(beside) = beside else {
            return self.call_model(request).await;
        };
        lock(&self.partial).held = Some(Vec::new());
        let (written, first) = tokio::join!(self.report(beside), self.call_target(request, false));
        self.note_written(written)
            .map_err(|e| Ending::failed(e.to_string()))?;
        self.call_model_from(request, Some(first)).await
    }

    /// Waits for `beside` alone (the run goes no further).
    pub(super) async fn settle(&mut self, beside: Beside<'a>) -> Result<(), Ending> {
        let written = self.report(beside).await;
        self.note_written(written)
            .map_err(|e| Ending::failed(e.to_string()))
    }

    /// Waits for the write, then sends its event (when it landed) and the events held back
    /// meanwhile.
    async fn report(
        &self,
        Beside { written, event }: Beside<'a>,
    ) -> Result<Vec<WriteOutcome>, crate::store::StoreError> {
        let written = written.await;
        let held = lock(&self.partial).held.take().unwrap_or_default();
        let (rt, key, run_id) = (self.rt, self.key, &self.ctx.caller().run_id);
        if written.is_ok() {
            rt.emit(run_id, key, event);
        }
        for event in held {
            rt.emit(run_id, key, event);
        }
        written
    }
}
