//! Sub-agents after `sessions_spawn` (SPEC §7.4): watching the child's run, the announce step,
//! its durable delivery to the requester, cleanup and archiving.
//!
//! Every step is recorded in the child's [`SubagentRecord`] before the next one starts, so a
//! restart resumes each unfinished record where it stood (`resume`):
//!
//! 1. `running` — wait for the task run to end (a run interrupted by a crash is `aborted` after
//!    the restart, so the wait always ends); record the outcome and, for `keep`, `archive_at` =
//!    finish + `archiveAfterMinutes`.
//! 2. `announcing` — run the announce step in the child (idempotency key per child, so a resumed
//!    step waits on the same run instead of starting a second), normalise its reply
//!    (`announce.rs`) and hand it to the outbox with the idempotency key
//!    `subagent-announce:<child>`: to the requester's route, else `internal` into the requester
//!    session. The outbox delivers it exactly once and keeps retrying across restarts.
//! 3. `announced` — `delete` removes the child; then `done`.
//!
//! Archiving kept children is a sweep over records whose `archive_at` has passed, on the engine's
//! clock (a manual clock in tests).

mod announce;

use std::sync::{Arc, Weak};
use std::time::Duration;

use switchboard_protocol::sessions::{DeliveryContext, Patch};

use crate::channels;
use crate::delivery::{Outbound, route_of};
use crate::engine::Engine;
use crate::store::{EntryPatch, StoreError, SubagentRecord, SubagentState};

/// How often kept children are checked for archiving.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// Follows one sub-agent to the end of its life on its own task.
pub(crate) fn supervise(engine: Arc<Engine>, child_key: String) {
    tokio::spawn(async move {
        if let Err(problem) = follow(&engine, &child_key).await {
            tracing::warn!(child = %child_key, %problem, "sub-agent announce stopped; it resumes at the next start");
        }
    });
}

/// Resumes every unfinished sub-agent (called when the engine opens).
pub(crate) async fn resume(engine: &Arc<Engine>) -> Result<usize, StoreError> {
    let records = engine.store().unfinished_subagents().await?;
    let count = records.len();
    for record in records {
        supervise(engine.clone(), record.child_key);
    }
    Ok(count)
}

async fn follow(engine: &Arc<Engine>, child: &str) -> Result<(), String> {
    let store = engine.store();
    let mut record = store
        .get_subagent(child)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no sub-agent record")?;
    if record.state == SubagentState::Running {
        let outcome = match engine.wait_run(&record.run_id, Duration::MAX).await {
            Ok(wait) => wait.record.status.as_str().to_string(),
            // The run was never stored: the process stopped between the record and the run.
            Err(_) => "error".to_string(),
        };
        let ended = engine.now_ms();
        record.outcome = Some(outcome);
        record.ended_at = Some(ended);
        if !record.delete_after {
            let minutes = engine
                .config()
                .agents
                .defaults
                .subagents
                .archive_after_minutes;
            record.archive_at = Some(ended + minutes as i64 * 60_000);
        }
        record.state = SubagentState::Announcing;
        save(engine, &record).await?;
    }
    if record.state == SubagentState::Announcing {
        if let Some(text) = announce::text(engine, &record).await {
            let delivery = engine
                .deliver(Outbound {
                    kind: "subagent-announce",
                    session_key: Some(record.requester_key.clone()),
                    source_key: Some(record.child_key.clone()),
                    run_id: Some(record.run_id.clone()),
                    route: Some(requester_route(engine, &record.requester_key).await?),
                    text,
                    idempotency_key: Some(format!("subagent-announce:{}", record.child_key)),
                })
                .await
                .map_err(|e| e.to_string())?;
            record.delivery_id = Some(delivery.id);
        }
        record.state = SubagentState::Announced;
        save(engine, &record).await?;
    }
    if record.state == SubagentState::Announced {
        if record.delete_after {
            match store.delete(&record.child_key).await {
                Ok(_) | Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        record.state = SubagentState::Done;
        save(engine, &record).await?;
    }
    Ok(())
}

async fn save(engine: &Engine, record: &SubagentRecord) -> Result<(), String> {
    engine
        .store()
        .put_subagent(record.clone())
        .await
        .map_err(|e| e.to_string())
}

/// The requester's chat route, else `internal` into the requester session itself.
async fn requester_route(engine: &Engine, requester: &str) -> Result<DeliveryContext, String> {
    let entry = engine
        .store()
        .get(requester)
        .await
        .map_err(|e| e.to_string())?;
    Ok(entry
        .as_ref()
        .and_then(route_of)
        .unwrap_or(DeliveryContext {
            channel: channels::INTERNAL.into(),
            to: requester.to_string(),
            account_id: None,
            thread_id: None,
        }))
}

impl Engine {
    /// Archives every kept sub-agent whose `archive_at` has passed on the engine's clock;
    /// answers how many. Archived sessions leave lists but stay readable by key.
    pub async fn sweep_archives(&self) -> Result<usize, StoreError> {
        let now = self.now_ms();
        let due = self.store().subagents_to_archive(now).await?;
        let mut archived = 0;
        for mut record in due {
            let patch = EntryPatch {
                archived_at: Patch::Set(now),
                ..EntryPatch::default()
            };
            match self.store().patch(&record.child_key, patch).await {
                Ok(_) => archived += 1,
                Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
            record.archived_at = Some(now);
            self.store().put_subagent(record).await?;
        }
        Ok(archived)
    }
}

/// The archive sweeper: runs while the engine lives.
pub(crate) async fn sweep(engine: Weak<Engine>) {
    loop {
        tokio::time::sleep(SWEEP_EVERY).await;
        let Some(engine) = engine.upgrade() else {
            return;
        };
        if engine.is_closed() {
            return;
        }
        if let Err(e) = engine.sweep_archives().await {
            tracing::warn!(error = %e, "could not archive finished sub-agents");
        }
    }
}
