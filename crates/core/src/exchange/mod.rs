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
//! The follow-up is a task of the engine's tracker; it waits for the primary run on its own, so
//! a caller that stops waiting (or goes away) never loses it. It stops when a step cannot run
//! (shutdown, a refused send policy, a failed turn).

use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::message::Provenance;
use tokio_util::task::TaskTracker;

use crate::access::{self, SendDecision};
use crate::config::Config;
use crate::delivery::replies::{ANNOUNCE_SKIP, REPLY_SKIP, ends_exchange};
use crate::error::CoreResult;
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::runtime::lanes::Lane;
use crate::runtime::{Accepted, Deliver, RunRequest, Runtime};
use crate::store::{RunRecord, RunStatus, SessionEntry, Store};

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
}

/// The exchanges component.
pub struct Exchanges {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    runtime: Runtime,
    tasks: TaskTracker,
}

impl Exchanges {
    pub fn new(
        config: Arc<Config>,
        store: Arc<dyn Store>,
        runtime: Runtime,
        tasks: TaskTracker,
    ) -> Self {
        Self {
            config,
            store,
            runtime,
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

    /// Submits the primary run into the target and starts the follow-up (reply-back loop and
    /// announce) in the background; answers once the primary run is committed.
    pub async fn begin(&self, exchange: Exchange) -> CoreResult<Accepted> {
        let requester_entry = self.store.get(&exchange.requester).await.ok().flatten();
        let mut request = RunRequest::new(exchange.target.key.clone(), Lane::Nested).with_message(
            exchange.message.clone(),
            Some(agent_provenance(
                &exchange.requester,
                &exchange.requester_run,
            )),
        );
        request.extra_system_prompt = Some(context_block(
            &exchange.requester,
            requester_entry.as_ref(),
            &exchange.target,
        ));
        request.chain = exchange.chain.clone();
        let busy = self.runtime.busy();
        let accepted = self.runtime.submit(request).await?;
        let follow = FollowUp {
            config: self.config.clone(),
            store: self.store.clone(),
            runtime: self.runtime.clone(),
            requester: exchange.requester,
            target: exchange.target.key,
            request: exchange.message,
            primary_run: accepted.run_id.clone(),
            chain: exchange.chain,
        };
        self.tasks.spawn(async move {
            if let Err(problem) = follow.run().await {
                tracing::info!(target = %follow.target, %problem, "agent-to-agent follow-up stopped");
            }
            drop(busy);
        });
        Ok(accepted)
    }
}

/// `{kind: "agent", fromSessionKey, runId}`.
fn agent_provenance(from: &SessionKey, run: &RunId) -> Provenance {
    Provenance {
        kind: "agent".into(),
        from_session_key: Some(from.as_str().to_string()),
        run_id: Some(run.as_str().to_string()),
        ..Provenance::default()
    }
}

/// The agent-to-agent block of the target run's system prompt: who sends, to whom, on which
/// channels.
fn context_block(
    requester_key: &SessionKey,
    requester: Option<&SessionEntry>,
    target: &SessionEntry,
) -> String {
    format!(
        "Agent-to-agent message: session {} (channel {}) sent you the message below. You are \
         session {} (channel {}). Answer it as its agent; your reply is returned to the sender.",
        requester_key.display(),
        requester.map(channel).unwrap_or_else(|| "unknown".into()),
        target.key.display(),
        channel(target),
    )
}

fn channel(entry: &SessionEntry) -> String {
    entry
        .channel
        .clone()
        .or_else(|| entry.last_channel.clone())
        .or_else(|| entry.key.channel().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
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

/// The background steps of one exchange.
struct FollowUp {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    runtime: Runtime,
    requester: SessionKey,
    target: SessionKey,
    request: String,
    primary_run: RunId,
    chain: Vec<SessionKey>,
}

/// One step: `text` into `to` as a message from `from`, with `block` in its system prompt.
struct Step<'a> {
    to: &'a SessionKey,
    from: &'a SessionKey,
    from_run: &'a RunId,
    text: &'a str,
    block: String,
    deliver: Option<Deliver>,
}

impl FollowUp {
    async fn run(&self) -> Result<(), String> {
        let first = self.finished(&self.primary_run).await?;
        if first.status != RunStatus::Ok {
            return Err(format!("the primary run ended {}", first.status.as_str()));
        }
        let round1 = first.result.clone().unwrap_or_default();
        let latest = if self.requester != self.target {
            self.reply_back(&first.run_id, &round1).await?
        } else {
            round1.clone()
        };
        let block = format!(
            "Agent-to-agent announce step. Session {} asked: {}\nRound-1 reply: {round1}\nLatest \
             reply: {latest}\nReply exactly {ANNOUNCE_SKIP} to stay silent; anything else is \
             posted to this session's channel.",
            self.requester.display(),
            self.request
        );
        let announce = "[announce step] Write the announcement of this exchange for this \
                        session's channel, or reply ANNOUNCE_SKIP.";
        self.step(Step {
            to: &self.target,
            from: &self.requester,
            from_run: &self.primary_run,
            text: announce,
            block,
            deliver: Some(Deliver {
                kind: "announce",
                route: None,
            }),
        })
        .await?;
        Ok(())
    }

    /// The reply-back loop; answers the latest reply.
    async fn reply_back(&self, first_run: &RunId, round1: &str) -> Result<String, String> {
        let turns = self.config.session.agent_to_agent.max_ping_pong_turns;
        let mut latest = round1.to_string();
        let mut previous = first_run.clone();
        for turn in 1..=turns {
            let (to, from) = if turn % 2 == 1 {
                (&self.requester, &self.target)
            } else {
                (&self.target, &self.requester)
            };
            let block = format!(
                "Agent-to-agent reply exchange with session {}. Turn {turn} of {turns}. The user \
                 message is its latest reply. Reply to continue the exchange, or reply exactly \
                 {REPLY_SKIP} to stop it.",
                from.display()
            );
            let run = self
                .step(Step {
                    to,
                    from,
                    from_run: &previous,
                    text: &latest,
                    block,
                    deliver: None,
                })
                .await?;
            previous = run.run_id.clone();
            if run.status != RunStatus::Ok {
                return Err(format!("reply turn {turn} ended {}", run.status.as_str()));
            }
            let reply = run.result.unwrap_or_default();
            if ends_exchange(&reply) {
                break;
            }
            latest = reply;
        }
        Ok(latest)
    }

    /// Runs one step after the target's send policy allowed it; answers its final record.
    async fn step(&self, step: Step<'_>) -> Result<RunRecord, String> {
        let entry = self
            .store
            .get(step.to)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the session is gone")?;
        if let SendDecision::Deny { reason } =
            access::send_policy(&self.config, step.to.as_str(), Some(&entry))
        {
            return Err(reason);
        }
        let mut request = RunRequest::new(step.to.clone(), Lane::Nested)
            .with_message(step.text, Some(agent_provenance(step.from, step.from_run)));
        request.extra_system_prompt = Some(step.block);
        request.chain = self.chain.clone();
        request.deliver = step.deliver;
        let accepted = self
            .runtime
            .submit(request)
            .await
            .map_err(|e| e.to_string())?;
        self.finished(&accepted.run_id).await
    }

    /// The record of a run once it ended (runs end by themselves: their timeout bounds them).
    async fn finished(&self, run_id: &RunId) -> Result<RunRecord, String> {
        let outcome = self
            .runtime
            .wait(run_id, Duration::MAX)
            .await
            .map_err(|e| e.to_string())?;
        Ok(outcome.record)
    }
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
