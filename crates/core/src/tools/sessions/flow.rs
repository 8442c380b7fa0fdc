//! What follows a `sessions_send` in the background (SPEC §7.3): the reply-back loop, then the
//! announce step.
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

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::access::{self, SendDecision};
use crate::engine::Engine;
use crate::keys::SessionKey;
use crate::runtime::lanes::Lane;
use crate::runtime::{Deliver, RunRequest, user_message};
use crate::store::{RunRecord, RunStatus, SessionEntry};

pub const REPLY_SKIP: &str = "REPLY_SKIP";
pub const ANNOUNCE_SKIP: &str = "ANNOUNCE_SKIP";

/// One send, as the background steps need it.
pub(super) struct Exchange {
    pub requester: String,
    pub target: String,
    /// The original message.
    pub request: String,
    pub primary_run: String,
    /// The chain the primary run carries (loop turns keep it).
    pub chain: Vec<String>,
}

/// The agent-to-agent block of the target run's system prompt: who sends, to whom, on which
/// channels.
pub(super) fn context_block(
    requester_key: &str,
    requester: Option<&SessionEntry>,
    target: &SessionEntry,
) -> String {
    format!(
        "Agent-to-agent message: session {} (channel {}) sent you the message below. You are \
         session {} (channel {}). Answer it as its agent; your reply is returned to the sender.",
        shown(requester_key),
        requester.map(channel).unwrap_or_else(|| "unknown".into()),
        shown(&target.key),
        channel(target),
    )
}

fn shown(key: &str) -> String {
    SessionKey::from_canonical(key.to_string())
        .display()
        .to_string()
}

fn channel(entry: &SessionEntry) -> String {
    entry
        .channel
        .clone()
        .or_else(|| entry.last_channel.clone())
        .or_else(|| {
            SessionKey::from_canonical(entry.key.clone())
                .channel()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Runs the background steps of `exchange` on their own task.
pub(super) fn spawn(engine: Arc<Engine>, exchange: Exchange) {
    tokio::spawn(async move {
        if let Err(problem) = follow_up(&engine, &exchange).await {
            tracing::info!(target = %exchange.target, %problem, "agent-to-agent follow-up stopped");
        }
    });
}

async fn follow_up(engine: &Arc<Engine>, ex: &Exchange) -> Result<(), String> {
    let first = finished(engine, &ex.primary_run).await?;
    if first.status != RunStatus::Ok {
        return Err(format!("the primary run ended {}", first.status.as_str()));
    }
    let round1 = first.result.clone().unwrap_or_default();
    let mut latest = round1.clone();
    let turns = engine.config().session.agent_to_agent.max_ping_pong_turns;
    if ex.requester != ex.target {
        let mut previous = first.run_id.clone();
        for turn in 1..=turns {
            let (to, from) = if turn % 2 == 1 {
                (&ex.requester, &ex.target)
            } else {
                (&ex.target, &ex.requester)
            };
            let block = format!(
                "Agent-to-agent reply exchange with session {}. Turn {turn} of {turns}. The user \
                 message is its latest reply. Reply to continue the exchange, or reply exactly \
                 {REPLY_SKIP} to stop it.",
                shown(from)
            );
            let run = step(engine, to, from, &previous, &latest, block, &ex.chain, None).await?;
            previous = run.run_id.clone();
            if run.status != RunStatus::Ok {
                return Err(format!("reply turn {turn} ended {}", run.status.as_str()));
            }
            let reply = run.result.unwrap_or_default();
            if reply.trim().is_empty() || reply.trim() == REPLY_SKIP {
                break;
            }
            latest = reply;
        }
    }

    let block = format!(
        "Agent-to-agent announce step. Session {} asked: {}\nRound-1 reply: {round1}\nLatest \
         reply: {latest}\nReply exactly {ANNOUNCE_SKIP} to stay silent; anything else is posted \
         to this session's channel.",
        shown(&ex.requester),
        ex.request
    );
    let announce = "[announce step] Write the announcement of this exchange for this session's \
                    channel, or reply ANNOUNCE_SKIP.";
    let deliver = Deliver {
        kind: "announce",
        route: None,
    };
    step(
        engine,
        &ex.target,
        &ex.requester,
        &ex.primary_run,
        announce,
        block,
        &ex.chain,
        Some(deliver),
    )
    .await?;
    Ok(())
}

/// One step: `text` into `to` as a message from `from`, with `block` in its system prompt, its
/// reply delivered per `deliver`.
#[allow(clippy::too_many_arguments)]
async fn step(
    engine: &Arc<Engine>,
    to: &str,
    from: &str,
    from_run: &str,
    text: &str,
    block: String,
    chain: &[String],
    deliver: Option<Deliver>,
) -> Result<RunRecord, String> {
    let entry = engine
        .store()
        .get(to)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the session is gone")?;
    if let SendDecision::Deny { reason } = access::send_policy(engine.config(), to, Some(&entry)) {
        return Err(reason);
    }
    let mut request = RunRequest::new(to, Lane::Nested);
    request.message = Some(user_message(
        text,
        Some(json!({"kind": "agent", "fromSessionKey": from, "runId": from_run})),
    ));
    request.extra_system_prompt = Some(block);
    request.chain = chain.to_vec();
    request.deliver = deliver;
    let accepted = engine
        .submit_run(request)
        .await
        .map_err(|e| e.to_string())?;
    finished(engine, &accepted.run_id).await
}

/// The record of a run once it ended (runs end by themselves: their timeout bounds them).
async fn finished(engine: &Engine, run_id: &str) -> Result<RunRecord, String> {
    let outcome = engine
        .wait_run(run_id, Duration::MAX)
        .await
        .map_err(|e| e.to_string())?;
    Ok(outcome.record)
}
