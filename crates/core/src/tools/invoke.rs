//! Calling a tool outside a run, as the agent of a session would (`tools.invoke`, `tools.list`,
//! the CLI, MCP, tests; SPEC §5.3).
//!
//! The call gets the same context a run of that session gives its tools — the session's
//! canonical key and agent, a slot on the `main` lane — and the same tool set (access decides:
//! the agent's `tools.allow`/`tools.deny`, and for sub-agent sessions `tools.subagents.tools`),
//! so nothing the agent could not do from a run can be done through here: resolution,
//! visibility, sandbox and policy are the tools' own.

use std::sync::Arc;

use serde_json::Value;
use switchboard_protocol::message::ContentBlock;
use switchboard_protocol::tools::{
    ToolDescriptor, ToolInvokeOutput, ToolsInvokeParams, ToolsInvokeResult, ToolsListParams,
    ToolsListResult,
};
use tokio_util::sync::CancellationToken;

use crate::access;
use crate::config::Config;
use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys;
use crate::resolve::Resolver;
use crate::runtime::Runtime;
use crate::runtime::tool::{Caller, Origin, ToolOutput, parse_args};

/// The tool invoker component.
pub struct ToolInvoker {
    config: Arc<Config>,
    resolver: Arc<Resolver>,
    runtime: Runtime,
}

impl ToolInvoker {
    pub fn new(config: Arc<Config>, resolver: Arc<Resolver>, runtime: Runtime) -> Self {
        Self {
            config,
            resolver,
            runtime,
        }
    }

    /// `tools.invoke`: `{ok: !isError, result: <the tool's JSON>}`. When `stop_waiting` is
    /// cancelled (the caller went away), a waiting tool stops waiting as its timeout would; the
    /// run it waits for goes on.
    pub async fn invoke(
        &self,
        p: ToolsInvokeParams,
        stop_waiting: CancellationToken,
    ) -> CoreResult<ToolsInvokeResult> {
        let output = self
            .call(&p.session_key, &p.tool, p.args, stop_waiting)
            .await?;
        let text = output.text();
        Ok(ToolsInvokeResult {
            ok: !output.is_error,
            tool_name: p.tool,
            output: ToolInvokeOutput {
                content: vec![ContentBlock::text(text)],
                details: output.content.clone(),
            },
            result: output.content,
        })
    }

    /// Runs `tool` with `args` as the agent of `session` (any accepted reference: a key, a
    /// legacy key, `main` of the default agent, or a sessionId). The session must exist. Once
    /// `stop_waiting` is cancelled, a tool that waits for another run (`sessions_send`) answers
    /// at once as its timeout would; the call itself still completes, so nothing a tool has
    /// started is cut off half-way.
    ///
    /// Errors: `NotFound` for an unknown session; `Invalid` for an unknown tool (the message
    /// lists the tools) or `args` that are not a JSON object; `Forbidden` for a tool the
    /// session's agent may not call. Everything else — bad arguments, refused targets — is the
    /// tool's own result.
    pub async fn call(
        &self,
        session: &str,
        tool: &str,
        args: Value,
        stop_waiting: CancellationToken,
    ) -> CoreResult<ToolOutput> {
        let entry = self.resolver.find(session, None).await?;
        let agent = self.config.agent(&entry.agent_id);
        let tool = tool.trim();
        self.runtime.tools_ready().await;
        let Some(found) = self.runtime.tool(tool) else {
            let names: Vec<String> = self
                .runtime
                .tools_for(&entry.key, &agent)
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
        if let Err(denial) = access::tool_allowed(&self.config, &entry.key, &agent, tool) {
            return Err(CoreError::Forbidden(denial.message));
        }
        if !(args.is_object() || args.is_null()) {
            let message = match parse_args::<Value>(found.as_ref(), args) {
                Err(message) => message,
                Ok(_) => format!("the arguments of {tool} must be a JSON object"),
            };
            return Err(CoreError::Invalid(format!("args: {message}")));
        }
        let caller = Caller {
            session_key: entry.key,
            agent_id: entry.agent_id,
            run_id: RunId::from_string(format!("invoke-{}", uuid::Uuid::now_v7())),
            chain: Vec::new(),
            origin: Origin::Session,
        };
        Ok(self
            .runtime
            .call_tool(caller, found.as_ref(), args, stop_waiting)
            .await)
    }

    /// `tools.list`: the tools the agent of `sessionKey` (default: the main session of
    /// `agentId`, or of the default agent) may call there, with their schemas (what MCP's
    /// `tools/list` shows). Errors: `NotFound` for an unknown session or agent.
    pub async fn list(&self, p: ToolsListParams) -> CoreResult<ToolsListResult> {
        let reference = match (p.session_key, p.agent_id) {
            (Some(key), _) => key,
            (None, agent) => {
                let agent = agent.map_or_else(
                    || self.config.default_agent_id(),
                    |a| keys::normalize_agent_id(&a),
                );
                if !self.config.agent_ids().contains(&agent) {
                    return Err(CoreError::NotFound(format!(
                        "agentId: no agent {agent} (configured: {})",
                        self.config.agent_ids().join(", ")
                    )));
                }
                self.config.main_session_key(&agent).into_string()
            }
        };
        self.runtime.tools_ready().await;
        let entry = self.resolver.find(&reference, None).await?;
        let agent = self.config.agent(&entry.agent_id);
        let tools = self
            .runtime
            .tools_for(&entry.key, &agent)
            .iter()
            .map(|tool| ToolDescriptor {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                input_schema: tool.parameters(),
                annotations: tool.hints(),
                group: group_of(tool.name()),
            })
            .collect();
        Ok(ToolsListResult {
            session_key: entry.key.display().to_string(),
            tools,
        })
    }
}

/// The group a tool is listed under: its built-in group, else its MCP server's.
fn group_of(name: &str) -> Option<String> {
    if let Some(group) = crate::access::groups_of(name).first() {
        return Some((*group).to_string());
    }
    name.split_once("__")
        .map(|(server, _)| format!("mcp:{server}"))
}
