//! Run events that wait for their run's `chat.send` answer on the connection that sent it.
//!
//! The reference answers `chat.send` before its run makes any event, and its clients rely on
//! that: the TUI moves its "sending" state to "accepted" on the answer and clears it on the
//! run's first lifecycle event. An instant reply here ends its run within a millisecond, often
//! before the answer is written; the TUI then saw the run end while still "sending", accepted
//! it afterwards and stayed busy for a run that was over. So a connection holds the events of
//! the run its own `chat.send` names (the run id is the request's `idempotencyKey`) until that
//! request is answered, then sends them in order. Other connections are not held.
//!
//! Holding is not enough for the reference's TUI: it reads the answer and the run's events in
//! one read, and the answer only resolves a promise, whose continuation runs after the events
//! were handled. It then saw the run end while still "sending", and, when the answer's `runId`
//! was the key it sent, accepted the run afterwards and waited for it forever. Its code takes an
//! answer whose `runId` differs from its key, for a run it already saw end, as done; so a run
//! the TUI starts gets the id `tui:<key>` ([`own_run_id`]). The Control UI tracks its own key
//! and keeps the key as the run id (docs/decisions.md).

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

/// The reference TUI's `client.id`.
const TUI: &str = "openclaw-tui";

/// A `chat.send` from the reference's TUI: its `idempotencyKey` becomes `tui:<key>`, so its
/// run's id is not the key the TUI sent (see the module's text). The same key still starts
/// one run: it is prefixed the same way every time.
pub(super) fn own_run_id(client_id: Option<&String>, req: &mut RequestFrame) {
    if req.method != "chat.send" || client_id.map(String::as_str) != Some(TUI) {
        return;
    }
    let Some(key) = req
        .params
        .as_mut()
        .and_then(|p| p.get_mut("idempotencyKey"))
    else {
        return;
    };
    if let Some(text) = key.as_str() {
        *key = serde_json::Value::String(format!("tui:{text}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn send(method: &str) -> RequestFrame {
        serde_json::from_value(json!({
            "id": "1", "method": method,
            "params": {"sessionKey": "main", "message": "hi", "idempotencyKey": "k-1"}
        }))
        .unwrap()
    }

    #[test]
    fn only_the_tuis_chat_send_gets_a_run_id_of_its_own() {
        let tui = TUI.to_string();
        let mut from_tui = send("chat.send");
        own_run_id(Some(&tui), &mut from_tui);
        assert_eq!(from_tui.params.unwrap()["idempotencyKey"], "tui:k-1");

        let control_ui = "openclaw-control-ui".to_string();
        for (client, method) in [
            (Some(&control_ui), "chat.send"),
            (None, "chat.send"),
            (Some(&tui), "agent"),
        ] {
            let mut req = send(method);
            own_run_id(client, &mut req);
            assert_eq!(
                req.params.unwrap()["idempotencyKey"],
                "k-1",
                "{client:?} {method}"
            );
        }
    }
}
