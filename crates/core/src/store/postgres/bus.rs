//! The gateways' bus on PostgreSQL: `NOTIFY switchboard` to publish, `LISTEN` on a connection of
//! its own to receive. One publisher task sends in order on one connection; the listener
//! reconnects (after a pause) when its connection drops, and what was sent meanwhile is missed
//! (waiters also read the store, so a missed end only delays them). This is the bus's edge:
//! messages are encoded by the publisher and decoded by the listener, nowhere else.
//!
//! A gateway alone on its store sends nothing ([`Peers`]): a message nobody hears costs the
//! database a statement and a wake-up per event. It learns of the others from its heartbeat
//! (every `gateways` row but its own), and of one that just started from the greeting that
//! one sends on [`JOIN`] once it listens.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::sync::{broadcast, mpsc};
use tokio_postgres::AsyncMessage;
use tokio_util::sync::CancellationToken;

use super::Inner;
use crate::store::Bus;
use crate::store::bus::{self, Envelope};

/// The channel every gateway listens on.
const CHANNEL: &str = "switchboard";
/// The channel a gateway greets the others on once it listens (the payload: its schema and
/// its id).
const JOIN: &str = "switchboard_join";
/// How long a greeting counts as a gateway listening, before a heartbeat sees its row.
const GREETED: Duration = Duration::from_secs(5);

/// Whether another gateway may be listening: the publisher sends only then.
pub(super) struct Peers {
    /// What the last heartbeat (or the registration) saw: another gateway's row.
    others: std::sync::atomic::AtomicBool,
    /// When another gateway of the same store last greeted.
    greeted: std::sync::Mutex<Option<std::time::Instant>>,
    /// This gateway's greeting: its schema and its id (the channel is the database's, every
    /// schema's gateways hear it).
    greeting: String,
}

impl Peers {
    /// Others are assumed until the registration says.
    pub(super) fn new(schema: &str, gateway: &str) -> Self {
        Self {
            others: std::sync::atomic::AtomicBool::new(true),
            greeted: std::sync::Mutex::new(None),
            greeting: format!("{schema} {gateway}"),
        }
    }

    /// Whether the store holds another gateway's row (registration, heartbeat).
    pub(super) fn set_others(&self, others: bool) {
        self.others
            .store(others, std::sync::atomic::Ordering::Release);
    }

    /// A greeting was heard: another gateway of this store listens, when it names this
    /// gateway's schema and not this gateway.
    fn heard(&self, greeting: &str) {
        let schema = self.greeting.split(' ').next().unwrap_or_default();
        if greeting != self.greeting
            && greeting.split(' ').next() == Some(schema)
            && let Ok(mut greeted) = self.greeted.lock()
        {
            *greeted = Some(std::time::Instant::now());
        }
    }

    /// Whether a message sent now may be heard by another gateway.
    fn listening(&self) -> bool {
        self.others.load(std::sync::atomic::Ordering::Acquire)
            || self
                .greeted
                .lock()
                .ok()
                .and_then(|greeted| *greeted)
                .is_some_and(|at| at.elapsed() < GREETED)
    }
}

/// PostgreSQL refuses a notification payload of 8000 bytes or more.
const MAX_PAYLOAD: usize = 7_900;
/// Received messages buffered per subscriber.
const BUFFER: usize = 4096;

pub(super) struct PgBus {
    outgoing: mpsc::UnboundedSender<Envelope>,
    incoming: broadcast::Sender<Arc<Envelope>>,
}

impl PgBus {
    /// Starts the publisher and the listener; both stop with `stop`.
    pub(super) fn start(inner: Arc<Inner>, stop: CancellationToken) -> Arc<Self> {
        let (outgoing, queue) = mpsc::unbounded_channel();
        let (incoming, _) = broadcast::channel(BUFFER);
        let tasks = inner.pool.tasks.clone();
        tasks.spawn(publish(inner.clone(), queue, stop.clone()));
        tasks.spawn(listen(inner, incoming.clone(), stop));
        Arc::new(Self { outgoing, incoming })
    }
}

impl Bus for PgBus {
    fn publish(&self, message: Envelope) {
        // Fails only once the publisher stopped (the store closed): nothing is sent then.
        let _ = self.outgoing.send(message);
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<Envelope>> {
        self.incoming.subscribe()
    }
}

/// Messages sent in one statement at most.
const BATCH: usize = 64;

/// Sends the queued messages in order: all those waiting (up to [`BATCH`]) in one statement.
async fn publish(
    inner: Arc<Inner>,
    mut queue: mpsc::UnboundedReceiver<Envelope>,
    stop: CancellationToken,
) {
    let mut messages = Vec::with_capacity(BATCH);
    let mut batch: Vec<String> = Vec::with_capacity(BATCH);
    // Numbers this publisher's messages, so no two in one statement are equal.
    let mut sent: u64 = 0;
    loop {
        messages.clear();
        tokio::select! {
            received = queue.recv_many(&mut messages, BATCH) => if received == 0 {
                return;
            },
            () = stop.cancelled() => return,
        };
        if !inner.peers.listening() {
            continue; // No other gateway would hear them.
        }
        batch.clear();
        for message in &messages {
            sent += 1;
            match bus::encode(message, sent) {
                Ok(payload) if payload.len() < MAX_PAYLOAD => batch.push(payload),
                Ok(payload) => {
                    tracing::debug!(
                        len = payload.len(),
                        "a bus message too long to send was dropped"
                    )
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a bus message could not be encoded; it was dropped")
                }
            }
        }
        if batch.is_empty() {
            continue;
        }
        let result = async {
            let mut conn = inner.pool.get().await?;
            let db = conn.db()?;
            db.execute(
                "SELECT pg_notify($1, m) FROM unnest($2::text[]) WITH ORDINALITY AS t(m, i) ORDER BY i",
                &[&CHANNEL, &batch],
            )
            .await
        };
        if let Err(e) = result.await {
            tracing::debug!(error = %e, "could not publish on the bus");
        }
    }
}

/// Listens for the other gateways' messages until `stop`, reconnecting after a failure.
async fn listen(
    inner: Arc<Inner>,
    incoming: broadcast::Sender<Arc<Envelope>>,
    stop: CancellationToken,
) {
    while !stop.is_cancelled() {
        let session = listen_once(&inner, &incoming, &stop);
        if let Err(e) = session.await {
            tracing::warn!(error = %e, "the bus connection failed; listening again shortly");
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = stop.cancelled() => return,
        }
    }
}

async fn listen_once(
    inner: &Inner,
    incoming: &broadcast::Sender<Arc<Envelope>>,
    stop: &CancellationToken,
) -> Result<(), String> {
    let (client, mut connection) = inner.pool.connect_raw().await.map_err(|e| e.to_string())?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let peers = inner.peers.clone();
    let pump = inner.pool.tasks.spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) if n.channel() == JOIN => {
                    peers.heard(n.payload());
                }
                Ok(AsyncMessage::Notification(n)) => match bus::decode(n.payload()) {
                    Ok(envelope) => {
                        let _ = tx.send(Arc::new(envelope));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, payload = %clip(n.payload()), "a bus message that is not one this gateway knows was ignored")
                    }
                },
                Ok(_) => {}
                Err(e) => return e.to_string(),
            }
        }
        "the connection closed".to_string()
    });
    client
        .batch_execute(&format!("LISTEN {CHANNEL}; LISTEN {JOIN}"))
        .await
        .map_err(|e| e.to_string())?;
    // Listening now: the others send from when they hear this.
    client
        .execute("SELECT pg_notify($1, $2)", &[&JOIN, &inner.peers.greeting])
        .await
        .map_err(|e| e.to_string())?;
    loop {
        tokio::select! {
            message = rx.recv() => match message {
                Some(message) => {
                    let _ = incoming.send(message);
                }
                None => return Err(pump.await.unwrap_or_else(|e| e.to_string())),
            },
            () = stop.cancelled() => return Ok(()),
        }
    }
}

/// The start of a payload, for a log line.
fn clip(payload: &str) -> &str {
    match payload.char_indices().nth(200) {
        Some((at, _)) => &payload[..at],
        None => payload,
    }
}
