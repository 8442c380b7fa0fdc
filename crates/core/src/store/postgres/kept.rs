//! The next message's start without a read first (issue 59 point 3; docs/decisions.md, "A
//! message's start on PostgreSQL takes its session's lock"). A run's end, one statement, answers
//! the session's entry as it left it with its row's version (`xmin`); the entry is kept. The
//! next message into the session is judged on that entry ([`Store::get_for_run`]), and its
//! start, one statement on a lock's connection, writes only while the row is still at that
//! version, taking the session's lock as it does. A turn is then two statements, not three.
//!
//! When the row moved on (another gateway's turn, a patch, a reset) or another gateway holds
//! the lock, the start writes nothing, takes no lock, and answers [`StoreError::Stale`]: the
//! caller reads the session again and judges the message again
//! (`sessions::submit_checked`). The entry is kept once: taken by the message that uses it.
//!
//! [`Store::get_for_run`]: crate::store::Store::get_for_run

use std::collections::HashMap;
use std::sync::Mutex;

use super::{PgStore, batch, queries};
use crate::store::{
    EndFuture, SessionEntry, SessionLock, Store as _, StoreError, TryLock, WriteOp, WriteOutcome,
};

/// Entries kept at most; past that the kept ones are dropped (their sessions' next messages
/// read as before).
const MAX_KEPT: usize = 4096;

/// A session's entry as a statement left it, and its row's version then.
pub(super) struct Kept {
    pub entry: SessionEntry,
    pub version: String,
}

/// The entries kept, by session key, each with the count of connections made when it was
/// kept: a connection made since may be to another server (a failover to a replica that lost
/// the end's commit could give another write the same `xmin`), so such an entry is not used.
#[derive(Default)]
pub(super) struct KeptEntries(Mutex<HashMap<String, (Kept, u64)>>);

impl KeptEntries {
    pub(super) fn keep(&self, kept: Kept, made: u64) {
        if let Ok(mut entries) = self.0.lock() {
            if entries.len() >= MAX_KEPT {
                entries.clear();
            }
            entries.insert(kept.entry.key.as_str().to_string(), (kept, made));
        }
    }

    /// The entry kept for `key`, with the count of connections made when it was kept.
    fn take(&self, key: &str) -> Option<(Kept, u64)> {
        self.0.lock().ok()?.remove(key)
    }
}

/// The lock of a session whose entry was kept: not asked yet. The run's start asks for it
/// ([`PgStore::start_asking`]); dropped unasked, there is nothing to let go.
struct Unasked {
    key: String,
    version: String,
    /// [`super::db::Pool::made`] when the entry was kept.
    made: u64,
}

impl Unasked {
    /// Whether `store` made no connection since the entry was kept, `conn` included.
    fn same_server(&self, store: &PgStore) -> bool {
        store.inner.pool.made() == self.made
    }
}

impl PgStore {
    /// The kept entry of `key`, with its lock to be asked by the start: `None` when none is kept.
    pub(super) fn kept_for_run(&self, key: &str) -> Option<(Option<SessionEntry>, TryLock)> {
        let (Kept { entry, version }, made) = self.inner.kept.take(key)?;
        let key = key.to_string();
        let unasked: SessionLock = Box::new(Unasked { key, version, made });
        Some((Some(entry), TryLock::Unasked(unasked)))
    }

    /// [`Store::write_start`](crate::store::Store::write_start) with a lock not asked yet: the
    /// start as one statement on a lock's connection, gated on the row's version and taking the
    /// lock ([`batch::OneStatement::asking`]); a start that is not one statement has its lock
    /// taken first ([`queries::LOCK_AT_VERSION`]) and is written the long way. `Stale` when the
    /// row moved on or the lock is another's: nothing was written and no lock is held. Any
    /// other lock comes back with `held` as [`PgStore::start_holding`] gives it.
    pub(super) fn start_asking(&self, ops: Vec<WriteOp>, held: SessionLock) -> EndFuture<'_> {
        let unasked = match held.downcast::<Unasked>() {
            Ok(unasked) => *unasked,
            Err(held) => return self.start_holding(ops, held),
        };
        let one = batch::OneStatement::of(&ops)
            .filter(|one| one.session_key().is_some_and(|k| k.as_str() == unasked.key))
            .and_then(|one| one.asking(unasked.version.clone()));
        Box::pin(async move {
            let conn = match self.locker().await {
                Ok(conn) => conn,
                Err(e) => return (Err(e), None),
            };
            if !unasked.same_server(self) {
                self.inner.keep_locker(conn);
                return (Err(stale(&unasked.key)), None);
            }
            let Unasked { key, version, .. } = unasked;
            let Some(one) = one else {
                return self.lock_then_start(ops, conn, key, version).await;
            };
            let (written, conn) = match self.write_on(conn, one, None).await {
                Ok(done) => done,
                Err(e) => return (Err(e), None),
            };
            let error = match written {
                Ok(Some(written)) => {
                    return (Ok(written.outcomes), Some(self.held_session(conn, key)));
                }
                Ok(None) | Err(StoreError::Busy(_)) => None,
                Err(e) => Some(e),
            };
            // Nothing written: whether the statement took the lock says what comes next.
            self.inner.pool.count(1);
            let holds = conn.query(&queries::HOLDS, &[&key]).await;
            let holds = holds
                .ok()
                .and_then(|rows| rows.first()?.try_get::<_, bool>(0).ok());
            match (holds, error) {
                (Some(true), None) => {
                    let lock = self.held_session(conn, key);
                    (self.write_batch(ops).await, Some(lock))
                }
                (Some(true), Some(e)) => (Err(e), Some(self.held_session(conn, key))),
                (Some(false), error) => {
                    self.inner.keep_locker(conn);
                    (Err(error.unwrap_or_else(|| stale(&key))), None)
                }
                // The connection cannot say: closed with it, the lock is let go if it was taken.
                (None, error) => (Err(error.unwrap_or_else(|| stale(&key))), None),
            }
        })
    }

    /// A start that is not one statement, with its lock asked first on `conn` while the row is
    /// at `version`.
    async fn lock_then_start(
        &self,
        ops: Vec<WriteOp>,
        conn: super::db::Conn,
        key: String,
        version: String,
    ) -> (Result<Vec<WriteOutcome>, StoreError>, Option<SessionLock>) {
        self.inner.pool.count(1);
        let asked = conn
            .query(&queries::LOCK_AT_VERSION, &[&key, &version])
            .await;
        let taken = match asked {
            Ok(rows) => rows.first().and_then(|row| row.try_get(0).ok().flatten()),
            Err(e) => return (Err(e), None),
        };
        if taken != Some(true) {
            self.inner.keep_locker(conn);
            return (Err(stale(&key)), None);
        }
        let lock = self.held_session(conn, key);
        (self.write_batch(ops).await, Some(lock))
    }
}

fn stale(key: &str) -> StoreError {
    StoreError::Stale(format!(
        "the session {key} changed, or another gateway runs it, since its entry was read"
    ))
}
