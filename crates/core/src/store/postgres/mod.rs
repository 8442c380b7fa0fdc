//! The PostgreSQL store: the same [`Store`](super::Store) as SQLite's, on a database several gateways share.
//!
//! Every write is one transaction, committed before its future resolves; rows another
//! transaction could change under it are locked first (`FOR UPDATE`), and a transaction that
//! loses a deadlock or a serialization conflict is tried again from the start. Reads run on a
//! pooled connection outside any transaction. Transcripts are not mirrored to JSONL files
//! (`docs/scale-out.md`): the database is the one copy every gateway reads.

mod batch;
mod bus;
mod cluster;
mod cron;
mod db;
mod exchanges;
mod kept;
mod lease;
mod locks;
mod outbox;
mod pairing;
mod parts;
mod queries;
mod schema;
mod subagents;
mod tls;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{
    Bound, Cluster, SessionEntry, SessionLock, StoreError, StoreFuture, WriteOp, WriteOutcome,
};
use crate::clock::Clock;
use crate::store::rules::work;
use db::{Conn, Db, Pool};

/// Connections a gateway opens at most.
const MAX_CONNECTIONS: usize = 16;
/// Tries of a write that keeps losing to concurrent ones before its error is answered.
const MAX_TRIES: u32 = 8;
/// How long a gateway's claim on a delivery keeps others from attempting it (an attempt takes
/// at most `delivery.timeoutSeconds`; a gateway that dies mid-attempt is retried after this).
const DELIVERY_LEASE_MS: i64 = 60_000;

/// How long closing waits for the connections' tasks to end.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// A query's future, borrowing its [`Db`].
type Fut<'c, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'c>>;

/// Where a PostgreSQL store lives.
#[derive(Debug, Clone, PartialEq)]
pub struct PgOptions {
    /// `postgres://user:password@host:port/database` (or key=value pairs).
    pub url: String,
    /// The schema its tables are in (created when missing).
    pub schema: String,
    /// Who this gateway is among those sharing the database: the owner of the work it takes.
    /// Kept across restarts (in the state dir), so a restarted gateway takes up its own work
    /// at once.
    pub gateway_id: String,
    /// How long a read or a write is waited for ([`Bound`], `store.timeoutSeconds`).
    pub timeout: Duration,
}

/// PostgreSQL-backed [`Store`](super::Store). Cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// How long a read or a write is waited for.
    bound: Bound,
    clock: Arc<dyn Clock>,
    reads: std::sync::atomic::AtomicU64,
    /// Cancelled at close: the heartbeat and the bus stop.
    stop: CancellationToken,
    /// Connections that held a session lock, kept for the next.
    lockers: Mutex<Vec<Conn>>,
    /// Session locks this gateway is letting go: each gate is held until its unlock is done.
    releasing: Mutex<HashMap<String, locks::Gate>>,
    /// Sessions' entries as their runs' ends left them, for the next message's start.
    kept: kept::KeptEntries,
    bus: OnceLock<Arc<bus::PgBus>>,
    /// Whether another gateway may hear the bus.
    peers: Arc<bus::Peers>,
    /// The heartbeat task: waited for at close, so no beat lands after the goodbye.
    heartbeat: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// When the last heartbeat that renewed the lease was sent (the database stamped it later).
    renewed: Mutex<std::time::Instant>,
    /// The heartbeat's last error, until a beat gets through.
    last_error: Mutex<Option<String>>,
}

/// The URL read as [`PgStore::open`] reads it before it connects: its `sslmode`, its
/// `sslrootcert` and the rest of it (`config check` runs this, so a URL the gateway would refuse
/// at start fails the check). The message never repeats the URL (it may hold a password).
pub fn check_url(url: &str) -> Result<(), StoreError> {
    let (config, tls) = read_url(url)?;
    drop(config);
    tls.connector().map(drop)
}

fn read_url(url: &str) -> Result<(tokio_postgres::Config, tls::Tls), StoreError> {
    let (url, tls) = tls::split(url)?;
    let config = url.parse().map_err(|e| {
        StoreError::Backend(format!(
            "the PostgreSQL url is not usable ({e}); give postgres://user:password@host:port/database"
        ))
    })?;
    Ok((config, tls))
}

impl PgStore {
    /// Connects, creates or upgrades the schema, and answers the store. Times written come
    /// from `clock`.
    pub async fn open(options: &PgOptions, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        let (mut config, tls) = read_url(&options.url)?;
        config.options(format!("-c search_path={}", options.schema));
        // The server shows it beside each connection; a URL's own `application_name` wins.
        if config.get_application_name().is_none() {
            config.application_name("switchboard");
        }
        config.connect_timeout(Duration::from_secs(10));
        config.ssl_mode(tls.pg_mode());
        let pool = Pool::new(
            config,
            tls.connector()?,
            MAX_CONNECTIONS,
            options.gateway_id.clone(),
        );
        let registered = std::time::Instant::now();
        let peers = Arc::new(bus::Peers::new(&options.schema, &options.gateway_id));
        {
            let mut conn = pool.get().await?.uncounted();
            if pool.commit_durably(&conn.db()?).await? {
                tracing::info!(
                    "the database acknowledges commits before it writes them (synchronous_commit \
                     is off): this gateway's connections turn it on"
                );
            }
            schema::migrate(conn.begin().await?, &options.schema).await?;
            let (epoch, others) = cluster::register(&conn.db()?).await?;
            pool.set_epoch(epoch);
            peers.set_others(others);
            tracing::info!(epoch, "joined the gateways sharing the database");
        }
        let store = Self {
            inner: Arc::new(Inner {
                bound: Bound::new(options.timeout, pool.place()),
                pool,
                clock,
                reads: std::sync::atomic::AtomicU64::new(0),
                stop: CancellationToken::new(),
                lockers: Mutex::new(Vec::new()),
                releasing: Mutex::new(HashMap::new()),
                kept: kept::KeptEntries::default(),
                bus: OnceLock::new(),
                peers,
                heartbeat: Mutex::new(None),
                renewed: Mutex::new(registered),
                last_error: Mutex::new(None),
            }),
        };
        let bus = bus::PgBus::start(store.inner.clone(), store.inner.stop.clone());
        let _ = store.inner.bus.set(bus);
        let beats = (store.inner.pool.tasks).spawn(lease::heartbeats(store.inner.clone()));
        if let Ok(mut heartbeat) = store.inner.heartbeat.lock() {
            *heartbeat = Some(beats);
        }
        Ok(store)
    }

    /// Says goodbye to the other gateways (they take up this one's queued work at once) and
    /// closes the pool: later calls answer [`StoreError::Closed`].
    pub async fn close(&self) {
        if self.inner.stop.is_cancelled() {
            return;
        }
        self.inner.stop.cancel();
        let beats = self.inner.heartbeat.lock().ok().and_then(|mut h| h.take());
        if let Some(beats) = beats {
            let _ = beats.await;
        }
        // What was sent to the store lands before the goodbye (a database that does not
        // answer is waited for a bounded time: the writes' own connections end with the
        // process).
        self.inner.pool.writes.close();
        let landed = tokio::time::timeout(CLOSE_WAIT, self.inner.pool.writes.wait()).await;
        if landed.is_err() {
            tracing::warn!("writes to PostgreSQL were still waiting for the database at the stop");
        }
        if let Ok(conn) = self.inner.pool.get().await
            && let mut conn = conn.uncounted()
            && let Ok(db) = conn.db()
            && let Err(e) = cluster::retire(&db).await
        {
            tracing::debug!(error = %e, "could not remove this gateway's heartbeat");
        }
        self.inner.pool.close();
        if let Ok(mut lockers) = self.inner.lockers.lock() {
            lockers.clear();
        }
        // Connections still held (a session lock a run drops late) end with their holders;
        // the rest end now that their clients are gone.
        self.inner.pool.tasks.close();
        let drained = tokio::time::timeout(CLOSE_WAIT, self.inner.pool.tasks.wait()).await;
        if drained.is_err() {
            tracing::debug!("some PostgreSQL connections were still open when the store closed");
        }
    }

    /// Reads served since the store opened.
    pub fn reads(&self) -> u64 {
        self.inner.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Statements sent to the database for requests and runs since the store opened:
    /// `BEGIN` and `COMMIT`, reads, writes, session locks and their release, bus messages.
    /// The heartbeat and the background claims (stopped gateways' work, due deliveries) are
    /// not counted: they come with time, not with turns.
    pub fn statements(&self) -> u64 {
        self.inner.pool.sent()
    }

    /// Runs `f` on a pooled connection.
    fn read<'s, T, F>(&'s self, f: F) -> StoreFuture<'s, T>
    where
        T: Send + 's,
        F: for<'c, 'd> FnOnce(&'c Db<'d>) -> Fut<'c, T> + Send + 's,
    {
        self.inner
            .reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Boxed first: each layer around it (the time limit, the measure) holds it twice, and
        // unboxed the whole read was a 28 KB allocation, copied as it was boxed.
        let read = Box::pin(async move {
            let mut conn = self.inner.pool.get().await?;
            let db = conn.db()?;
            f(&db).await
        });
        Box::pin(crate::measure::store_op(
            "postgres",
            "read",
            self.inner.bound.read(read),
        ))
    }

    /// Runs `f` in a transaction with the time of the write, and commits; a transaction that
    /// loses to a concurrent one ([`StoreError::Busy`]) is run again.
    ///
    /// The write starts at once, on a task of its own, and commits even when the caller stops
    /// waiting for it (a run cut off by an abort): as on SQLite, what was sent to the store
    /// lands whole, and the caller's record of what it sent stays true.
    fn write<'s, T, F>(&'s self, f: F) -> StoreFuture<'s, T>
    where
        T: Send + 'static,
        F: for<'c, 'd> Fn(&'c Db<'d>, i64) -> Fut<'c, T> + Send + Sync + 'static,
    {
        self.write_as(Kind::Request, f)
    }

    /// [`PgStore::write`] as `kind` says: in a transaction or not, counted or not.
    fn write_as<'s, T, F>(&'s self, kind: Kind, f: F) -> StoreFuture<'s, T>
    where
        T: Send + 'static,
        F: for<'c, 'd> Fn(&'c Db<'d>, i64) -> Fut<'c, T> + Send + Sync + 'static,
    {
        let inner = self.inner.clone();
        self.spawn_write(async move { Self::transact(&inner, kind, f).await })
    }

    /// Runs the write `work` on a task of its own ([`PgStore::write`]), measured as a write.
    fn spawn_write<'s, T, W>(&'s self, work: W) -> StoreFuture<'s, T>
    where
        T: Send + 'static,
        W: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        // Boxed: a write's future is 7 KB, which tokio would copy as it spawns and ends it.
        let task = self.inner.pool.writes.spawn(Box::pin(work));
        let landed = async move {
            task.await
                .map_err(|e| StoreError::Backend(format!("a write's task failed: {e}")))?
        };
        Box::pin(crate::measure::store_op(
            "postgres",
            "write",
            self.inner.bound.write(landed),
        ))
    }

    /// Writes a batch: as one statement when [`batch::OneStatement`] can (a run's start, reply
    /// and end), else — or when that statement's locks did not all hold, and it wrote nothing —
    /// in a transaction, op by op. Both on one task, so the batch lands whole when the caller
    /// stops waiting.
    fn write_ops(&self, ops: Vec<WriteOp>) -> StoreFuture<'_, Vec<WriteOutcome>> {
        let inner = self.inner.clone();
        let one = batch::OneStatement::of(&ops).map(Arc::new);
        self.spawn_write(async move {
            if let Some(one) = one {
                let written = Self::transact(&inner, Kind::OneStatement, move |db, now| {
                    let one = one.clone();
                    Box::pin(async move { one.write(db, now, None).await })
                })
                .await?;
                if let Some(written) = written {
                    return Ok(written.outcomes);
                }
            }
            Self::transact(&inner, Kind::Request, move |db, now| {
                let ops = ops.clone();
                Box::pin(in_transaction(db, ops, now))
            })
            .await
        })
    }

    /// Runs the claim `f` in a transaction after [`cluster::begin_claim`] (one claim at a time,
    /// by a gateway that still holds its epoch, after declaring the stopped ones).
    fn claim<'s, T, F>(&'s self, f: F) -> StoreFuture<'s, T>
    where
        T: Send + 'static,
        F: for<'c, 'd> Fn(&'c Db<'d>) -> Fut<'c, T> + Send + Sync + 'static,
    {
        self.write_as(Kind::Background, move |db, _| {
            let claimed = f(db);
            Box::pin(async move {
                cluster::begin_claim(db).await?;
                claimed.await
            })
        })
    }

    /// Runs `f` in a transaction and commits, again while it loses to a concurrent one.
    async fn transact<T, F>(inner: &Inner, kind: Kind, f: F) -> Result<T, StoreError>
    where
        F: for<'c, 'd> Fn(&'c Db<'d>, i64) -> Fut<'c, T>,
    {
        let mut tries = 0;
        loop {
            tries += 1;
            let mut conn = inner.pool.get().await?;
            if kind == Kind::Background {
                conn = conn.uncounted();
            }
            let db = match kind {
                Kind::OneStatement => conn.db()?,
                Kind::Request | Kind::Background => conn.begin().await?,
            };
            let now = inner.clock.now_ms();
            let result = match f(&db, now).await {
                Ok(value) => db.commit().await.map(|()| value),
                // Dropping the transaction rolls it back.
                Err(e) => Err(e),
            };
            match result {
                Err(StoreError::Busy(why)) if tries < MAX_TRIES => {
                    tracing::debug!(tries, why, "a write lost to a concurrent one; trying again");
                    tokio::time::sleep(Duration::from_millis(u64::from(tries) * 5)).await;
                }
                other => return other,
            }
        }
    }
}

impl Cluster for PgStore {
    fn shared(&self) -> bool {
        true
    }

    fn epoch(&self) -> i64 {
        self.inner.pool.epoch()
    }

    fn leased(&self) -> bool {
        self.inner
            .renewed
            .lock()
            .is_ok_and(|renewed| renewed.elapsed() < cluster::LEASE_HELD)
    }
}

/// How a write runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// In a transaction, for a request or a run: its statements are counted.
    Request,
    /// One statement, committed whole on its own: no `BEGIN` and `COMMIT` around it.
    OneStatement,
    /// In a transaction, for the gateway's own background work: not counted.
    Background,
}

/// A batch in its transaction: the fences at its head go out together with the writes
/// (pipelined on the connection, no round trip of their own); either failing rolls all back.
async fn in_transaction(
    db: &Db<'_>,
    ops: Vec<WriteOp>,
    now: i64,
) -> Result<Vec<WriteOutcome>, StoreError> {
    let fences = ops
        .iter()
        .take_while(|op| matches!(op, WriteOp::Fence { .. }));
    let fences: Vec<WriteOp> = fences.cloned().collect();
    let writes = ops[fences.len()..].to_vec();
    let fenced = async {
        for fence in &fences {
            write_op(db, fence.clone(), now, &mut None).await?;
        }
        Ok::<_, StoreError>(())
    };
    let written = async {
        let mut outcomes = Vec::with_capacity(writes.len());
        let mut held = None;
        for mut op in writes {
            work::take_session(&mut op, &outcomes);
            outcomes.push(write_op(db, op, now, &mut held).await?);
        }
        Ok(outcomes)
    };
    let ((), written) = futures_util::try_join!(fenced, written)?;
    let mut outcomes = vec![WriteOutcome::Fenced; fences.len()];
    outcomes.extend(written);
    Ok(outcomes)
}

/// One op of a batch, inside the batch's transaction. `held`: the session entry the batch's
/// last op locked and wrote (an append's), which a patch of that session right after it takes
/// as it is instead of reading it again.
async fn write_op(
    db: &Db<'_>,
    op: WriteOp,
    now: i64,
    held: &mut Option<SessionEntry>,
) -> Result<WriteOutcome, StoreError> {
    let last = held.take();
    Ok(match op {
        WriteOp::Create(new) => {
            let (entry, created) = queries::create(db, *new, now).await?;
            WriteOutcome::Created(Box::new(entry), created)
        }
        WriteOp::PutRun(run) => {
            queries::put_run(db, &run, None).await?;
            WriteOutcome::PutRun
        }
        WriteOp::QueueRun(run, input) => {
            queries::put_run(db, &run, Some(&input)).await?;
            WriteOutcome::PutRun
        }
        WriteOp::NewRun(run, input) => {
            queries::new_run(db, &run, input.as_deref()).await?;
            WriteOutcome::PutRun
        }
        WriteOp::Fence { run_id, epoch } => {
            cluster::fence(db, &run_id, epoch).await?;
            WriteOutcome::Fenced
        }
        WriteOp::Ended { run_id, status } => {
            let stored = queries::get_run(db, run_id.as_str()).await?;
            let stored = stored.map(|run| run.status);
            crate::store::runs::ended_as(&run_id, status, stored)?;
            WriteOutcome::Ended
        }
        WriteOp::Append {
            key,
            create,
            messages,
        } => {
            let appended = queries::append(db, key.as_str(), create, messages, now).await?;
            *held = Some(appended.entry.clone());
            WriteOutcome::Appended(appended)
        }
        WriteOp::Patch { key, patch } => {
            let last = last.filter(|entry| entry.key == key);
            let entry = queries::patch(db, key.as_str(), &patch, now, last).await?;
            *held = Some(entry.clone());
            WriteOutcome::Patched(entry)
        }
        WriteOp::Enqueue(record) => {
            WriteOutcome::Enqueued(Box::new(outbox::enqueue(db, &record).await?.0))
        }
        WriteOp::UpdateDelivery { id, update } => {
            WriteOutcome::DeliveryUpdated(Box::new(outbox::update(db, &id, &update, now).await?))
        }
        WriteOp::PutSubagent(record) => {
            subagents::put(db, &record).await?;
            WriteOutcome::PutSubagent
        }
        WriteOp::PutExchange(record) => {
            exchanges::put(db, &record).await?;
            WriteOutcome::PutExchange
        }
        WriteOp::SetCursor { name, position } => {
            outbox::set_cursor(db, &name, position).await?;
            WriteOutcome::SetCursor
        }
        WriteOp::SetToken { name, token } => {
            outbox::set_token(db, &name, &token).await?;
            WriteOutcome::SetToken
        }
        WriteOp::DeliveryProgress { id, parts_sent } => {
            outbox::progress(db, &id, parts_sent).await?;
            WriteOutcome::DeliveryProgress
        }
    })
}

/// This gateway's id among those sharing a database: `<home>/gateway-id`, made on first use.
pub fn gateway_id(home: &std::path::Path) -> Result<String, StoreError> {
    let path = home.join("gateway-id");
    if let Ok(id) = std::fs::read_to_string(&path)
        && !id.trim().is_empty()
    {
        return Ok(id.trim().to_string());
    }
    super::private::create_dir(home)?;
    let id = uuid::Uuid::new_v4().to_string();
    std::fs::write(&path, format!("{id}\n"))?;
    Ok(id)
}
