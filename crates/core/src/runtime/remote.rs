//! Runs on other gateways (a shared store, docs/scale-out.md). Every event of a run here is
//! published on the store's bus; the events of the other gateways' runs are received and sent to
//! this gateway's subscribers like its own, so a client sees a run wherever it runs. A wait for
//! a run another gateway runs reads the store, and again at each of its events' ends (and every
//! second, should an end be missed).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::{RunEvent, RunEventData, Runtime, WaitOutcome};
use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{RunRecord, RunStatus};

/// Longest tool-result text or arguments sent on the bus (a notification holds < 8000 bytes).
const MAX_TEXT: usize = 2_000;
/// How often a wait for another gateway's run reads the store when no end arrives.
const POLL: Duration = Duration::from_secs(1);

/// The bus message of a local event.
pub(super) fn encode(origin: &str, event: &RunEvent) -> String {
    let data = match &event.data {
        RunEventData::Queued => json!({"t": "queued"}),
        RunEventData::Started => json!({"t": "started"}),
        RunEventData::Delta { text, .. } => json!({"t": "delta", "text": text}),
        RunEventData::Thinking { text } => json!({"t": "thinking", "text": text}),
        RunEventData::ToolCall {
            id,
            name,
            arguments,
        } => {
            let arguments = match arguments.to_string().len() > MAX_TEXT {
                true => json!({"truncated": true}),
                false => arguments.clone(),
            };
            json!({"t": "toolCall", "id": id, "name": name, "arguments": arguments})
        }
        RunEventData::ToolResult {
            id,
            name,
            is_error,
            text,
        } => json!({"t": "toolResult", "id": id, "name": name, "isError": is_error,
                    "text": cut(text)}),
        // The result is read from the store where it arrives: it may be long.
        RunEventData::Ended { .. } => json!({"t": "ended"}),
    };
    // PostgreSQL delivers one of two equal notifications sent together: the number keeps two
    // equal deltas apart.
    static SENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    json!({"from": origin, "n": n, "runId": event.run_id.as_str(),
           "sessionKey": event.session_key.as_str(), "data": data})
    .to_string()
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// A received abort another gateway asked for: the session and the run.
fn decode_abort(payload: &str, origin: &str) -> Option<(SessionKey, Option<RunId>)> {
    let v: Value = serde_json::from_str(payload).ok()?;
    let abort = v.get("abort")?;
    if v["from"].as_str()? == origin {
        return None;
    }
    let key = SessionKey::from_canonical(abort["sessionKey"].as_str()?.to_string());
    Some((key, abort["runId"].as_str().map(RunId::from_string)))
}

/// A received message: who sent it and the event (an end without its result yet).
fn decode(payload: &str) -> Option<(String, RunEvent)> {
    let v: Value = serde_json::from_str(payload).ok()?;
    let d = &v["data"];
    let text = |k: &str| d[k].as_str().unwrap_or_default().to_string();
    let data = match d["t"].as_str()? {
        "queued" => RunEventData::Queued,
        "started" => RunEventData::Started,
        "delta" => RunEventData::Delta {
            text: text("text"),
            accumulated: String::new(),
        },
        "thinking" => RunEventData::Thinking { text: text("text") },
        "toolCall" => RunEventData::ToolCall {
            id: text("id"),
            name: text("name"),
            arguments: d["arguments"].clone(),
        },
        "toolResult" => RunEventData::ToolResult {
            id: text("id"),
            name: text("name"),
            is_error: d["isError"].as_bool().unwrap_or(false),
            text: text("text"),
        },
        "ended" => RunEventData::Ended {
            status: RunStatus::Ok,
            result: None,
            error: None,
        },
        _ => return None,
    };
    let event = RunEvent {
        run_id: RunId::from_string(v["runId"].as_str()?),
        session_key: SessionKey::from_canonical(v["sessionKey"].as_str()?.to_string()),
        data,
    };
    Some((v["from"].as_str()?.to_string(), event))
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
            // Each remote run's text so far in its current model turn.
            let mut texts: HashMap<RunId, String> = HashMap::new();
            loop {
                let message = tokio::select! {
                    message = messages.recv() => message,
                    () = stop.cancelled() => return,
                };
                match message {
                    Ok(payload) => rt.relay(&payload, &mut texts).await,
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "run events of other gateways were missed")
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    async fn relay(&self, payload: &str, texts: &mut HashMap<RunId, String>) {
        if let Some((session_key, run_id)) = decode_abort(payload, &self.inner.origin) {
            if let Err(e) = self.abort_local(&session_key, run_id.as_ref()).await {
                tracing::warn!(session = %session_key, error = %e, "could not abort a run another gateway asked to stop");
            }
            return;
        }
        let Some((from, mut event)) = decode(payload) else {
            return;
        };
        if from == self.inner.origin {
            return;
        }
        match &mut event.data {
            RunEventData::Delta { text, accumulated } => {
                let so_far = texts.entry(event.run_id.clone()).or_default();
                so_far.push_str(text);
                accumulated.clone_from(so_far);
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
        if let Some(bus) = &self.inner.bus {
            let abort =
                json!({"sessionKey": session_key.as_str(), "runId": run_id.map(RunId::as_str)});
            bus.publish(json!({"from": self.inner.origin, "abort": abort}).to_string());
        }
    }

    /// Sends a local event to the other gateways.
    pub(super) fn publish_remote(&self, event: &RunEvent) {
        if let Some(bus) = &self.inner.bus {
            bus.publish(encode(&self.inner.origin, event));
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
