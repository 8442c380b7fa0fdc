//! The embedded SQLite store (WAL). One writer thread commits in groups (see `writer`); reads run
//! on a small pool of read-only connections on tokio's blocking threads, so neither blocks the
//! async runtime.

mod cron;
mod exchanges;
mod outbox;
mod pairing;
mod queries;
mod schema;
mod subagents;
mod types;
mod writer;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags};
use switchboard_protocol::message::TranscriptMessage;

use super::CronJobRecord;
use super::{
    Appended, DeliveryQuery, DeliveryRecord, DeliveryUpdate, EntryPatch, ExchangeRecord,
    HistoryPage, ListPage, ListQuery, NewSession, PairingAdmission, PairingAsk, PairingRecord,
    RunInput, RunRecord, SessionEntry, Store, StoreError, StoreFuture, StoredMessage,
    SubagentRecord, WriteOp, WriteOutcome,
};
use super::{mirror, private};
use crate::clock::{Clock, SystemClock};
use crate::ids::RunId;
use crate::keys::SessionKey;
use writer::{Job, JobDone, MirrorOp};

#[cfg(test)]
pub(crate) mod tests;

/// Read connections kept open for reuse.
const MAX_IDLE_READERS: usize = 8;

/// SQLite-backed [`Store`]. Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    home: PathBuf,
    /// Every time the store writes (`createdAt`, `updatedAt`, …) is read from here.
    clock: Arc<dyn Clock>,
    db_path: PathBuf,
    jobs: Mutex<Option<Sender<Job>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    readers: Mutex<Vec<Connection>>,
    /// Read calls served since open (each one store query, or one batched statement).
    reads: std::sync::atomic::AtomicU64,
}

impl SqliteStore {
    /// [`SqliteStore::open_with_clock`] on the system clock.
    pub fn open(home: &Path) -> Result<Self, StoreError> {
        Self::open_with_clock(home, Arc::new(SystemClock))
    }

    /// Opens (or creates) `<home>/switchboard.db`, migrates it, repairs any transcript mirror a
    /// crash left short, and starts the writer thread. Times written come from `clock`.
    pub fn open_with_clock(home: &Path, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        // The state dir and the database are its owner's only (transcripts, tokens).
        private::create_dir(home)?;
        private::restrict(home)?;
        let db_path = home.join("switchboard.db");
        if !db_path.exists() {
            private::options().write(true).create(true).open(&db_path)?;
        }
        private::restrict(&db_path)?;
        let conn = Connection::open(&db_path)?;
        schema::configure(&conn)?;
        schema::migrate(&conn)?;
        let repaired = repair_mirrors(&conn, home)?;
        if repaired > 0 {
            tracing::info!(
                repaired,
                "rebuilt transcript mirrors that were missing, short or gapped"
            );
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let writer_home = home.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("switchboard-store-writer".into())
            .spawn(move || writer::run(conn, rx, writer_home))?;
        Ok(Self {
            inner: Arc::new(Inner {
                home: home.to_path_buf(),
                clock,
                db_path,
                jobs: Mutex::new(Some(tx)),
                writer: Mutex::new(Some(handle)),
                readers: Mutex::new(Vec::new()),
                reads: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    /// The database file.
    pub fn db_path(&self) -> &Path {
        &self.inner.db_path
    }

    /// Stops accepting writes, lets the writer finish what it holds, and waits for it.
    pub async fn close(&self) {
        let sender = self.inner.jobs.lock().ok().and_then(|mut j| j.take());
        drop(sender);
        let handle = self.inner.writer.lock().ok().and_then(|mut h| h.take());
        if let Some(handle) = handle {
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
    }

    /// Runs `f` on the writer thread inside the current group transaction, with the time of the
    /// write (ms, on the store's clock).
    fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection, i64, &mut Vec<MirrorOp>) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let clock = self.inner.clock.clone();
        let job: Job = Box::new(move |conn| {
            let mut mirror = Vec::new();
            let result = f(conn, clock.now_ms(), &mut mirror);
            let ok = result.is_ok();
            JobDone {
                ok,
                mirror: if ok { mirror } else { Vec::new() },
                finish: Box::new(move |committed| {
                    let _ = tx.send(committed.and(result));
                }),
            }
        });
        let sent = match self.inner.jobs.lock() {
            Ok(jobs) => jobs.as_ref().is_some_and(|s| s.send(job).is_ok()),
            Err(_) => false,
        };
        Box::pin(crate::measure::store_op("sqlite", "write", async move {
            if !sent {
                return Err(StoreError::Closed);
            }
            rx.await
                .map_err(|_| StoreError::Backend("the write was not committed".into()))?
        }))
    }

    /// How many reads the store has served since it opened (a metric; tests use it to prove a
    /// request costs a fixed number of queries whatever the number of rows).
    pub fn reads(&self) -> u64 {
        self.inner.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs `f` on a pooled read-only connection on a blocking thread.
    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        self.inner
            .reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let inner = self.inner.clone();
        Box::pin(crate::measure::store_op("sqlite", "read", async move {
            tokio::task::spawn_blocking(move || {
                let conn = inner.take_reader()?;
                let result = f(&conn);
                inner.put_reader(conn);
                result
            })
            .await
            .map_err(|e| StoreError::Backend(format!("read task failed: {e}")))?
        }))
    }
}

impl Inner {
    fn take_reader(&self) -> Result<Connection, StoreError> {
        if let Some(conn) = self.readers.lock().ok().and_then(|mut r| r.pop()) {
            return Ok(conn);
        }
        let conn = Connection::open_with_flags(
            &self.db_path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        schema::configure(&conn)?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(conn)
    }

    fn put_reader(&self, conn: Connection) {
        if let Ok(mut readers) = self.readers.lock()
            && readers.len() < MAX_IDLE_READERS
        {
            readers.push(conn);
        }
    }
}

/// Rewrites every mirror that is missing, or that may be short or gapped (its progress mark is
/// behind the database: a crash or a failed write came between), from the database; answers how
/// many were rewritten. Files whose mark is current are only checked to exist, by listing each
/// agent's transcript folder once (a `stat` per file cost 45 ms of every start at 10k sessions):
/// reading every file whole at each start would cost as much as the transcripts weigh.
fn repair_mirrors(conn: &Connection, home: &Path) -> Result<usize, StoreError> {
    let mut repaired = 0;
    let mut listed: HashMap<String, HashSet<std::ffi::OsString>> = HashMap::new();
    for row in queries::mirror_rows(conn)? {
        let path = mirror::transcript_path(home, &row.agent_id, &row.session_id);
        let behind = row.mirrored_seq < row.last_seq;
        let broken = match behind {
            true => !mirror::is_complete(&path, row.last_seq),
            false => {
                let files = listed
                    .entry(row.agent_id.clone())
                    .or_insert_with(|| files_in(path.parent()));
                !path.file_name().is_some_and(|name| files.contains(name))
            }
        };
        if broken {
            // One file that cannot be written must not keep the gateway from starting: its
            // mark stays behind, so the next start tries again.
            if let Err(e) = writer::rebuild(conn, home, &path, &row.session_id, row.created_at) {
                let session_id = &row.session_id;
                tracing::warn!(session_id, error = %e, "could not rebuild a transcript mirror");
                continue;
            }
            repaired += 1;
        }
        if behind || broken {
            queries::mark_mirrored(conn, &row.session_id, row.last_seq)?;
        }
    }
    Ok(repaired)
}

/// The names of the regular files in `dir` (none when it cannot be read).
fn files_in(dir: Option<&Path>) -> HashSet<std::ffi::OsString> {
    let Some(Ok(entries)) = dir.map(std::fs::read_dir) else {
        return HashSet::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name())
        .collect()
}

impl Store for SqliteStore {
    fn transcript_path(&self, agent_id: &str, session_id: &str) -> Option<PathBuf> {
        Some(mirror::transcript_path(
            &self.inner.home,
            agent_id,
            session_id,
        ))
    }

    fn close(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(SqliteStore::close(self))
    }

    fn reads(&self) -> u64 {
        SqliteStore::reads(self)
    }

    fn get(&self, key: &SessionKey) -> StoreFuture<'_, Option<SessionEntry>> {
        let key = key.clone();
        self.read(move |c| queries::get_entry(c, key.as_str()))
    }

    fn get_by_session_id(&self, session_id: &str) -> StoreFuture<'_, Option<SessionEntry>> {
        let id = session_id.to_string();
        self.read(move |c| queries::get_by_session_id(c, &id))
    }

    fn get_by_label(&self, agent_id: &str, label: &str) -> StoreFuture<'_, Option<SessionEntry>> {
        let (agent, label) = (agent_id.to_string(), label.to_string());
        self.read(move |c| queries::get_by_label(c, &agent, &label))
    }

    fn create(&self, new: NewSession) -> StoreFuture<'_, (SessionEntry, bool)> {
        self.write(move |c, now, m| queries::create(c, new, now, m))
    }

    fn patch(&self, key: &SessionKey, patch: EntryPatch) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |c, now, _| queries::patch(c, key.as_str(), &patch, now))
    }

    fn reset(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |c, now, m| queries::reset(c, key.as_str(), now, m))
    }

    fn delete(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |c, now, _| queries::delete(c, key.as_str(), now))
    }

    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage> {
        self.read(move |c| queries::list(c, &query))
    }

    fn count(&self) -> StoreFuture<'_, u64> {
        self.read(queries::count)
    }

    fn count_by_agent(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        self.read(queries::count_by_agent)
    }

    fn append(
        &self,
        key: &SessionKey,
        create: Option<NewSession>,
        messages: Vec<TranscriptMessage>,
    ) -> StoreFuture<'_, Appended> {
        let key = key.clone();
        self.write(move |c, now, m| queries::append(c, key.as_str(), create, messages, now, m))
    }

    fn history(
        &self,
        session_id: &str,
        limit: usize,
        before: Option<i64>,
    ) -> StoreFuture<'_, HistoryPage> {
        let id = session_id.to_string();
        self.read(move |c| queries::history(c, &id, limit, before))
    }

    fn summary(&self, session_id: &str, before: i64) -> StoreFuture<'_, Option<StoredMessage>> {
        let id = session_id.to_string();
        self.read(move |c| queries::summary(c, &id, before))
    }

    fn last_messages(
        &self,
        session_ids: Vec<String>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<(String, Vec<StoredMessage>)>> {
        self.read(move |c| queries::last_messages(c, &session_ids, limit))
    }

    fn put_run(&self, run: RunRecord) -> StoreFuture<'_, ()> {
        self.write(move |c, _, _| queries::put_run(c, &run, None))
    }

    fn write_batch(&self, ops: Vec<WriteOp>) -> StoreFuture<'_, Vec<WriteOutcome>> {
        self.write(move |c, now, m| ops.into_iter().map(|op| write_op(c, op, now, m)).collect())
    }

    fn get_run(&self, run_id: &RunId) -> StoreFuture<'_, Option<RunRecord>> {
        let id = run_id.clone();
        self.read(move |c| queries::get_run(c, id.as_str()))
    }

    fn get_run_by_idempotency(&self, key: &str) -> StoreFuture<'_, Option<RunRecord>> {
        let key = key.to_string();
        self.read(move |c| queries::get_run_by_idempotency(c, &key))
    }

    fn live_runs(&self) -> StoreFuture<'_, Vec<(RunRecord, Option<RunInput>)>> {
        self.read(queries::live_runs)
    }

    fn enqueue_delivery(&self, record: DeliveryRecord) -> StoreFuture<'_, (DeliveryRecord, bool)> {
        self.write(move |c, _, _| outbox::enqueue(c, &record))
    }

    fn pending_deliveries(&self, limit: usize) -> StoreFuture<'_, Vec<DeliveryRecord>> {
        self.read(move |c| outbox::pending(c, limit))
    }

    fn update_delivery(&self, id: &str, update: DeliveryUpdate) -> StoreFuture<'_, DeliveryRecord> {
        let id = id.to_string();
        self.write(move |c, now, _| outbox::update(c, &id, &update, now))
    }

    fn get_delivery(&self, id: &str) -> StoreFuture<'_, Option<DeliveryRecord>> {
        let id = id.to_string();
        self.read(move |c| outbox::get(c, &id))
    }

    fn list_deliveries(&self, query: DeliveryQuery) -> StoreFuture<'_, Vec<DeliveryRecord>> {
        self.read(move |c| outbox::list(c, &query))
    }

    fn put_subagent(&self, record: SubagentRecord) -> StoreFuture<'_, ()> {
        self.write(move |c, _, _| subagents::put(c, &record))
    }

    fn get_subagent(&self, child_key: &SessionKey) -> StoreFuture<'_, Option<SubagentRecord>> {
        let key = child_key.clone();
        self.read(move |c| subagents::get(c, &key))
    }

    fn cursor(&self, name: &str) -> StoreFuture<'_, Option<i64>> {
        let name = name.to_string();
        self.read(move |c| {
            use rusqlite::OptionalExtension as _;
            Ok(
                c.prepare_cached("SELECT position FROM channel_cursors WHERE name = ?1")?
                    .query_row([name], |r| r.get(0))
                    .optional()?,
            )
        })
    }

    fn get_subagents(&self, child_keys: Vec<SessionKey>) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.read(move |c| {
            let mut found = Vec::with_capacity(child_keys.len());
            for key in &child_keys {
                found.extend(subagents::get(c, key)?);
            }
            Ok(found)
        })
    }

    fn unfinished_subagents(&self) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.read(subagents::unfinished)
    }

    fn subagents_to_archive(&self, now: i64) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.read(move |c| subagents::to_archive(c, now))
    }

    fn put_exchange(&self, record: ExchangeRecord) -> StoreFuture<'_, ()> {
        self.write(move |c, _, _| exchanges::put(c, &record))
    }

    fn get_exchange(&self, id: &str) -> StoreFuture<'_, Option<ExchangeRecord>> {
        let id = id.to_string();
        self.read(move |c| exchanges::get(c, &id))
    }

    fn unfinished_exchanges(&self) -> StoreFuture<'_, Vec<ExchangeRecord>> {
        self.read(exchanges::unfinished)
    }

    fn list_exchanges(
        &self,
        session: Option<SessionKey>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<ExchangeRecord>> {
        self.read(move |c| exchanges::list(c, session.as_ref(), limit))
    }

    fn pairing_approved(
        &self,
        channel: &str,
        account: &str,
        sender: &str,
    ) -> StoreFuture<'_, bool> {
        let who = [channel, account, sender].map(str::to_string);
        self.read(move |c| pairing::approved(c, (&who[0], &who[1], &who[2])))
    }

    fn pairing_admit(&self, ask: PairingAsk) -> StoreFuture<'_, PairingAdmission> {
        self.write(move |c, now, _| pairing::admit(c, &ask, now))
    }

    fn pairing_pending(
        &self,
        channel: &str,
        account: Option<&str>,
        since: i64,
    ) -> StoreFuture<'_, Vec<PairingRecord>> {
        let (channel, account) = (channel.to_string(), account.map(str::to_string));
        self.read(move |c| pairing::pending(c, &channel, account.as_deref(), since))
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
        self.write(move |c, now, _| {
            pairing::approve(c, (&channel, account.as_deref(), &code), since, now)
        })
    }

    fn cron_insert(&self, job: CronJobRecord) -> StoreFuture<'_, ()> {
        self.write(move |c, _, _| cron::insert(c, &job))
    }

    fn cron_list(&self) -> StoreFuture<'_, Vec<CronJobRecord>> {
        self.read(cron::list)
    }

    fn cron_get(&self, id: &str) -> StoreFuture<'_, Option<CronJobRecord>> {
        let id = id.to_string();
        self.read(move |c| cron::get(c, &id))
    }

    fn cron_remove(&self, id: &str) -> StoreFuture<'_, CronJobRecord> {
        let id = id.to_string();
        self.write(move |c, _, _| cron::remove(c, &id))
    }

    fn cron_record_firing(
        &self,
        id: &str,
        slot: Option<i64>,
        run_id: &RunId,
        at: i64,
    ) -> StoreFuture<'_, bool> {
        let (id, run_id) = (id.to_string(), run_id.clone());
        self.write(move |c, _, _| cron::record_firing(c, &id, slot, &run_id, at))
    }
}

/// One op of a batch, inside the batch's transaction.
fn write_op(
    c: &Connection,
    op: WriteOp,
    now: i64,
    m: &mut Vec<MirrorOp>,
) -> Result<WriteOutcome, StoreError> {
    match op {
        WriteOp::Create(new) => queries::create(c, *new, now, m)
            .map(|(entry, created)| WriteOutcome::Created(Box::new(entry), created)),
        WriteOp::PutRun(run) => queries::put_run(c, &run, None).map(|()| WriteOutcome::PutRun),
        // One gateway alone: nobody else can hold its runs.
        WriteOp::Fence { .. } => Ok(WriteOutcome::Fenced),
        WriteOp::QueueRun(run, input) => {
            queries::put_run(c, &run, Some(&input)).map(|()| WriteOutcome::PutRun)
        }
        WriteOp::Append {
            key,
            create,
            messages,
        } => queries::append(c, key.as_str(), create, messages, now, m).map(WriteOutcome::Appended),
        WriteOp::Patch { key, patch } => {
            queries::patch(c, key.as_str(), patch.as_ref(), now).map(WriteOutcome::Patched)
        }
        WriteOp::Enqueue(record) => {
            outbox::enqueue(c, &record).map(|(stored, _)| WriteOutcome::Enqueued(Box::new(stored)))
        }
        WriteOp::UpdateDelivery { id, update } => outbox::update(c, &id, &update, now)
            .map(|stored| WriteOutcome::DeliveryUpdated(Box::new(stored))),
        WriteOp::PutSubagent(record) => {
            subagents::put(c, &record).map(|()| WriteOutcome::PutSubagent)
        }
        WriteOp::PutExchange(record) => {
            exchanges::put(c, &record).map(|()| WriteOutcome::PutExchange)
        }
        WriteOp::SetCursor { name, position } => {
            c.prepare_cached(
                "INSERT INTO channel_cursors (name, position) VALUES (?1, ?2)
                 ON CONFLICT (name) DO UPDATE SET position = max(position, excluded.position)",
            )?
            .execute(rusqlite::params![name, position])?;
            Ok(WriteOutcome::SetCursor)
        }
        WriteOp::DeliveryProgress { id, parts_sent } => {
            outbox::progress(c, &id, parts_sent)?;
            Ok(WriteOutcome::DeliveryProgress)
        }
    }
}
