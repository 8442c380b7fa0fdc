//! Who may see or message whom (SPEC §8.1), and whether a session may be sent to (§8.2).
//!
//! One decision function, [`decide`], answers for every session tool, `tools.invoke`, MCP and
//! every gateway method that acts for a session; nothing else in the code base decides
//! visibility. [`send_policy`] is the one place send policy is decided.

mod send_policy;
mod visibility;

pub use send_policy::{SendDecision, send_policy};
pub use visibility::{is_sandboxed, requester};

/// What the requester wants to do with the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    List,
    History,
    Send,
    Spawn,
}

impl Operation {
    pub const ALL: [Operation; 4] = [Self::List, Self::History, Self::Send, Self::Spawn];
}

/// The session whose agent calls the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requester {
    /// Canonical key.
    pub key: String,
    pub agent_id: String,
    /// Its agent's sandbox mode covers this session.
    pub sandboxed: bool,
    /// The agent's `sessionToolsVisibility` (per-agent override honoured) is `all`.
    pub sees_all: bool,
    /// The key is `agent:<id>:subagent:<uuid>`.
    pub is_subagent: bool,
}

/// The session the tool names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'a> {
    /// Canonical key.
    pub key: &'a str,
    pub agent_id: &'a str,
    /// The requester key that spawned it, if any.
    pub spawned_by: Option<&'a str>,
}

/// Why an operation is refused; `message` names the setting that blocks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub message: String,
}

/// Allowed, or refused with the reason.
pub type Decision = Result<(), Denial>;

/// The access decision for `op` from `requester` on `target` under `config`.
pub fn decide(
    config: &crate::config::Config,
    requester: &Requester,
    target: Target<'_>,
    op: Operation,
) -> Decision {
    visibility::decide(config, requester, target, op)
}
