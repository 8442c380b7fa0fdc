//! The access decision, tested against a plain restatement of SPEC §8.1 over every combination of
//! the facts it depends on, plus named cases for the corners.

use pretty_assertions::assert_eq;

use super::{NODE_SPAWN_DENIED, SUBAGENT_SPAWN_DENIED, agent_allowed, wildcard_match};
use crate::access::{
    Decision, Denial, Operation, Requester, Target, decide, is_sandboxed, requester,
};
use crate::config::{AgentEntry, Config, SandboxMode, SessionScope, SessionToolsVisibility};

const ME: &str = "main";
const OTHER: &str = "research-bot";

/// `tools.agentToAgent` as one dimension of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum A2a {
    Disabled,
    /// Enabled, empty allow list (every agent).
    EnabledEveryAgent,
    /// Enabled, both agents listed (one exactly, one by wildcard).
    EnabledBothListed,
    /// Enabled, the list leaves out the target's agent.
    EnabledTargetNotListed,
    /// Enabled, the list leaves out the requester's agent.
    EnabledRequesterNotListed,
}

impl A2a {
    const ALL: [A2a; 5] = [
        A2a::Disabled,
        A2a::EnabledEveryAgent,
        A2a::EnabledBothListed,
        A2a::EnabledTargetNotListed,
        A2a::EnabledRequesterNotListed,
    ];

    fn settings(self) -> (bool, Vec<String>) {
        let list = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        match self {
            A2a::Disabled => (false, vec![]),
            A2a::EnabledEveryAgent => (true, vec![]),
            A2a::EnabledBothListed => (true, list(&["main", "research-*"])),
            A2a::EnabledTargetNotListed => (true, list(&["main", "ops"])),
            A2a::EnabledRequesterNotListed => (true, list(&["research-*"])),
        }
    }
}

/// What the requester session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RequesterKind {
    /// `agent:main:discord:group:dev`.
    Plain,
    /// `agent:main:subagent:<uuid>`.
    Subagent,
    /// `agent:main:node-pi`: confined to itself whatever the sandbox settings.
    Node,
}

impl RequesterKind {
    const ALL: [RequesterKind; 3] = [Self::Plain, Self::Subagent, Self::Node];

    fn key(self) -> &'static str {
        match self {
            Self::Plain => "agent:main:discord:group:dev",
            Self::Subagent => "agent:main:subagent:11111111-1111-4111-8111-111111111111",
            Self::Node => "agent:main:node-pi",
        }
    }
}

/// Who spawned the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpawnedBy {
    Me,
    SomeoneElse,
    Nobody,
}

#[derive(Debug, Clone, Copy)]
struct Case {
    sandboxed: bool,
    visibility: SessionToolsVisibility,
    other_agent: bool,
    a2a: A2a,
    spawned_by: SpawnedBy,
    requester: RequesterKind,
    op: Operation,
}

/// SPEC §8.1 restated, in the documented order: spawn rules, sandbox, cross-agent. A node
/// session is a sandboxed session that spawned nothing and may spawn nothing, whatever the
/// sandbox settings (issue 30).
fn expected(case: &Case, target_key: &str) -> Option<String> {
    let node = case.requester == RequesterKind::Node;
    if case.op == Operation::Spawn {
        return match case.requester {
            RequesterKind::Subagent => {
                Some("sessions_spawn is not allowed from sub-agent sessions".to_owned())
            }
            RequesterKind::Node => Some(
                "sessions_spawn is not allowed from node sessions (a node session is confined \
                 to itself)"
                    .to_owned(),
            ),
            RequesterKind::Plain => None,
        };
    }
    let spawned_only =
        node || (case.sandboxed && case.visibility == SessionToolsVisibility::Spawned);
    if spawned_only && (node || case.spawned_by != SpawnedBy::Me) {
        return Some(format!(
            "Session not visible from this sandboxed agent session: {target_key}"
        ));
    }
    if case.other_agent {
        let reach = format!("agent main cannot reach session {target_key} of agent research-bot");
        return match case.a2a {
            A2a::Disabled => Some(format!(
                "Agent-to-agent access is disabled (tools.agentToAgent.enabled is false): {reach}"
            )),
            A2a::EnabledTargetNotListed => Some(format!(
                "Agent-to-agent access is not allowed by tools.agentToAgent.allow (main, ops): {reach}"
            )),
            A2a::EnabledRequesterNotListed => Some(format!(
                "Agent-to-agent access is not allowed by tools.agentToAgent.allow (research-*): {reach}"
            )),
            A2a::EnabledEveryAgent | A2a::EnabledBothListed => None,
        };
    }
    None
}

fn agent(id: &str) -> AgentEntry {
    AgentEntry {
        id: id.to_owned(),
        ..AgentEntry::default()
    }
}

fn config_for(case: &Case) -> Config {
    let mut config = Config::default();
    config.agents.list = vec![agent(ME), agent(OTHER)];
    config.agents.defaults.sandbox.mode = if case.sandboxed {
        SandboxMode::All
    } else {
        SandboxMode::Off
    };
    config.agents.defaults.sandbox.session_tools_visibility = case.visibility;
    let (enabled, allow) = case.a2a.settings();
    config.tools.agent_to_agent.enabled = enabled;
    config.tools.agent_to_agent.allow = allow;
    config
}

fn check(case: &Case) {
    let config = config_for(case);
    let requester_key = case.requester.key();
    let req = requester(&config, requester_key);
    assert_eq!(
        (
            req.sandboxed,
            req.sees_all,
            req.is_subagent,
            req.confined,
            req.agent_id.as_str()
        ),
        (
            case.sandboxed,
            case.visibility == SessionToolsVisibility::All,
            case.requester == RequesterKind::Subagent,
            case.requester == RequesterKind::Node,
            ME
        ),
        "requester facts for {case:?}"
    );
    let target_agent = if case.other_agent { OTHER } else { ME };
    let target_key = format!("agent:{target_agent}:subagent:22222222-2222-4222-8222-222222222222");
    let spawned_by = match case.spawned_by {
        SpawnedBy::Me => Some(requester_key),
        SpawnedBy::SomeoneElse => Some("agent:main:main"),
        SpawnedBy::Nobody => None,
    };
    let target = Target {
        key: &target_key,
        agent_id: target_agent,
        spawned_by,
    };
    let want: Decision = match expected(case, &target_key) {
        None => Ok(()),
        Some(message) => Err(Denial { message }),
    };
    assert_eq!(decide(&config, &req, target, case.op), want, "{case:?}");
}

#[test]
fn every_combination_follows_the_rules() {
    let mut cases = 0;
    for sandboxed in [false, true] {
        for visibility in [SessionToolsVisibility::Spawned, SessionToolsVisibility::All] {
            for other_agent in [false, true] {
                for a2a in A2a::ALL {
                    for spawned_by in [SpawnedBy::Me, SpawnedBy::SomeoneElse, SpawnedBy::Nobody] {
                        for requester in RequesterKind::ALL {
                            for op in Operation::ALL {
                                check(&Case {
                                    sandboxed,
                                    visibility,
                                    other_agent,
                                    a2a,
                                    spawned_by,
                                    requester,
                                    op,
                                });
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 2 * 2 * 2 * 5 * 3 * 3 * 4);
}

fn sandboxed_config() -> Config {
    let mut config = Config::default();
    config.agents.defaults.sandbox.mode = SandboxMode::All;
    config
}

#[test]
fn a_sandboxed_session_reaches_itself_but_lists_only_what_it_spawned() {
    let config = sandboxed_config();
    let key = "agent:main:cron:nightly";
    let req = requester(&config, key);
    assert!(req.sandboxed && !req.sees_all);
    let me = Target {
        key,
        agent_id: "main",
        spawned_by: None,
    };
    for op in Operation::ALL {
        let decided = decide(&config, &req, me, op);
        assert_eq!(
            decided.is_ok(),
            op != Operation::List,
            "{op:?}: {decided:?}"
        );
    }
}

#[test]
fn a_sandboxed_session_does_not_see_grandchildren_or_its_parent() {
    let config = sandboxed_config();
    let req = requester(&config, "agent:main:subagent:child");
    let parent = Target {
        key: "agent:main:main",
        agent_id: "main",
        spawned_by: None,
    };
    let grandchild = Target {
        key: "agent:main:subagent:grandchild",
        agent_id: "main",
        spawned_by: Some("agent:main:subagent:other-child"),
    };
    assert_eq!(
        decide(&config, &req, parent, Operation::Send),
        Err(Denial {
            message: "Session not visible from this sandboxed agent session: agent:main:main"
                .to_owned()
        })
    );
    assert!(decide(&config, &req, grandchild, Operation::History).is_err());
}

#[test]
fn the_global_bucket_is_shown_as_main_in_denials() {
    let config = sandboxed_config();
    let req = requester(&config, "agent:main:cron:nightly");
    let global = Target {
        key: "global",
        agent_id: "main",
        spawned_by: None,
    };
    assert_eq!(
        decide(&config, &req, global, Operation::History),
        Err(Denial {
            message: "Session not visible from this sandboxed agent session: main".to_owned()
        })
    );
}

#[test]
fn wildcard_patterns() {
    let cases = [
        ("*", "anything", true),
        ("*", "", true),
        ("research-*", "research-bot", true),
        ("research-*", "research-", true),
        ("research-*", "research", false),
        ("*-bot", "research-bot", true),
        ("*-bot", "research-bots", false),
        ("r*s*h-*", "research-bot", true),
        ("ma*n", "main", true),
        ("ma*n", "man", true),
        ("ma*n", "mains", false),
        ("main", "main", true),
        ("main", "mainx", false),
        ("**", "x", true),
        ("a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac", false),
        ("Research-*", "research-bot", true),
        ("", "main", false),
    ];
    for (pattern, text, want) in cases {
        assert_eq!(
            wildcard_match(pattern, text),
            want,
            "{pattern:?} vs {text:?}"
        );
    }
    assert!(agent_allowed(&[], "anyone"));
    assert!(agent_allowed(&[" OPS ".to_owned()], "ops"));
    assert!(!agent_allowed(&["ops".to_owned()], "main"));
}

#[test]
fn wildcard_allow_lists_open_cross_agent_access() {
    let mut config = Config::default();
    config.agents.list = vec![agent("main"), agent("research-bot"), agent("ops")];
    config.tools.agent_to_agent.enabled = true;
    let req = requester(&config, "agent:main:main");
    let research = Target {
        key: "agent:research-bot:main",
        agent_id: "research-bot",
        spawned_by: None,
    };
    let ops = Target {
        key: "agent:ops:main",
        agent_id: "ops",
        spawned_by: None,
    };
    config.tools.agent_to_agent.allow = vec!["*".to_owned()];
    assert_eq!(decide(&config, &req, ops, Operation::Send), Ok(()));
    config.tools.agent_to_agent.allow = vec!["main".to_owned(), "research-*".to_owned()];
    assert_eq!(decide(&config, &req, research, Operation::List), Ok(()));
    assert_eq!(
        decide(&config, &req, ops, Operation::List),
        Err(Denial {
            message: "Agent-to-agent access is not allowed by tools.agentToAgent.allow \
                      (main, research-*): agent main cannot reach session agent:ops:main of agent ops"
                .to_owned()
        })
    );
}

#[test]
fn the_global_requester_is_the_default_agent_and_not_sandboxed_under_non_main() {
    let mut config = Config::default();
    config.session.scope = SessionScope::Global;
    config.agents.defaults.sandbox.mode = SandboxMode::NonMain;
    let mut ops = agent("ops");
    ops.default = true;
    config.agents.list = vec![agent("main"), ops];
    assert_eq!(
        requester(&config, "global"),
        Requester {
            key: "global".to_owned(),
            agent_id: "ops".to_owned(),
            sandboxed: false,
            sees_all: false,
            is_subagent: false,
            confined: false,
        }
    );
    let cron = requester(&config, "agent:ops:cron:nightly");
    assert!(cron.sandboxed);
}

#[test]
fn sandbox_modes() {
    let mut config = Config::default();
    config.session.main_key = "work".to_owned();
    config.agents.list = vec![agent("main"), agent("ops")];
    // (mode, agent, key, sandboxed)
    let cases = [
        (SandboxMode::Off, "main", "agent:main:cron:x", false),
        (SandboxMode::Off, "main", "agent:main:work", false),
        (SandboxMode::All, "main", "agent:main:work", true),
        (SandboxMode::All, "main", "global", true),
        (SandboxMode::NonMain, "main", "agent:main:work", false),
        (SandboxMode::NonMain, "main", "global", false),
        (SandboxMode::NonMain, "main", "agent:main:main", true),
        (SandboxMode::NonMain, "main", "agent:main:cron:x", true),
        (SandboxMode::NonMain, "main", "agent:main:subagent:x", true),
        (SandboxMode::NonMain, "main", "agent:ops:work", true),
        (SandboxMode::NonMain, "MAIN", "agent:main:work", false),
    ];
    for (mode, agent_id, key, want) in cases {
        config.agents.defaults.sandbox.mode = mode;
        assert_eq!(
            is_sandboxed(&config, agent_id, key),
            want,
            "{mode} {agent_id} {key}"
        );
    }
}

#[test]
fn per_agent_sandbox_settings_override_the_defaults() {
    let mut config = Config::default();
    config.agents.defaults.sandbox.mode = SandboxMode::All;
    let mut open = agent("open");
    open.sandbox.mode = Some(SandboxMode::Off);
    let mut wide = agent("wide");
    wide.sandbox.session_tools_visibility = Some(SessionToolsVisibility::All);
    config.agents.list = vec![agent("main"), open, wide];

    let open_req = requester(&config, "agent:open:cron:x");
    assert!(!open_req.sandboxed);
    let wide_req = requester(&config, "agent:wide:cron:x");
    assert!(wide_req.sandboxed && wide_req.sees_all);
    let main_req = requester(&config, "agent:main:cron:x");
    assert!(main_req.sandboxed && !main_req.sees_all);

    let sibling = |agent_id: &'static str, key: &'static str| Target {
        key,
        agent_id,
        spawned_by: None,
    };
    assert_eq!(
        decide(
            &config,
            &wide_req,
            sibling("wide", "agent:wide:main"),
            Operation::History
        ),
        Ok(())
    );
    assert!(
        decide(
            &config,
            &main_req,
            sibling("main", "agent:main:main"),
            Operation::History
        )
        .is_err()
    );
}

#[test]
fn sub_agents_may_not_spawn_but_sandboxed_sessions_may() {
    let config = sandboxed_config();
    let child = Target {
        key: "agent:other:subagent:new",
        agent_id: "other",
        spawned_by: None,
    };
    let sub = requester(&config, "agent:main:subagent:x");
    assert_eq!(
        decide(&config, &sub, child, Operation::Spawn),
        Err(Denial {
            message: SUBAGENT_SPAWN_DENIED.to_owned()
        })
    );
    let sandboxed = requester(&config, "agent:main:cron:x");
    assert_eq!(decide(&config, &sandboxed, child, Operation::Spawn), Ok(()));
}

#[test]
fn a_node_session_is_confined_to_itself_whatever_the_sandbox_settings() {
    let mut config = Config::default();
    config.tools.agent_to_agent.enabled = true;
    let mut open = config.clone();
    open.agents.defaults.sandbox.mode = SandboxMode::Off;
    let mut wide = config.clone();
    wide.agents.defaults.sandbox.mode = SandboxMode::All;
    wide.agents.defaults.sandbox.session_tools_visibility = SessionToolsVisibility::All;
    for config in [open, wide] {
        for key in ["agent:main:node-pi", "agent:main:node:pi"] {
            let node = requester(&config, key);
            assert!(node.confined && node.sees_only_spawned(), "{key}: {node:?}");
            let itself = Target {
                key,
                agent_id: "main",
                spawned_by: None,
            };
            // Its own history and messages, as a sandboxed session; never in its own list.
            for op in [Operation::History, Operation::Send] {
                assert_eq!(decide(&config, &node, itself, op), Ok(()), "{key} {op:?}");
            }
            let victim = Target {
                key: "agent:main:victim",
                agent_id: "main",
                spawned_by: None,
            };
            // A session recorded as its child (only an operator's patch can say so) is no door.
            let child = Target {
                spawned_by: Some(key),
                ..victim
            };
            for target in [itself, victim, child] {
                for op in Operation::ALL {
                    let decided = decide(&config, &node, target, op);
                    let own = target.key == key && op != Operation::List;
                    let want = match op {
                        Operation::Spawn => Err(NODE_SPAWN_DENIED.to_owned()),
                        _ if own => Ok(()),
                        _ => Err(format!(
                            "Session not visible from this sandboxed agent session: {}",
                            target.key
                        )),
                    };
                    assert_eq!(
                        decided.map_err(|d| d.message),
                        want,
                        "{key} {op:?} {target:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn only_node_keys_are_confined() {
    let config = Config::default();
    for key in [
        "agent:main:main",
        "agent:main:cron:nightly",
        "agent:main:hook:1",
        "agent:main:discord:group:node-pi",
        "agent:main:nodes:x",
        "agent:main:subagent:x",
        "global",
    ] {
        let req = requester(&config, key);
        assert!(!req.confined && !req.sees_only_spawned(), "{key}: {req:?}");
    }
}
