//! The embedded SQLite store (WAL). One write connection commits in groups (see `writer`): on
//! the task that queued a write when no other commit is under way, else on the writer thread.
//! Reads run on a small pool of read-only connections: a one-row read on the task's own thread,
//! a read of many rows on tokio's blocking threads.

mod checked;
mod checkpoint;
mod cron;
mod exchanges;
mod outbox;
mod pairing;
mod parts;
mod queries;
mod schema;
mod subagents;
mod touched;
mod types;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags};

use super::rules::work;
use super::{Bound, SessionEntry, StoreError, StoreFuture, WriteOp, WriteOutcome};
use super::{mirror, private};
use crate::clock::{Clock, SystemClock};
use crate::keys::SessionKey;
use writer::{Job, JobDone, MirrorOp, Queued, Writer};

#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod checked_tests;
#[cfg(test)]
mod checkpoint_tests;
#[cfg(test)]
mod flag_tests;
#[cfg(test)]
pub(crate) mod tests;

/// Read connections kept open for reuse.
const MAX_IDLE_READERS: usize = 8;
/// Prepared statements each connection keeps.
const STATEMENT_CACHE: usize = 64;
/// Prepared statements the writer's connection keeps: its writes', and the point reads it
/// serves between them.
const WRITER_STATEMENT_CACHE: usize = 128;

/// Who commits a write queued when no other is: the task that asked, on its first poll (no
/// thread to wake for a write it waits on at once), or the writer thread, woken as the write
/// is queued (for a caller that goes on beside the commit).
#[derive(Clone, Copy)]
enum Committer {
    Caller,
    WriterThread,
}

/// SQLite-backed [`Store`](super::Store). Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    home: PathBuf,
    /// Every time the store writes (`createdAt`, `updatedAt`, …) is read from here.
    clock: Arc<dyn Clock>,
    db_path: PathBuf,
    writer: Arc<Writer>,
    /// Wakes the writer thread; dropped (taken at close) to stop it.
    wake: Mutex<Option<SyncSender<()>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    readers: writer::Readers,
    /// Read calls served since open (each one store query, or one batched statement).
    reads: std::sync::atomic::AtomicU64,
    /// How long a read on a thread of its own, or a write, is waited for.
    bound: Bound,
}

/// The database file in the state dir.
pub const DATABASE_FILE: &str = "switchboard.db";

impl SqliteStore {
    /// [`SqliteStore::open_with_clock`] on the system clock.
    pub fn open(home: &Path) -> Result<Self, StoreError> {
        Self::open_with_clock(home, Arc::new(SystemClock))
    }

    /// Opens (or creates) `<home>/switchboard.db`, migrates it, repairs any transcript mirror a
    /// crash left behind its database, and starts the writer thread (which then checks every
    /// other mirror exists, in small steps, in the background). Times written come from `clock`.
    pub fn open_with_clock(home: &Path, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        Self::open_bounded(home, clock, super::bound::DEFAULT_LIMIT)
    }

    /// [`SqliteStore::open_with_clock`], a read or a write waited for at most `limit`
    /// (`store.timeoutSeconds`).
    pub fn open_bounded(
        home: &Path,
        clock: Arc<dyn Clock>,
        limit: std::time::Duration,
    ) -> Result<Self, StoreError> {
        // The state dir and the database are its owner's only (transcripts, tokens).
        private::create_dir(home)?;
        private::restrict(home)?;
        let db_path = home.join(DATABASE_FILE);
        if !db_path.exists() {
            private::options().write(true).create(true).open(&db_path)?;
        }
        private::restrict(&db_path)?;
        let conn = Connection::open(&db_path)?;
        schema::configure(&conn)?;
        // Every statement the writer runs stays prepared (the default keeps 16, fewer than a
        // turn's writes use, and re-prepares the rest each time).
        conn.set_prepared_statement_cache_capacity(WRITER_STATEMENT_CACHE);
        schema::migrate(&conn)?;
        let checkpoints = checkpoint::Checkpoints::start(&conn, &db_path)?;
        let repair = repair_behind(&conn, home)?;
        if repair.rebuilt > 0 {
            tracing::info!(
                rebuilt = repair.rebuilt,
                "rebuilt transcript mirrors that a crash left missing, short or gapped"
            );
        }
        let checked = checked::Checked::start(&conn, home);
        let writer = Arc::new(Writer::new(conn, home.to_path_buf(), checked, checkpoints));
        // One wake-up waiting is enough: the thread takes every job queued when it wakes.
        let (wake, woken) = std::sync::mpsc::sync_channel(1);
        let (thread_writer, readers) = (writer.clone(), writer::Readers::default());
        let thread_readers = readers.clone();
        let handle = std::thread::Builder::new()
            .name("switchboard-store-writer".into())
            .spawn(move || writer::run(thread_writer, woken, thread_readers))?;
        Ok(Self {
            inner: Arc::new(Inner {
                home: home.to_path_buf(),
                clock,
                writer,
                wake: Mutex::new(Some(wake)),
                thread: Mutex::new(Some(handle)),
                readers,
                reads: std::sync::atomic::AtomicU64::new(0),
                bound: Bound::new(limit, format!("the SQLite file {}", db_path.display())),
                db_path,
            }),
        })
    }

    /// The database file.
    pub fn db_path(&self) -> &Path {
        &self.inner.db_path
    }

    /// Stops accepting writes, lets the writer finish what it holds, and waits for it.
    pub async fn close(&self) {
        self.inner.writer.close();
        let sender = self.inner.wake.lock().ok().and_then(|mut w| w.take());
        drop(sender);
        let handle = self.inner.thread.lock().ok().and_then(|mut h| h.take());
        let writer = self.inner.writer.clone();
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(handle) = handle {
                let _ = handle.join();
            }
            writer.stop_checkpoints();
        })
        .await;
    }

    /// Runs `f` inside the current group transaction (`writer`), with the time of the write
    /// (ms, on the store's clock).
    fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection, i64, &mut Vec<MirrorOp>) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        self.write_by(f, Committer::Caller)
    }

    /// [`Self::write`], committed by `committer` when no other write is queued before it.
    fn write_by<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection, i64, &mut Vec<MirrorOp>) -> Result<T, StoreError> + Send + 'static,
        committer: Committer,
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
        let queued = self.inner.writer.submit(job, committer);
        // A write behind another, or one the caller does not commit, is the thread's now.
        let helps = matches!((&queued, committer), (Queued::Alone, Committer::Caller));
        if !helps && !matches!(queued, Queued::Closed) {
            self.inner.wake_writer();
        }
        let inner = self.inner.clone();
        Box::pin(crate::measure::store_op("sqlite", "write", async move {
            match queued {
                Queued::Closed => return Err(StoreError::Closed),
                Queued::Alone if helps && !inner.writer.help() => inner.wake_writer(),
                Queued::Alone | Queued::Behind => {}
            }
            let landed = async {
                rx.await
                    .map_err(|_| StoreError::Backend("the write was not committed".into()))?
            };
            inner.bound.write(landed).await
        }))
    }

    /// How many reads the store has served since it opened (a metric; tests use it to prove a
    /// request costs a fixed number of queries whatever the number of rows).
    pub fn reads(&self) -> u64 {
        self.inner.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A number that moves on whenever a write may have changed what a read answers: every
    /// write to the file goes through this process's one writer (one gateway serves one
    /// SQLite file), which moves it on after each commit and before answering the writes.
    /// Read it before a read: a page read after is at least as new as the number.
    pub fn version(&self) -> u64 {
        self.inner.writer.version()
    }

    /// The store rows (`rowid`s) of the sessions that the commits after version `since` wrote,
    /// up to version `to`, each once; `None` when the store no longer remembers that far back
    /// (`touched.rs`).
    pub fn sessions_touched(&self, since: u64, to: u64) -> Option<Vec<i64>> {
        self.inner.writer.touched_between(since, to)
    }

    /// Counts one read ([`SqliteStore::reads`]) and answers the state it runs on.
    fn counted_read(&self) -> Arc<Inner> {
        self.inner
            .reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.clone()
    }

    /// Runs `f` here, on the task's own thread: for the reads of one row through an index (a
    /// session, a run, a record by key), of a few rows by `rowid` (a kept list page's
    /// touched rows, `parts::POINT_ROWS`) or of a short transcript's page by its primary key
    /// (`parts::POINT_MESSAGES`), which take a few microseconds. Handing those to a
    /// blocking thread cost more than the read itself: two thread wake-ups each, two or three
    /// reads on every turn. The writer's connection reads it when no write is in flight
    /// ([`Writer::read_at_desk`]), a pooled read-only one otherwise.
    fn point_read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        let inner = self.counted_read();
        Box::pin(crate::measure::store_op("sqlite", "read", async move {
            match inner.writer.read_at_desk(f) {
                Ok(read) => read,
                Err(f) => inner.with_reader(f),
            }
        }))
    }

    /// Runs `f` on a pooled read-only connection on a blocking thread: for reads of many rows.
    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        let inner = self.counted_read();
        Box::pin(crate::measure::store_op("sqlite", "read", async move {
            let bound = inner.bound.clone();
            let read = async {
                tokio::task::spawn_blocking(move || inner.with_reader(f))
                    .await
                    .map_err(|e| StoreError::Backend(format!("read task failed: {e}")))?
            };
            bound.read(read).await
        }))
    }
}

impl Inner {
    fn wake_writer(&self) {
        if let Ok(wake) = self.wake.lock()
            && let Some(wake) = wake.as_ref()
        {
            // A full slot: the thread is already woken.
            let _ = wake.try_send(());
        }
    }

    /// Runs `f` on a pooled read-only connection, here.
    fn with_reader<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let conn = self.take_reader()?;
        let result = f(&conn);
        self.put_reader(conn);
        result
    }

    fn take_reader(&self) -> Result<Connection, StoreError> {
        if let Some(conn) = self.readers.lock().ok().and_then(|mut r| r.pop()) {
            return Ok(conn);
        }
        let conn = Connection::open_with_flags(
            &self.db_path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        schema::configure(&conn)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
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

/// What the start-up repair did: how many transcripts it checked and how many it rewrote.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Repair {
    pub checked: usize,
    pub rebuilt: usize,
}

/// Rewrites every mirror that may be short, gapped or missing because its progress mark is
/// behind the database (a crash or a failed write came between a commit and its lines), before
/// the store serves anyone. Only those are read, found through a partial index: a start costs
/// what the last process left unfinished, not what the store holds. A mirror whose mark is
/// current is trusted (a gap can only come from a failed write, which keeps the mark behind);
/// one deleted by hand while the gateway was stopped is found by the writer's sweep after the
/// start (`writer`), or rewritten at its session's next write.
fn repair_behind(conn: &Connection, home: &Path) -> Result<Repair, StoreError> {
    let behind = queries::behind_mirrors(conn)?;
    let mut rebuilt = 0;
    for row in &behind {
        let path = mirror::transcript_path(home, &row.agent_id, &row.session_id);
        if !mirror::is_complete(&path, row.last_seq) {
            // One file that cannot be written must not keep the gateway from starting: its
            // mark stays behind, so the next start tries again.
            if let Err(e) = writer::rebuild(conn, home, &path, &row.session_id, row.created_at) {
                let session_id = &row.session_id;
                tracing::warn!(session_id, error = %e, "could not rebuild a transcript mirror");
                continue;
            }
            rebuilt += 1;
        }
        queries::mark_mirrored(conn, &row.session_id, row.last_seq)?;
    }
    Ok(Repair {
        checked: behind.len(),
        rebuilt,
    })
}

/// A batch's ops, in order, inside its transaction. A run's reply and its end append to the
/// session and then patch it (the token counts, the run's flag), with only writes of other
/// tables between: the append then leaves the row's time to the patch, and the patch starts
/// from the entry the append answered instead of reading the row again. The row is written
/// once, as the two writes would leave it.
fn write_ops(
    c: &Connection,
    ops: Vec<WriteOp>,
    now: i64,
    m: &mut Vec<MirrorOp>,
) -> Result<Vec<WriteOutcome>, StoreError> {
    let mut outcomes = Vec::with_capacity(ops.len());
    let mut ops = ops.into_iter();
    // The entry an append answered while its patch is still to come.
    let mut appended_entry: Option<SessionEntry> = None;
    while let Some(mut op) = ops.next() {
        work::take_session(&mut op, &outcomes);
        let outcome = match op {
            WriteOp::Append {
                key,
                create,
                messages,
            } if patched_later(&key, ops.as_slice()) => {
                let appended =
                    queries::append_leaving_time(c, key.as_str(), create, messages, now, m)?;
                appended_entry = Some(appended.entry.clone());
                WriteOutcome::Appended(appended)
            }
            WriteOp::Patch { key, patch }
                if appended_entry.as_ref().is_some_and(|e| e.key == key) =>
            {
                let known = appended_entry.take();
                debug_assert_eq!(
                    known.as_ref().map(|e| SessionEntry {
                        updated_at: 0,
                        ..e.clone()
                    }),
                    queries::get_entry(c, key.as_str())?
                        .map(|e| SessionEntry { updated_at: 0, ..e }),
                    "the entry an append answered is the stored one but for its time"
                );
                queries::patch(c, key.as_str(), &patch, now, known).map(WriteOutcome::Patched)?
            }
            op => write_op(c, op, now, m)?,
        };
        outcomes.push(outcome);
    }
    debug_assert!(
        appended_entry.is_none(),
        "an append left its session's time to a patch that never came"
    );
    Ok(outcomes)
}

/// Whether a later op of the batch patches `key`'s session with only writes of other tables
/// before it (a run's fence and record, a delivery). Only ops that never write the `sessions`
/// row may be passed over: the patch writes the row from the entry the append answered.
fn patched_later(key: &SessionKey, rest: &[WriteOp]) -> bool {
    for op in rest {
        match op {
            WriteOp::Patch { key: patched, .. } => return patched == key,
            WriteOp::Fence { .. }
            | WriteOp::PutRun(_)
            | WriteOp::NewRun(..)
            | WriteOp::QueueRun(..)
            | WriteOp::Enqueue(_) => continue,
            _ => return false,
        }
    }
    false
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
        WriteOp::NewRun(run, input) => {
            queries::new_run(c, &run, input.as_deref()).map(|()| WriteOutcome::PutRun)
        }
        // One gateway alone: nobody else can hold its runs.
        WriteOp::Fence { .. } => Ok(WriteOutcome::Fenced),
        WriteOp::Ended { run_id, status } => {
            let stored = queries::get_run(c, run_id.as_str())?.map(|run| run.status);
            crate::store::runs::ended_as(&run_id, status, stored).map(|()| WriteOutcome::Ended)
        }
        WriteOp::QueueRun(run, input) => {
            queries::put_run(c, &run, Some(&input)).map(|()| WriteOutcome::PutRun)
        }
        WriteOp::Append {
            key,
            create,
            messages,
        } => queries::append(c, key.as_str(), create, messages, now, m).map(WriteOutcome::Appended),
        WriteOp::Patch { key, patch } => {
            queries::patch(c, key.as_str(), patch.as_ref(), now, None).map(WriteOutcome::Patched)
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
            outbox::set_cursor(c, &name, position)?;
            Ok(WriteOutcome::SetCursor)
        }
        WriteOp::SetToken { name, token } => {
            outbox::set_token(c, &name, &token)?;
            Ok(WriteOutcome::SetToken)
        }
        WriteOp::DeliveryProgress { id, parts_sent } => {
            outbox::progress(c, &id, parts_sent)?;
            Ok(WriteOutcome::DeliveryProgress)
        }
    }
}
