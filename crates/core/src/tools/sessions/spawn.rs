//! `sessions_spawn` (SPEC §7.4): an isolated sub-agent for one task, whose result is announced
//! back to the requester.
//!
//! Everything is checked before anything is stored — the requester is not a sub-agent, the task
//! is there, the agent is allowed (`subagents.allowAgents`, `"*"` = any), the model resolves —
//! so a refused spawn creates nothing. Then the child session (`spawnedBy` = requester, its model
//! override set) and its durable sub-agent record are stored in one commit, the task run is queued on lane
//! `subagent`, and the tool answers `accepted` at once; `crate::subagents` does the rest.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use switchboard_protocol::lenient;
use switchboard_protocol::sessions::Patch;

use super::resolve;
use crate::access::{self, Operation, Target};
use crate::keys::{self, SessionKey, SessionKind};
use crate::runtime::lanes::Lane;
use crate::runtime::{RunRequest, user_message};
use crate::store::{EntryPatch, NewSession, SubagentRecord, SubagentState, WriteOp};
use crate::subagents;
use crate::tools::{Tool, ToolContext, ToolFuture, ToolOutput, parse_args};

/// Longest `runTimeoutSeconds` accepted (a day).
const MAX_RUN_TIMEOUT_SECONDS: i64 = 86_400;
const MAX_LABEL_CHARS: usize = 64;

pub struct SessionsSpawn;

/// Arguments of `sessions_spawn`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", default)]
struct Params {
    /// What the sub-agent should do, written as a complete instruction. Required.
    task: Option<String>,
    /// A short name for the sub-agent's session (unique per agent, at most 64 characters).
    label: Option<String>,
    /// The agent to run the sub-agent as (default: yours). agents_list shows which ids work.
    agent_id: Option<String>,
    /// `provider/model` for the sub-agent (default: the agent's sub-agent model, else its model).
    model: Option<String>,
    /// Stop the sub-agent after this many seconds (0 or absent: the agent's own timeout).
    #[serde(deserialize_with = "lenient::opt_int")]
    #[schemars(with = "Option<f64>")]
    run_timeout_seconds: Option<i64>,
    /// "keep" (default) archives the sub-agent's session later; "delete" removes it once its
    /// result was announced.
    cleanup: Option<String>,
}

impl Tool for SessionsSpawn {
    fn name(&self) -> &str {
        "sessions_spawn"
    }

    fn description(&self) -> &str {
        "Start a sub-agent in a new isolated session to work on one task in the background. \
         Returns at once with status \"accepted\", the runId and childSessionKey; when the \
         sub-agent finishes, its result (Status, Result, Notes, Stats) is announced back to this \
         session. Use agents_list to see which agentId values are allowed."
    }

    fn parameters(&self) -> Value {
        resolve::schema::<Params>()
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            match parse_args::<Params>(self, arguments) {
                Ok(params) => spawn(ctx, params).await,
                Err(message) => resolve::error(message),
            }
        })
    }
}

async fn spawn(ctx: &ToolContext, p: Params) -> ToolOutput {
    let engine = &ctx.engine;
    let config = engine.config();
    let requester = resolve::requester(ctx);
    let self_target = Target {
        key: &requester.key,
        agent_id: &requester.agent_id,
        spawned_by: None,
    };
    if let Err(denial) = access::decide(config, &requester, self_target, Operation::Spawn) {
        return resolve::forbidden(denial.message);
    }
    let Some(task) = p.task.filter(|t| !t.trim().is_empty()) else {
        return resolve::error("task required: the instruction for the sub-agent");
    };
    let delete_after = match p.cleanup.as_deref().map(str::trim) {
        None | Some("") | Some("keep") => false,
        Some("delete") => true,
        Some(other) => {
            return resolve::error(format!(
                "cleanup must be \"keep\" or \"delete\" (got {other:?})"
            ));
        }
    };
    let caller = config.agent(&resolve::caller_agent(ctx));
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
        return resolve::forbidden(format!(
            "agentId is not allowed for sessions_spawn (allowed: {})",
            allowed.join(", ")
        ));
    }
    let agent = config.agent(&agent_id);
    let model = p
        .model
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .or(agent.subagent_model.clone())
        .unwrap_or(agent.model.clone());
    if let Err(problem) = engine.runtime().providers.resolve(&model) {
        return resolve::error(format!("model {model:?} cannot be used: {problem}"));
    }
    let label = p
        .label
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty());
    if let Some(label) = &label {
        if label.chars().count() > MAX_LABEL_CHARS {
            return resolve::error(format!("label is longer than {MAX_LABEL_CHARS} characters"));
        }
        match engine.store().get_by_label(&agent_id, label).await {
            Ok(Some(other)) => {
                return resolve::error(format!(
                    "label {label:?} is already used by session {} of agent {agent_id}; choose another",
                    other.key
                ));
            }
            Ok(None) => {}
            Err(e) => return resolve::store_error(e),
        }
    }
    let timeout = lenient::clamp_or(p.run_timeout_seconds, 0, 0, MAX_RUN_TIMEOUT_SECONDS);

    let child = SessionKey::from_canonical(format!(
        "agent:{agent_id}:subagent:{}",
        uuid::Uuid::new_v4()
    ));
    let run_id = uuid::Uuid::now_v7().to_string();
    let new = NewSession {
        key: child.as_str().to_string(),
        agent_id: agent_id.clone(),
        kind: SessionKind::Other,
        channel: None,
        chat_type: None,
        label: label.clone(),
        display_name: None,
        spawned_by: Some(requester.key.clone()),
    };
    let record = SubagentRecord {
        child_key: child.as_str().to_string(),
        requester_key: requester.key.clone(),
        run_id: run_id.clone(),
        task: task.clone(),
        label,
        model: model.clone(),
        delete_after,
        state: SubagentState::Running,
        outcome: None,
        created_at: engine.now_ms(),
        ended_at: None,
        delivery_id: None,
        archive_at: None,
        archived_at: None,
    };
    let model_override = EntryPatch {
        model: Patch::Set(model),
        ..EntryPatch::default()
    };
    let stored = engine
        .store()
        .write_batch(vec![
            WriteOp::Create(Box::new(new)),
            WriteOp::Patch {
                key: child.as_str().to_string(),
                patch: Box::new(model_override),
            },
            WriteOp::PutSubagent(Box::new(record)),
        ])
        .await;
    if let Err(e) = stored {
        return resolve::error(format!("could not store the sub-agent: {e}"));
    }

    let mut request = RunRequest::new(child.as_str(), Lane::Subagent);
    request.run_id = Some(run_id.clone());
    request.message = Some(user_message(
        &task,
        Some(json!({"kind": "agent", "fromSessionKey": requester.key, "runId": ctx.run_id})),
    ));
    request.extra_system_prompt = Some(format!(
        "You are a sub-agent spawned by session {} for one task: {task}\nWork on it, then end \
         with your final answer: your final message is reported back to that session. You \
         cannot spawn sub-agents.",
        requester.key
    ));
    if timeout > 0 {
        request.timeout = Some(std::time::Duration::from_secs(timeout as u64));
    }
    if let Err(e) = engine.submit_run(request).await {
        // The record stays: the supervisor announces the failure to the requester.
        tracing::warn!(child = %child, error = %e, "could not queue a sub-agent's task run");
    }
    subagents::supervise(engine.clone(), child.as_str().to_string());
    ToolOutput::ok(json!({
        "status": "accepted",
        "runId": run_id,
        "childSessionKey": child.as_str(),
    }))
}

/// Whether `allowAgents` admits `agent_id` (`"*"` admits every agent).
fn allows(allow_agents: &[String], agent_id: &str) -> bool {
    allow_agents
        .iter()
        .any(|a| a.trim() == "*" || keys::normalize_agent_id(a) == agent_id)
}
