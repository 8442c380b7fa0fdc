//! The delivery outbox (SPEC §9.1): the one way anything leaves the gateway for a channel.
//!
//! Every outbound message — a reply to an inbound channel message, a `sessions_send` announce, a
//! sub-agent announce, the `send` method — becomes a [`DeliveryRecord`] that is committed before
//! the first attempt. The send policy and the route are decided when the record is made: a denied
//! delivery is stored `denied` and never attempted; one with no route is stored `recorded` (its
//! text is in the session's transcript). Pending records are attempted by one background task
//! ([`Outbox::start`]), retried with exponential backoff (`delivery.*` config) on the engine's
//! clock, and end `delivered` or `failed`, with the reason kept. Idempotency keys make enqueueing
//! repeatable; each attempt carries the record id so receivers can drop a repeat that a crash
//! between "sent" and "marked delivered" would cause; deliveries into a transcript commit together
//! with their `delivered` mark, so those happen exactly once.
//!
//! This module decides *whether and when* (and, in `replies.rs`, what becomes of a run's reply);
//! each channel knows *how* it sends. The outbox knows channels only through the channel seam
//! (`crate::channel`): the registry the composition root built, looked up by the record's
//! channel name. It never imports `crate::channels` (the implementations and inbound doors sit
//! above it) nor `crate::sessions`.

mod ops;
pub mod replies;
mod route;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_protocol::delivery::DeliveryKind;

use switchboard_protocol::sessions::DeliveryContext;
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use ops::info;
pub use route::route_of;

use crate::access::{self, SendDecision};
use crate::channel::{self, ChannelError, Channels};
use crate::clock::Clock;
use crate::config::Config;
use crate::error::CoreResult;
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::resolve::Resolver;
use crate::store::StoreError;
use crate::store::{
    DeliveryRecord, DeliveryStatus, DeliveryUpdate, SessionEntry, Store, WriteOp, WriteOutcome,
};

/// Pending records looked at per pass; also the most attempts in flight at once.
const BATCH: usize = 64;
/// The wait before a record whose read failed is looked at again.
const STORE_RETRY: Duration = Duration::from_secs(1);
/// The longest the task sleeps without being woken.
const IDLE_WAKE: Duration = Duration::from_secs(30);

/// What to deliver, before it is a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Outbound {
    /// What produced it.
    pub kind: DeliveryKind,
    /// The session delivered for: its send policy applies to channel deliveries.
    pub session_key: Option<SessionKey>,
    /// The session that produced the text, when it is another one (a sub-agent child).
    pub source_key: Option<SessionKey>,
    pub run_id: Option<RunId>,
    /// `None`: no route (the record says so and nothing is sent).
    pub route: Option<DeliveryContext>,
    pub text: String,
    pub idempotency_key: Option<String>,
}

/// A record that reached a final state, for clients subscribed to its session.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryEvent {
    pub record: DeliveryRecord,
}

/// What the outbox is built from.
pub struct OutboxParts {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    /// Every connected channel (the composition root's registry).
    pub channels: Arc<Channels>,
    pub resolver: Arc<Resolver>,
    pub clock: Arc<dyn Clock>,
    pub tasks: TaskTracker,
    /// Cancelled when the engine stops: the outbox task ends.
    pub stop: CancellationToken,
}

/// The outbox component.
pub struct Outbox {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    /// Another gateway's deliveries are looked for as often as it says.
    cluster: Arc<dyn crate::store::Cluster>,
    channels: Arc<Channels>,
    resolver: Arc<Resolver>,
    clock: Arc<dyn Clock>,
    tasks: TaskTracker,
    stop: CancellationToken,
    wake: Notify,
    /// The lanes with an attempt in flight ([`Outbox::lane`]).
    in_flight: Mutex<HashSet<String>>,
    events: broadcast::Sender<Arc<DeliveryEvent>>,
}

impl Outbox {
    pub fn new(parts: OutboxParts) -> Arc<Self> {
        Arc::new(Self {
            config: parts.config,
            cluster: parts.store.cluster(),
            store: parts.store,
            channels: parts.channels,
            resolver: parts.resolver,
            clock: parts.clock,
            tasks: parts.tasks,
            stop: parts.stop,
            wake: Notify::new(),
            in_flight: Mutex::default(),
            events: broadcast::channel(1024).0,
        })
    }

    /// The record `out` becomes: `denied` when the session's send policy refuses channel
    /// deliveries, `recorded` when there is no route, `pending` otherwise.
    pub fn record(&self, out: Outbound, entry: Option<&SessionEntry>) -> DeliveryRecord {
        let now = self.clock.now_ms();
        let (status, detail) = match (&out.route, &out.session_key) {
            (None, _) => (
                DeliveryStatus::Recorded,
                Some("no delivery route: the text stays in the session transcript".to_string()),
            ),
            (Some(route), Some(key)) if route.channel != channel::INTERNAL => {
                match access::send_policy(&self.config, key.as_str(), entry) {
                    SendDecision::Deny { reason } => (DeliveryStatus::Denied, Some(reason)),
                    SendDecision::Allow => (DeliveryStatus::Pending, None),
                }
            }
            _ => (DeliveryStatus::Pending, None),
        };
        let route = out.route.unwrap_or_else(|| DeliveryContext {
            channel: "none".into(),
            to: String::new(),
            account_id: None,
            thread_id: None,
        });
        DeliveryRecord {
            id: uuid::Uuid::now_v7().to_string(),
            idempotency_key: out.idempotency_key,
            kind: out.kind.to_string(),
            session_key: out.session_key,
            source_key: out.source_key,
            run_id: out.run_id,
            channel: route.channel,
            to: route.to,
            account_id: route.account_id,
            thread_id: route.thread_id,
            text: out.text,
            status,
            attempts: 0,
            next_attempt_at: now,
            detail,
            created_at: now,
            updated_at: now,
            delivered_at: None,
            parts_sent: 0,
            trace: crate::trace::current(),
        }
    }

    /// Stores `out` in the outbox and wakes it; answers the record once it is committed (the
    /// first one when its idempotency key was used before).
    pub async fn deliver(&self, out: Outbound) -> CoreResult<DeliveryRecord> {
        let entry = match &out.session_key {
            Some(key) => self.store.get(key).await?,
            None => None,
        };
        let record = self.record(out, entry.as_ref());
        let (stored, created) = self.store.enqueue_delivery(record).await?;
        if created {
            self.settled(&stored);
            self.wake();
        }
        Ok(stored)
    }

    /// Tells the outbox task to look for due records now.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Delivery outcomes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<DeliveryEvent>> {
        self.events.subscribe()
    }

    /// Publishes a record that reached a final state.
    pub(crate) fn settled(&self, record: &DeliveryRecord) {
        if record.status != DeliveryStatus::Pending {
            let _ = self.events.send(Arc::new(DeliveryEvent {
                record: record.clone(),
            }));
        }
    }

    /// Starts the outbox task: it attempts due records and sleeps until the next one is due, it
    /// is woken, or the engine stops.
    pub fn start(self: &Arc<Self>) {
        let outbox = self.clone();
        self.tasks.spawn(async move { outbox.run().await });
    }

    async fn run(self: Arc<Self>) {
        loop {
            // Registered before reading, so a wake during the read is not lost.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.stop.is_cancelled() {
                return;
            }
            // Read before the claim: a record it answers as not yet due may fall due while the
            // claim is made, and another gateway may claim it meanwhile. It waits for a claim
            // of this gateway's own: attempted now, it could be attempted twice.
            let now = self.clock.now_ms();
            let next = match self.store.pending_deliveries(BATCH).await {
                Ok(pending) => self.start_due(pending, now),
                Err(e) => {
                    tracing::warn!(error = %e, "outbox: could not read pending deliveries");
                    self.clock.now_ms() + STORE_RETRY.as_millis() as i64
                }
            };
            tokio::select! {
                () = &mut woken => {}
                () = self.clock.sleep_until(next) => {}
                () = self.stop.cancelled() => return,
            }
        }
    }

    /// Starts an attempt for every record due by `now` (when the claim that answered `pending`
    /// began) whose lane is free, oldest first; answers when the next one is due (ms). A lane is
    /// one recipient of a channel that keeps order (one chat, or one thread of it), else the
    /// record alone: two replies to one chat never race, and the newer one goes once the older
    /// one's attempt has ended. A record waiting out a backoff does not hold the newer ones (a
    /// chat that refuses one message still gets the next).
    fn start_due(self: &Arc<Self>, mut pending: Vec<DeliveryRecord>, now: i64) -> i64 {
        let idle = self.cluster.poll_every().unwrap_or(IDLE_WAKE);
        let mut next = now.saturating_add(idle.as_millis() as i64);
        // A retried record is due after newer ones were made; the oldest of a lane goes first.
        pending.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        for record in pending {
            if record.next_attempt_at > now {
                next = next.min(record.next_attempt_at);
                continue;
            }
            let lane = self.lane(&record);
            if !self.in_flight().insert(lane.clone()) {
                continue;
            }
            let outbox = self.clone();
            self.tasks.spawn(async move {
                outbox.attempt_current(record).await;
                outbox.in_flight().remove(&lane);
                outbox.wake();
            });
        }
        next
    }

    /// The lane `record` waits in: its route for a channel that keeps order, else its id.
    fn lane(&self, record: &DeliveryRecord) -> String {
        let ordered = self
            .channels
            .get(&record.channel)
            .is_some_and(|channel| channel.in_order());
        if !ordered {
            return format!("record\0{}", record.id);
        }
        let account = record.account_id.as_deref().unwrap_or_default();
        let thread = record.thread_id.as_deref().unwrap_or_default();
        format!("{}\0{account}\0{}\0{thread}", record.channel, record.to)
    }

    /// Attempts `record` as the store has it now: the pending list may predate an attempt that
    /// finished meanwhile.
    async fn attempt_current(&self, record: DeliveryRecord) {
        let id = &record.id;
        match self.store.get_delivery(id).await {
            Ok(current) => {
                if let Some(record) = current.filter(|r| {
                    r.status == DeliveryStatus::Pending && r.attempts == record.attempts
                }) {
                    self.attempt(record).await;
                }
            }
            // The record stays pending and is tried again on a later pass; the pause keeps a
            // store that fails every read from being asked in a tight loop.
            Err(e) => {
                tracing::warn!(%id, error = %e, "outbox: could not read a delivery before its attempt; trying again");
                self.pause(STORE_RETRY).await;
            }
        }
    }

    /// Waits `wait` on the engine's clock, or until the engine stops.
    async fn pause(&self, wait: Duration) {
        let until = self.clock.now_ms() + wait.as_millis() as i64;
        tokio::select! {
            () = self.clock.sleep_until(until) => {}
            () = self.stop.cancelled() => {}
        }
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.in_flight
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// One attempt; its outcome is written back (with the channel's own writes, in one commit).
    /// One attempt in its span, in the trace of the work that made the record.
    async fn attempt(&self, record: DeliveryRecord) {
        let span = tracing::info_span!(
            "delivery",
            otel.name = %format_args!("deliver {}", record.channel),
            otel.kind = "producer",
            channel = %record.channel,
            kind = %record.kind,
            attempt = record.attempts + 1,
            outcome = tracing::field::Empty,
        );
        crate::trace::adopt(&span, record.trace.as_deref());
        tracing::Instrument::instrument(self.attempt_once(record), span).await;
    }

    async fn attempt_once(&self, record: DeliveryRecord) {
        let config = &self.config.delivery;
        let attempts = record.attempts + 1;
        let now = self.clock.now_ms();
        let sent = self.channels.send(&record).await;
        let not_before = match &sent {
            Err(ChannelError::RetryAfter(after, _)) => after.as_millis() as i64,
            _ => 0,
        };
        let (update, writes) = match sent {
            Ok(writes) => (
                DeliveryUpdate {
                    status: DeliveryStatus::Delivered,
                    attempts,
                    next_attempt_at: now,
                    detail: None,
                    delivered_at: Some(now),
                },
                writes,
            ),
            Err(ChannelError::Permanent(reason)) => (failed(attempts, now, reason), Vec::new()),
            Err(ChannelError::Retry(reason) | ChannelError::RetryAfter(_, reason))
                if attempts >= config.max_attempts =>
            {
                let reason = format!("gave up after {attempts} attempts; last error: {reason}");
                (failed(attempts, now, reason), Vec::new())
            }
            Err(ChannelError::Retry(reason) | ChannelError::RetryAfter(_, reason)) => (
                DeliveryUpdate {
                    status: DeliveryStatus::Pending,
                    attempts,
                    next_attempt_at: now + (backoff_ms(config, attempts) as i64).max(not_before),
                    detail: Some(reason),
                    delivered_at: None,
                },
                Vec::new(),
            ),
        };
        tracing::debug!(id = %record.id, channel = %record.channel, status = update.status.as_str(), "delivery attempt");
        let outcome = match update.status {
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
            _ => "retry",
        };
        let waited = (update.status == DeliveryStatus::Delivered)
            .then(|| Duration::from_millis(now.saturating_sub(record.created_at).max(0) as u64));
        crate::measure::outbox_attempt(&record.channel, outcome, waited);
        tracing::Span::current().record("outcome", outcome);
        if update.status == DeliveryStatus::Failed {
            let reason = update.detail.as_deref().unwrap_or_default();
            tracing::warn!(id = %record.id, kind = %record.kind, channel = %record.channel, %reason, "delivery failed");
        }
        let mut ops = writes;
        ops.push(WriteOp::UpdateDelivery {
            id: record.id.clone(),
            update,
        });
        match self.store.write_batch(ops).await {
            Ok(outcomes) => {
                if let Some(WriteOutcome::DeliveryUpdated(stored)) = outcomes.last() {
                    self.settled(stored);
                }
            }
            // Refused because another attempt recorded its outcome first: two gateways on a
            // shared PostgreSQL store attempted one record, which happens when a gateway
            // declared stopped was attempting it (each pass attempts only what its claim took:
            // see `run`). This batch, with the channel's own writes, rolled back, so an
            // in-store delivery (an announce, a reply-back) still happens once. Not a fault to
            // warn about.
            Err(StoreError::Conflict(e)) if e.ends_with("(already attempted)") => {
                tracing::debug!(id = %record.id, error = %e, "outbox: another attempt recorded this delivery first")
            }
            Err(e) => {
                tracing::warn!(id = %record.id, error = %e, "outbox: could not record an attempt")
            }
        }
    }
}

fn failed(attempts: u32, now: i64, reason: String) -> DeliveryUpdate {
    DeliveryUpdate {
        status: DeliveryStatus::Failed,
        attempts,
        next_attempt_at: now,
        detail: Some(reason),
        delivered_at: None,
    }
}

/// Wait after the `attempts`-th failed attempt: the initial wait doubled per attempt, capped.
pub fn backoff_ms(config: &crate::config::DeliveryConfig, attempts: u32) -> u64 {
    let doublings = attempts.saturating_sub(1).min(32);
    config
        .retry_initial_ms
        .saturating_mul(1u64 << doublings)
        .min(config.retry_max_ms)
}
