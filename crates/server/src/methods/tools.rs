//! `tools.invoke`: run a session tool as the agent of a session would (SPEC §5.3), for operators,
//! the CLI, MCP and tests. Resolution, visibility, sandbox and policy are the tool's own (see
//! `switchboard_core::tools::invoke`); this adapter only decodes params and shapes the answer.

use std::sync::Arc;

use serde_json::json;
use switchboard_core::Engine;
use switchboard_core::tools::invoke::invoke_tool;
use switchboard_protocol::tools::ToolsInvokeParams;

use super::{MethodResult, core_err};

/// `{ok: !isError, result: <the tool's JSON>}`; an unknown session, an unknown or refused tool,
/// or args that are not an object are errors of the method itself.
pub async fn invoke(engine: &Arc<Engine>, p: ToolsInvokeParams) -> MethodResult {
    let output = invoke_tool(engine, &p.session_key, &p.tool, p.args)
        .await
        .map_err(core_err)?;
    Ok(json!({"ok": !output.is_error, "result": output.content}))
}
