//! Following one task's events (`SendStreamingMessage`, `SubscribeToTask`): `WORKING` updates
//! while its run goes, then the reply as an artifact and the final status, read from the stored
//! record so the stream ends with what `GetTask` answers.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::a2a::StreamResponse;
use tokio::sync::broadcast::{self, error::RecvError};

use super::task::{end_events, progress_event};
use crate::clock::Clock;
use crate::ids::RunId;
use crate::runtime::{RunEvent, RunEventData, Runtime};

/// The longest a stream waits for the final record of a run that told it ended.
const END_WAIT: Duration = Duration::from_secs(10);

/// The events of one task, from the moment its receiver subscribed until the task ends.
pub struct TaskEvents {
    runtime: Runtime,
    clock: Arc<dyn Clock>,
    events: broadcast::Receiver<Arc<RunEvent>>,
    run_id: RunId,
    context_id: String,
    ready: VecDeque<StreamResponse>,
    /// The end was read: nothing follows `ready`.
    ended: bool,
    /// The stored record was looked at once (a task that ended before the first read).
    checked: bool,
}

impl TaskEvents {
    pub(super) fn new(
        runtime: Runtime,
        clock: Arc<dyn Clock>,
        events: broadcast::Receiver<Arc<RunEvent>>,
        run_id: RunId,
        context_id: String,
    ) -> Self {
        Self {
            runtime,
            clock,
            events,
            run_id,
            context_id,
            ready: VecDeque::new(),
            ended: false,
            checked: false,
        }
    }

    /// The next event; `None` once the final status was given (or the gateway stopped).
    pub async fn next(&mut self) -> Option<StreamResponse> {
        if !self.checked {
            self.checked = true;
            self.read_end().await;
        }
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if self.ended {
                return None;
            }
            match self.events.recv().await {
                Ok(event) if event.run_id == self.run_id => {
                    if let RunEventData::Ended { .. } = event.data {
                        self.wait_end().await;
                        // Told ended, the record is final: a store that could not be read
                        // ends the stream without its final status rather than hang it.
                        self.ended = true;
                    } else if let Some(progress) =
                        progress_event(&event, &self.context_id, self.clock.now_ms())
                    {
                        return Some(progress);
                    }
                }
                Ok(_) => {}
                // Missed events: the record says whether the task ended meanwhile.
                Err(RecvError::Lagged(_)) => self.read_end().await,
                Err(RecvError::Closed) => {
                    self.read_end().await;
                    self.ended = true;
                }
            }
        }
    }

    /// Queues the end events once the run told it ended (its final record is a moment away
    /// at most: bounded, so a store that does not answer ends the stream).
    async fn wait_end(&mut self) {
        match self.runtime.wait(&self.run_id, END_WAIT).await {
            Ok(outcome) if !outcome.wait_timed_out => {
                self.ready
                    .extend(end_events(&outcome.record, &self.context_id));
            }
            Ok(_) => {
                tracing::warn!(run = %self.run_id, "an A2A task's run said it ended but its record did not")
            }
            Err(e) => {
                tracing::warn!(run = %self.run_id, error = %e, "could not read an A2A task's run for its stream");
            }
        }
    }

    /// Queues the end events when the stored run has ended.
    async fn read_end(&mut self) {
        match self.runtime.record(&self.run_id).await {
            Ok(Some(record)) if record.status.is_final() => {
                self.ready.extend(end_events(&record, &self.context_id));
                self.ended = true;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(run = %self.run_id, error = %e, "could not read an A2A task's run for its stream");
            }
        }
    }
}
