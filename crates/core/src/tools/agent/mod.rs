//! The tools by which an agent acts on the gateway itself (SPEC §6.5): `message`
//! (`group:messaging`: send to a chat through the outbox, under the session's send policy),
//! `cron` (`group:automation`: its own jobs) and `session_status` (`group:sessions`).

mod cron;
mod message;
mod status;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Config;
use crate::cron::Cron;
use crate::delivery::Outbox;
use crate::runtime::tool::{ToolRegistry, Typed};

/// What these tools are built with.
pub struct AgentTools {
    pub config: Arc<Config>,
    pub home: PathBuf,
    pub outbox: Arc<Outbox>,
    pub cron: Arc<Cron>,
}

impl AgentTools {
    pub fn new(config: Arc<Config>, home: &Path, outbox: Arc<Outbox>, cron: Arc<Cron>) -> Self {
        Self {
            config,
            home: home.to_path_buf(),
            outbox,
            cron,
        }
    }
}

/// Registers `message`, `cron` and `session_status`.
pub fn register(registry: &mut ToolRegistry, deps: Arc<AgentTools>) {
    registry.register(Arc::new(Typed::new(message::Message(deps.clone()))));
    registry.register(Arc::new(Typed::new(cron::CronTool(deps.clone()))));
    registry.register(Arc::new(Typed::new(status::SessionStatusTool(deps))));
}

/// A failure of the engine, as a tool's failure.
fn failure(e: crate::error::CoreError) -> switchboard_protocol::session_tools::ToolFailure {
    switchboard_protocol::session_tools::ToolFailure::error(e.to_string())
}
