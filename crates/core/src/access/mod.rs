//! Who may see or message whom (SPEC §8.1), whether a session may be sent to (§8.2), and which
//! tools an agent may call in a session (§6.5, §7.4).
//!
//! Pure decisions over values handed in: the config and the facts of the sessions involved. This
//! module reads no store and knows no engine, so every caller — session tools, `tools.invoke`,
//! MCP, gateway methods, the run loop — gets the same answer for the same facts. One decision
//! function, [`decide`], answers visibility; nothing else in the code base decides it.
//! [`send_policy`] is the one place send policy is decided; [`tool_allowed`] the one place tool
//! policy is.

mod send_policy;
mod tools;
mod visibility;

pub use send_policy::{SendDecision, send_policy};
pub use tools::{glob_allowed, groups_of, known_group, tool_allowed};
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
    /// Confined to itself, whatever the sandbox settings: a node session (kind `node`). It sees
    /// and messages only its own session, lists nothing and spawns nothing — the visibility of a
    /// sandboxed session that spawned nothing, and no way to spawn anything.
    pub confined: bool,
}

impl Requester {
    /// Whether it reaches only itself and (unless confined) the sessions it spawned directly.
    pub fn sees_only_spawned(&self) -> bool {
        self.confined || (self.sandboxed && !self.sees_all)
    }
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

/// A standalone `/send on|off|inherit` (also `allow|deny|default`) message. `None`: not a
/// `/send` command. `Some(Ok(policy))`: the new override (`"allow"`/`"deny"`, or `None` to
/// inherit). `Some(Err(..))`: a wrong argument, with the accepted forms.
pub fn send_command(message: &str) -> Option<Result<Option<&'static str>, String>> {
    let text = message.trim();
    let rest = text.strip_prefix("/send")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    Some(match rest.trim().to_ascii_lowercase().as_str() {
        "on" | "allow" => Ok(Some("allow")),
        "off" | "deny" => Ok(Some("deny")),
        "inherit" | "default" => Ok(None),
        other => Err(format!(
            "/send {other}: expected /send on|off|inherit (also allow|deny|default)"
        )),
    })
}

/// Whether `given` is the secret `expected`, compared in constant time for the secret's length.
/// An empty `expected` never matches (an unset token opens nothing).
pub fn token_matches(expected: &str, given: &str) -> bool {
    let (a, b) = (expected.as_bytes(), given.as_bytes());
    !a.is_empty()
        && a.len() == b.len()
        && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
