//! The in-process invoker: the gateway's own engine (used by `/mcp`).

use std::sync::Arc;

use serde_json::Value;
use switchboard_core::Engine;
use switchboard_core::runtime::cancel::CancelToken;
use switchboard_core::tools::ToolOutput;
use switchboard_core::tools::invoke::{invoke_tool_until, list_tools};
use switchboard_protocol::ErrorShape;
use switchboard_protocol::tools::ToolDescriptor;

use super::Invoker;

/// Calls `switchboard_core::tools::invoke` directly, as `tools.list` / `tools.invoke` do.
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
        list_tools(&self.engine, session)
            .await
            .map(|listed| listed.tools)
            .map_err(|e| e.to_shape())
    }

    async fn call_tool(
        &self,
        session: &str,
        tool: &str,
        args: Value,
        stop_waiting: CancelToken,
    ) -> Result<ToolOutput, ErrorShape> {
        invoke_tool_until(&self.engine, session, tool, args, stop_waiting)
            .await
            .map_err(|e| e.to_shape())
    }
}
