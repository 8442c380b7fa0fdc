//! The single writer: one connection commits jobs in groups, at a desk taken by one thread at
//! a time.
//!
//! A job is queued; when it is the only write in flight, the task that queued it takes the desk
//! and commits it: a turn's writes need no hand-off to another thread and back. Otherwise (or
//! when the desk is busy) the writer thread is woken and commits what waits once the desk is
//! free, so jobs queued together still share one commit. Each job of a batch runs inside its own
//! savepoint (a failing job rolls back alone), the batch commits once, the JSONL mirror lines of
//! what committed are written, and only then is each job answered. Group commit keeps a burst
//! of small writes cheap without acknowledging anything before it is durable.
//!
//! Mirror bookkeeping: after lines are appended, `transcripts.mirrored_seq` is advanced in the
//! next transaction (or after a short idle pause, or at shutdown). The append's own commit sets
//! `mirror_behind`, which only the pause (or shutdown) clears, once the mark caught up: a crash
//! between the commit and the mark leaves the flag set, and the start-up repair checks the
//! flagged files. Under steady writes the flag stays set, so no commit rewrites its index. A mirror
//! write that fails (a full disk, a file made read-only for a moment) never leaves a hole: the
//! transcript is no longer trusted, its next write rewrites the file whole, and until then the
//! rewrite is retried once a second. The writer knows the last seq in each file it touched, so a
//! rewrite that already holds a later job's messages is never appended to again.
//!
//! The sweep: a start repairs only the mirrors whose mark is behind (`repair_behind`). That every
//! other file still exists (one deleted by hand while the gateway was stopped) is checked here,
//! after the start, [`SWEEP_STEP`] transcripts at a time between the writer's other work: one
//! `stat` each, a missing file rewritten from the database. On the writer thread no mirror write
//! can race the check, and memory stays one step's rows whatever the number of sessions. A start
//! that finds the mirror directories as the last clean stop recorded them skips the sweep
//! (`checked.rs` says when a stop may record them).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};

use super::Committer;
use super::checked::Checked;
use super::checkpoint::Checkpoints;
use super::queries;
use super::touched::Version;
use crate::store::StoreError;
use crate::store::mirror;
use crate::store::rules::transcript::MessageRow;

const MAX_BATCH: usize = 512;
/// How long after two writes were last in flight at once every write goes to the writer thread
/// (a write queued beside its caller's work, for [`Committer::WriterThread`], is not counted).
const CALM: Duration = Duration::from_millis(10);
/// Mirrors kept open for appending (the sessions written last).
const OPEN_MIRRORS: usize = 64;
const IDLE_FLUSH: Duration = Duration::from_millis(200);
/// Under writes that never pause, the flags of this many transcripts are cleared in the next
/// transaction: the set of flagged transcripts stays bounded.
const FLAGS_AT_ONCE: usize = 1_024;
/// Clears a transcript's mirror flag once its mark caught up.
const CLEAR_FLAG: &str = "UPDATE transcripts SET mirror_behind = 0 \
     WHERE session_id = ?1 AND mirror_behind = 1 AND mirrored_seq >= last_seq";
/// How often a mirror whose write failed is tried again.
const RETRY_EVERY: Duration = Duration::from_secs(1);
/// Transcripts whose mirror file the sweep checks per step.
const SWEEP_STEP: i64 = 1_000;
/// The sweep's first step waits this long after the store opens: the start's own work (and the
/// first clients) come first.
const SWEEP_DELAY: Duration = Duration::from_secs(1);
/// After this long without a commit, the connections' page caches give their memory back.
const RELEASE_AFTER: Duration = Duration::from_secs(2);
/// Between two steps when the writer is idle (and its idle wait while the sweep is unfinished).
const SWEEP_IDLE: Duration = Duration::from_millis(50);
/// Between two steps under steady writes, so the sweep adds little to any commit's wait.
const SWEEP_BUSY: Duration = Duration::from_secs(1);

/// What a job asks of the mirror once its transaction has committed.
pub(super) enum MirrorOp {
    /// Create the file with its header.
    Create {
        agent_id: String,
        session_id: String,
        created_at: i64,
    },
    /// Append these stored messages to the file.
    Append {
        agent_id: String,
        session_id: String,
        created_at: i64,
        messages: Vec<MessageRow>,
    },
}

/// The outcome of running one job: whether to keep its savepoint, its mirror work, and how to
/// answer its caller once the commit outcome is known.
pub(super) struct JobDone {
    pub ok: bool,
    pub mirror: Vec<MirrorOp>,
    pub finish: Box<dyn FnOnce(Result<(), StoreError>) + Send>,
}

pub(super) type Job = Box<dyn FnOnce(&Connection) -> JobDone + Send>;

/// The jobs waiting to be committed, and the connection that commits them. Whoever holds the
/// desk commits what waits: the task that queued a write, when no one else is committing (no
/// thread hand-off, no wake-up on either side), else the writer thread, woken for it.
pub(super) struct Writer {
    queue: Mutex<Queue>,
    desk: Mutex<Desk>,
    /// Jobs queued and not yet committed (or failed).
    in_flight: AtomicUsize,
    /// Of them, those queued beside their caller's work ([`Committer::WriterThread`]).
    beside: AtomicUsize,
    /// When (µs after `epoch`) a job was last queued behind another.
    contended_at: AtomicU64,
    epoch: Instant,
    /// Job transactions ended since open, and the session rows each recent one wrote
    /// (`touched.rs`). The mirror's own bookkeeping (`mirrored_seq`, which no request reads)
    /// does not move it.
    version: Version,
    /// The WAL's checkpoints, taken beside the writer (`checkpoint.rs`).
    checkpoints: Checkpoints,
}

/// Where [`Writer::submit`] put a job.
pub(super) enum Queued {
    /// The store is closed: the job was dropped.
    Closed,
    /// The only write in flight: its task commits it.
    Alone,
    /// Behind other writes: the writer thread commits it with them.
    Behind,
}

/// Jobs taken from the queue to commit together.
struct Batch {
    jobs: Vec<Job>,
    /// How many of them were queued beside their callers' work.
    besides: usize,
}

struct Queue {
    /// Each job, and whether it was queued beside its caller's work.
    jobs: VecDeque<(Job, bool)>,
    /// False once the store closed: no job is taken any more.
    open: bool,
}

struct Desk {
    conn: Connection,
    mirror: MirrorState,
    /// When a batch was last committed (the mirror marks wait for a pause in the writes).
    last_commit: Instant,
}

impl Writer {
    /// The writer of `conn`; its sweep is skipped when the start found the mirror directories
    /// as the last clean stop recorded them (`checked.rs`).
    pub(super) fn new(
        conn: Connection,
        home: PathBuf,
        checked: Checked,
        checkpoints: Checkpoints,
    ) -> Self {
        let mirror = MirrorState {
            home,
            in_file: HashMap::new(),
            files: HashMap::new(),
            marks: HashMap::new(),
            flagged: HashSet::new(),
            failed: HashMap::new(),
            retry_at: Instant::now(),
            sweep: (!checked.skips_sweep()).then_some(0),
            sweep_at: Instant::now() + SWEEP_DELAY,
            checked,
        };
        let queue = Queue {
            jobs: VecDeque::new(),
            open: true,
        };
        let desk = Desk {
            conn,
            mirror,
            last_commit: Instant::now(),
        };
        let version = Version::default();
        version.watch(&desk.conn);
        Self {
            queue: Mutex::new(queue),
            desk: Mutex::new(desk),
            in_flight: AtomicUsize::new(0),
            beside: AtomicUsize::new(0),
            contended_at: AtomicU64::new(0),
            epoch: Instant::now(),
            version,
            checkpoints,
        }
    }

    /// Queues `job` behind every job queued before it, and says whether it is the only write
    /// in flight, with none other for [`CALM`]: only then is it committed by its own task
    /// ([`Writer::help`]). Under concurrent writes the writer thread commits them, in groups as
    /// large as the writes that queued during the last commit: committed on their own tasks
    /// whenever they found none in flight, they made 20 sessions in parallel a third slower
    /// (smaller groups, and a worker thread held by each commit). A write queued beside its
    /// caller's own work, for [`Committer::WriterThread`] (a tool's result beside the next model
    /// call, a run's end beside its waiting sender), is the writer thread's by design, not a sign
    /// of concurrent writes: a write that finds only such writes in flight waits behind them,
    /// but marks no contention, so the run's next writes are committed on its own task again
    /// once they landed.
    pub(super) fn submit(&self, job: Job, committer: Committer) -> Queued {
        let beside = matches!(committer, Committer::WriterThread);
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if !queue.open {
            return Queued::Closed;
        }
        queue.jobs.push_back((job, beside));
        let now = self.epoch.elapsed().as_micros() as u64;
        if beside {
            self.beside.fetch_add(1, Ordering::AcqRel);
        }
        let besides = self.beside.load(Ordering::Acquire);
        let before = self.in_flight.fetch_add(1, Ordering::AcqRel);
        if before > 0 {
            // Only writes of other tasks in flight mark it.
            if !beside && before > besides {
                self.contended_at.store(now, Ordering::Relaxed);
            }
            return Queued::Behind;
        }
        let calm =
            Duration::from_micros(now.saturating_sub(self.contended_at.load(Ordering::Relaxed)));
        if calm >= CALM {
            Queued::Alone
        } else {
            Queued::Behind
        }
    }

    /// Commits one batch of what waits here, when the desk is free. False when the writer
    /// thread must be woken: someone else holds the desk (it may have taken its last batch
    /// already), or more than a batch waits.
    pub(super) fn help(&self) -> bool {
        let mut desk = match self.desk.try_lock() {
            Ok(desk) => desk,
            Err(TryLockError::WouldBlock) => return false,
            Err(TryLockError::Poisoned(poisoned)) => recover(&self.desk, poisoned.into_inner()),
        };
        let batch = self.take_batch();
        if !batch.jobs.is_empty() {
            self.commit(&mut desk, batch);
        }
        drop(desk);
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .jobs
            .is_empty()
    }

    /// Runs the point read `f` on the writer's connection when no write is in flight and no
    /// one holds the desk; gives `f` back otherwise. A read-only connection drops its whole
    /// page cache whenever another connection committed, which is after every turn: its next
    /// read of one row reads the file again, page by page (five reads and three locks for a
    /// session's row). The writer's cache holds what it wrote. A read holds the desk for the
    /// microseconds of one row; a write queued meanwhile is committed by the writer thread.
    pub(super) fn read_at_desk<T, F: FnOnce(&Connection) -> T>(&self, f: F) -> Result<T, F> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Err(f);
        }
        match self.desk.try_lock() {
            Ok(desk) => Ok(f(&desk.conn)),
            Err(TryLockError::WouldBlock) => Err(f),
            Err(TryLockError::Poisoned(poisoned)) => {
                Ok(f(&recover(&self.desk, poisoned.into_inner()).conn))
            }
        }
    }

    /// Holds the desk, as a commit does, until the guard is dropped.
    #[cfg(test)]
    pub(super) fn hold_desk(&self) -> impl Drop + '_ {
        self.lock_desk()
    }

    /// Transactions ended since open (see [`SqliteStore::version`](super::SqliteStore::version)).
    pub(super) fn version(&self) -> u64 {
        self.version.get()
    }

    /// The session rows the commits after version `since` wrote, up to `to` (`touched.rs`).
    pub(super) fn touched_between(&self, since: u64, to: u64) -> Option<Vec<i64>> {
        self.version.touched_between(since, to)
    }

    fn commit(&self, desk: &mut Desk, Batch { jobs, besides }: Batch) {
        let n = jobs.len();
        self.checkpoints.counting(&desk.conn, || {
            commit_batch(&desk.conn, jobs, &mut desk.mirror, &self.version);
        });
        desk.last_commit = Instant::now();
        self.beside.fetch_sub(besides, Ordering::AcqRel);
        self.in_flight.fetch_sub(n, Ordering::AcqRel);
    }

    /// Takes no more jobs; those queued are still committed (by the writer thread).
    pub(super) fn close(&self) {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .open = false;
    }

    /// Stops the checkpointer once the writer's thread is done.
    pub(super) fn stop_checkpoints(&self) {
        self.checkpoints.stop();
    }

    /// Whether the checkpointer was asked since the WAL last started over (tests).
    #[cfg(test)]
    pub(super) fn checkpoint_asked(&self) -> bool {
        self.checkpoints.asked()
    }

    /// Checkpoints the checkpointer took (tests).
    #[cfg(test)]
    pub(super) fn checkpoints_taken(&self) -> u64 {
        self.checkpoints.taken()
    }

    fn take_batch(&self) -> Batch {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let n = queue.jobs.len().min(MAX_BATCH);
        let mut besides = 0;
        let jobs = (queue.jobs.drain(..n))
            .map(|(job, beside)| {
                besides += usize::from(beside);
                job
            })
            .collect();
        Batch { jobs, besides }
    }

    /// Whether the mirror sweep is still to finish (tests watch it).
    #[cfg(test)]
    pub(super) fn sweeping(&self) -> bool {
        self.lock_desk().mirror.sweep.is_some()
    }

    fn lock_desk(&self) -> MutexGuard<'_, Desk> {
        self.desk
            .lock()
            .unwrap_or_else(|poisoned| recover(&self.desk, poisoned.into_inner()))
    }
}

/// The desk after a job panicked at it: its transaction is rolled back (the jobs of that batch
/// were answered with an error when they were dropped) and the desk serves again.
fn recover<'a>(desk: &Mutex<Desk>, guard: MutexGuard<'a, Desk>) -> MutexGuard<'a, Desk> {
    desk.clear_poison();
    if !guard.conn.is_autocommit() {
        let _ = guard.conn.execute_batch("ROLLBACK");
    }
    guard
}

/// The writer thread: commits what the tasks that queued it could not (the desk was busy), and
/// the mirror's own work: marks after a pause in the writes, failed mirrors, the sweep. Returns
/// when the store is closed or dropped (`woken`'s sender gone), once nothing waits.
pub(super) fn run(writer: Arc<Writer>, woken: Receiver<()>, readers: Readers) {
    let mut wait = SWEEP_IDLE;
    // The store's version when the page caches last gave their memory back.
    let mut released = writer.version();
    loop {
        let gone = matches!(
            woken.recv_timeout(wait),
            Err(RecvTimeoutError::Disconnected)
        );
        let mut desk = writer.lock_desk();
        loop {
            let batch = writer.take_batch();
            if batch.jobs.is_empty() {
                break;
            }
            writer.commit(&mut desk, batch);
        }
        // Under steady writes the marks go with the next batch; the sweep goes on, more slowly.
        let idle = desk.last_commit.elapsed() >= IDLE_FLUSH;
        let quiet = desk.last_commit.elapsed() >= RELEASE_AFTER;
        let Desk { conn, mirror, .. } = &mut *desk;
        if gone {
            mirror.retry_at = Instant::now();
            mirror.retry_failed(conn);
            mirror.flush_marks(conn);
            let all_checked = mirror.sweep.is_none() && mirror.failed.is_empty();
            mirror.checked.record(conn, all_checked);
            return;
        }
        // The mirror's own commits count toward the WAL's checkpoints too.
        writer.checkpoints.counting(conn, || {
            mirror.retry_failed(conn);
            mirror.sweep_step(conn, if idle { SWEEP_IDLE } else { SWEEP_BUSY });
            if idle {
                mirror.flush_marks(conn);
            }
        });
        let version = writer.version();
        if quiet && version != released {
            released = version;
            release_caches(conn, &readers);
        }
        wait = match mirror.sweep {
            Some(_) => SWEEP_IDLE,
            None => IDLE_FLUSH,
        };
    }
}

/// The store's idle read-only connections, shared with the writer thread.
pub(super) type Readers = Arc<Mutex<Vec<Connection>>>;

/// Gives back the memory of every idle connection's page cache, after writes went quiet: a
/// burst of large messages leaves each cache full of their pages (up to 2 MB a connection).
fn release_caches(conn: &Connection, readers: &Mutex<Vec<Connection>>) {
    let release = |conn: &Connection| {
        if let Err(e) = conn.execute_batch("PRAGMA shrink_memory") {
            tracing::debug!(error = %e, "a connection's page cache kept its memory");
        }
    };
    release(conn);
    if let Ok(readers) = readers.lock() {
        readers.iter().for_each(release);
    }
}

fn commit_batch(conn: &Connection, batch: Vec<Job>, mirror: &mut MirrorState, version: &Version) {
    if let Err(e) = cached(conn, "BEGIN IMMEDIATE") {
        tracing::error!(error = %e, "could not begin a write transaction; {} writes fail", batch.len());
        return; // dropping the jobs answers their callers with an error
    }
    mirror.write_marks(conn);
    if mirror.flagged.len() >= FLAGS_AT_ONCE {
        mirror.clear_flags(conn);
    }
    if batch.len() == 1 {
        return commit_one(conn, batch, mirror, version);
    }
    let mut done = Vec::with_capacity(batch.len());
    for job in batch {
        if let Err(e) = cached(conn, "SAVEPOINT job") {
            tracing::error!(error = %e, "savepoint failed");
            continue;
        }
        let outcome = job(conn);
        let undone = if outcome.ok {
            Ok(())
        } else {
            cached(conn, "ROLLBACK TO job")
        };
        if let Err(e) = undone.and_then(|()| cached(conn, "RELEASE job")) {
            tracing::error!(error = %e, "could not end a savepoint");
        }
        done.push(outcome);
    }
    finish(conn, done, mirror, version);
}

/// A job alone in its transaction needs no savepoint: when it fails, the whole transaction
/// rolls back (the mirror marks written in it stay queued for the next one). A savepoint makes
/// SQLite copy every page a job changes into a statement journal first, for nothing here.
fn commit_one(conn: &Connection, batch: Vec<Job>, mirror: &mut MirrorState, version: &Version) {
    let done: Vec<JobDone> = batch.into_iter().map(|job| job(conn)).collect();
    if done.iter().any(|outcome| !outcome.ok) {
        let _ = conn.execute_batch("ROLLBACK");
        for outcome in done {
            (outcome.finish)(Ok(()));
        }
        return;
    }
    finish(conn, done, mirror, version);
}

/// Runs one statement of the writer's own, prepared once (`execute_batch` parses it each time).
fn cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Commits, moves `version` on (a reader that sees the new number sees what committed), writes
/// the mirror lines of what committed, and answers each job.
fn finish(conn: &Connection, done: Vec<JobDone>, mirror: &mut MirrorState, version: &Version) {
    let committed = cached(conn, "COMMIT").map_err(|e| e.to_string());
    version.move_on();
    if committed.is_err() {
        // The marks written in this transaction stay queued for the next one.
        let _ = conn.execute_batch("ROLLBACK");
    } else {
        mirror.clear_written();
        for outcome in &done {
            for op in &outcome.mirror {
                mirror.apply(conn, op);
            }
        }
    }
    for outcome in done {
        let result = match &committed {
            Ok(()) => Ok(()),
            Err(e) => Err(StoreError::Backend(format!("commit failed: {e}"))),
        };
        (outcome.finish)(result);
    }
}

struct MirrorState {
    home: PathBuf,
    /// session_id → the last seq known to be in its file (checked or written in this process).
    in_file: HashMap<String, i64>,
    /// session_id → its mirror, open for appending (at most [`OPEN_MIRRORS`]): a turn's two
    /// appends cost a `fstat` and a write each, not an open, a write and a close. Only this
    /// writer writes the files; a rewrite replaces the file, so its handle is dropped first.
    files: HashMap<String, File>,
    /// session_id → seq now in the file, not yet recorded in `transcripts.mirrored_seq`.
    marks: HashMap<String, i64>,
    /// Transcripts whose `mirror_behind` flag this process's commits set and did not clear yet.
    flagged: HashSet<String>,
    /// Transcripts whose last mirror write failed: session_id → (agent_id, created_at).
    failed: HashMap<String, (String, i64)>,
    /// No retry of a failed mirror before this moment (at most one a [`RETRY_EVERY`]).
    retry_at: Instant,
    /// The rowid of the last transcript the sweep checked; `None` once it checked them all.
    sweep: Option<i64>,
    /// No sweep step before this moment.
    sweep_at: Instant,
    /// What lets a clean stop vouch for every file, so the next start skips its sweep.
    checked: Checked,
}

impl MirrorState {
    fn write_marks(&mut self, conn: &Connection) {
        for (session_id, seq) in &self.marks {
            let result = conn
                .prepare_cached(
                    "UPDATE transcripts SET mirrored_seq = max(mirrored_seq, ?2) WHERE session_id = ?1",
                )
                .and_then(|mut stmt| stmt.execute(params![session_id, seq]));
            if let Err(e) = result {
                tracing::warn!(error = %e, "could not record mirror progress");
            }
        }
    }

    /// Clears the flag of every flagged transcript whose mark caught up, inside the caller's
    /// transaction (after [`Self::write_marks`]). One whose mirror write failed stays flagged
    /// here. A flag that stays set in the database (the transaction rolled back, the mark
    /// could not be written) costs one file check at the next start.
    fn clear_flags(&mut self, conn: &Connection) {
        let failed = &self.failed;
        self.flagged.retain(|session_id| {
            if failed.contains_key(session_id) {
                return true;
            }
            let cleared = conn
                .prepare_cached(CLEAR_FLAG)
                .and_then(|mut stmt| stmt.execute([session_id]));
            if let Err(e) = cleared {
                tracing::warn!(error = %e, "could not clear a mirror flag");
            }
            false
        });
    }

    fn clear_written(&mut self) {
        self.marks.clear();
    }

    fn flush_marks(&mut self, conn: &Connection) {
        let failed = &self.failed;
        if self.marks.is_empty() && self.flagged.iter().all(|s| failed.contains_key(s)) {
            return;
        }
        if conn.execute_batch("BEGIN IMMEDIATE").is_ok() {
            self.write_marks(conn);
            self.clear_flags(conn);
            if conn.execute_batch("COMMIT").is_ok() {
                self.marks.clear();
            } else {
                let _ = conn.execute_batch("ROLLBACK");
            }
        }
    }

    fn apply(&mut self, conn: &Connection, op: &MirrorOp) {
        // Its commit set the flag (or found it set).
        let (MirrorOp::Create { session_id, .. } | MirrorOp::Append { session_id, .. }) = op;
        if !self.flagged.contains(session_id) {
            self.flagged.insert(session_id.clone());
        }
        let result = match op {
            MirrorOp::Create {
                agent_id,
                session_id,
                created_at,
            } => {
                let path = mirror::transcript_path(&self.home, agent_id, session_id);
                mirror::ensure_file(&path, session_id, *created_at, &self.home).map(|()| {
                    self.in_file.insert(session_id.clone(), 0);
                    self.marks.insert(session_id.clone(), 0);
                })
            }
            MirrorOp::Append {
                agent_id,
                session_id,
                created_at,
                messages,
            } => self.append(conn, agent_id, session_id, *created_at, messages),
        };
        if let Err(e) = result {
            // The database holds the messages: the file is rewritten whole at its next write or
            // retry (or at the next start).
            let (session_id, agent_id, created_at) = match op {
                MirrorOp::Create {
                    agent_id,
                    session_id,
                    created_at,
                }
                | MirrorOp::Append {
                    agent_id,
                    session_id,
                    created_at,
                    ..
                } => (session_id, agent_id, *created_at),
            };
            tracing::warn!(error = %e, session_id, "could not write the transcript mirror; it is rewritten once writable");
            self.in_file.remove(session_id);
            self.files.remove(session_id);
            self.failed
                .insert(session_id.clone(), (agent_id.clone(), created_at));
        }
    }

    /// Rewrites the mirrors whose last write failed, at most once a [`RETRY_EVERY`]; the ones
    /// still failing wait for the next try.
    fn retry_failed(&mut self, conn: &Connection) {
        if self.failed.is_empty() || Instant::now() < self.retry_at {
            return;
        }
        self.retry_at = Instant::now() + RETRY_EVERY;
        let failed = std::mem::take(&mut self.failed);
        for (session_id, (agent_id, created_at)) in failed {
            let path = mirror::transcript_path(&self.home, &agent_id, &session_id);
            match rebuild(conn, &self.home, &path, &session_id, created_at) {
                Ok(last) => {
                    tracing::info!(
                        session_id,
                        "transcript mirror rewritten after a failed write"
                    );
                    self.in_file.insert(session_id.clone(), last);
                    self.marks.insert(session_id, last);
                }
                Err(e) => {
                    tracing::debug!(session_id, error = %e, "transcript mirror still not writable");
                    self.failed.insert(session_id, (agent_id, created_at));
                }
            }
        }
    }

    /// One step of the sweep (module doc), if one is due; the next waits `pause`. A transcript
    /// this process already wrote or is retrying is known and skipped.
    fn sweep_step(&mut self, conn: &Connection, pause: Duration) {
        let Some(after) = self.sweep else { return };
        if Instant::now() < self.sweep_at {
            return;
        }
        let rows = match queries::mirrors_after(conn, after, SWEEP_STEP) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "could not read transcripts for the mirror sweep");
                self.sweep_at = Instant::now() + RETRY_EVERY;
                return;
            }
        };
        self.sweep = rows.last().map(|row| row.rowid);
        for row in rows {
            let known = self.in_file.contains_key(&row.session_id)
                || self.failed.contains_key(&row.session_id);
            let path = mirror::transcript_path(&self.home, &row.agent_id, &row.session_id);
            if known || path.exists() {
                continue;
            }
            let session_id = row.session_id;
            match rebuild(conn, &self.home, &path, &session_id, row.created_at) {
                Ok(last) => {
                    tracing::info!(session_id, "rebuilt a missing transcript mirror");
                    self.in_file.insert(session_id.clone(), last);
                    self.marks.insert(session_id, last);
                }
                Err(e) => {
                    tracing::warn!(session_id, error = %e, "could not rebuild a missing transcript mirror");
                    self.failed
                        .insert(session_id, (row.agent_id, row.created_at));
                }
            }
        }
        self.sweep_at = Instant::now() + pause;
    }

    /// The mirror of `session_id` open for appending, opened now if it is not yet, or again if
    /// the file was deleted under its handle (the open then fails, and the file is rewritten
    /// once it can be).
    fn file(&mut self, session_id: &str, path: &Path) -> std::io::Result<&File> {
        if self.files.get(session_id).is_some_and(unlinked) {
            self.files.remove(session_id);
        }
        if !self.files.contains_key(session_id) {
            if self.files.len() >= OPEN_MIRRORS {
                self.files.clear();
            }
            let file = mirror::open_append(path)?;
            self.files.insert(session_id.to_string(), file);
        }
        Ok(&self.files[session_id])
    }

    /// Appends the lines of `messages` that the file does not hold yet; rewrites the file whole
    /// when it is not known to end right before them (a failed write, a file changed
    /// underneath, a gap).
    fn append(
        &mut self,
        conn: &Connection,
        agent_id: &str,
        session_id: &str,
        created_at: i64,
        messages: &[MessageRow],
    ) -> std::io::Result<()> {
        let (Some(first), Some(last)) = (messages.first(), messages.last()) else {
            return Ok(());
        };
        let (first, last) = (first.seq, last.seq);
        let path = mirror::transcript_path(&self.home, agent_id, session_id);
        let known = match self.in_file.get(session_id) {
            Some(seq) => Some(*seq),
            None => mirror::ends_at(&path, first - 1).then_some(first - 1),
        };
        let written = match known {
            // A rewrite earlier in this batch already wrote them.
            Some(seq) if seq >= last => seq,
            Some(seq) if seq + 1 >= first => {
                let new = messages.iter().filter(|row| row.seq > seq);
                mirror::append_to(self.file(session_id, &path)?, new)?;
                last
            }
            _ => {
                self.files.remove(session_id);
                rebuild(conn, &self.home, &path, session_id, created_at)?
            }
        };
        self.failed.remove(session_id);
        self.in_file.insert(session_id.to_string(), written);
        self.marks.insert(session_id.to_string(), written);
        Ok(())
    }
}

/// Whether the file open as `file` was deleted (no name links to it any more).
#[cfg(unix)]
fn unlinked(file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|m| m.nlink() == 0)
}

/// Whether the file open as `file` was deleted (an open file cannot be, here).
#[cfg(not(unix))]
fn unlinked(_file: &File) -> bool {
    false
}

/// Rewrites one transcript's mirror from the database; answers the last seq in it.
pub(super) fn rebuild(
    conn: &Connection,
    home: &Path,
    path: &Path,
    session_id: &str,
    created_at: i64,
) -> std::io::Result<i64> {
    let messages = queries::all_messages(conn, session_id)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let last = messages.last().map_or(0, |(seq, _)| *seq);
    mirror::rebuild(path, session_id, created_at, home, messages.into_iter())?;
    Ok(last)
}
