//! Calling a tool outside a run, as the agent of a session would (`tools.invoke`, the CLI, MCP,
//! tests; SPEC §5.3).
//!
//! The call gets the same [`ToolContext`] a run of that session gives its tools — the session's
//! canonical key and agent, a slot on the `main` lane — and the same tool set (the agent's
//! `tools.allow`/`tools.deny`, and for sub-agent sessions `tools.subagents.tools`), so nothing the
//! agent could not do from a run can be done through here: resolution, visibility, sandbox and
//! policy are the tools' own.

use std::sync::Arc;

use serde_json::Value;
use switchboard_protocol::tools::{ToolDescriptor, ToolsListResult};

use super::{Tool, ToolContext, ToolOutput, allowed, parse_args};
use crate::config::ResolvedAgent;
use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::keys::SessionKey;
use crate::runtime::cancel::CancelToken;
use crate::runtime::lanes::Lane;

/// Runs `tool` with `args` as the agent of `session_key` (any accepted reference: a key, a legacy
/// key, `main` of the default agent, or a sessionId). The session must exist.
///
/// Errors: `NotFound` for an unknown session; `Invalid` for an unknown tool (the message lists the
/// tools) or `args` that are not a JSON object; `Forbidden` for a tool the session's agent may not
/// call. Everything else — bad arguments, refused targets — is the tool's own result.
pub async fn invoke_tool(
    engine: &Arc<Engine>,
    session_key: &str,
    tool: &str,
    args: Value,
) -> CoreResult<ToolOutput> {
    invoke_tool_until(engine, session_key, tool, args, CancelToken::default()).await
}

/// [`invoke_tool`] for a caller that may stop waiting: once `stop_waiting` is cancelled, a tool
/// that waits for another run (`sessions_send`) answers at once as its timeout would — the run
/// goes on. The call itself still completes; callers await it rather than drop it, so nothing a
/// tool has started is cut off half-way.
pub async fn invoke_tool_until(
    engine: &Arc<Engine>,
    session_key: &str,
    tool: &str,
    args: Value,
    stop_waiting: CancelToken,
) -> CoreResult<ToolOutput> {
    let entry = crate::sessions::find(engine, session_key, None).await?;
    let registry = &engine.runtime().tools;
    let tool = tool.trim();
    let Some(found) = registry.get(tool).cloned() else {
        let names: Vec<String> = callable_tools(engine, &entry.key, &entry.agent_id)
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        return Err(CoreError::Invalid(format!(
            "unknown tool {tool:?}; the tools of this session are: {}",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    };
    let callable = callable_tools(engine, &entry.key, &entry.agent_id);
    if !callable.iter().any(|t| t.name() == tool) {
        let agent = engine.config().agent(&entry.agent_id);
        let reason = if SessionKey::from_canonical(entry.key.clone()).is_subagent()
            && agent_allows(&agent, tool)
        {
            "sub-agent sessions get no session tools unless tools.subagents.tools.allow lists them"
                .to_string()
        } else {
            format!("agents.list[{}].tools.allow/deny", agent.id)
        };
        return Err(CoreError::Forbidden(format!(
            "tool {tool} is not allowed for the session {} ({reason})",
            SessionKey::from_canonical(entry.key.clone()).display()
        )));
    }
    if !(args.is_object() || args.is_null()) {
        let message = match parse_args::<Value>(found.as_ref(), args) {
            Err(message) => message,
            Ok(_) => format!("the arguments of {tool} must be a JSON object"),
        };
        return Err(CoreError::Invalid(format!("args: {message}")));
    }
    let lease = engine.lease(Lane::Main).await;
    let ctx = ToolContext {
        engine: engine.clone(),
        session_key: entry.key.clone(),
        agent_id: entry.agent_id.clone(),
        run_id: format!("invoke-{}", uuid::Uuid::now_v7()),
        chain: Vec::new(),
        lease,
        stop_waiting,
    };
    Ok(found.call(&ctx, args).await)
}

/// The tools the agent of `session_key` may call there, with their schemas: what `tools.list`
/// and MCP's `tools/list` show. Errors: `NotFound` for an unknown session.
pub async fn list_tools(engine: &Engine, session_key: &str) -> CoreResult<ToolsListResult> {
    let entry = crate::sessions::find(engine, session_key, None).await?;
    let tools = callable_tools(engine, &entry.key, &entry.agent_id)
        .iter()
        .map(|tool| ToolDescriptor {
            name: tool.name().to_string(),
            description: tool.description().to_string(),
            input_schema: tool.parameters(),
        })
        .collect();
    Ok(ToolsListResult {
        session_key: entry.key,
        tools,
    })
}

/// The tools a run of `session_key` (of `agent_id`) may call: the agent's `tools.allow`/`deny`;
/// in a sub-agent session, minus the session tools unless `tools.subagents.tools.allow` names
/// them, and minus `tools.subagents.tools.deny` (SPEC §7.4).
pub fn callable_tools(engine: &Engine, session_key: &str, agent_id: &str) -> Vec<Arc<dyn Tool>> {
    let agent = engine.config().agent(agent_id);
    let tools = engine.runtime().tools.for_agent(&agent);
    if !SessionKey::from_canonical(session_key.to_string()).is_subagent() {
        return tools;
    }
    let policy = &engine.config().tools.subagents.tools;
    tools
        .into_iter()
        .filter(|t| {
            let name = t.name();
            let explicitly = !policy.allow.is_empty() && allowed(name, &policy.allow, &[]);
            let by_policy = allowed(name, &policy.allow, &policy.deny);
            by_policy && (!is_session_tool(name) || explicitly)
        })
        .collect()
}

fn agent_allows(agent: &ResolvedAgent, tool: &str) -> bool {
    allowed(tool, &agent.tools_allow, &agent.tools_deny)
}

/// The session tools (SPEC §7), which sub-agents do not get by default.
fn is_session_tool(name: &str) -> bool {
    name.starts_with("sessions_") || name == "agents_list"
}
