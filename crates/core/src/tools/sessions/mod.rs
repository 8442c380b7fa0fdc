//! The session tools (SPEC §7): `sessions_list`, `sessions_history`, `sessions_send`,
//! `sessions_spawn`, `agents_list`. Every one resolves references the same way and asks
//! `crate::access` before touching another session.

mod agents_list;
mod flow;
pub use flow::{ANNOUNCE_SKIP, REPLY_SKIP};
mod history;
mod list;
pub(crate) mod resolve;
mod send;
mod spawn;

use std::sync::Arc;

use super::{Tool, ToolRegistry};

/// Registers the session tools.
pub fn register(registry: &mut ToolRegistry) {
    let tools: [Arc<dyn Tool>; 5] = [
        Arc::new(list::SessionsList),
        Arc::new(history::SessionsHistory),
        Arc::new(send::SessionsSend),
        Arc::new(spawn::SessionsSpawn),
        Arc::new(agents_list::AgentsList),
    ];
    for tool in tools {
        registry.register(tool);
    }
}
