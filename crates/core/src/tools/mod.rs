//! The tools agents call, above the runtime's tool contract (`crate::runtime::tool`): the
//! session tools (SPEC §7, [`sessions`]) and [`ToolInvoker`], which calls any of them outside a
//! run exactly as the agent of a session would (`tools.invoke`, `tools.list`, MCP).

pub mod invoke;
pub mod sessions;

pub use invoke::ToolInvoker;
