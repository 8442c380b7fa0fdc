//! The reference's tool groups (`group:fs`, …): the vocabulary every tool allow/deny list may
//! use. Which tools a session gets is decided in `crate::access::tools`; the names live here so
//! `config check` can refuse a group that does not exist.

/// The reference's tool groups, by name. Tools it has and we do not yet (`memory_*`,
/// `browser`, …) are named so a config written for it means the same here.
const GROUPS: &[(&str, &[&str])] = &[
    ("group:fs", &["read", "write", "edit", "apply_patch"]),
    ("group:runtime", &["exec", "bash", "process"]),
    (
        "group:sessions",
        &[
            "sessions_list",
            "sessions_history",
            "sessions_send",
            "sessions_spawn",
            "session_status",
            "agents_list",
        ],
    ),
    ("group:web", &["web_search", "web_fetch"]),
    ("group:automation", &["cron", "gateway"]),
    ("group:messaging", &["message"]),
    ("group:memory", &["memory_search", "memory_get"]),
    ("group:ui", &["browser", "canvas"]),
    ("group:nodes", &["nodes"]),
];

/// Every built-in tool (`group:openclaw`, the reference's name for them all).
const ALL_BUILT_INS: &str = "group:openclaw";

/// Whether the group `name` holds `tool`; `None` when `name` is no group. Allocates nothing:
/// the policy asks it for every tool of every run.
pub fn in_group(name: &str, tool: &str) -> Option<bool> {
    if name == ALL_BUILT_INS {
        return Some(GROUPS.iter().any(|(_, tools)| tools.contains(&tool)));
    }
    GROUPS
        .iter()
        .find(|(group, _)| *group == name)
        .map(|(_, tools)| tools.contains(&tool))
}

/// The groups a tool belongs to (its place in `tools list`).
pub fn groups_of(tool: &str) -> Vec<&'static str> {
    GROUPS
        .iter()
        .filter(|(_, tools)| tools.contains(&tool))
        .map(|(group, _)| *group)
        .collect()
}

/// `Ok` unless `name` starts with `group:` and is no group; the error says which are.
pub fn known_group(name: &str) -> Result<(), String> {
    if !name.starts_with("group:") || in_group(name, "").is_some() {
        return Ok(());
    }
    let names: Vec<&str> = GROUPS.iter().map(|(g, _)| *g).collect();
    Err(format!("one of {}, {ALL_BUILT_INS}", names.join(", ")))
}
