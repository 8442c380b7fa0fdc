//! The tools agents call, above the runtime's tool contract (`crate::runtime::tool`): the
//! session tools (SPEC §7, [`sessions`]), the file tools on each agent's workspace (SPEC §6.5,
//! [`fs`]), the command tools ([`exec`]), and [`ToolInvoker`], which calls any of them outside a run exactly as the agent of
//! a session would (`tools.invoke`, `tools.list`, MCP).

pub mod agent;
pub mod exec;
pub mod fs;
pub mod invoke;
pub mod sessions;
pub mod web;

pub use invoke::ToolInvoker;

use serde::Serialize;
use switchboard_protocol::session_tools::ToolFailure;

use crate::runtime::tool::ToolResult;

/// A tool's own result, or its failure (`{"status":"error"|"forbidden","error"}`).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Answer<T> {
    Done(T),
    Failed(ToolFailure),
}

impl<T: Serialize> ToolResult for Answer<T> {
    fn is_error(&self) -> bool {
        matches!(self, Self::Failed(_))
    }

    fn invalid(message: String) -> Self {
        Self::Failed(ToolFailure::error(message))
    }
}
