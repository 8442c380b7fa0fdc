//! A session's lock on PostgreSQL: an advisory lock held on a connection of its own while a
//! run works on the session (SPEC §4.3, docs/scale-out.md). It is asked for with the read of
//! the session's entry, and let go with the commit of the run's end, in that statement
//! (docs/decisions.md, "A run's end lets its session's lock go with its commit"); a run whose
//! end is written another way sends its unlock once the end is written.

use std::sync::Arc;
use std::time::Duration;

use super::db::Conn;
use super::{Inner, PgStore, batch, queries};
use crate::keys::SessionKey;
use crate::store::{
    EndFuture, SessionEntry, SessionLock, Store as _, StoreError, StoreFuture, TryLock, WriteOp,
};

/// A session's advisory lock, held on a connection of its own; dropped, it unlocks and the
/// connection is kept for the next lock.
pub(super) struct HeldSession {
    conn: Option<Conn>,
    key: String,
    inner: Arc<Inner>,
}

impl PgStore {
    /// A connection for a session's lock: an idle one, or a new one.
    pub(super) async fn locker(&self) -> Result<Conn, StoreError> {
        let idle = self.inner.lockers.lock().ok().and_then(|mut l| l.pop());
        match idle {
            Some(conn) if !conn.is_closed() => Ok(conn),
            _ => self.inner.pool.connect().await,
        }
    }

    /// The lock of `key` that `conn` took, given back when it drops.
    pub(super) fn held_session(&self, conn: Conn, key: String) -> SessionLock {
        Box::new(HeldSession {
            conn: Some(conn),
            key,
            inner: self.inner.clone(),
        })
    }
}

impl Drop for HeldSession {
    fn drop(&mut self) {
        let (Some(conn), Ok(runtime)) = (self.conn.take(), tokio::runtime::Handle::try_current())
        else {
            return; // The connection closes with it, and the server unlocks.
        };
        let (key, inner) = (std::mem::take(&mut self.key), self.inner.clone());
        // Counted now: counted as its task ran, a turn's count would depend on when that was.
        inner.pool.count(1);
        let gate = Gate::default();
        let closed = gate.clone().try_lock_owned().ok();
        if let Ok(mut releasing) = inner.releasing.lock() {
            releasing.insert(key.clone(), gate.clone());
        }
        let writes = inner.pool.writes.clone();
        let _unlock = runtime.enter();
        writes.spawn(async move {
            let unlocked = conn
                .execute(
                    "SELECT pg_advisory_unlock(hashtextextended($1, 0))",
                    &[&key],
                )
                .await;
            if let Ok(mut releasing) = inner.releasing.lock()
                && releasing.get(&key).is_some_and(|g| Arc::ptr_eq(g, &gate))
            {
                releasing.remove(&key);
            }
            drop(closed);
            if unlocked.is_ok() {
                inner.keep_locker(conn);
            }
        });
    }
}

/// Closed while a session lock of this gateway is being let go ([`Inner::releasing`]).
pub(super) type Gate = Arc<tokio::sync::Mutex<()>>;

/// How long asking for a session's lock waits for this gateway's own release of it.
const RELEASE_WAIT: Duration = Duration::from_secs(1);

impl PgStore {
    /// Waits until this gateway no longer holds `key`'s lock for a run that ended (its unlock
    /// is sent on a task of its own as the run lets go): asked meanwhile, the lock would be
    /// found taken, and a message sent the moment the last run was answered would be queued
    /// as if another gateway ran the session.
    async fn released(&self, key: &str) {
        let gate = self
            .inner
            .releasing
            .lock()
            .ok()
            .and_then(|r| r.get(key).cloned());
        if let Some(gate) = gate {
            let _ = tokio::time::timeout(RELEASE_WAIT, gate.lock()).await;
        }
    }
}

impl PgStore {
    /// [`Store::get_for_run`] in one statement on a lock's connection: the entry, and the
    /// session's lock taken when it is free.
    pub(super) fn entry_and_lock(
        &self,
        key: &SessionKey,
    ) -> StoreFuture<'_, (Option<SessionEntry>, TryLock)> {
        let key = key.as_str().to_string();
        self.inner
            .reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::pin(crate::measure::store_op("postgres", "read", async move {
            // The lock is held before the entry is decoded: should that fail, it is let go.
            let (row, lock) = self.ask_lock(key, &queries::ENTRY_AND_LOCK).await?;
            let entry = match row.try_get::<_, Option<&str>>(0) {
                Ok(Some(_)) => Some(crate::store::rules::rows::entry(&row)?),
                Ok(None) => None,
                Err(e) => return Err(super::db::backend(e)),
            };
            Ok((entry, lock))
        }))
    }

    /// Runs `sql`, one row whose last column is [`queries::TRY_LOCK`], on a lock's connection
    /// (once this gateway's own release of the lock is done): the row, and the lock it took or
    /// `Busy` (the connection is then kept for the next lock).
    pub(super) async fn ask_lock(
        &self,
        key: String,
        sql: &str,
    ) -> Result<(tokio_postgres::Row, TryLock), crate::store::StoreError> {
        self.released(&key).await;
        let conn = self.locker().await?;
        self.inner.pool.count(1);
        let row = conn.query(sql, &[&key]).await?.into_iter().next();
        let row = row.ok_or_else(|| {
            crate::store::StoreError::Backend(format!(
                "asking for a session's lock answered no row: {sql}"
            ))
        })?;
        let locked: bool = row.try_get(row.len() - 1).map_err(super::db::backend)?;
        if locked {
            return Ok((row, TryLock::Held(Some(self.held_session(conn, key)))));
        }
        self.inner.keep_locker(conn);
        Ok((row, TryLock::Busy))
    }
}

impl PgStore {
    /// [`Store::write_end`](crate::store::Store::write_end): the end as one statement
    /// ([`batch::OneStatement`]) on the lock's own connection, which lets the lock go with its
    /// commit. When the end is not such a batch, or the statement wrote nothing (one of its
    /// locks did not hold), the batch is written the long way and the lock comes back. When
    /// the statement failed, it may have let the lock go (a write the answer does not read fails
    /// after the unlock ran): the lock is held again on its connection ([`Self::hold_again`])
    /// and comes back with the error; when another gateway took it meanwhile, the connection is
    /// closed and the error comes back alone.
    pub(super) fn end_releasing(&self, ops: Vec<WriteOp>, mut lock: SessionLock) -> EndFuture<'_> {
        let one = batch::OneStatement::of(&ops);
        let held = lock.downcast_mut::<HeldSession>();
        let taken = match (one, held) {
            (Some(one), Some(held)) => held.conn.take().map(|c| (one, c, held.key.clone())),
            _ => None,
        };
        let Some((one, conn, key)) = taken else {
            return Box::pin(async move { (self.write_batch(ops).await, Some(lock)) });
        };
        let written = self.write_on(conn, one, Some(key.clone()));
        Box::pin(async move {
            let (written, conn) = match written.await {
                Ok(done) => done,
                Err(e) => return (Err(e), None),
            };
            match written {
                Ok(Some(written)) => {
                    self.inner.keep_locker(conn);
                    if let Some(kept) = written.kept() {
                        self.inner.kept.keep(kept, self.inner.pool.made());
                    }
                    (Ok(written.outcomes), None)
                }
                Ok(None) => (
                    self.write_batch(ops).await,
                    Some(HeldSession::again(lock, conn)),
                ),
                // Answered back as it is: the end may have committed before the error (a
                // broken connection, a row that did not decode), and the run's end is read back
                // before it is written again (`hold::write_end`), with the lock held again.
                Err(e) => match self.hold_again(&conn, &key).await {
                    true => (Err(e), Some(HeldSession::again(lock, conn))),
                    false => {
                        tracing::debug!(error = %e, "a run's end with its unlock failed and its session's lock could not be held again; its connection is closed");
                        drop((conn, lock));
                        (Err(e), None)
                    }
                },
            }
        })
    }

    /// [`Store::write_start`](crate::store::Store::write_start): the start as one statement
    /// ([`batch::OneStatement`]) on the lock's own connection, the server process that just
    /// took the lock. When the start is not such a batch, or the statement wrote nothing (one of
    /// its locks did not hold) or lost to a concurrent write, the batch is written the long
    /// way, on the pool. The lock comes back holding its connection in every case but a write
    /// whose task was lost, which took the connection with it (the server then unlocks).
    pub(super) fn start_holding(&self, ops: Vec<WriteOp>, mut lock: SessionLock) -> EndFuture<'_> {
        let one = batch::OneStatement::of(&ops);
        let held = lock.downcast_mut::<HeldSession>();
        let taken = match (one, held) {
            (Some(one), Some(held)) => held.conn.take().map(|c| (one, c)),
            _ => None,
        };
        let Some((one, conn)) = taken else {
            return Box::pin(async move { (self.write_batch(ops).await, Some(lock)) });
        };
        let written = self.write_on(conn, one, None);
        Box::pin(async move {
            let (written, conn) = match written.await {
                Ok(done) => done,
                Err(e) => return (Err(e), Some(lock)),
            };
            let lock = HeldSession::again(lock, conn);
            match written {
                Ok(Some(written)) => (Ok(written.outcomes), Some(lock)),
                Ok(None) | Err(StoreError::Busy(_)) => (self.write_batch(ops).await, Some(lock)),
                Err(e) => (Err(e), Some(lock)),
            }
        })
    }

    /// `one` written on `conn`, a lock's connection, letting `release`'s lock go with its
    /// commit when given; on a task of its own, as every write: it commits when the caller
    /// stops waiting. The connection comes back with the outcome.
    pub(super) fn write_on(
        &self,
        conn: Conn,
        one: batch::OneStatement,
        release: Option<String>,
    ) -> StoreFuture<'_, (Result<Option<batch::Written>, StoreError>, Conn)> {
        let inner = self.inner.clone();
        self.spawn_write(async move {
            let db = conn.db(&inner.pool);
            let written = one
                .write(&db, inner.clock.now_ms(), release.as_deref())
                .await;
            drop(db);
            Ok((written, conn))
        })
    }

    /// Whether `conn` holds `key`'s lock after a statement that may have let it go failed: still
    /// held (the unlock did not run), or taken again. A lock another gateway took meanwhile is
    /// not waited for.
    async fn hold_again(&self, conn: &Conn, key: &str) -> bool {
        self.inner.pool.count(1);
        let asked = conn.query(&queries::HOLD_AGAIN, &[&key]).await;
        let held = asked
            .ok()
            .and_then(|rows| rows.first().map(|row| row.try_get(0)));
        matches!(held, Some(Ok(true)))
    }
}

impl HeldSession {
    /// `lock`, whose connection [`PgStore::end_releasing`] or [`PgStore::start_holding`] took,
    /// holding `conn` (which still
    /// holds the session's lock) again.
    pub(super) fn again(mut lock: SessionLock, conn: Conn) -> SessionLock {
        if let Some(held) = lock.downcast_mut::<HeldSession>() {
            held.conn = Some(conn);
        }
        lock
    }
}

impl Inner {
    /// Keeps `conn`, which holds no session lock now, for the next lock.
    pub(super) fn keep_locker(&self, conn: Conn) {
        if !self.stop.is_cancelled()
            && let Ok(mut lockers) = self.lockers.lock()
        {
            lockers.push(conn);
        }
    }
}
