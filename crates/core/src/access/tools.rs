//! Which tools an agent may call in a session (SPEC §6.5, §7.4): the agent's `tools.allow` /
//! `tools.deny` (names or globs such as `time__*`), and in a sub-agent session no session tools
//! unless `tools.subagents.tools.allow` names them, minus `tools.subagents.tools.deny`.

use super::{Decision, Denial};
use crate::config::{Config, ResolvedAgent};
use crate::keys::SessionKey;

/// Whether `agent` (resolved once by the caller, whatever the number of tools it asks about)
/// may call `tool` in the session `key`; a refusal names the setting that blocks it.
pub fn tool_allowed(
    config: &Config,
    key: &SessionKey,
    agent: &ResolvedAgent,
    tool: &str,
) -> Decision {
    if !allowed(tool, &agent.tools_allow, &agent.tools_deny) {
        return refuse(
            key,
            tool,
            format!("agents.list[{}].tools.allow/deny", agent.id),
        );
    }
    if !key.is_subagent() {
        return Ok(());
    }
    let policy = &config.tools.subagents.tools;
    let explicitly = !policy.allow.is_empty() && allowed(tool, &policy.allow, &[]);
    if is_session_tool(tool) && !explicitly {
        return refuse(
            key,
            tool,
            "sub-agent sessions get no session tools unless tools.subagents.tools.allow lists them"
                .to_string(),
        );
    }
    if !allowed(tool, &policy.allow, &policy.deny) {
        return refuse(key, tool, "tools.subagents.tools.allow/deny".to_string());
    }
    Ok(())
}

fn refuse(key: &SessionKey, tool: &str, reason: String) -> Decision {
    Err(Denial {
        message: format!(
            "tool {tool} is not allowed for the session {} ({reason})",
            key.display()
        ),
    })
}

/// The session tools (SPEC §7), which sub-agents do not get by default.
fn is_session_tool(name: &str) -> bool {
    name.starts_with("sessions_") || name == "agents_list"
}

/// `allow` empty = everything; `deny` wins. Patterns are globs: `*` stands for any run of
/// characters (`time__*`, `*_file`), everything else for itself.
pub fn glob_allowed(name: &str, allow: &[String], deny: &[String]) -> bool {
    let matches = |pattern: &String| super::visibility::wildcard_match(pattern, name);
    (allow.is_empty() || allow.iter().any(matches)) && !deny.iter().any(matches)
}

fn allowed(name: &str, allow: &[String], deny: &[String]) -> bool {
    glob_allowed(name, allow, deny)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_and_deny_lists() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(allowed("sessions_list", &[], &[]));
        assert!(allowed("sessions_list", &s(&["sessions_*"]), &[]));
        assert!(!allowed(
            "sessions_list",
            &s(&["sessions_*"]),
            &s(&["sessions_list"])
        ));
        assert!(!allowed("exec", &s(&["sessions_*"]), &[]));
        assert!(allowed("time__get_current_time", &s(&["*__get_*"]), &[]));
        assert!(!allowed(
            "time__convert_time",
            &s(&["time__*"]),
            &s(&["*convert*"])
        ));
    }
}
