//! Sandbox visibility, cross-agent rules and the sub-agent spawn restriction (SPEC §8.1).
//!
//! [`decide`] is the one access decision; it reads nothing but the config and the facts handed to
//! it (no store, no I/O), so every caller — session tools, `tools.invoke`, MCP, gateway methods —
//! gets the same answer for the same facts. Resolving a sessionId or label to a key happens before
//! this function is asked, so an alias can never be a way around it.
//!
//! Checks run in a fixed order and the first refusal is the answer:
//!
//! 1. **Spawn** — `Spawn` from a sub-agent session or from a confined (node) session is refused.
//!    For `Spawn` nothing else is checked here: the target is the would-be child, and which agents
//!    may be spawned is `agents.list[].subagents.allowAgents`, decided by `sessions_spawn` itself.
//! 2. **Sandbox** — a sandboxed requester whose agent has `sessionToolsVisibility: "spawned"` sees
//!    and messages only its own session and the sessions it spawned directly. A confined (node)
//!    session is held to the same rule whatever the sandbox settings, without the children: it
//!    reaches only itself, so a node cannot get out of its session through its agent's tools.
//! 3. **Cross-agent** — a target of another agent needs `tools.agentToAgent.enabled` and both agent
//!    ids matching `tools.agentToAgent.allow` (empty = every agent; `*` wildcards).

use super::{Decision, Denial, Operation, Requester, Target};
use crate::config::{Config, SandboxMode, SessionToolsVisibility};
use crate::keys::{DEFAULT_MAIN_KEY, GLOBAL_KEY, SessionKey, SessionKind, normalize_agent_id};

/// The refusal of `sessions_spawn` from a sub-agent session (SPEC §7.4).
pub(crate) const SUBAGENT_SPAWN_DENIED: &str =
    "sessions_spawn is not allowed from sub-agent sessions";

/// The refusal of `sessions_spawn` from a node session: it is confined to itself, and a child
/// would be a session outside it.
pub(crate) const NODE_SPAWN_DENIED: &str =
    "sessions_spawn is not allowed from node sessions (a node session is confined to itself)";

pub(super) fn decide(
    config: &Config,
    requester: &Requester,
    target: Target<'_>,
    op: Operation,
) -> Decision {
    if op == Operation::Spawn {
        return if requester.is_subagent {
            deny(SUBAGENT_SPAWN_DENIED.to_owned())
        } else if requester.confined {
            deny(NODE_SPAWN_DENIED.to_owned())
        } else {
            Ok(())
        };
    }
    if requester.sees_only_spawned() && !sandbox_may_reach(requester, target, op) {
        return deny(format!(
            "Session not visible from this sandboxed agent session: {}",
            shown(target.key)
        ));
    }
    if target.agent_id != requester.agent_id {
        cross_agent(config, requester, target)?;
    }
    Ok(())
}

/// A spawned-only sandboxed session reaches its direct children, and itself except in a list
/// (its list is of the sessions it spawned), nothing else. A confined session has no children
/// (it cannot spawn; a row that names it as `spawnedBy` was made by someone else), so it reaches
/// only itself.
fn sandbox_may_reach(requester: &Requester, target: Target<'_>, op: Operation) -> bool {
    (target.key == requester.key && op != Operation::List)
        || (!requester.confined && target.spawned_by == Some(requester.key.as_str()))
}

fn cross_agent(config: &Config, requester: &Requester, target: Target<'_>) -> Decision {
    let a2a = &config.tools.agent_to_agent;
    let reach = format!(
        "agent {} cannot reach session {} of agent {}",
        requester.agent_id,
        shown(target.key),
        target.agent_id
    );
    if !a2a.enabled {
        return deny(format!(
            "Agent-to-agent access is disabled (tools.agentToAgent.enabled is false): {reach}"
        ));
    }
    if !(agent_allowed(&a2a.allow, &requester.agent_id)
        && agent_allowed(&a2a.allow, target.agent_id))
    {
        return deny(format!(
            "Agent-to-agent access is not allowed by tools.agentToAgent.allow ({}): {reach}",
            a2a.allow.join(", ")
        ));
    }
    Ok(())
}

/// Whether `agent_id` matches `tools.agentToAgent.allow`: an empty list allows every agent.
pub(crate) fn agent_allowed(allow: &[String], agent_id: &str) -> bool {
    allow.is_empty()
        || allow
            .iter()
            .any(|pattern| wildcard_match(&pattern.trim().to_ascii_lowercase(), agent_id))
}

/// Glob match where `*` stands for any run of characters (including none) and every other
/// character stands for itself, ASCII case-insensitively. Linear backtracking: the classic
/// two-pointer algorithm that remembers only the last `*`, so a pattern cannot blow up.
pub(crate) fn wildcard_match(pattern: &str, text: &str) -> bool {
    let pattern = pattern.as_bytes();
    let text = text.as_bytes();
    let (mut p, mut t) = (0, 0);
    // Position of the last `*` seen, and the text position it is currently assumed to cover up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(c) if c.eq_ignore_ascii_case(&text[t]) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    // Let the last `*` swallow one more character and retry after it.
                    star = Some((star_p, star_t + 1));
                    p = star_p + 1;
                    t = star_t + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Callers never see `global` (SPEC §2.2): it is shown as `main`.
fn shown(key: &str) -> &str {
    if key == GLOBAL_KEY {
        DEFAULT_MAIN_KEY
    } else {
        key
    }
}

fn deny(message: String) -> Decision {
    Err(Denial { message })
}

/// Whether `key` of `agent_id` is sandboxed under the config: mode `all` sandboxes every session,
/// `non-main` every session except the agent's main one (`agent:<agentId>:<mainKey>`, or the
/// shared `global` bucket), `off` none. The per-agent `sandbox.mode` overrides the default.
pub fn is_sandboxed(config: &Config, agent_id: &str, key: &str) -> bool {
    match config.agent(agent_id).sandbox_mode {
        SandboxMode::Off => false,
        SandboxMode::All => true,
        SandboxMode::NonMain => !is_main_of(config, agent_id, key),
    }
}

fn is_main_of(config: &Config, agent_id: &str, key: &str) -> bool {
    let key = SessionKey::from_canonical(key.to_owned());
    if key.is_global() {
        return true;
    }
    key.agent_id() == Some(normalize_agent_id(agent_id).as_str())
        && key.kind(&config.session.main_key) == SessionKind::Main
}

/// The requester facts of a canonical session key. The agent comes from the key (`global`, which
/// belongs to no agent, means the default agent); sandboxing and visibility come from that agent's
/// resolved settings, so a per-agent `sessionToolsVisibility` is honoured (SPEC §13.12).
/// Confinement comes from the key alone: every run in a node session is confined, whoever
/// started it, so no later message into the session (an operator's, an exchange's) unlocks it.
pub fn requester(config: &Config, key: &str) -> Requester {
    let sk = SessionKey::from_canonical(key.to_owned());
    let agent_id = sk
        .agent_id()
        .map(normalize_agent_id)
        .unwrap_or_else(|| config.default_agent_id());
    let sees_all = config.agent(&agent_id).session_tools_visibility == SessionToolsVisibility::All;
    Requester {
        key: key.to_owned(),
        sandboxed: is_sandboxed(config, &agent_id, key),
        sees_all,
        is_subagent: sk.is_subagent(),
        confined: sk.kind(&config.session.main_key) == SessionKind::Node,
        agent_id,
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
