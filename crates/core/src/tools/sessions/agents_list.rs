//! `agents_list`. (Being written.)

use serde_json::Value;

use crate::tools::{Tool, ToolContext, ToolFuture, ToolOutput};

pub struct AgentsList;

impl Tool for AgentsList {
    fn name(&self) -> &str {
        "agents_list"
    }

    fn description(&self) -> &str {
        "Not available yet."
    }

    fn parameters(&self) -> Value {
        serde_json::json!({"type": "object", "properties": {}})
    }

    fn call<'a>(&'a self, _ctx: &'a ToolContext, _arguments: Value) -> ToolFuture<'a> {
        Box::pin(async { ToolOutput::error("agents_list is not available yet") })
    }
}
