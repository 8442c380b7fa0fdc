//! The PostgreSQL store: the same [`Store`] as SQLite's, on a database several gateways share.
//!
//! Every write is one transaction, committed before its future resolves; rows another
//! transaction could change under it are locked first (`FOR UPDATE`), and a transaction that
//! loses a deadlock or a serialization conflict is tried again from the start. Reads run on a
//! pooled connection outside any transaction. Transcripts are not mirrored to JSONL files
//! (`docs/scale-out.md`): the database is the one copy every gateway reads.

mod bus;
mod cluster;
mod cron;
mod db;
mod exchanges;
mod lease;
mod outbox;
mod pairing;
mod queries;
mod schema;
mod subagents;
mod tls;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use switchboard_protocol::message::TranscriptMessage;

use super::{
    Appended, Cluster, CronJobRecord, DeliveryQuery, DeliveryRecord, DeliveryUpdate, EntryPatch,
    ExchangeRecord, HistoryPage, ListPage, ListQuery, NewSession, Orphans, PairingAdmission,
    PairingAsk, PairingRecord, RunInput, RunRecord, SessionEntry, SessionLock, Store, StoreError,
    StoreFuture, StoreHealth, StoredMessage, SubagentRecord, WriteOp, WriteOutcome,
};
use crate::clock::Clock;
use crate::ids::RunId;
use crate::keys::SessionKey;
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
}

/// PostgreSQL-backed [`Store`]. Cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    clock: Arc<dyn Clock>,
    reads: std::sync::atomic::AtomicU64,
    /// Cancelled at close: the heartbeat and the bus stop.
    stop: CancellationToken,
    /// Connections that held a session lock, kept for the next.
    lockers: Mutex<Vec<Conn>>,
    bus: OnceLock<Arc<bus::PgBus>>,
    /// The heartbeat task: waited for at close, so no beat lands after the goodbye.
    heartbeat: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// When the last heartbeat that renewed the lease was sent (the database stamped it later).
    renewed: Mutex<std::time::Instant>,
    /// The heartbeat's last error, until a beat gets through.
    last_error: Mutex<Option<String>>,
}

impl PgStore {
    /// Connects, creates or upgrades the schema, and answers the store. Times written come
    /// from `clock`.
    pub async fn open(options: &PgOptions, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        let (url, tls) = tls::split(&options.url)?;
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            StoreError::Backend(format!(
                "the PostgreSQL url is not usable ({e}); give postgres://user:password@host:port/database"
            ))
        })?;
        config.options(format!("-c search_path={}", options.schema));
        config.application_name("switchboard");
        config.connect_timeout(Duration::from_secs(10));
        config.ssl_mode(tls.pg_mode());
        let pool = Pool::new(
            config,
            tls.connector()?,
            MAX_CONNECTIONS,
            options.gateway_id.clone(),
        );
        let registered = std::time::Instant::now();
        {
            let mut conn = pool.get().await?;
            schema::migrate(conn.begin().await?, &options.schema).await?;
            let epoch = cluster::register(&conn.db()?).await?;
            pool.set_epoch(epoch);
            tracing::info!(epoch, "joined the gateways sharing the database");
        }
        let store = Self {
            inner: Arc::new(Inner {
                pool,
                clock,
                reads: std::sync::atomic::AtomicU64::new(0),
                stop: CancellationToken::new(),
                lockers: Mutex::new(Vec::new()),
                bus: OnceLock::new(),
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
        if let Ok(mut conn) = self.inner.pool.get().await
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

    /// Runs `f` on a pooled connection.
    fn read<'s, T, F>(&'s self, f: F) -> StoreFuture<'s, T>
    where
        T: Send + 's,
        F: for<'c, 'd> FnOnce(&'c Db<'d>) -> Fut<'c, T> + Send + 's,
    {
        self.inner
            .reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::pin(crate::measure::store_op("postgres", "read", async move {
            let mut conn = self.inner.pool.get().await?;
            let db = conn.db()?;
            f(&db).await
        }))
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
        let inner = self.inner.clone();
        let writes = inner.pool.writes.clone();
        let task = writes.spawn(async move { Self::transact(&inner, f).await });
        Box::pin(crate::measure::store_op("postgres", "write", async move {
            task.await
                .map_err(|e| StoreError::Backend(format!("a write's task failed: {e}")))?
        }))
    }

    /// Runs the claim `f` in a transaction after [`cluster::begin_claim`] (one claim at a time,
    /// by a gateway that still holds its epoch, after declaring the stopped ones).
    fn claim<'s, T, F>(&'s self, f: F) -> StoreFuture<'s, T>
    where
        T: Send + 'static,
        F: for<'c, 'd> Fn(&'c Db<'d>) -> Fut<'c, T> + Send + Sync + 'static,
    {
        self.write(move |db, _| {
            let claimed = f(db);
            Box::pin(async move {
                cluster::begin_claim(db).await?;
                claimed.await
            })
        })
    }

    /// Runs `f` in a transaction and commits, again while it loses to a concurrent one.
    async fn transact<T, F>(inner: &Inner, f: F) -> Result<T, StoreError>
    where
        F: for<'c, 'd> Fn(&'c Db<'d>, i64) -> Fut<'c, T>,
    {
        let mut tries = 0;
        loop {
            tries += 1;
            let mut conn = inner.pool.get().await?;
            let db = conn.begin().await?;
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

impl Store for PgStore {
    fn transcript_path(&self, _agent_id: &str, _session_id: &str) -> Option<PathBuf> {
        None
    }

    fn close(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(PgStore::close(self))
    }

    fn cluster(&self) -> Arc<dyn Cluster> {
        Arc::new(self.clone())
    }

    fn orphans(&self) -> StoreFuture<'_, Orphans> {
        self.claim(|db| {
            Box::pin(async move {
                Ok(Orphans {
                    runs: cluster::claim_runs(db).await?,
                    subagents: subagents::claim(db).await?,
                    exchanges: exchanges::claim(db).await?,
                })
            })
        })
    }

    fn lock_session(&self, key: &SessionKey) -> StoreFuture<'_, Option<SessionLock>> {
        let key = key.as_str().to_string();
        Box::pin(async move {
            let idle = self.inner.lockers.lock().ok().and_then(|mut l| l.pop());
            let conn = match idle {
                Some(conn) if !conn.is_closed() => conn,
                _ => self.inner.pool.connect().await?,
            };
            // Waits while another gateway's run holds it; the server lets it go if this
            // gateway's connection drops (a dead gateway holds nothing).
            conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", &[&key])
                .await?;
            let held = HeldSession {
                conn: Some(conn),
                key,
                inner: self.inner.clone(),
            };
            Ok(Some(Box::new(held) as SessionLock))
        })
    }

    fn bus(&self) -> Option<Arc<dyn crate::store::Bus>> {
        let bus = self.inner.bus.get()?.clone();
        Some(bus)
    }

    fn reads(&self) -> u64 {
        PgStore::reads(self)
    }

    fn health(&self) -> StoreHealth {
        let quiet = self
            .inner
            .renewed
            .lock()
            .map(|renewed| renewed.elapsed())
            .unwrap_or_default();
        let last_error = self.inner.last_error.lock().ok().and_then(|e| e.clone());
        let place = self.inner.pool.place();
        StoreHealth::from_quiet("postgres", place, quiet, last_error.as_deref())
    }

    fn get(&self, key: &SessionKey) -> StoreFuture<'_, Option<SessionEntry>> {
        let key = key.clone();
        self.read(move |db| Box::pin(async move { queries::get_entry(db, key.as_str()).await }))
    }

    fn get_by_session_id(&self, session_id: &str) -> StoreFuture<'_, Option<SessionEntry>> {
        let id = session_id.to_string();
        self.read(move |db| Box::pin(async move { queries::get_by_session_id(db, &id).await }))
    }

    fn get_by_label(&self, agent_id: &str, label: &str) -> StoreFuture<'_, Option<SessionEntry>> {
        let (agent, label) = (agent_id.to_string(), label.to_string());
        self.read(move |db| {
            Box::pin(async move { queries::get_by_label(db, &agent, &label).await })
        })
    }

    fn create(&self, new: NewSession) -> StoreFuture<'_, (SessionEntry, bool)> {
        self.write(move |db, now| {
            let new = new.clone();
            Box::pin(async move { queries::create(db, new, now).await })
        })
    }

    fn patch(&self, key: &SessionKey, patch: EntryPatch) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |db, now| {
            let (key, patch) = (key.clone(), patch.clone());
            Box::pin(async move { queries::patch(db, key.as_str(), &patch, now).await })
        })
    }

    fn reset(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |db, now| {
            let key = key.clone();
            Box::pin(async move { queries::reset(db, key.as_str(), now).await })
        })
    }

    fn delete(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |db, now| {
            let key = key.clone();
            Box::pin(async move { queries::delete(db, key.as_str(), now).await })
        })
    }

    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage> {
        self.read(move |db| Box::pin(async move { queries::list(db, &query).await }))
    }

    fn count(&self) -> StoreFuture<'_, u64> {
        self.read(|db| Box::pin(queries::count(db)))
    }

    fn count_by_agent(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        self.read(|db| Box::pin(queries::count_by_agent(db)))
    }

    fn append(
        &self,
        key: &SessionKey,
        create: Option<NewSession>,
        messages: Vec<TranscriptMessage>,
    ) -> StoreFuture<'_, Appended> {
        let key = key.clone();
        self.write(move |db, now| {
            let (key, create, messages) = (key.clone(), create.clone(), messages.clone());
            Box::pin(async move { queries::append(db, key.as_str(), create, messages, now).await })
        })
    }

    fn history(
        &self,
        session_id: &str,
        limit: usize,
        before: Option<i64>,
    ) -> StoreFuture<'_, HistoryPage> {
        let id = session_id.to_string();
        self.read(move |db| Box::pin(async move { queries::history(db, &id, limit, before).await }))
    }

    fn summary(&self, session_id: &str, before: i64) -> StoreFuture<'_, Option<StoredMessage>> {
        let id = session_id.to_string();
        self.read(move |db| Box::pin(async move { queries::summary(db, &id, before).await }))
    }

    fn last_messages(
        &self,
        session_ids: Vec<String>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<(String, Vec<StoredMessage>)>> {
        self.read(move |db| {
            Box::pin(async move { queries::last_messages(db, &session_ids, limit).await })
        })
    }

    fn put_run(&self, run: RunRecord) -> StoreFuture<'_, ()> {
        self.write(move |db, _| {
            let run = run.clone();
            Box::pin(async move { queries::put_run(db, &run, None).await })
        })
    }

    fn write_batch(&self, ops: Vec<WriteOp>) -> StoreFuture<'_, Vec<WriteOutcome>> {
        self.write(move |db, now| {
            let ops = ops.clone();
            Box::pin(async move {
                // The fences at the head go out together with the writes (pipelined on the
                // connection, no round trip of their own); either failing rolls all back.
                let fences = ops
                    .iter()
                    .take_while(|op| matches!(op, WriteOp::Fence { .. }));
                let fences: Vec<WriteOp> = fences.cloned().collect();
                let writes = ops[fences.len()..].to_vec();
                let fenced = async {
                    for fence in &fences {
                        write_op(db, fence.clone(), now).await?;
                    }
                    Ok::<_, StoreError>(())
                };
                let written = async {
                    let mut outcomes = Vec::with_capacity(writes.len());
                    for op in writes {
                        outcomes.push(write_op(db, op, now).await?);
                    }
                    Ok(outcomes)
                };
                let ((), written) = futures_util::try_join!(fenced, written)?;
                let mut outcomes = vec![WriteOutcome::Fenced; fences.len()];
                outcomes.extend(written);
                Ok(outcomes)
            })
        })
    }

    fn get_run(&self, run_id: &RunId) -> StoreFuture<'_, Option<RunRecord>> {
        let id = run_id.clone();
        self.read(move |db| Box::pin(async move { queries::get_run(db, id.as_str()).await }))
    }

    fn get_run_by_idempotency(&self, key: &str) -> StoreFuture<'_, Option<RunRecord>> {
        let key = key.to_string();
        self.read(move |db| {
            Box::pin(async move { queries::get_run_by_idempotency(db, &key).await })
        })
    }

    fn live_runs(&self) -> StoreFuture<'_, Vec<(RunRecord, Option<RunInput>)>> {
        self.claim(|db| Box::pin(cluster::claim_runs(db)))
    }

    fn enqueue_delivery(&self, record: DeliveryRecord) -> StoreFuture<'_, (DeliveryRecord, bool)> {
        self.write(move |db, _| {
            let record = record.clone();
            Box::pin(async move { outbox::enqueue(db, &record).await })
        })
    }

    fn pending_deliveries(&self, limit: usize) -> StoreFuture<'_, Vec<DeliveryRecord>> {
        self.write(move |db, now| Box::pin(outbox::claim(db, limit, now, DELIVERY_LEASE_MS)))
    }

    fn update_delivery(&self, id: &str, update: DeliveryUpdate) -> StoreFuture<'_, DeliveryRecord> {
        let id = id.to_string();
        self.write(move |db, now| {
            let (id, update) = (id.clone(), update.clone());
            Box::pin(async move { outbox::update(db, &id, &update, now).await })
        })
    }

    fn get_delivery(&self, id: &str) -> StoreFuture<'_, Option<DeliveryRecord>> {
        let id = id.to_string();
        self.read(move |db| Box::pin(async move { outbox::get(db, &id).await }))
    }

    fn list_deliveries(&self, query: DeliveryQuery) -> StoreFuture<'_, Vec<DeliveryRecord>> {
        self.read(move |db| Box::pin(async move { outbox::list(db, &query).await }))
    }

    fn put_subagent(&self, record: SubagentRecord) -> StoreFuture<'_, ()> {
        self.write(move |db, _| {
            let record = record.clone();
            Box::pin(async move { subagents::put(db, &record).await })
        })
    }

    fn get_subagent(&self, child_key: &SessionKey) -> StoreFuture<'_, Option<SubagentRecord>> {
        let key = child_key.clone();
        self.read(move |db| Box::pin(async move { subagents::get(db, &key).await }))
    }

    fn cursor(&self, name: &str) -> StoreFuture<'_, Option<i64>> {
        let name = name.to_string();
        self.read(move |db| Box::pin(async move { outbox::cursor(db, &name).await }))
    }

    fn get_subagents(&self, child_keys: Vec<SessionKey>) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.read(move |db| Box::pin(async move { subagents::get_many(db, &child_keys).await }))
    }

    fn unfinished_subagents(&self) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.claim(|db| Box::pin(subagents::claim(db)))
    }

    fn subagents_to_archive(&self, now: i64) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.read(move |db| Box::pin(subagents::to_archive(db, now)))
    }

    fn put_exchange(&self, record: ExchangeRecord) -> StoreFuture<'_, ()> {
        self.write(move |db, _| {
            let record = record.clone();
            Box::pin(async move { exchanges::put(db, &record).await })
        })
    }

    fn get_exchange(&self, id: &str) -> StoreFuture<'_, Option<ExchangeRecord>> {
        let id = id.to_string();
        self.read(move |db| Box::pin(async move { exchanges::get(db, &id).await }))
    }

    fn unfinished_exchanges(&self) -> StoreFuture<'_, Vec<ExchangeRecord>> {
        self.claim(|db| Box::pin(exchanges::claim(db)))
    }

    fn list_exchanges(
        &self,
        session: Option<SessionKey>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<ExchangeRecord>> {
        self.read(move |db| {
            Box::pin(async move { exchanges::list(db, session.as_ref(), limit).await })
        })
    }

    fn pairing_approved(
        &self,
        channel: &str,
        account: &str,
        sender: &str,
    ) -> StoreFuture<'_, bool> {
        let who = [channel, account, sender].map(str::to_string);
        self.read(move |db| {
            Box::pin(async move { pairing::approved(db, (&who[0], &who[1], &who[2])).await })
        })
    }

    fn pairing_admit(&self, ask: PairingAsk) -> StoreFuture<'_, PairingAdmission> {
        self.write(move |db, now| {
            let ask = ask.clone();
            Box::pin(async move { pairing::admit(db, &ask, now).await })
        })
    }

    fn pairing_pending(
        &self,
        channel: &str,
        account: Option<&str>,
        since: i64,
    ) -> StoreFuture<'_, Vec<PairingRecord>> {
        let (channel, account) = (channel.to_string(), account.map(str::to_string));
        self.read(move |db| {
            Box::pin(async move { pairing::pending(db, &channel, account.as_deref(), since).await })
        })
    }

    fn pairing_approve(
        &self,
        channel: &str,
        account: Option<&str>,
        code: &str,
        since: i64,
    ) -> StoreFuture<'_, PairingRecord> {
        let (channel, code) = (channel.to_string(), code.to_string());
        let account = account.map(str::to_string);
        self.write(move |db, now| {
            let (channel, account, code) = (channel.clone(), account.clone(), code.clone());
            Box::pin(async move {
                pairing::approve(db, (&channel, account.as_deref(), &code), since, now).await
            })
        })
    }

    fn cron_insert(&self, job: CronJobRecord) -> StoreFuture<'_, ()> {
        self.write(move |db, _| {
            let job = job.clone();
            Box::pin(async move { cron::insert(db, &job).await })
        })
    }

    fn cron_list(&self) -> StoreFuture<'_, Vec<CronJobRecord>> {
        self.read(|db| Box::pin(cron::list(db)))
    }

    fn cron_get(&self, id: &str) -> StoreFuture<'_, Option<CronJobRecord>> {
        let id = id.to_string();
        self.read(move |db| Box::pin(async move { cron::get(db, &id).await }))
    }

    fn cron_remove(&self, id: &str) -> StoreFuture<'_, CronJobRecord> {
        let id = id.to_string();
        self.write(move |db, _| {
            let id = id.clone();
            Box::pin(async move { cron::remove(db, &id).await })
        })
    }

    fn cron_record_firing(
        &self,
        id: &str,
        slot: Option<i64>,
        run_id: &RunId,
        at: i64,
    ) -> StoreFuture<'_, bool> {
        let (id, run_id) = (id.to_string(), run_id.clone());
        self.write(move |db, _| {
            let (id, run_id) = (id.clone(), run_id.clone());
            Box::pin(async move { cron::record_firing(db, &id, slot, &run_id, at).await })
        })
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

/// A session's advisory lock, held on a connection of its own; dropped, it unlocks and the
/// connection is kept for the next lock.
struct HeldSession {
    conn: Option<Conn>,
    key: String,
    inner: Arc<Inner>,
}

impl Drop for HeldSession {
    fn drop(&mut self) {
        let (Some(conn), Ok(runtime)) = (self.conn.take(), tokio::runtime::Handle::try_current())
        else {
            return; // The connection closes with it, and the server unlocks.
        };
        let (key, inner) = (std::mem::take(&mut self.key), self.inner.clone());
        let writes = inner.pool.writes.clone();
        let _unlock = runtime.enter();
        writes.spawn(async move {
            let unlocked = conn
                .execute(
                    "SELECT pg_advisory_unlock(hashtextextended($1, 0))",
                    &[&key],
                )
                .await;
            if unlocked.is_ok()
                && !inner.stop.is_cancelled()
                && let Ok(mut lockers) = inner.lockers.lock()
            {
                lockers.push(conn);
            }
        });
    }
}

/// One op of a batch, inside the batch's transaction.
async fn write_op(db: &Db<'_>, op: WriteOp, now: i64) -> Result<WriteOutcome, StoreError> {
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
        WriteOp::Fence { run_id, epoch } => {
            cluster::fence(db, &run_id, epoch).await?;
            WriteOutcome::Fenced
        }
        WriteOp::Append {
            key,
            create,
            messages,
        } => {
            WriteOutcome::Appended(queries::append(db, key.as_str(), create, messages, now).await?)
        }
        WriteOp::Patch { key, patch } => {
            WriteOutcome::Patched(queries::patch(db, key.as_str(), &patch, now).await?)
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
