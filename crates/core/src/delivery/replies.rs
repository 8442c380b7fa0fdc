//! What becomes of a run's reply, decided in one place: the reply tokens a model answers to stay
//! silent or to end an exchange, and the delivery of a reply that is none of them.
//!
//! The runtime calls [`Replies`] through its own `ReplyHandler` interface when a run that asked
//! for delivery ends; the agent-to-agent exchange and the sub-agent announce read the tokens
//! from here.

use std::sync::Arc;

use super::{Outbound, Outbox, route_of};
use crate::runtime::{BoxFuture, Deliver, ReplyHandler};
use crate::store::{RunRecord, RunStatus, Store, WriteOp, WriteOutcome};

/// A reply that says "deliver nothing".
pub const NO_REPLY: &str = "NO_REPLY";
/// An announce step's reply that keeps the announce silent.
pub const ANNOUNCE_SKIP: &str = "ANNOUNCE_SKIP";
/// A reply-back turn that ends the agent-to-agent exchange.
pub const REPLY_SKIP: &str = "REPLY_SKIP";

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
/// is not silent gets an outbox record, committed with the run's end.
pub struct Replies {
    outbox: Arc<Outbox>,
    store: Arc<dyn Store>,
}

impl Replies {
    pub fn new(outbox: Arc<Outbox>, store: Arc<dyn Store>) -> Self {
        Self { outbox, store }
    }
}

impl ReplyHandler for Replies {
    fn on_end<'a>(
        &'a self,
        deliver: &'a Deliver,
        record: &'a RunRecord,
    ) -> BoxFuture<'a, Option<WriteOp>> {
        Box::pin(async move {
            let text = record.result.as_deref().unwrap_or_default();
            if record.status != RunStatus::Ok || is_silent(text) {
                return None;
            }
            let entry = self.store.get(&record.session_key).await.ok().flatten();
            let route = deliver
                .route
                .clone()
                .or_else(|| entry.as_ref().and_then(route_of));
            let out = Outbound {
                kind: deliver.kind,
                session_key: Some(record.session_key.clone()),
                source_key: None,
                run_id: Some(record.run_id.clone()),
                route,
                text: text.to_string(),
                idempotency_key: Some(format!("{}:{}", deliver.kind, record.run_id)),
            };
            let delivery = self.outbox.record(out, entry.as_ref());
            Some(WriteOp::Enqueue(Box::new(delivery)))
        })
    }

    fn committed(&self, outcome: &WriteOutcome) {
        if let WriteOutcome::Enqueued(record) = outcome {
            self.outbox.settled(record);
            self.outbox.wake();
        }
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
