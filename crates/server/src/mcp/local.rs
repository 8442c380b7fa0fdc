//! The in-process invoker: the gateway's own engine (used by `/mcp`).

use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use serde_json::Value;
use switchboard_core::Engine;
use switchboard_core::runtime::tool::ToolOutput;
use switchboard_protocol::ErrorShape;
use switchboard_protocol::tools::ToolDescriptor;
use switchboard_protocol::tools::ToolsListParams;

use super::Invoker;

/// Calls the engine's tool invoker directly, as `tools.list` / `tools.invoke` do.
pub struct LocalInvoker {
    engine: Arc<Engine>,
}

impl LocalInvoker {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }
}

impl Invoker for LocalInvoker {
    async fn list_tools(&self, session: &str) -> Result<Vec<ToolDescriptor>, ErrorShape> {
        let params = ToolsListParams {
            session_key: Some(session.to_string()),
            agent_id: None,
        };
        self.engine
            .tools()
            .list(params)
            .await
            .map(|listed| listed.tools)
            .map_err(|e| e.to_shape())
    }

    async fn call_tool(
        &self,
        session: &str,
        tool: &str,
        args: Value,
        stop_waiting: CancellationToken,
    ) -> Result<ToolOutput, ErrorShape> {
        self.engine
            .tools()
            .call(session, tool, args, stop_waiting)
            .await
            .map_err(|e| e.to_shape())
    }
}
