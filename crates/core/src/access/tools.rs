//! Which tools an agent may call in a session (SPEC §6.5, §7.4), decided here once:
//!
//! 1. the profile (`agents.list[].tools.profile`, else `tools.profile`) gives the base set;
//!    without one every tool, except `group:runtime` (`exec`, `process`), which runs commands
//!    on the gateway's machine and is offered only where a profile or an allow list names it;
//! 2. `tools.allow`/`tools.deny`, then the agent's, narrow it (empty `allow` = no narrowing,
//!    `deny` wins);
//! 3. a sub-agent session gets no session tools unless `tools.subagents.tools.allow` names them,
//!    narrowed by `tools.subagents.tools.allow/deny`.
//!
//! Every list takes tool names, globs (`time__*`) and the reference's groups (`group:fs`).

use super::{Decision, Denial};
pub use crate::config::tool_groups::{groups_of, in_group, known_group};
use std::collections::BTreeMap;

use crate::config::{AgentToolPolicy, Config, ResolvedAgent, ToolProfile};
use crate::keys::SessionKey;

/// What each profile gives, in groups and names (`full`: everything).
fn profile_entries(profile: ToolProfile) -> &'static [&'static str] {
    match profile {
        ToolProfile::Minimal => &["session_status"],
        ToolProfile::Coding => &[
            "group:fs",
            "group:runtime",
            "group:sessions",
            "group:memory",
            "image",
        ],
        ToolProfile::Messaging => &[
            "group:messaging",
            "sessions_list",
            "sessions_history",
            "sessions_send",
            "session_status",
        ],
        ToolProfile::Full => &["*"],
    }
}

/// Whether `pattern` (a name, a glob or a group) covers `tool`.
fn covers(pattern: &str, tool: &str) -> bool {
    match in_group(pattern, tool) {
        Some(held) => held,
        None => super::visibility::wildcard_match(pattern, tool),
    }
}

/// `allow` empty = everything; `deny` wins. Entries are names, globs (`*` stands for any run
/// of characters: `time__*`, `*_file`) or groups (`group:fs`).
pub fn glob_allowed(name: &str, allow: &[String], deny: &[String]) -> bool {
    (allow.is_empty() || allow.iter().any(|p| covers(p, name)))
        && !deny.iter().any(|p| covers(p, name))
}

/// Whether `agent` (resolved once by the caller, whatever the number of tools it asks about)
/// may call `tool` in the session `key`; a refusal names the setting that blocks it.
pub fn tool_allowed(
    config: &Config,
    key: &SessionKey,
    agent: &ResolvedAgent,
    tool: &str,
) -> Decision {
    if let Some(reason) = outside_profile(config, agent, tool) {
        return refuse(key, tool, reason);
    }
    if !glob_allowed(tool, &config.tools.allow, &config.tools.deny) {
        return refuse(key, tool, "tools.allow/deny".to_string());
    }
    if !glob_allowed(tool, &agent.tools_allow, &agent.tools_deny) {
        let setting = format!("agents.list[{}].tools.allow/deny", agent.id);
        return refuse(key, tool, setting);
    }
    if let Some(reason) = outside_provider(config, agent, tool) {
        return refuse(key, tool, reason);
    }
    if !key.is_subagent() {
        return Ok(());
    }
    let policy = &config.tools.subagents.tools;
    let explicitly = !policy.allow.is_empty() && glob_allowed(tool, &policy.allow, &[]);
    if is_session_tool(tool) && !explicitly {
        return refuse(
            key,
            tool,
            "sub-agent sessions get no session tools unless tools.subagents.tools.allow lists them"
                .to_string(),
        );
    }
    if !glob_allowed(tool, &policy.allow, &policy.deny) {
        return refuse(key, tool, "tools.subagents.tools.allow/deny".to_string());
    }
    Ok(())
}

/// Why the profile leaves `tool` out, if it does.
fn outside_profile(config: &Config, agent: &ResolvedAgent, tool: &str) -> Option<String> {
    match agent.tools_profile {
        Some(profile) if !profile_entries(profile).iter().any(|p| covers(p, tool)) => Some(
            format!("tools.profile \"{}\" leaves it out", profile.as_str()),
        ),
        Some(_) => None,
        None if is_runtime(tool) && !named(config, agent, tool) => Some(
            "commands run only where tools.profile (\"coding\" or \"full\") or an allow list names group:runtime"
                .to_string(),
        ),
        None => None,
    }
}

/// Why `tools.byProvider` or the agent's own `agents.list[].tools.byProvider` leaves `tool`
/// out for `agent`'s model, if one does: in each, the entry for its `provider/model`, else for
/// its provider.
fn outside_provider(config: &Config, agent: &ResolvedAgent, tool: &str) -> Option<String> {
    let own = config
        .agents
        .list
        .iter()
        .find(|a| a.id == agent.id)
        .map(|a| &a.tools.by_provider);
    if config.tools.by_provider.is_empty() && own.is_none_or(BTreeMap::is_empty) {
        return None;
    }
    let model = agent.model.to_ascii_lowercase();
    let provider = model.split('/').next().unwrap_or_default();
    let global = ("tools.byProvider".to_string(), &config.tools.by_provider);
    let own = own.map(|map| (format!("agents.list[{}].tools.byProvider", agent.id), map));
    [Some(global), own]
        .into_iter()
        .flatten()
        .find_map(|(path, entries)| {
            let (name, policy) = [model.as_str(), provider]
                .into_iter()
                .find_map(|k| entries.get(k).map(|p| (k, p)))?;
            provider_refuses(&format!("{path}.{name}"), policy, tool)
        })
}

/// Why one `byProvider` entry (at `path`) leaves `tool` out, if it does.
fn provider_refuses(path: &str, policy: &AgentToolPolicy, tool: &str) -> Option<String> {
    if let Some(profile) = policy.profile
        && !profile_entries(profile).iter().any(|p| covers(p, tool))
    {
        return Some(format!(
            "{path}.profile \"{}\" leaves it out",
            profile.as_str()
        ));
    }
    match glob_allowed(tool, &policy.allow, &policy.deny) {
        true => None,
        false => Some(format!("{path}.allow/deny")),
    }
}

/// Whether an allow list names `tool` (the grant `group:runtime` needs without a profile).
fn named(config: &Config, agent: &ResolvedAgent, tool: &str) -> bool {
    let lists = [
        &config.tools.allow,
        &agent.tools_allow,
        &config.tools.subagents.tools.allow,
    ];
    lists
        .iter()
        .any(|list| list.iter().any(|p| covers(p, tool)))
}

fn is_runtime(tool: &str) -> bool {
    in_group("group:runtime", tool) == Some(true)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn allow_and_deny_lists_take_names_globs_and_groups() {
        assert!(glob_allowed("sessions_list", &[], &[]));
        assert!(glob_allowed("sessions_list", &s(&["sessions_*"]), &[]));
        assert!(!glob_allowed(
            "sessions_list",
            &s(&["sessions_*"]),
            &s(&["sessions_list"])
        ));
        assert!(!glob_allowed("exec", &s(&["sessions_*"]), &[]));
        assert!(glob_allowed(
            "time__get_current_time",
            &s(&["*__get_*"]),
            &[]
        ));
        assert!(!glob_allowed(
            "time__convert_time",
            &s(&["time__*"]),
            &s(&["*convert*"])
        ));
        assert!(glob_allowed("apply_patch", &s(&["group:fs"]), &[]));
        assert!(!glob_allowed(
            "write",
            &s(&["group:openclaw"]),
            &s(&["group:fs"])
        ));
        assert!(!glob_allowed("time__now", &s(&["group:openclaw"]), &[]));
    }

    fn agent_with(config: &Config) -> ResolvedAgent {
        config.agent("main")
    }

    fn offered(config: &Config, key: &str, tools: &[&str]) -> Vec<String> {
        let key = SessionKey::from_canonical(key.to_string());
        let agent = agent_with(config);
        tools
            .iter()
            .filter(|t| tool_allowed(config, &key, &agent, t).is_ok())
            .map(|t| t.to_string())
            .collect()
    }

    const SOME: &[&str] = &[
        "read",
        "exec",
        "process",
        "sessions_send",
        "session_status",
        "message",
        "time__now",
    ];

    #[test]
    fn without_a_profile_commands_need_a_policy_that_names_them() {
        let mut config = Config::default();
        assert_eq!(
            offered(&config, "agent:main:main", SOME),
            s(&[
                "read",
                "sessions_send",
                "session_status",
                "message",
                "time__now"
            ])
        );
        config.tools.allow = s(&["group:runtime", "read"]);
        assert_eq!(
            offered(&config, "agent:main:main", SOME),
            s(&["read", "exec", "process"])
        );
        let refused = tool_allowed(
            &Config::default(),
            &SessionKey::from_canonical("agent:main:main".into()),
            &agent_with(&Config::default()),
            "exec",
        )
        .unwrap_err();
        assert!(
            refused.message.contains("names group:runtime"),
            "{}",
            refused.message
        );
    }

    #[test]
    fn profiles_give_their_groups_and_allow_lists_narrow_them() {
        let mut config = Config::default();
        config.tools.profile = Some(ToolProfile::Coding);
        assert_eq!(
            offered(&config, "agent:main:main", SOME),
            s(&["read", "exec", "process", "sessions_send", "session_status"])
        );
        config.tools.profile = Some(ToolProfile::Minimal);
        assert_eq!(
            offered(&config, "agent:main:main", SOME),
            s(&["session_status"])
        );
        config.tools.profile = Some(ToolProfile::Messaging);
        assert_eq!(
            offered(&config, "agent:main:main", SOME),
            s(&["sessions_send", "session_status", "message"])
        );
        config.tools.profile = Some(ToolProfile::Full);
        config.tools.deny = s(&["group:runtime", "group:messaging"]);
        assert_eq!(
            offered(&config, "agent:main:main", SOME),
            s(&["read", "sessions_send", "session_status", "time__now"])
        );
    }

    #[test]
    fn a_sub_agent_gets_the_built_ins_without_the_session_tools() {
        let mut config = Config::default();
        config.tools.profile = Some(ToolProfile::Full);
        assert_eq!(
            offered(&config, "agent:main:subagent:x", SOME),
            s(&[
                "read",
                "exec",
                "process",
                "session_status",
                "message",
                "time__now"
            ])
        );
    }

    #[test]
    fn a_provider_or_a_model_narrows_the_tools_of_agents_on_it() {
        let mut config = Config::default();
        config.agents.defaults.model = crate::config::ModelRef::new("openai/gpt-4o-mini");
        let policy = |deny: &[&str]| crate::config::AgentToolPolicy {
            deny: s(deny),
            ..Default::default()
        };
        config
            .tools
            .by_provider
            .insert("openai".into(), policy(&["message"]));
        assert_eq!(
            offered(&config, "agent:main:main", SOME),
            s(&["read", "sessions_send", "session_status", "time__now"])
        );
        config.tools.by_provider.insert(
            "openai/gpt-4o-mini".into(),
            crate::config::AgentToolPolicy {
                profile: Some(ToolProfile::Minimal),
                ..Default::default()
            },
        );
        assert_eq!(
            offered(&config, "agent:main:main", SOME),
            s(&["session_status"])
        );
        let key = SessionKey::from_canonical("agent:main:main".into());
        let refused = tool_allowed(&config, &key, &config.agent("main"), "read").unwrap_err();
        assert!(
            refused
                .message
                .contains("tools.byProvider.openai/gpt-4o-mini.profile \"minimal\""),
            "{}",
            refused.message
        );
    }

    #[test]
    fn an_agents_own_provider_entry_narrows_only_that_agent() {
        let mut config = Config::default();
        config.agents.defaults.model = crate::config::ModelRef::new("openai/gpt-4o-mini");
        let mut main = crate::config::AgentEntry {
            id: "main".into(),
            ..Default::default()
        };
        main.tools.by_provider.insert(
            "openai".into(),
            crate::config::AgentToolPolicy {
                deny: s(&["read"]),
                ..Default::default()
            },
        );
        let other = crate::config::AgentEntry {
            id: "other".into(),
            ..Default::default()
        };
        config.agents.list = vec![main, other];
        assert_eq!(
            offered(&config, "agent:main:main", SOME),
            s(&["sessions_send", "session_status", "message", "time__now"])
        );
        let key = SessionKey::from_canonical("agent:other:main".into());
        let other = config.agent("other");
        assert!(tool_allowed(&config, &key, &other, "read").is_ok());
        let key = SessionKey::from_canonical("agent:main:main".into());
        let refused = tool_allowed(&config, &key, &config.agent("main"), "read").unwrap_err();
        assert!(
            refused
                .message
                .contains("agents.list[main].tools.byProvider.openai.allow/deny"),
            "{}",
            refused.message
        );
    }

    #[test]
    fn an_unknown_group_is_named_with_the_known_ones() {
        assert!(known_group("group:fs").is_ok() && known_group("read").is_ok());
        let known = known_group("group:files").unwrap_err();
        assert!(
            known.starts_with("one of group:fs, group:runtime,"),
            "{known}"
        );
    }
}
