//! A run's hold on its session before it starts — its gateway's lease, the session's lock
//! across gateways — and its start and end written across a database that goes away (a
//! restart, a broken connection): a write that failed is read back, since it may have
//! committed as the connection broke, so the acknowledged message is kept exactly once and
//! every run's end lands.

use std::time::Duration;

use super::Runtime;
use crate::keys::SessionKey;
use crate::store::{RunRecord, RunStatus, SessionLock, StoreError, WriteOp, WriteOutcome};

/// How long a run whose start write failed waits for the store to say whether it landed.
const SETTLE_FOR: Duration = Duration::from_secs(60);
/// How often it asks meanwhile.
const SETTLE_EVERY: Duration = Duration::from_millis(500);

/// What waiting for a session's lock came to.
pub(super) enum Hold {
    /// The session is this run's (with the lock a shared store gave).
    Held(Option<crate::store::SessionLock>),
    /// Aborted while waiting.
    Aborted,
    /// Shutdown began while waiting: the run stays queued.
    Closing,
    /// The store could not lock (tried three times).
    Failed(crate::store::StoreError),
}

/// Waits until no other gateway runs the session (a shared store; at once otherwise).
pub(super) async fn hold_session(
    rt: &Runtime,
    key: &SessionKey,
    cancel: &tokio_util::sync::CancellationToken,
) -> Hold {
    // No run starts while another gateway may be taking this one's work.
    if !super::fence::wait_leased(rt, cancel).await {
        return match rt.inner.abort_all.is_cancelled() {
            true => Hold::Closing,
            false => Hold::Aborted,
        };
    }
    let mut tries = 0;
    loop {
        tries += 1;
        // The lock first: a store of this gateway's alone answers at once, as before locks.
        let outcome = tokio::select! {
            biased;
            held = rt.store().lock_session(key) => held,
            () = rt.inner.closing.cancelled(), if !cancel.is_cancelled() => return Hold::Closing,
            () = cancel.cancelled() => return match rt.inner.abort_all.is_cancelled() {
                true => Hold::Closing,
                false => Hold::Aborted,
            },
        };
        match outcome {
            Ok(held) => return Hold::Held(held),
            Err(e) if tries >= 3 => return Hold::Failed(e),
            Err(e) => {
                tracing::warn!(session = %key, error = %e, "could not lock the session across gateways; trying again");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Whether a start whose write failed (a connection that broke as it committed) landed after
/// all, read back once the store answers again.
enum Settled {
    /// The run is marked running and its message is in the transcript.
    Landed,
    /// Nothing of the start was written: the run is still queued with its input.
    NotLanded,
    /// The store did not answer for [`SETTLE_FOR`]: the run is left queued with its input
    /// (the next start of this gateway, or the one that takes up its work, runs it).
    Unknown,
}

async fn settle_start(rt: &Runtime, record: &RunRecord) -> Settled {
    let deadline = tokio::time::Instant::now() + SETTLE_FOR;
    loop {
        match rt.store().get_run(&record.run_id).await {
            Ok(Some(stored)) if stored.status == RunStatus::Queued => return Settled::NotLanded,
            Ok(Some(_)) => return Settled::Landed,
            Ok(None) => return Settled::NotLanded,
            Err(e) if tokio::time::Instant::now() >= deadline => {
                tracing::error!(run_id = %record.run_id, error = %e, "the store does not say whether a run started; it stays queued for the next start");
                return Settled::Unknown;
            }
            Err(e) => {
                tracing::warn!(run_id = %record.run_id, error = %e, "could not read whether a run started; asking again");
                tokio::time::sleep(SETTLE_EVERY).await;
            }
        }
    }
}

/// Writes a run's `end` until it lands, for [`SETTLE_FOR`] at most: after a failed try, the
/// run is read back (the try may have committed as the connection broke) and the write tried
/// again once the store answers. `Ok(None)`: an earlier try had landed. A refusal that is not
/// the store being away (a fence, a deleted session) is answered at once.
///
/// `held`, the session's lock, goes with the try that lands when the store lets it go with the
/// commit ([`crate::store::Store::write_end`]); it stays in `held` otherwise.
pub(super) async fn write_end(
    rt: &Runtime,
    record: &RunRecord,
    end: Vec<WriteOp>,
    held: &mut Option<SessionLock>,
) -> Result<Option<Vec<WriteOutcome>>, StoreError> {
    let deadline = tokio::time::Instant::now() + SETTLE_FOR;
    loop {
        let (written, kept) = rt.store().write_end(end.clone(), held.take()).await;
        *held = kept;
        let error = match written {
            Ok(outcomes) => return Ok(Some(outcomes)),
            Err(
                e @ (StoreError::Backend(_) | StoreError::Busy(_) | StoreError::Unreachable(_)),
            ) => e,
            Err(e) => return Err(e),
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(error);
        }
        tracing::warn!(run_id = %record.run_id, %error, "could not store a run's end; trying again");
        // Written again only once the store says the last try did not land.
        loop {
            tokio::time::sleep(SETTLE_EVERY).await;
            match rt.store().get_run(&record.run_id).await {
                Ok(Some(stored)) if stored.status.is_final() => return Ok(None),
                Ok(_) => break,
                Err(_) if tokio::time::Instant::now() >= deadline => return Err(error),
                Err(_) => {}
            }
        }
    }
}

/// A start that failed is read back: what to keep for the run's end (its message when the
/// start never landed), or `None` when the run is no longer this gateway's to end (fenced, or
/// the store says nothing: it stays queued for the next start).
pub(super) async fn after_start<T>(
    rt: &Runtime,
    record: &RunRecord,
    started: &Result<T, StoreError>,
    message: Option<switchboard_protocol::message::TranscriptMessage>,
) -> Option<Option<switchboard_protocol::message::TranscriptMessage>> {
    let Err(e) = started else {
        return Some(None);
    };
    if super::fence::lost(record, e) {
        return None;
    }
    match settle_start(rt, record).await {
        Settled::Landed => Some(None),
        Settled::NotLanded => Some(message),
        Settled::Unknown => None,
    }
}
