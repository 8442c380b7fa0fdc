//! `sessions_send`. (Being written.)

use serde_json::Value;

use crate::tools::{Tool, ToolContext, ToolFuture, ToolOutput};

pub struct SessionsSend;

impl Tool for SessionsSend {
    fn name(&self) -> &str {
        "sessions_send"
    }

    fn description(&self) -> &str {
        "Not available yet."
    }

    fn parameters(&self) -> Value {
        serde_json::json!({"type": "object", "properties": {}})
    }

    fn call<'a>(&'a self, _ctx: &'a ToolContext, _arguments: Value) -> ToolFuture<'a> {
        Box::pin(async { ToolOutput::error("sessions_send is not available yet") })
    }
}
