//! The WAL's checkpoints, taken on a thread of their own. SQLite's automatic checkpoint runs in
//! the commit that crosses its mark, on the writer's connection: that commit's caller (a run's
//! start or end, a client's request) waited for the copy of every page changed since the last
//! one and for two `fsync`s — 10–25 ms on this project's machines, where a turn takes about 1
//! (BENCHMARKS.md, "2026-12-04, later"). Here the writer's connection only counts its WAL's
//! pages (its `wal_hook`); past [`NUDGE_PAGES`] it asks the checkpointer once, whose own
//! connection copies them (`PASSIVE`: it waits for no reader and no writer). What the writer
//! committed meanwhile, a few hundred frames at most, the writer copies itself at its next
//! commit after the checkpointer's (a short `PASSIVE` checkpoint inline, again at each commit
//! while a reader's snapshot keeps frames from it), so the WAL starts over at the write after
//! that, as after SQLite's own checkpoints. Asking the checkpointer again at every commit past
//! the mark, as the first version did, made a checkpoint (two `fsync`s) of nearly every commit
//! until one finished between two commits: a quarter more CPU a warm turn. Should the WAL grow
//! on regardless (readers in it), the checkpointer is asked again every [`NUDGE_PAGES`] more,
//! and the writer checkpoints itself past [`INLINE_PAGES`], as SQLite would. Durability does
//! not change: a commit is in the WAL before it is answered, checkpointed or not
//! (docs/decisions.md, "The WAL is checkpointed beside the writer").

use std::cell::Cell;
use std::ffi::c_int;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use rusqlite::Connection;
use rusqlite::hooks::Wal;

use crate::store::StoreError;

/// WAL pages after which the checkpointer is asked to copy them into the database file (below
/// the WAL index's first hash segment, 4,062 frames, so a reader's lookup stays as cheap while
/// the copy runs and the writer goes on).
pub(super) const NUDGE_PAGES: c_int = 3000;
/// WAL pages after which the writer checkpoints itself: the checkpointer could not finish.
const INLINE_PAGES: c_int = 16_000;

thread_local! {
    /// The WAL's pages after the last commit on this thread (0 once read).
    static WAL_PAGES: Cell<c_int> = const { Cell::new(0) };
}

/// The writer connection's `wal_hook`: notes the WAL's pages for [`Checkpoints::after_commit`],
/// which reads them on the same thread right after the commit.
fn note_pages(_: &Wal, pages: c_int) -> rusqlite::Result<()> {
    WAL_PAGES.set(pages);
    Ok(())
}

/// The checkpointer thread, and the writer's way to ask it for a checkpoint. Dropped without
/// [`Checkpoints::stop`], its sender goes first and the thread ends after its checkpoint.
pub(super) struct Checkpoints {
    nudge: Mutex<Option<SyncSender<()>>>,
    /// The WAL's pages when the checkpointer was last asked; 0 once the WAL started over.
    asked_at: AtomicI32,
    /// Set by the checkpointer after each checkpoint: the writer copies what came since.
    finish: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Checkpoints the thread took (each copied what it could): the tests' view of it.
    #[cfg(test)]
    taken: Arc<AtomicU64>,
}

impl Checkpoints {
    /// Starts the checkpointer on a connection of its own to `db_path`, and hooks the writer's
    /// connection `writer` to it (which replaces SQLite's automatic checkpoint on it).
    pub(super) fn start(writer: &Connection, db_path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(db_path)?;
        super::schema::configure(&conn)?;
        writer.wal_hook(Some(note_pages));
        // One request waiting is enough: a checkpoint copies every page the WAL holds.
        let (nudge, nudged) = std::sync::mpsc::sync_channel(1);
        let taken = Arc::new(AtomicU64::new(0));
        let finish = Arc::new(AtomicBool::new(false));
        let (count, done) = (taken.clone(), finish.clone());
        let thread = std::thread::Builder::new()
            .name("switchboard-store-checkpoint".into())
            .spawn(move || checkpoint_when_asked(&conn, &nudged, &count, &done))?;
        Ok(Self {
            nudge: Mutex::new(Some(nudge)),
            asked_at: AtomicI32::new(0),
            finish,
            thread: Mutex::new(Some(thread)),
            #[cfg(test)]
            taken,
        })
    }

    /// Runs `commits` (commits on the writer's connection `writer`, made on this thread), then
    /// [`Checkpoints::after_commit`] with the WAL's pages the last of them left: what an earlier
    /// commit on this thread noted and nobody read is forgotten first (the WAL may have started
    /// over since, by commits on other threads).
    pub(super) fn counting<T>(&self, writer: &Connection, commits: impl FnOnce() -> T) -> T {
        WAL_PAGES.set(0);
        let done = commits();
        self.after_commit(writer);
        done
    }

    /// After a commit on the writer's connection `writer`, on the thread that committed (commits
    /// take turns): asks for a checkpoint once the WAL holds [`NUDGE_PAGES`] more than when it
    /// last asked; takes one here after the checkpointer's, while the WAL has not started over
    /// (what was committed meanwhile), or past [`INLINE_PAGES`].
    ///
    /// A commit that wrote no frame changes nothing here: read as an empty WAL, it would make
    /// the next commit past the mark ask again, and drop the writer's pass owed to the
    /// checkpointer's.
    fn after_commit(&self, writer: &Connection) {
        let pages = WAL_PAGES.replace(0);
        if pages == 0 {
            return;
        }
        let finish = self.finish.swap(false, Ordering::Relaxed);
        if pages >= INLINE_PAGES || (finish && pages >= NUDGE_PAGES) {
            match passive(writer) {
                // A reader's snapshot kept frames from the copy: again at the next commit (a
                // pass with nothing it may copy writes nothing), so the WAL still starts over.
                Ok((log, copied)) if copied < log => self.finish.store(true, Ordering::Relaxed),
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, pages, "the writer's own checkpoint failed"),
            }
        } else if self.ask_at(pages)
            && let Some(nudge) = lock(&self.nudge).as_ref()
        {
            // Full: a checkpoint is asked for already.
            let _ = nudge.try_send(());
        }
    }

    /// Whether a WAL of `pages` calls for a checkpoint; notes it when it does.
    fn ask_at(&self, pages: c_int) -> bool {
        let asked = self.asked_at.load(Ordering::Relaxed);
        // Fewer pages than when it last asked: the WAL started over since.
        let since = if pages < asked { 0 } else { asked };
        let ask = pages >= since + NUDGE_PAGES;
        let note = if ask { pages } else { since };
        if note != asked {
            self.asked_at.store(note, Ordering::Relaxed);
        }
        ask
    }

    /// Whether the checkpointer was asked since the WAL last started over.
    #[cfg(test)]
    pub(super) fn asked(&self) -> bool {
        self.asked_at.load(Ordering::Relaxed) > 0
    }

    /// Checkpoints the thread took since the store opened.
    #[cfg(test)]
    pub(super) fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    /// Stops the checkpointer (after the checkpoint it is taking) and waits for it.
    pub(super) fn stop(&self) {
        drop(lock(&self.nudge).take());
        if let Some(thread) = lock(&self.thread).take() {
            let _ = thread.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The checkpointer's loop: a `PASSIVE` checkpoint each time it is asked, until the store
/// closes; after each, the writer is told to copy what came meanwhile.
fn checkpoint_when_asked(
    conn: &Connection,
    nudged: &Receiver<()>,
    taken: &AtomicU64,
    finish: &AtomicBool,
) {
    while nudged.recv().is_ok() {
        match passive(conn) {
            Ok((log, copied)) => tracing::trace!(log, copied, "the WAL was checkpointed"),
            Err(e) => tracing::debug!(error = %e, "a checkpoint of the WAL failed"),
        }
        finish.store(true, Ordering::Relaxed);
        taken.fetch_add(1, Ordering::Relaxed);
    }
}

/// A `PASSIVE` checkpoint on `conn`: the WAL's frames, and how many of them are copied.
fn passive(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((row.get(1)?, row.get(2)?))
    })
}
