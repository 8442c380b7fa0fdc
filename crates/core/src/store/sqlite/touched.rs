//! Which sessions each commit wrote: the store rows (`rowid`s) of the `sessions` table that
//! every commit of the last while inserted, changed or deleted, by the store version the commit
//! moved to. A list page kept at an older version is brought up to date from them (only the
//! rows they name are read again: `sessions/kept.rs`), instead of being read whole.
//!
//! The rows are seen by SQLite's update hook on the writer's connection, so no write can forget
//! to name them: whatever statement, job or migration changes a session row on that connection
//! is counted. A job rolled back may still be counted: a row named but unchanged is only read
//! again for nothing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;

/// Commits remembered: a page older than this many commits is read whole.
const COMMITS: usize = 256;
/// Rows remembered a commit: a commit that wrote more (an import) forgets the log before it.
const ROWS: usize = 64;

/// The store's version: job transactions ended since open, moved on after each `COMMIT` and
/// before its jobs are answered ([`SqliteStore::version`](super::SqliteStore::version)), with
/// the session rows each of the last commits wrote.
#[derive(Default)]
pub(super) struct Version {
    number: AtomicU64,
    touched: Touched,
}

impl Version {
    pub(super) fn get(&self) -> u64 {
        self.number.load(Ordering::Acquire)
    }

    /// Moves the version on after a commit (only the writer's desk holder calls it), with what
    /// the commit wrote filed first.
    pub(super) fn move_on(&self) {
        let next = self.get() + 1;
        self.touched.commit(next);
        self.number.store(next, Ordering::Release);
    }

    /// See [`Touched::watch`].
    pub(super) fn watch(&self, conn: &Connection) {
        self.touched.watch(conn);
    }

    /// See [`Touched::between`].
    pub(super) fn touched_between(&self, since: u64, to: u64) -> Option<Vec<i64>> {
        self.touched.between(since, to)
    }
}

/// The rows written since the last commit (filled by the hook), and those of recent commits.
#[derive(Default)]
struct Touched {
    pending: Arc<Mutex<Pending>>,
    log: Mutex<Log>,
}

#[derive(Default)]
struct Pending {
    rows: Vec<i64>,
    /// More than [`ROWS`] were written: only "many" is remembered.
    many: bool,
}

#[derive(Default)]
struct Log {
    /// The log names every row written by the commits after this version.
    complete_after: u64,
    /// (the version a commit moved the store to, the rows it wrote), oldest first.
    commits: VecDeque<(u64, Vec<i64>)>,
}

impl Touched {
    /// Counts, from now on, every session row that `conn` (the writer's connection) writes.
    fn watch(&self, conn: &Connection) {
        let pending = self.pending.clone();
        conn.update_hook(Some(move |_, _: &str, table: &str, row: i64| {
            if table != "sessions" {
                return;
            }
            let mut pending = pending.lock().unwrap_or_else(PoisonError::into_inner);
            if pending.rows.len() < ROWS {
                pending.rows.push(row);
            } else {
                pending.many = true;
            }
        }));
    }

    /// Files what was written since the last commit under `version`, the version the commit
    /// moves the store to. Called before the version moves on, so a reader that sees it finds
    /// its rows here.
    fn commit(&self, version: u64) {
        let Pending { mut rows, many } =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        rows.sort_unstable();
        rows.dedup();
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if many {
            log.commits.clear();
            log.complete_after = version;
            return;
        }
        if log.commits.len() == COMMITS
            && let Some((oldest, _)) = log.commits.pop_front()
        {
            log.complete_after = oldest;
        }
        log.commits.push_back((version, rows));
    }

    /// The session rows written by the commits after version `since`, up to `to`, sorted and
    /// each once; `None` when the log no longer reaches back to `since`.
    fn between(&self, since: u64, to: u64) -> Option<Vec<i64>> {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if since < log.complete_after {
            return None;
        }
        let mut rows: Vec<i64> = (log.commits.iter())
            .filter(|(version, _)| *version > since && *version <= to)
            .flat_map(|(_, rows)| rows.iter().copied())
            .collect();
        rows.sort_unstable();
        rows.dedup();
        Some(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (Connection, Touched) {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE sessions (key TEXT PRIMARY KEY, n INTEGER);
             CREATE TABLE other (x INTEGER);",
        )
        .unwrap();
        let touched = Touched::default();
        touched.watch(&conn);
        (conn, touched)
    }

    #[test]
    fn each_commit_names_the_session_rows_it_wrote() {
        let (conn, touched) = store();
        conn.execute_batch("INSERT INTO sessions VALUES ('a', 1), ('b', 1), ('c', 1)")
            .unwrap();
        touched.commit(1);
        conn.execute_batch(
            "UPDATE sessions SET n = 2 WHERE key = 'b'; INSERT INTO other VALUES (1)",
        )
        .unwrap();
        touched.commit(2);
        conn.execute_batch("DELETE FROM sessions WHERE key = 'c'")
            .unwrap();
        touched.commit(3);
        touched.commit(4); // a commit that wrote no session
        assert_eq!(touched.between(0, 4), Some(vec![1, 2, 3]));
        assert_eq!(touched.between(1, 4), Some(vec![2, 3]));
        assert_eq!(touched.between(1, 2), Some(vec![2]), "only up to `to`");
        assert_eq!(touched.between(3, 4), Some(vec![]));
    }

    #[test]
    fn a_log_that_no_longer_reaches_back_says_so() {
        let (conn, touched) = store();
        for version in 1..=COMMITS as u64 + 1 {
            conn.execute("INSERT INTO sessions VALUES (?1, 0)", [version.to_string()])
                .unwrap();
            touched.commit(version);
        }
        assert_eq!(
            touched.between(0, 300),
            None,
            "the first commit was forgotten"
        );
        assert_eq!(touched.between(1, 2), Some(vec![2]));
        let many: String = (0..ROWS + 1)
            .map(|i| format!("('m{i}', 0),"))
            .collect::<String>();
        conn.execute_batch(&format!(
            "INSERT INTO sessions VALUES {}",
            many.trim_end_matches(',')
        ))
        .unwrap();
        touched.commit(1000);
        assert_eq!(touched.between(5, 1000), None, "a commit of too many rows");
        assert_eq!(touched.between(1000, 1000), Some(vec![]));
    }
}
