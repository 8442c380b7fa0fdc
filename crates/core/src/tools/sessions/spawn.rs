//! `sessions_spawn` (SPEC §7.4): an isolated sub-agent for one task, whose result is announced
//! back to the requester.
//!
//! Everything is checked before anything is stored — the requester may spawn at all (not a
//! sub-agent, not a node session: the access decision), the task is there, the agent is allowed
//! (`subagents.allowAgents`, `"*"` = any), the model resolves, the label is free — so a refused
//! spawn creates nothing. Then `crate::subagents` stores the child
//! and its durable record in one commit, queues the task run on lane `subagent`, and follows it
//! to its announce; the tool answers `accepted` at once.

use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::lenient;
use switchboard_protocol::session_tools::{SpawnParams, SpawnResult, ToolFailure};

use super::SessionTools;
use crate::keys;
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::subagents::Spawn;

/// Longest `runTimeoutSeconds` accepted (a day).
const MAX_RUN_TIMEOUT_SECONDS: i64 = 86_400;
const MAX_LABEL_CHARS: usize = 64;

pub struct SessionsSpawn(pub Arc<SessionTools>);

impl TypedTool for SessionsSpawn {
    type Params = SpawnParams;
    type Output = SpawnResult;

    fn name(&self) -> &'static str {
        "sessions_spawn"
    }

    fn hints(&self) -> ToolHints {
        ToolHints::ACTS
    }

    /// Made again after a stop, a call finds the sub-agent it started: its session and run are
    /// named by the call.
    fn repeatable(&self) -> bool {
        true
    }

    fn description(&self) -> &'static str {
        "Start a sub-agent in a new isolated session to work on one task in the background. \
         Returns at once with status \"accepted\", the runId and childSessionKey; when the \
         sub-agent finishes, its result (Status, Result, Notes, Stats) is announced back to this \
         session. Use agents_list to see which agentId values are allowed."
    }

    async fn run(&self, ctx: &ToolContext, p: SpawnParams) -> SpawnResult {
        let spawn = match self.check(ctx, p).await {
            Ok(spawn) => spawn,
            Err(failure) => return failure.into(),
        };
        match self.0.subagents.spawn(spawn).await {
            Ok((run_id, child)) => SpawnResult::Accepted {
                run_id: run_id.into_string(),
                child_session_key: child.into_string(),
            },
            Err(problem) => ToolFailure::error(problem).into(),
        }
    }
}

impl SessionsSpawn {
    /// The spawn the arguments ask for, once every rule allows it.
    async fn check(&self, ctx: &ToolContext, p: SpawnParams) -> Result<Spawn, ToolFailure> {
        let config = &self.0.config;
        if let Err(denial) = self.0.may_spawn(&self.0.requester(ctx)) {
            return Err(ToolFailure::forbidden(denial.message));
        }
        let Some(task) = p.task.filter(|t| !t.trim().is_empty()) else {
            return Err(ToolFailure::error(
                "task required: the instruction for the sub-agent",
            ));
        };
        let delete_after = match p.cleanup.as_deref().map(str::trim) {
            None | Some("") | Some("keep") => false,
            Some("delete") => true,
            Some(other) => {
                return Err(ToolFailure::error(format!(
                    "cleanup must be \"keep\" or \"delete\" (got {other:?})"
                )));
            }
        };
        let caller = config.agent(&ctx.caller().agent_id);
        let agent_id = match p
            .agent_id
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            None => caller.id.clone(),
            Some(raw) => keys::normalize_agent_id(raw),
        };
        if agent_id != caller.id && !allows(&caller.allow_agents, &agent_id) {
            let mut allowed = vec![caller.id.clone()];
            allowed.extend(caller.allow_agents.iter().cloned());
            return Err(ToolFailure::forbidden(format!(
                "agentId {agent_id:?} is not allowed for sessions_spawn (allowed: {})",
                allowed.join(", ")
            )));
        }
        // Allowed ("*") is not configured: a sub-agent of nobody's would run on the defaults.
        let configured = config.agent_ids();
        if !configured.contains(&agent_id) {
            return Err(ToolFailure::error(format!(
                "agentId {agent_id:?} is not a configured agent (configured: {})",
                configured.join(", ")
            )));
        }
        let agent = config.agent(&agent_id);
        let model = p
            .model
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .or(agent.subagent_model.clone())
            .unwrap_or(agent.model.clone());
        if let Err(problem) = self.0.subagents.check_model(&model) {
            return Err(ToolFailure::error(format!(
                "model {model:?} cannot be used: {problem}"
            )));
        }
        let label = p
            .label
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty());
        let call = ctx.call_name("sessions_spawn");
        if let Some(label) = &label {
            // A call made again after a stop finds its label on the child it started.
            let child = crate::subagents::child_key(&agent_id, call.as_deref());
            self.check_label(ctx, &agent_id, label, &child).await?;
        }
        let timeout = lenient::clamp_or(p.run_timeout_seconds, 0, 0, MAX_RUN_TIMEOUT_SECONDS);
        Ok(Spawn {
            requester: ctx.caller().session_key.clone(),
            requester_run: ctx.caller().run_id.clone(),
            agent_id,
            task,
            label,
            model,
            delete_after,
            timeout: (timeout > 0).then(|| Duration::from_secs(timeout as u64)),
            call,
            again: ctx.made_again(),
            origin: ctx.caller().origin.clone(),
        })
    }

    /// A label must be short and unused among the agent's sessions.
    /// `child`: the session this spawn makes (a label already on it is its own).
    async fn check_label(
        &self,
        ctx: &ToolContext,
        agent_id: &str,
        label: &str,
        child: &crate::keys::SessionKey,
    ) -> Result<(), ToolFailure> {
        if label.chars().count() > MAX_LABEL_CHARS {
            return Err(ToolFailure::error(format!(
                "label is longer than {MAX_LABEL_CHARS} characters"
            )));
        }
        match ctx.store().get_by_label(agent_id, label).await {
            Ok(Some(entry)) if entry.key == *child => Ok(()),
            // The other session stays unnamed: a sandboxed caller must not learn its key.
            Ok(Some(_)) => Err(ToolFailure::error(format!(
                "label {label:?} is already used by another session of agent {agent_id}; choose another"
            ))),
            Ok(None) => Ok(()),
            Err(e) => Err(super::store_failure(e)),
        }
    }
}

/// Whether `allowAgents` admits `agent_id` (`"*"` admits every agent).
fn allows(allow_agents: &[String], agent_id: &str) -> bool {
    allow_agents
        .iter()
        .any(|a| a.trim() == "*" || keys::normalize_agent_id(a) == agent_id)
}
