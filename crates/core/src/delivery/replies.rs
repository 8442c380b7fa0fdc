//! What becomes of a run's reply, decided in one place: the reply tokens a model answers to stay
//! silent or to end an exchange, and the delivery of a reply that is none of them.
//!
//! The runtime calls [`Replies`] through its own `ReplyHandler` interface when a run that asked
//! for delivery ends; the agent-to-agent exchange and the sub-agent announce read the tokens
//! from here.

use std::sync::Arc;
use std::time::Duration;
use switchboard_protocol::delivery::DeliveryKind;

use super::{Outbound, Outbox, route_of};
use crate::keys::SessionKey;
use crate::runtime::{BoxFuture, Deliver, ReplyHandler};
use crate::store::{
    DeliveryStatus, RunRecord, RunStatus, SessionEntry, Store, StoreError, WriteOp, WriteOutcome,
};

/// Reads of the session a reply is routed by, before the reply is given up as failed.
const READ_TRIES: u32 = 6;
/// The wait after the first failed read; doubled after each (0.1 + 0.2 + … + 1.6 s ≈ 3 s in all).
const FIRST_WAIT: Duration = Duration::from_millis(100);

/// A reply that says "deliver nothing".
pub const NO_REPLY: &str = "NO_REPLY";
/// An announce step's reply that keeps the announce silent.
pub const ANNOUNCE_SKIP: &str = "ANNOUNCE_SKIP";
/// A reply-back turn that ends the agent-to-agent exchange.
pub const REPLY_SKIP: &str = "REPLY_SKIP";

/// The store's named token that holds an A2A task's push configs (`crate::a2a_tasks::push`
/// writes it): a task without one has no end push to make.
pub fn a2a_push_configs(task_id: &str) -> String {
    format!("{}:{task_id}", DeliveryKind::A2aPush)
}

/// The idempotency key of an A2A task's `WORKING` push, made when its run starts.
pub fn a2a_push_working(task_id: &str) -> String {
    format!("{}:{task_id}:working", DeliveryKind::A2aPush)
}

/// Whether a reply asks to be delivered nowhere: empty, `NO_REPLY` or `ANNOUNCE_SKIP`
/// (trimmed, case-sensitive).
pub fn is_silent(reply: &str) -> bool {
    let reply = reply.trim();
    reply.is_empty() || reply == NO_REPLY || reply == ANNOUNCE_SKIP
}

/// Whether a reply-back turn ends the exchange: empty or exactly `REPLY_SKIP` (trimmed).
pub fn ends_exchange(reply: &str) -> bool {
    let reply = reply.trim();
    reply.is_empty() || reply == REPLY_SKIP
}

/// Whether an announce step's reply keeps the announce silent.
pub fn skips_announce(reply: &str) -> bool {
    reply.trim() == ANNOUNCE_SKIP
}

/// The runtime's reply handler: a run that asked for delivery and ended `ok` with a reply that
/// is not silent gets an outbox record, committed with the run's end (an A2A push: any end).
pub struct Replies {
    outbox: Arc<Outbox>,
    store: Arc<dyn Store>,
}

impl Replies {
    pub fn new(outbox: Arc<Outbox>, store: Arc<dyn Store>) -> Self {
        Self { outbox, store }
    }

    /// The session's entry, read again after a failure (a store that hiccups answers the next
    /// read); the last error once [`READ_TRIES`] reads failed. Bounded, so the run's end — and a
    /// shutdown waiting for it — is never held for long.
    async fn session(&self, key: &SessionKey) -> Result<Option<SessionEntry>, StoreError> {
        let mut wait = FIRST_WAIT;
        let mut tries = 0;
        loop {
            tries += 1;
            match self.store.get(key).await {
                Ok(entry) => return Ok(entry),
                Err(e) if tries >= READ_TRIES => return Err(e),
                Err(e) => {
                    tracing::warn!(session = %key, error = %e, "could not read the session to route a reply; trying again");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
            }
        }
    }

    /// Whether the A2A task of `record` has push configs to push its end to. A read that
    /// failed counts as yes: the push is made, and its channel reads them again.
    async fn has_push_configs(&self, record: &RunRecord) -> bool {
        let name = a2a_push_configs(record.run_id.as_str());
        !matches!(self.store.token(&name).await, Ok(None))
    }

    /// The record of a reply whose session could not be read: `failed`, with the reason, so it
    /// reads as what happened (neither "no route" nor sent against a send policy unread).
    fn unroutable(
        &self,
        deliver: &Deliver,
        record: &RunRecord,
        text: &str,
        error: &StoreError,
    ) -> WriteOp {
        tracing::error!(run = %record.run_id, error = %error, "could not read the session to route a reply; its delivery is recorded failed");
        let out = outbound(deliver, record, text, deliver.route.clone());
        let mut delivery = self.outbox.record(out, None);
        delivery.status = DeliveryStatus::Failed;
        delivery.detail = Some(format!(
            "the session could not be read to route the reply: {error}"
        ));
        WriteOp::Enqueue(Box::new(delivery))
    }
}

impl ReplyHandler for Replies {
    fn on_end<'a>(
        &'a self,
        deliver: &'a Deliver,
        record: &'a RunRecord,
    ) -> BoxFuture<'a, Option<WriteOp>> {
        Box::pin(async move {
            // A reply the gateway's stop lost for good is replaced by one notice saying so
            // (SPEC §6.3): the person gets exactly one message back, never silence.
            let notice = lost_notice(deliver, record);
            let text = match &notice {
                Some(notice) => notice.as_str(),
                None => record.result.as_deref().unwrap_or_default(),
            };
            // An A2A task's push reports every end (failed and canceled too, a silent reply
            // included): the client waits for the task's final state, not for a chat message.
            let every_end = deliver.kind == DeliveryKind::A2aPush;
            let answered = record.status == RunStatus::Ok && !is_silent(text);
            if !every_end && !answered && notice.is_none() {
                return None;
            }
            if every_end && !self.has_push_configs(record).await {
                return None;
            }
            // The session decides the route (when the run was given none) and the send policy:
            // a read that failed is not a session without a route.
            let entry = match self.session(&record.session_key).await {
                Ok(entry) => entry,
                Err(e) => return Some(self.unroutable(deliver, record, text, &e)),
            };
            let route = deliver
                .route
                .clone()
                .or_else(|| entry.as_ref().and_then(route_of));
            let out = outbound(deliver, record, text, route);
            let delivery = self.outbox.record(out, entry.as_ref());
            Some(WriteOp::Enqueue(Box::new(delivery)))
        })
    }

    fn on_start<'a>(
        &'a self,
        deliver: &'a Deliver,
        record: &'a RunRecord,
    ) -> BoxFuture<'a, Option<WriteOp>> {
        Box::pin(async move {
            if deliver.kind != DeliveryKind::A2aPush || !self.has_push_configs(record).await {
                return None;
            }
            // The channel reads the task's state when it sends; the text names what it pushes.
            let mut out = outbound(deliver, record, "TASK_STATE_WORKING", deliver.route.clone());
            out.idempotency_key = Some(a2a_push_working(record.run_id.as_str()));
            Some(WriteOp::Enqueue(Box::new(self.outbox.record(out, None))))
        })
    }

    fn committed(&self, outcome: &WriteOutcome) {
        if let WriteOutcome::Enqueued(record) = outcome {
            self.outbox.settled(record);
            self.outbox.wake();
        }
    }
}

/// The notice a chat gets instead of a reply the gateway's stop lost for good.
fn lost_notice(deliver: &Deliver, record: &RunRecord) -> Option<String> {
    let why = record
        .answer_lost()
        .filter(|_| deliver.kind == DeliveryKind::Reply)?;
    Some(format!(
        "⚠️ My answer to your message was lost: {why}. Please send it again."
    ))
}

/// The delivery of a run's reply (its idempotency key: one per run and kind).
fn outbound(
    deliver: &Deliver,
    record: &RunRecord,
    text: &str,
    route: Option<switchboard_protocol::sessions::DeliveryContext>,
) -> Outbound {
    Outbound {
        kind: deliver.kind.clone(),
        session_key: Some(record.session_key.clone()),
        source_key: None,
        run_id: Some(record.run_id.clone()),
        route,
        text: text.to_string(),
        idempotency_key: Some(format!("{}:{}", deliver.kind, record.run_id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_replies_and_exchange_ends() {
        assert!(is_silent(" NO_REPLY ") && is_silent("ANNOUNCE_SKIP") && is_silent("  "));
        assert!(!is_silent("no_reply") && !is_silent("REPLY_SKIP"));
        assert!(ends_exchange("REPLY_SKIP\n") && ends_exchange(""));
        assert!(!ends_exchange("ANNOUNCE_SKIP"));
        assert!(skips_announce(" ANNOUNCE_SKIP") && !skips_announce("NO_REPLY"));
    }
}
