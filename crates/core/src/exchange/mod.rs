//! The agent-to-agent exchange (SPEC §7.3, §6.3): what a `sessions_send` starts — the primary
//! run in the target, then in the background the reply-back loop and the announce step.
//!
//! Primary run: the message enters the target as a user-role message with provenance
//! `{kind: "agent", fromSessionKey, runId}`; the run gets an agent-to-agent block in its system
//! prompt and runs on lane `nested`, carrying `chain + [requester]` (the cycle guard: a waiting
//! send into any session of that chain could only deadlock, and no send may exceed
//! `session.agentToAgent.maxHops`).
//!
//! Reply-back: turns alternate starting with the requester; each side gets the other side's
//! latest reply as a user-role message and a system-prompt block with `Turn N of M`; an empty
//! reply or exactly `REPLY_SKIP` ends it; `M = session.agentToAgent.maxPingPongTurns`; skipped
//! when requester = target. Announce: one run in the target whose system prompt holds the
//! original request, the round-1 reply and the latest reply; exactly `ANNOUNCE_SKIP` keeps
//! silent. Every step is a normal run (visible in both transcripts) that passes the target's send
//! policy; replies are read from run records, never re-read from transcripts. Loop turns carry
//! the send's chain unchanged: they are not hops.
//!
//! A non-skipped announce is delivered to the target's route (SPEC §9.1) through the outbox,
//! committed with the announce run's end; with no route the outbox records it as `recorded` and
//! the announce stays in the target's transcript, where the spec puts it.
//!
//! Durable (SPEC §12): the exchange is a record (`store::ExchangeRecord`, its id the primary
//! run's) committed with the primary run and with every later step's run, so a record never
//! names a run that does not exist and a step is never started twice. Its driver (`follow.rs`)
//! is a task of the engine's tracker that waits for each step on its own (a caller that stops
//! waiting never loses it); after a restart [`Exchanges::resume`] drives every unfinished one on
//! from where it stopped. A step the gateway's stop cut off runs again (up to
//! [`follow::MAX_ATTEMPTS`] starts); a step that cannot run (a refused send policy, a failed or
//! aborted turn) ends the exchange `failed` with the reason kept in the record.

mod follow;
mod prompts;

use std::sync::Arc;

use switchboard_protocol::exchanges::{
    ExchangeInfo, ExchangesGetParams, ExchangesListParams, ExchangesListResult,
};
use switchboard_protocol::message::Provenance;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::resolve::Resolver;
use crate::runtime::{Accepted, Busy, Runtime};
use crate::store::{ExchangeRecord, ExchangeState, SessionEntry, Store, WriteOp};

/// `exchanges.list` answers this many rows unless asked for fewer or more.
const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 500;

/// One send, as the exchange needs it.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub requester: SessionKey,
    /// The run of the requester that sent it.
    pub requester_run: RunId,
    pub target: SessionEntry,
    /// The original message.
    pub message: String,
    /// The chain the primary run carries: the sender's chain plus the sender (loop turns keep
    /// it).
    pub chain: Vec<SessionKey>,
    /// The name of the tool call that sends it ([`ToolContext::call_name`]): the primary run
    /// is named by it, so the call made again after a stop finds the exchange it began.
    ///
    /// [`ToolContext::call_name`]: crate::runtime::tool::ToolContext::call_name
    pub call: Option<String>,
    /// The reply of that call, when it commits with the primary run's start
    /// ([`ToolContext::left_reply`](crate::runtime::tool::ToolContext::left_reply)).
    pub reply: Option<crate::runtime::Joined>,
}

/// The exchanges component.
pub struct Exchanges {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    runtime: Runtime,
    resolver: Arc<Resolver>,
    tasks: TaskTracker,
}

impl Exchanges {
    pub fn new(
        config: Arc<Config>,
        store: Arc<dyn Store>,
        runtime: Runtime,
        resolver: Arc<Resolver>,
        tasks: TaskTracker,
    ) -> Self {
        Self {
            config,
            store,
            runtime,
            resolver,
            tasks,
        }
    }

    /// Why a send along `chain` (which ends with the requester) into `target` must not start,
    /// if it must not: a waiting send into its own chain, or too many hops.
    pub fn refusal(
        &self,
        chain: &[SessionKey],
        target: &SessionKey,
        waits: bool,
    ) -> Option<String> {
        cycle(
            chain,
            target,
            waits,
            u64::from(self.config.session.agent_to_agent.max_hops),
        )
    }

    /// Submits the primary run into the target, committed together with the exchange's
    /// record, and starts the follow-up (reply-back loop and announce) in the background;
    /// answers once both are committed.
    pub async fn begin(&self, exchange: Exchange) -> CoreResult<Accepted> {
        let run_id = exchange
            .call
            .as_deref()
            .map_or_else(RunId::new, RunId::named);
        let now = self.runtime.now_ms();
        let target = exchange.target;
        let record = ExchangeRecord {
            id: run_id.as_str().to_string(),
            requester_key: exchange.requester,
            requester_run: exchange.requester_run,
            target_key: target.key.clone(),
            message: exchange.message,
            chain: exchange.chain,
            state: ExchangeState::Primary,
            turn: 0,
            step_run: run_id.clone(),
            attempt: 1,
            round1: None,
            latest: None,
            previous_run: None,
            detail: None,
            created_at: now,
            updated_at: now,
            trace: crate::trace::current(),
            epoch: self.store.cluster().epoch(),
        };
        let driver = self.driver();
        // The target as the send just read it (to resolve it and check its policy): the
        // step and the submit do not read it again.
        let mut request = driver
            .step_request(&record, true, Some(target))
            .await
            .map_err(follow::Stop::into_error)?;
        request.run_id = Some(run_id);
        request.idempotency_key = exchange.call;
        request.commit_with = vec![WriteOp::PutExchange(Box::new(record.clone()))];
        request.joined = exchange.reply;
        let busy = self.runtime.busy();
        let accepted = self.runtime.submit(request).await?;
        // Begun by the first try of the call: driven since (or resumed at the start).
        if accepted.deduplicated {
            return Ok(accepted);
        }
        self.spawn_drive(driver, record, busy);
        Ok(accepted)
    }

    /// The exchanges a stopped process left unfinished (read when the engine opens).
    pub async fn unfinished(&self) -> CoreResult<Vec<ExchangeRecord>> {
        Ok(self.store.unfinished_exchanges().await?)
    }

    /// Drives each of `records` (from [`Exchanges::unfinished`]) on from where it stopped.
    pub fn resume(&self, records: Vec<ExchangeRecord>) {
        for record in records {
            let driver = self.driver();
            let busy = self.runtime.busy();
            self.spawn_drive(driver, record, busy);
        }
    }

    /// Drives `record` on a task of its own, the gateway kept `busy` until it is done. Boxed:
    /// the driver's future is 7 KB, which tokio would copy as it spawns and ends it
    /// (docs/decisions.md, "Small futures where tasks start").
    fn spawn_drive(&self, driver: follow::Driver, record: ExchangeRecord, busy: Busy) {
        self.tasks.spawn(Box::pin(async move {
            driver.drive(record).await;
            drop(busy);
        }));
    }

    /// `exchanges.get`: the exchange whose primary run is `id`.
    pub async fn get(&self, p: ExchangesGetParams) -> CoreResult<ExchangeInfo> {
        let record = self.store.get_exchange(p.id.trim()).await?;
        let record = record.ok_or_else(|| {
            CoreError::NotFound(format!(
                "Exchange not found: {}; an exchange's id is the runId its sessions_send answered",
                p.id
            ))
        })?;
        Ok(info(record))
    }

    /// `exchanges.list`: the exchanges a session took part in (every one without
    /// `sessionKey`), newest first.
    pub async fn list(&self, p: ExchangesListParams) -> CoreResult<ExchangesListResult> {
        let session = match p.session_key.as_deref() {
            Some(key) => Some(self.resolver.canonical(key, None)?),
            None => None,
        };
        let limit = p.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
        let records = self.store.list_exchanges(session, limit).await?;
        Ok(ExchangesListResult {
            exchanges: records.into_iter().map(info).collect(),
        })
    }

    fn driver(&self) -> follow::Driver {
        follow::Driver {
            config: self.config.clone(),
            store: self.store.clone(),
            runtime: self.runtime.clone(),
        }
    }
}

/// An exchange as the wire shows it.
fn info(r: ExchangeRecord) -> ExchangeInfo {
    ExchangeInfo {
        id: r.id,
        requester_key: r.requester_key.display().to_string(),
        target_key: r.target_key.display().to_string(),
        state: r.state.into(),
        turn: r.turn,
        step_run_id: r.step_run.as_str().to_string(),
        attempt: r.attempt,
        detail: r.detail,
        created_at: r.created_at,
        updated_at: r.updated_at,
    }
}

/// `{kind: "agent", fromSessionKey, runId}`.
fn agent_provenance(from: &SessionKey, run: &RunId) -> Provenance {
    Provenance {
        kind: "agent".into(),
        from_session_key: Some(from.display().to_string()),
        run_id: Some(run.as_str().to_string()),
        ..Provenance::default()
    }
}

/// Why this send must not start, if it must not: a waiting send into its own chain, or too many
/// hops. `chain` already ends with the requester.
fn cycle(chain: &[SessionKey], target: &SessionKey, waits: bool, max_hops: u64) -> Option<String> {
    let shown = |keys: &[SessionKey]| {
        keys.iter()
            .map(SessionKey::as_str)
            .collect::<Vec<_>>()
            .join(" → ")
    };
    let mut path = chain.to_vec();
    path.push(target.clone());
    if waits && chain.iter().any(|k| k == target) {
        return Some(format!(
            "refused: a waiting send into a session already in this chain can only deadlock \
             ({}); send with timeoutSeconds 0, or answer in your own reply",
            shown(&path)
        ));
    }
    if chain.len() as u64 > max_hops {
        return Some(format!(
            "refused: this send would be hop {} of agent-to-agent traffic, over \
             session.agentToAgent.maxHops ({max_hops}) ({})",
            chain.len(),
            shown(&path)
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::cycle;
    use crate::keys::SessionKey;

    fn chain(keys: &[&str]) -> Vec<SessionKey> {
        keys.iter()
            .map(|k| SessionKey::from_canonical(k.to_string()))
            .collect()
    }

    fn key(k: &str) -> SessionKey {
        SessionKey::from_canonical(k.to_string())
    }

    #[test]
    fn waiting_into_the_chain_and_too_many_hops_are_refused() {
        let abc = chain(&["a", "b", "c"]);
        let refused = cycle(&abc, &key("a"), true, 6).unwrap();
        assert!(refused.contains("a → b → c → a"), "{refused}");
        assert!(
            cycle(&abc, &key("a"), false, 6).is_none(),
            "fire-and-forget into the chain queues"
        );
        assert!(
            cycle(&chain(&["a"]), &key("a"), true, 6).is_some(),
            "waiting on itself"
        );
        assert!(cycle(&abc, &key("d"), true, 6).is_none());
        let hops = cycle(&abc, &key("d"), false, 2).unwrap();
        assert!(
            hops.contains("maxHops (2)") && hops.contains("a → b → c → d"),
            "{hops}"
        );
    }
}
