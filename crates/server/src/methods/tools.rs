//! `tools.invoke`: run a session tool as the agent of a session would (SPEC §5.3), for operators,
//! the CLI, MCP and tests; `tools.list`: the tools a session may call, with their schemas (what
//! the MCP server shows). Resolution, visibility, sandbox and policy are the tools' own (see
//! `switchboard_core::tools::invoke`); this adapter only decodes params and shapes the answer.

use std::sync::Arc;

use serde_json::json;
use switchboard_core::Engine;
use switchboard_core::runtime::cancel::CancelToken;
use switchboard_core::tools::invoke::{invoke_tool_until, list_tools};
use switchboard_protocol::tools::{ToolsInvokeParams, ToolsListParams};

use super::{MethodResult, core_err, to_value};

/// `{ok: !isError, result: <the tool's JSON>}`; an unknown session, an unknown or refused tool,
/// or args that are not an object are errors of the method itself. When the caller goes away
/// (`gone`), a waiting tool stops waiting as its timeout would; the run it waits for goes on.
pub async fn invoke(
    engine: &Arc<Engine>,
    p: ToolsInvokeParams,
    gone: &CancelToken,
) -> MethodResult {
    let output = invoke_tool_until(engine, &p.session_key, &p.tool, p.args, gone.clone())
        .await
        .map_err(core_err)?;
    Ok(json!({"ok": !output.is_error, "result": output.content}))
}

/// `{sessionKey, tools: [{name, description, inputSchema}]}`; an unknown session is `NOT_FOUND`.
pub async fn list(engine: &Engine, p: ToolsListParams) -> MethodResult {
    to_value(list_tools(engine, &p.session_key).await.map_err(core_err)?)
}
