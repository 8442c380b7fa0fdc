//! MCP servers as tool sources (docs/tools.md): each `mcp.servers.<name>` is connected with
//! rmcp's client side and supervised (`server.rs`); its tools are offered to models as
//! `<name>__<tool>` (`tool.rs`). [`Mcp`] is the runtime's [`ToolSource`]: every run offers the
//! tools of the moment, filtered by the one access decision (`access::tool_allowed`).
//!
//! Servers start with the engine, so the first run finds them connected: a run waits, at most
//! each server's `timeoutSeconds`, for the first connection attempts to end.

mod server;
mod tool;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use server::{ServerStatus, State};

use crate::config::Config;
use crate::runtime::tool::{Tool, ToolSource};
use server::Server;

/// The MCP component: the configured servers.
pub struct Mcp {
    servers: Vec<Arc<Server>>,
    tasks: TaskTracker,
    stop: CancellationToken,
}

impl Mcp {
    /// The enabled servers of `config`, not started yet.
    pub fn new(config: &Config, tasks: TaskTracker, stop: CancellationToken) -> Arc<Self> {
        let servers = config
            .mcp
            .servers
            .iter()
            .filter(|(_, server)| server.enabled)
            .map(|(name, server)| {
                Server::new(name.clone(), server.clone(), tasks.clone(), stop.clone())
            })
            .collect();
        Arc::new(Self {
            servers,
            tasks,
            stop,
        })
    }

    /// Starts supervising every server (stdio servers are started now).
    pub fn start(&self) {
        for server in &self.servers {
            let (server, stop) = (server.clone(), self.stop.clone());
            self.tasks.spawn(server.supervise(stop));
        }
    }

    /// Each server's state, by name.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }
}

impl ToolSource for Mcp {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.servers
            .iter()
            .flat_map(|s| s.tools())
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }

    fn ready(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            for server in &self.servers {
                let mut tried = server.tried.subscribe();
                let bound = Duration::from_secs(server.config.timeout_seconds + 1);
                let _ = tokio::time::timeout(bound, tried.wait_for(|done| *done)).await;
            }
        })
    }
}
