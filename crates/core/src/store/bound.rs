//! How long a caller waits for the store (SPEC §12, `store.timeoutSeconds`): a read or a write
//! the store has not answered within the limit is answered [`StoreError::Unreachable`] naming
//! the store, which a door answers `UNAVAILABLE`, instead of leaving its caller waiting for as
//! long as the database is away.
//!
//! A read given up on has changed nothing. A write given up on goes on: it was handed to the
//! store whole (SQLite's one writer, or PostgreSQL's write task) and lands whole or not at all;
//! the answer says so, and a caller that sends it again with the same idempotency key gets the
//! one run, never two.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::StoreError;

/// A store call waited for longer than this is answered `UNAVAILABLE` (the default of
/// `store.timeoutSeconds`).
pub const DEFAULT_LIMIT: Duration =
    Duration::from_secs(crate::config::DEFAULT_STORE_TIMEOUT_SECONDS);

/// The limit and the store's name for its answers. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Bound {
    limit: Duration,
    place: Arc<str>,
}

impl Bound {
    /// Calls on the store `place` names ("PostgreSQL at host:port/db", "the SQLite file …")
    /// are waited for at most `limit`.
    pub fn new(limit: Duration, place: impl Into<Arc<str>>) -> Self {
        Self {
            limit,
            place: place.into(),
        }
    }

    /// `read`'s answer, or [`StoreError::Unreachable`] when it takes longer than the limit.
    pub async fn read<T>(
        &self,
        read: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.wait(read, "").await
    }

    /// `write`'s answer, or [`StoreError::Unreachable`] saying the write may still land.
    pub async fn write<T>(
        &self,
        write: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.wait(
            write,
            "; the write goes on and lands whole or not at all (send it again with the same idempotency key)",
        )
        .await
    }

    async fn wait<T>(
        &self,
        call: impl Future<Output = Result<T, StoreError>>,
        after: &str,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.limit, call).await {
            Ok(answer) => answer,
            Err(_) => Err(StoreError::Unreachable(format!(
                "{} did not answer within {} s (store.timeoutSeconds){after}",
                self.place,
                self.limit.as_secs_f64()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_call_past_the_limit_is_answered_unreachable_naming_the_store() {
        let bound = Bound::new(Duration::from_secs(2), "PostgreSQL at db:5432/app");
        let never = std::future::pending::<Result<(), StoreError>>();
        let read = bound.read(never).await.unwrap_err().to_string();
        assert_eq!(
            read,
            "storage unavailable: PostgreSQL at db:5432/app did not answer within 2 s (store.timeoutSeconds)"
        );
        let never = std::future::pending::<Result<(), StoreError>>();
        let write = bound.write(never).await.unwrap_err().to_string();
        assert!(
            write.ends_with("(send it again with the same idempotency key)"),
            "{write}"
        );
        let quick = async { Ok::<_, StoreError>(7) };
        assert_eq!(bound.read(quick).await.unwrap(), 7);
    }
}
