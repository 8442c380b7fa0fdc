//! The scheduler: one tokio task that fires due slots, then sleeps until the next one.
//!
//! Each pass reads every job (jobs are few; a pass is one read), fires for each job the newest
//! slot in `(last_slot or createdAt, now]` if there is one, and sleeps until the earliest next
//! slot, an add or remove (`Cron::wake`), or the engine's stop. So a gateway that was down
//! fires each job at most once on start — for the most recent missed slot — and then follows the
//! schedule; older missed slots are skipped, never burst.
//!
//! Exactly once per slot: a firing first submits the run with idempotency key
//! `cron:<jobId>:<slotMs>` (committed before `Runtime::submit` answers), then raises the job's
//! `last_slot`. A stop between the two leaves the slot due again; the next pass submits it
//! again, the runtime answers the first run (no new work), and `last_slot` is raised.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Cron, Settled, Trigger, schedule::Schedule};
use crate::error::CoreError;
use crate::store::StoreError;

/// How long a job whose firing failed (the store refused the run) waits before its next try.
const RETRY_MS: i64 = 5_000;

impl Cron {
    /// Starts the scheduler unless `cron.enabled` is false; answers whether it runs. Calling it
    /// again is harmless. Opening the engine does not start it, so tests and tools that open an
    /// engine get no background firing unless they ask; the gateway starts it.
    pub fn start(self: &Arc<Self>) -> bool {
        if !self.config.cron.enabled {
            tracing::info!("cron.enabled is false: cron jobs are kept but not fired");
            return false;
        }
        if self.running.send_replace(true) {
            return true;
        }
        let cron = self.clone();
        self.tasks.spawn(async move {
            cron.run_scheduler().await;
            cron.running.send_replace(false);
        });
        true
    }

    /// Whether the scheduler task is running.
    pub fn is_running(&self) -> bool {
        *self.running.borrow()
    }

    /// Waits until the scheduler has fired everything due at clock time `at_ms` and has seen
    /// every job change made before this call (its runs are then stored and queued). Answers at
    /// once when the scheduler is not running. Tests use it to step a manual clock and look.
    pub async fn settled(&self, at_ms: i64) {
        if !self.is_running() {
            return;
        }
        let changes = self.changes.load(Ordering::SeqCst);
        let mut settled = self.settled.subscribe();
        let mut running = self.running.subscribe();
        tokio::select! {
            _ = settled.wait_for(|s| s.changes >= changes && (s.now >= at_ms || s.next > at_ms)) => {}
            _ = running.wait_for(|running| !running) => {}
        }
    }

    async fn run_scheduler(self: &Arc<Self>) {
        // Jobs whose last firing failed: not before this time (ms).
        let mut retry_at: HashMap<String, i64> = HashMap::new();
        loop {
            if self.stop.is_cancelled() {
                return;
            }
            let changes = self.changes.load(Ordering::SeqCst);
            let now = self.clock.now_ms();
            let next = match self.scheduler_pass(now, &mut retry_at).await {
                Ok(next) => next,
                Err(StoreError::Closed) => return,
                Err(e) => {
                    tracing::error!(error = %e, "cron: could not read the jobs; retrying");
                    Some(now.saturating_add(RETRY_MS))
                }
            };
            let mut next = next.unwrap_or(i64::MAX);
            if let Some(every) = self.store.cluster().poll_every() {
                // Jobs other gateways add or remove are seen within this long.
                next = next.min(now.saturating_add(every.as_millis() as i64));
            }
            self.settled.send_replace(Settled { now, next, changes });
            tokio::select! {
                () = self.clock.sleep_until(next) => {}
                () = self.wake.notified() => {}
                () = self.stop.cancelled() => return,
            }
        }
    }

    /// Fires what is due at `now`; answers the earliest next slot (or retry time).
    async fn scheduler_pass(
        &self,
        now: i64,
        retry_at: &mut HashMap<String, i64>,
    ) -> Result<Option<i64>, StoreError> {
        let jobs = self.store.cron_list().await?;
        retry_at.retain(|id, _| jobs.iter().any(|job| &job.id == id));
        let mut next: Option<i64> = None;
        let mut wake_at = |t: i64| next = Some(next.map_or(t, |n| n.min(t)));
        for job in jobs.into_iter().filter(|job| job.enabled) {
            let schedule = match Schedule::parse(&job.schedule) {
                Ok(schedule) => schedule,
                Err(e) => {
                    tracing::warn!(job = %job.id, error = %e, "cron: skipping a job with a bad schedule");
                    continue;
                }
            };
            if let Some(&at) = retry_at.get(&job.id)
                && at > now
            {
                wake_at(at);
                continue;
            }
            let mut after = job.last_slot.unwrap_or(job.created_at);
            if let Some(slot) = schedule.due(after, now, job.created_at) {
                match self.fire(&job, Trigger::Slot(slot)).await {
                    Ok(accepted) => {
                        retry_at.remove(&job.id);
                        after = slot;
                        tracing::info!(job = %job.id, slot, run = %accepted.run_id, "cron: fired");
                    }
                    // The store or the runtime is shutting down: the scheduler stops quietly.
                    Err(CoreError::Store(StoreError::Closed) | CoreError::Unavailable(_)) => {
                        return Err(StoreError::Closed);
                    }
                    Err(e) => {
                        tracing::error!(job = %job.id, slot, error = %e, "cron: firing failed; will retry");
                        retry_at.insert(job.id.clone(), now.saturating_add(RETRY_MS));
                        wake_at(now.saturating_add(RETRY_MS));
                        continue;
                    }
                }
            }
            if let Some(t) = schedule.next_after(after.max(now), job.created_at) {
                wake_at(t);
            }
        }
        Ok(next)
    }
}
