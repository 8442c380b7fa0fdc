//! Run events that wait for their run's `chat.send` answer on the connection that sent it.
//!
//! The reference answers `chat.send` before its run makes any event, and its clients rely on
//! that: the TUI moves its "sending" state to "accepted" on the answer and clears it on the
//! run's first lifecycle event. An instant reply here ends its run within a millisecond, often
//! before the answer is written; the TUI then saw the run end while still "sending", accepted
//! it afterwards and stayed busy for a run that was over. So a connection holds the events of
//! the run its own `chat.send` names (the run id is the request's `idempotencyKey`) until that
//! request is answered, then sends them in order. Other connections are not held.

use std::collections::HashMap;
use std::sync::Arc;

use switchboard_core::RunId;
use switchboard_core::runtime::RunEvent;
use switchboard_protocol::RequestFrame;
use tokio::sync::{Mutex, MutexGuard};

/// Per connection: the runs whose events wait, with the events so far, in order.
#[derive(Default)]
pub(super) struct Held(Mutex<HashMap<RunId, Vec<Arc<RunEvent>>>>);

impl Held {
    /// Starts holding the run `req` starts, when `req` is a `chat.send` that names it; the
    /// caller releases it once `req` is answered.
    pub(super) async fn hold(&self, req: &RequestFrame) -> Option<RunId> {
        if req.method != "chat.send" {
            return None;
        }
        let key = req.params.as_ref()?.get("idempotencyKey")?.as_str()?;
        let run_id = RunId::of_idempotency_key(key)?;
        // A second send under the same key while the first is unanswered keeps what waits.
        self.0.lock().await.entry(run_id.clone()).or_default();
        Some(run_id)
    }

    /// Keeps `event` when its run is held; gives it back otherwise.
    pub(super) async fn keep(&self, event: Arc<RunEvent>) -> Option<Arc<RunEvent>> {
        let mut held = self.0.lock().await;
        match held.get_mut(&event.run_id) {
            Some(waiting) => {
                waiting.push(event);
                None
            }
            None => Some(event),
        }
    }

    /// Stops holding `run_id`: its events so far, and the lock, which the caller keeps while
    /// it sends them so that a newer event of the run cannot overtake them.
    pub(super) async fn release(
        &self,
        run_id: &RunId,
    ) -> (
        Vec<Arc<RunEvent>>,
        MutexGuard<'_, HashMap<RunId, Vec<Arc<RunEvent>>>>,
    ) {
        let mut held = self.0.lock().await;
        let events = held.remove(run_id).unwrap_or_default();
        (events, held)
    }
}
