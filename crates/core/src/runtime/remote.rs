//! Runs on other gateways (a shared store, docs/scale-out.md). Every event of a run here is
//! published on the store's bus; the events of the other gateways' runs are received and sent to
//! this gateway's subscribers like its own, so a client sees a run wherever it runs. A wait for
//! a run another gateway runs reads the store, and again at each of its events' ends (and every
//! second, should an end be missed).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard_protocol::events::StreamedPiece;
use tokio::sync::broadcast::error::RecvError;

use super::pieces::Pieces;
use super::{RunEvent, RunEventData, Runtime, WaitOutcome};
use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::bus::{BusMessage, Envelope, RunRef};
use crate::store::{RunRecord, RunStatus};

/// Longest tool-result text or arguments sent on the bus (a notification holds < 8000 bytes).
const MAX_TEXT: usize = 2_000;
/// How often a wait for another gateway's run reads the store when no end arrives.
const POLL: Duration = Duration::from_secs(1);

/// The bus message of a local event; `None` for the usage counts, which stay local (a client
/// of another gateway reads them from the session's row).
fn outgoing(event: &RunEvent) -> Option<BusMessage> {
    let run = RunRef {
        run_id: event.run_id.clone(),
        session_key: event.session_key.clone(),
    };
    Some(match &event.data {
        RunEventData::Queued => BusMessage::Queued(run),
        RunEventData::Started => BusMessage::Started(run),
        RunEventData::Delta { text, seq, so_far } => BusMessage::Delta {
            run,
            text: text.clone(),
            seq: *seq,
            fresh: StreamedPiece {
                delta: text,
                seq: *seq,
                so_far: so_far.as_deref(),
            }
            .starts_anew(),
        },
        RunEventData::Thinking { text } => BusMessage::Thinking {
            run,
            text: text.clone(),
        },
        RunEventData::ToolCall {
            id,
            name,
            arguments,
        } => BusMessage::ToolCall {
            run,
            id: id.clone(),
            name: name.clone(),
            arguments: match arguments.to_string().len() > MAX_TEXT {
                true => json!({"truncated": true}),
                false => arguments.clone(),
            },
        },
        RunEventData::ToolResult {
            id,
            name,
            is_error,
            text,
        } => BusMessage::ToolResult {
            run,
            id: id.clone(),
            name: name.clone(),
            is_error: *is_error,
            text: cut(text),
        },
        // The result is read from the store where it arrives: it may be long.
        RunEventData::Ended { .. } => BusMessage::Ended(run),
        RunEventData::Usage { .. } => return None,
    })
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// What a received message asks of this gateway.
enum Incoming {
    /// Relay another gateway's run event (an end without its result yet).
    Event(RunEvent),
    /// Abort a run of this gateway's.
    Abort(SessionKey, Option<RunId>),
}

/// A received message as an event or an abort.
fn incoming(message: &BusMessage) -> Incoming {
    let event = |run: &RunRef, data| {
        Incoming::Event(RunEvent {
            run_id: run.run_id.clone(),
            session_key: run.session_key.clone(),
            data,
        })
    };
    match message {
        BusMessage::Queued(run) => event(run, RunEventData::Queued),
        BusMessage::Started(run) => event(run, RunEventData::Started),
        // A fresh piece is its own snapshot, as it left its gateway; the relay paces the rest.
        BusMessage::Delta {
            run,
            text,
            seq,
            fresh,
        } => event(
            run,
            RunEventData::Delta {
                text: text.clone(),
                seq: *seq,
                so_far: fresh.then(|| text.clone()),
            },
        ),
        BusMessage::Thinking { run, text } => {
            event(run, RunEventData::Thinking { text: text.clone() })
        }
        BusMessage::ToolCall {
            run,
            id,
            name,
            arguments,
        } => event(
            run,
            RunEventData::ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            },
        ),
        BusMessage::ToolResult {
            run,
            id,
            name,
            is_error,
            text,
        } => event(
            run,
            RunEventData::ToolResult {
                id: id.clone(),
                name: name.clone(),
                is_error: *is_error,
                text: text.clone(),
            },
        ),
        BusMessage::Ended(run) => event(
            run,
            RunEventData::Ended {
                status: RunStatus::Ok,
                result: None,
                error: None,
            },
        ),
        BusMessage::Abort {
            session_key,
            run_id,
        } => Incoming::Abort(session_key.clone(), run_id.clone()),
    }
}

impl Runtime {
    /// Relays the other gateways' run events to this gateway's subscribers until the engine
    /// stops (a shared store only).
    pub fn start_bus(&self, stop: tokio_util::sync::CancellationToken) {
        let Some(bus) = self.inner.bus.clone() else {
            return;
        };
        let mut messages = bus.subscribe();
        let rt = self.clone();
        self.inner.tasks.spawn(async move {
            // Each remote run's text so far in its current model turn, and its snapshots.
            let mut texts: HashMap<RunId, (String, Pieces)> = HashMap::new();
            loop {
                let message = tokio::select! {
                    message = messages.recv() => message,
                    () = stop.cancelled() => return,
                };
                match message {
                    Ok(envelope) => rt.relay(&envelope, &mut texts).await,
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "run events of other gateways were missed")
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    async fn relay(&self, envelope: &Envelope, texts: &mut HashMap<RunId, (String, Pieces)>) {
        if envelope.from == self.inner.origin {
            return;
        }
        let mut event = match incoming(&envelope.message) {
            Incoming::Event(event) => event,
            Incoming::Abort(session_key, run_id) => {
                if let Err(e) = self.abort_local(&session_key, run_id.as_ref()).await {
                    tracing::warn!(session = %session_key, error = %e, "could not abort a run another gateway asked to stop");
                }
                return;
            }
        };
        match &mut event.data {
            RunEventData::Delta { text, so_far, .. } => {
                let (whole, pieces) = texts.entry(event.run_id.clone()).or_default();
                if so_far.is_some() {
                    whole.clear();
                    pieces.call_starts();
                }
                whole.push_str(text);
                *so_far = pieces.snapshot(whole);
            }
            RunEventData::Ended {
                status,
                result,
                error,
            } => {
                texts.remove(&event.run_id);
                // The end is relayed with the stored outcome or not at all (subscribers only
                // watch; waiters read the stored record themselves).
                let record = match self.inner.store.get_run(&event.run_id).await {
                    Ok(Some(record)) => record,
                    Ok(None) => return,
                    Err(e) => {
                        tracing::warn!(run = %event.run_id, error = %e, "could not read the end of another gateway's run; its end event is not relayed");
                        return;
                    }
                };
                (*status, *result, *error) = (record.status, record.result, record.error);
            }
            _ => {
                texts.remove(&event.run_id);
            }
        }
        let _ = self.inner.events.send(Arc::new(event));
    }

    /// Asks the other gateways to abort the session's running run (or `run_id`).
    pub(super) fn publish_abort(&self, session_key: &SessionKey, run_id: Option<&RunId>) {
        self.send(BusMessage::Abort {
            session_key: session_key.clone(),
            run_id: run_id.cloned(),
        });
    }

    /// Sends a local event to the other gateways.
    pub(super) fn publish_remote(&self, event: &RunEvent) {
        if self.inner.bus.is_some()
            && let Some(message) = outgoing(event)
        {
            self.send(message);
        }
    }

    fn send(&self, message: BusMessage) {
        if let Some(bus) = &self.inner.bus {
            bus.publish(Envelope {
                from: self.inner.origin.clone(),
                message,
            });
        }
    }

    /// Waits up to `timeout` for a run this gateway does not run: its stored record, read again
    /// at each end the bus brings (and every [`POLL`]).
    pub(super) async fn wait_stored(
        &self,
        run_id: &RunId,
        timeout: Duration,
    ) -> CoreResult<WaitOutcome> {
        let mut events = self.subscribe();
        let read = async || -> CoreResult<RunRecord> {
            self.inner
                .store
                .get_run(run_id)
                .await?
                .ok_or_else(|| CoreError::NotFound(format!("Run not found: {run_id}")))
        };
        let mut record = read().await?;
        // A wait without a bound (`Duration::MAX`) has a deadline a year away.
        let now = tokio::time::Instant::now();
        let deadline = now
            .checked_add(timeout)
            .unwrap_or(now + Duration::from_secs(365 * 86_400));
        // Only a shared store has runs that end elsewhere; here a stored live run is one a
        // shutdown left queued.
        while !record.status.is_final() && self.inner.cluster.shared() {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                break;
            }
            let tick = (deadline - now).min(POLL);
            tokio::select! {
                // A gateway that stops waits on nothing more: a run its stop left `running`
                // is resumed by the next start (or by another gateway), not here.
                () = self.inner.closing.cancelled() => break,
                event = events.recv() => match event {
                    Ok(e) if e.run_id != *run_id || !matches!(e.data, RunEventData::Ended { .. }) => continue,
                    _ => {}
                },
                () = tokio::time::sleep(tick) => {}
            }
            record = read().await?;
        }
        Ok(WaitOutcome {
            wait_timed_out: !record.status.is_final(),
            record,
        })
    }
}
