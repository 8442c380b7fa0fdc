//! `sessions_send` (SPEC §7.3): a message into another session, optionally waiting for the reply.
//!
//! The tool resolves the target (visibility and cross-agent rules), checks its send policy and
//! the cycle guard, then hands the message to the agent-to-agent exchange (`crate::exchange`),
//! which submits the target's run and runs the reply-back loop and announce step after it. With a
//! wait the tool answers `ok` with the run's stored result, `timeout` (the run goes on; its state
//! says queued or running), or `error`.

use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::lenient;
use switchboard_protocol::session_tools::{
    PendingRun, PendingState, SendParams, SendResult, ToolFailure,
};

use super::SessionTools;
use crate::a2a::{self, Conversation, RemoteSend};
use crate::access::{self, Operation, SendDecision};
use crate::exchange::Exchange;
use crate::resolve::Reference;
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::store::RunStatus;

const DEFAULT_TIMEOUT_SECONDS: i64 = 30;
const MAX_TIMEOUT_SECONDS: i64 = 600;

pub struct SessionsSend(pub Arc<SessionTools>);

impl TypedTool for SessionsSend {
    type Params = SendParams;
    type Output = SendResult;

    fn name(&self) -> &'static str {
        "sessions_send"
    }

    fn hints(&self) -> ToolHints {
        ToolHints::ACTS
    }

    /// Made again after a stop, a call finds the exchange (or remote send) it began: both are
    /// named by the call.
    fn repeatable(&self) -> bool {
        true
    }

    fn description(&self) -> &'static str {
        "Send a message into another session and (by default) wait for its agent's reply. \
         Name the target with sessionKey (from sessions_list) or label. Returns status \"ok\" with \
         the reply, \"accepted\" when timeoutSeconds is 0, \"timeout\" when the reply did not \
         arrive in time (the other agent keeps working; read its reply later with \
         sessions_history), \"error\" or \"forbidden\". An A2A remote: \"a2a:<remote>\"."
    }

    /// A send into a session here: its one write starts the target's run. A remote's send
    /// acts on another agent first.
    fn joins_reply(&self, ctx: &ToolContext, p: &SendParams) -> bool {
        self.remote(ctx, p).is_none()
    }

    async fn run(&self, ctx: &ToolContext, p: SendParams) -> SendResult {
        match self.remote(ctx, &p) {
            Some(target) => self.to_remote(ctx, target, p).await,
            None => self.send(ctx, p).await.unwrap_or_else(|result| result),
        }
    }
}

fn error(message: impl Into<String>) -> SendResult {
    ToolFailure::error(message).into()
}

impl SessionsSend {
    /// The A2A remote `p` names, if it names one.
    fn remote(&self, ctx: &ToolContext, p: &SendParams) -> Option<Result<Conversation, String>> {
        let key = p.session_key.as_deref()?;
        a2a::target(&self.0.config, &ctx.caller().agent_id, key)
    }

    /// `Err` carries an early answer (a refusal or an error).
    async fn send(&self, ctx: &ToolContext, p: SendParams) -> Result<SendResult, SendResult> {
        let deps = &self.0;
        let Some(message) = p.message.filter(|m| !m.trim().is_empty()) else {
            return Err(error("message required"));
        };
        let caller = ctx.caller();
        let reference = Reference {
            key: p.session_key.as_deref(),
            label: p.label.as_deref(),
            agent_id: p.agent_id.as_deref(),
        };
        let target = deps
            .resolver
            .for_agent(
                &deps.requester(ctx),
                &caller.agent_id,
                reference,
                Operation::Send,
            )
            .await
            .map_err(|refusal| SendResult::from(ToolFailure::from(refusal)))?;
        let shown = target.key.display().to_string();
        if let SendDecision::Deny { reason } =
            access::send_policy(&deps.config, target.key.as_str(), Some(&target))
        {
            return Err(SendResult::Forbidden {
                error: reason,
                session_key: Some(shown),
            });
        }
        let timeout = timeout_seconds(p.timeout_seconds);
        let mut chain = caller.chain.clone();
        chain.push(caller.session_key.clone());
        if let Some(problem) = deps.exchanges.refusal(&chain, &target.key, timeout > 0) {
            return Err(error(problem));
        }
        // The follow-up waits for the primary run on its own, so it starts before this call
        // waits: a caller that stops waiting (or goes away) never loses the reply-back loop or
        // announce.
        let accepted = deps
            .exchanges
            .begin(Exchange {
                requester: caller.session_key.clone(),
                requester_run: caller.run_id.clone(),
                target,
                message,
                chain,
                call: ctx.call_name("sessions_send"),
                reply: ctx.left_reply(),
            })
            .await
            .map_err(|e| error(e.to_string()))?;
        let run_id = accepted.run_id.as_str().to_string();
        if timeout == 0 {
            return Ok(SendResult::Accepted {
                run_id,
                session_key: shown,
            });
        }
        let outcome = ctx
            .wait_run(&accepted.run_id, Duration::from_secs(timeout as u64))
            .await
            .map_err(|e| error(e.to_string()))?;
        let run = outcome.record;
        if outcome.wait_timed_out {
            let state = match run.status {
                RunStatus::Queued => PendingState::Queued,
                _ => PendingState::Running,
            };
            return Ok(SendResult::Timeout {
                run_id,
                session_key: shown,
                run: PendingRun { state },
                error: format!(
                    "the reply did not arrive within {timeout}s; the run is {} and goes on — read \
                     its reply later with sessions_history",
                    run.status.as_str()
                ),
            });
        }
        Ok(match run.status {
            RunStatus::Ok => SendResult::Ok {
                run_id,
                reply: run.result.unwrap_or_default(),
                session_key: shown,
            },
            other => SendResult::Error {
                error: format!(
                    "the target run ended {}: {}",
                    other.as_str(),
                    run.error.unwrap_or_default()
                ),
                run_id: Some(run_id),
                session_key: Some(shown),
            },
        })
    }

    /// A send to a remote A2A agent (SPEC §10a): no reply-back loop, no announce; the remote's
    /// reply is the result (`crate::a2a`).
    async fn to_remote(
        &self,
        ctx: &ToolContext,
        target: Result<Conversation, String>,
        p: SendParams,
    ) -> SendResult {
        let Some(message) = p.message.filter(|m| !m.trim().is_empty()) else {
            return error("message required");
        };
        if p.label.is_some() {
            return error("Give either sessionKey or label (with an optional agentId), not both");
        }
        let conversation = match target {
            Ok(conversation) => conversation,
            Err(problem) => return error(problem),
        };
        let caller = ctx.caller();
        let send = RemoteSend {
            conversation,
            requester: caller.session_key.clone(),
            requester_run: caller.run_id.clone(),
            message,
            timeout: Duration::from_secs(timeout_seconds(p.timeout_seconds) as u64),
            call: ctx.call_name("sessions_send"),
        };
        // Like a local send's wait, it holds no lane slot.
        ctx.while_waiting(self.0.remotes.send(send, ctx.stopped_waiting()))
            .await
    }
}

/// `timeoutSeconds`: 30 by default, clamped to 0-600.
fn timeout_seconds(given: Option<i64>) -> i64 {
    lenient::clamp_or(given, DEFAULT_TIMEOUT_SECONDS, 0, MAX_TIMEOUT_SECONDS)
}
