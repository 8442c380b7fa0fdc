//! The session tools (SPEC §7): `sessions_list`, `sessions_history`, `sessions_send`,
//! `sessions_spawn`, `agents_list`. Each is a [`TypedTool`]: its params and result are the
//! protocol's (`switchboard_protocol::session_tools`), decoding and encoding happen once in the
//! runtime's `Typed` wrapper. Every tool resolves references through the one resolver, which asks
//! `crate::access` before touching another session.

mod agents_list;
mod history;
mod list;
mod send;
mod spawn;

use std::sync::Arc;

use switchboard_protocol::session_tools::{SendResult, SpawnResult, ToolFailure};

pub use super::Answer;
use crate::a2a::Remotes;
use crate::access::{self, Operation, Requester, Target};
use crate::config::Config;
use crate::exchange::Exchanges;
use crate::resolve::{Refusal, Resolver};
use crate::runtime::tool::{ToolContext, ToolRegistry, ToolResult, Typed};
use crate::subagents::Subagents;

/// What the session tools are built with.
pub struct SessionTools {
    pub config: Arc<Config>,
    pub resolver: Arc<Resolver>,
    pub exchanges: Arc<Exchanges>,
    pub subagents: Arc<Subagents>,
    /// Sends to remote A2A agents (`sessionKey: "a2a:<remote>"`).
    pub remotes: Arc<Remotes>,
}

/// Registers the session tools.
pub fn register(registry: &mut ToolRegistry, deps: Arc<SessionTools>) {
    registry.register(Arc::new(Typed::new(list::SessionsList(deps.clone()))));
    registry.register(Arc::new(Typed::new(history::SessionsHistory(deps.clone()))));
    registry.register(Arc::new(Typed::new(send::SessionsSend(deps.clone()))));
    registry.register(Arc::new(Typed::new(spawn::SessionsSpawn(deps.clone()))));
    registry.register(Arc::new(Typed::new(agents_list::AgentsList(deps))));
}

impl SessionTools {
    /// The requester facts of the calling session.
    fn requester(&self, ctx: &ToolContext) -> Requester {
        access::requester(&self.config, ctx.caller().session_key.as_str())
    }

    /// Whether `requester` may spawn at all (not a sub-agent, not a confined node session): the
    /// access decision for `Spawn`, asked about its own key (which agents it may spawn is
    /// `allowAgents`, the tool's question).
    fn may_spawn(&self, requester: &Requester) -> access::Decision {
        let itself = Target {
            key: &requester.key,
            agent_id: &requester.agent_id,
            spawned_by: None,
        };
        access::decide(&self.config, requester, itself, Operation::Spawn)
    }
}

impl ToolResult for SendResult {
    fn is_error(&self) -> bool {
        SendResult::is_error(self)
    }

    fn invalid(message: String) -> Self {
        ToolFailure::error(message).into()
    }
}

impl ToolResult for SpawnResult {
    fn is_error(&self) -> bool {
        SpawnResult::is_error(self)
    }

    fn invalid(message: String) -> Self {
        ToolFailure::error(message).into()
    }
}

/// A resolver's refusal as the tools' failure.
impl From<Refusal> for ToolFailure {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Invalid(message) => ToolFailure::error(message),
            Refusal::Forbidden(message) => ToolFailure::forbidden(message),
            store @ Refusal::Store(_) => ToolFailure::error(store.to_string()),
        }
    }
}

/// A store failure as a tool failure (not the caller's fault).
fn store_failure(e: crate::store::StoreError) -> ToolFailure {
    ToolFailure::from(Refusal::Store(e))
}
