//! The driver of one exchange: waits for its current step's run, records what it answered, and
//! commits the next step's run together with the updated record (so a restart finds either
//! both or neither). See the module doc of `exchange` for the steps.

use std::sync::Arc;
use std::time::Duration;
use switchboard_protocol::delivery::DeliveryKind;

use super::agent_provenance;
use super::prompts::{Sides, channel, runs_in_requester};
use crate::access::{self, SendDecision};
use crate::config::Config;
use crate::delivery::replies::{ANNOUNCE_SKIP, ends_exchange, is_silent};
use crate::error::CoreError;
use crate::ids::RunId;
use crate::runtime::lanes::Lane;
use crate::runtime::{Deliver, RunRequest, Runtime};
use crate::store::{
    ExchangeRecord, ExchangeState, RunRecord, RunStatus, SessionEntry, Store, WriteOp,
};

/// Starts of one step before the exchange gives up on it: a step the gateway's stop cut off
/// runs again, a few times at most.
pub(super) const MAX_ATTEMPTS: u32 = 3;

/// Why the driver stopped before the exchange ended.
pub(super) enum Stop {
    /// The gateway is stopping: the record stays as it is and the next start resumes it.
    Later(String),
    /// The exchange cannot go on; the reason is recorded.
    Failed(String),
}

impl Stop {
    /// As the error of a send that could not begin.
    pub(super) fn into_error(self) -> CoreError {
        match self {
            Self::Later(why) => CoreError::Unavailable(why),
            Self::Failed(why) => CoreError::Invalid(why),
        }
    }
}

pub(super) struct Driver {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub runtime: Runtime,
}

impl Driver {
    /// Drives the exchange to its end, or until the gateway stops. With traces on this is a
    /// span in the trace of the `sessions_send` that began it, so every reply-back turn and
    /// the announce are part of that trace, also after a restart.
    pub(super) async fn drive(&self, x: ExchangeRecord) {
        let span = tracing::info_span!("exchange", otel.name = "agent_exchange", exchange = %x.id);
        crate::trace::adopt(&span, x.trace.as_deref());
        tracing::Instrument::instrument(self.drive_steps(x), span).await;
    }

    async fn drive_steps(&self, mut x: ExchangeRecord) {
        while !x.state.is_final() {
            match self.advance(&mut x).await {
                Ok(()) => {}
                Err(Stop::Later(why)) => {
                    tracing::info!(exchange = %x.id, %why, "agent-to-agent exchange resumes at the next start");
                    return;
                }
                Err(Stop::Failed(why)) => {
                    tracing::info!(exchange = %x.id, %why, "agent-to-agent exchange failed");
                    x.state = ExchangeState::Failed;
                    x.detail = Some(why);
                    self.save(&mut x).await;
                }
            }
        }
    }

    /// Waits for the current step and moves the record on to the next one.
    async fn advance(&self, x: &mut ExchangeRecord) -> Result<(), Stop> {
        let run = self.finished(&x.step_run).await?;
        if run.interrupted() {
            if x.attempt >= MAX_ATTEMPTS {
                return Err(Stop::Failed(format!(
                    "{} was cut off by the gateway's stop {MAX_ATTEMPTS} times",
                    step_name(x)
                )));
            }
            // Its message is in the transcript already: the step runs again on it.
            x.attempt += 1;
            return self.start_step(x, false).await;
        }
        if run.status != RunStatus::Ok {
            let error = run
                .error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            let status = run.status.as_str();
            return Err(Stop::Failed(format!(
                "{} ended {status}{error}",
                step_name(x)
            )));
        }
        let reply = run.result.clone().unwrap_or_default();
        let turns = self.config.session.agent_to_agent.max_ping_pong_turns;
        // Whether the next step's session gets a user message: a reply turn always does (the
        // other side's latest reply); the announce only when the requester spoke last and the
        // target has not seen it (the loop stopped at its turn limit on a requester's turn).
        let mut with_message = true;
        match x.state {
            ExchangeState::Primary => {
                x.round1 = Some(reply.clone());
                x.latest = Some(reply);
                let loops = x.requester_key != x.target_key && turns > 0;
                x.state = match loops {
                    true => ExchangeState::Replying,
                    false => ExchangeState::Announcing,
                };
                with_message = loops;
            }
            ExchangeState::Replying => {
                x.turn += 1;
                let ends = ends_exchange(&reply);
                if ends || x.turn >= turns {
                    x.state = ExchangeState::Announcing;
                    with_message = !ends && x.turn % 2 == 1;
                }
                if !ends {
                    x.latest = Some(reply);
                }
            }
            ExchangeState::Announcing => {
                x.state = ExchangeState::Done;
                x.detail = Some(match is_silent(&reply) {
                    true => format!("silent: the announce step replied {ANNOUNCE_SKIP}"),
                    false => "announced".to_string(),
                });
                self.save(x).await;
                return Ok(());
            }
            ExchangeState::Done | ExchangeState::Failed => return Ok(()),
        }
        x.previous_run = Some(run.run_id);
        x.attempt = 1;
        self.start_step(x, with_message).await
    }

    /// Commits the current step's run together with the record, once the step's target and
    /// its send policy allow it. The record changes only when the run is committed (a failed
    /// exchange never names a run that does not exist), and the step's idempotency key makes a
    /// second driver of the same record find the same run instead of starting another.
    async fn start_step(&self, x: &mut ExchangeRecord, with_message: bool) -> Result<(), Stop> {
        if x.state == ExchangeState::Replying && runs_in_requester(x.turn + 1) {
            // A turn in the requester's session can only run after the run that sent the
            // message: submitted once that run ended, it starts at once (queued and started in
            // one commit) instead of waiting in the queue, and the sender's turn does not share
            // the machine with writing it down.
            self.runtime.ended_here(&x.requester_run).await;
            // What that end woke (the sender's `agent.wait` answer) leaves before this start.
            crate::runtime::answers_first().await;
        }
        let mut next = x.clone();
        next.step_run = RunId::default();
        next.updated_at = self.runtime.now_ms();
        let mut request = self.step_request(&next, with_message, None).await?;
        request.run_id = Some(next.step_run.clone());
        request.idempotency_key = Some(format!(
            "exchange:{}:{}:{}:{}",
            next.id,
            next.state.as_str(),
            next.turn,
            next.attempt
        ));
        request.commit_with = vec![WriteOp::PutExchange(Box::new(next.clone()))];
        match self.runtime.submit(request).await {
            Ok(accepted) => {
                next.step_run = accepted.run_id;
                *x = next;
                Ok(())
            }
            Err(CoreError::Unavailable(why)) => Err(Stop::Later(why)),
            Err(e) => Err(Stop::Failed(format!(
                "{} could not start: {e}",
                step_name(x)
            ))),
        }
    }

    /// The run of the record's current step: its message (the other side's text, unless it is
    /// in the transcript already or there is none), its system-prompt block (every instruction
    /// of the step), and for the announce its delivery. `known`: the target's entry when the
    /// caller just read it. The request carries the entry of the session it runs in, so the
    /// submit does not read that again.
    pub(super) async fn step_request(
        &self,
        x: &ExchangeRecord,
        with_message: bool,
        known: Option<SessionEntry>,
    ) -> Result<RunRequest, Stop> {
        let (requester, target) = (&x.requester_key, &x.target_key);
        let latest = x.latest.as_deref().unwrap_or_default();
        let primary = RunId::from_string(x.id.clone());
        let previous = x.previous_run.clone().unwrap_or_else(|| primary.clone());
        let target_entry = match known {
            Some(entry) => entry,
            None => self.entry(target).await?,
        };
        let requester_entry = match x.state {
            // The requester may not be a stored session (an MCP client); a failed read is not
            // that: the step waits for the store.
            ExchangeState::Primary => self
                .store
                .get(requester)
                .await
                .map_err(|e| Stop::Later(e.to_string()))?,
            _ => Some(self.entry(requester).await?),
        };
        let sides = Sides {
            requester,
            requester_channel: requester_entry.as_ref().map(channel),
            target,
            target_channel: channel(&target_entry),
        };
        let (to, from, from_run, text, block, deliver) = match x.state {
            ExchangeState::Primary => {
                let block = sides.primary_block();
                let from_run = x.requester_run.clone();
                (target, requester, from_run, x.message.clone(), block, None)
            }
            ExchangeState::Replying => {
                let turn = x.turn + 1;
                let turns = self.config.session.agent_to_agent.max_ping_pong_turns;
                let block = sides.turn_block(turn, turns);
                let (to, from) = sides.turn_sides(turn);
                (to, from, previous, latest.to_string(), block, None)
            }
            _ => {
                let round1 = x.round1.as_deref().unwrap_or_default();
                let block = sides.announce_block(&x.message, round1, latest);
                let deliver = Deliver {
                    kind: DeliveryKind::Announce,
                    route: None,
                };
                let text = latest.to_string();
                (target, requester, previous, text, block, Some(deliver))
            }
        };
        let to_entry = match to == target {
            true => Some(&target_entry),
            false => requester_entry.as_ref(),
        };
        if x.state != ExchangeState::Primary
            && let SendDecision::Deny { reason } =
                access::send_policy(&self.config, to.as_str(), to_entry)
        {
            return Err(Stop::Failed(reason));
        }
        let mut request = RunRequest::new(to.clone(), Lane::Nested);
        request.entry = to_entry.cloned().map(Box::new);
        if with_message {
            request = request.with_message(text, Some(agent_provenance(from, &from_run)));
        }
        request.extra_system_prompt = Some(block);
        request.chain = x.chain.clone();
        request.deliver = deliver;
        Ok(request)
    }

    async fn entry(&self, key: &crate::keys::SessionKey) -> Result<SessionEntry, Stop> {
        match self.store.get(key).await {
            Ok(Some(entry)) => Ok(entry),
            Ok(None) => Err(Stop::Failed(format!(
                "the session {} is gone",
                key.display()
            ))),
            Err(e) => Err(Stop::Later(e.to_string())),
        }
    }

    /// The record of a run once it ended (runs end by themselves: their timeout bounds them).
    async fn finished(&self, run_id: &RunId) -> Result<RunRecord, Stop> {
        match self.runtime.wait(run_id, Duration::MAX).await {
            Ok(wait) if wait.record.status.is_final() => Ok(wait.record),
            Ok(_) => Err(Stop::Later(
                "the gateway stopped before the step ran".into(),
            )),
            Err(CoreError::NotFound(_)) => Err(Stop::Failed(format!("the run {run_id} is gone"))),
            Err(e) => Err(Stop::Later(e.to_string())),
        }
    }

    async fn save(&self, x: &mut ExchangeRecord) {
        x.updated_at = self.runtime.now_ms();
        if let Err(e) = self.store.put_exchange(x.clone()).await {
            tracing::warn!(exchange = %x.id, error = %e, "could not record the exchange's end; it is driven again at the next start");
        }
    }
}

/// The current step, as the record's detail names it.
fn step_name(x: &ExchangeRecord) -> String {
    match x.state {
        ExchangeState::Primary => "the primary run".to_string(),
        ExchangeState::Replying => format!("reply turn {}", x.turn + 1),
        _ => "the announce step".to_string(),
    }
}
