//! Model references, agent resolution, id normalisation and redaction.

use pretty_assertions::assert_eq;

use super::{error_text, load};
use crate::config::*;

#[test]
fn model_refs_take_both_forms() {
    let text = r#"{
      models: { providers: {
        OpenAI: { api: "openai-completions", models: [ { id: "gpt-4o-mini" }, { id: "gpt-4o" } ] },
        local: { api: "openai-completions" },
      } },
      agents: {
        defaults: { model: { primary: "openai/gpt-4o", fallbacks: ["local/anything", "builtin/echo"] },
                    subagents: { model: "OpenAI/gpt-4o-mini" } },
        list: [ { id: "a", model: "builtin/echo" } ],
      },
    }"#;
    let config = load(text).unwrap_or_else(|err| panic!("{err}")).config;
    assert_eq!(
        config.agents.defaults.model,
        ModelRef {
            primary: "openai/gpt-4o".to_owned(),
            fallbacks: vec!["local/anything".to_owned(), "builtin/echo".to_owned()],
        }
    );
    assert_eq!(
        config.agents.defaults.subagents.model,
        Some(ModelRef::new("openai/gpt-4o-mini"))
    );
    assert_eq!(
        config.agents.list[0].model,
        Some(ModelRef::new("builtin/echo"))
    );
    assert_eq!(
        ModelRef::split("openrouter/anthropic/claude"),
        Some(("openrouter", "anthropic/claude"))
    );
    assert_eq!(ModelRef::split("no-slash"), None);

    assert_eq!(
        error_text(
            r#"{ models: { providers: { openai: { api: "openai-completions", models: [ { id: "gpt-4o-mini" } ] },
                                        local: { api: "openai-completions" } } },
                 agents: { defaults: { model: "openai/gpt-5" } } }"#
        ),
        r#"line 3: config error at agents.defaults.model: "openai/gpt-5" is not allowed; expected one of "builtin/echo", "builtin/scripted", "local/<any model>", "openai/gpt-4o-mini""#
    );
    assert_eq!(
        error_text(
            r#"{ agents: { defaults: { model: { primary: "builtin/echo", fallbacks: ["nope"] } } } }"#
        ),
        r#"line 1: config error at agents.defaults.model.fallbacks[0]: "nope" is not allowed; expected a "provider/model" reference"#
    );
    assert_eq!(
        error_text("{ agents: { defaults: { model: 7 } } }"),
        r#"line 1: config error at agents.defaults.model: expected a "provider/model" string or { primary: "provider/model", fallbacks: [...] }, got 7"#
    );
}

#[test]
fn redacted_hides_every_secret() {
    let text = r#"{
      gateway: { auth: { token: "gw-secret" } },
      models: { providers: { openai: { api: "openai-completions", apiKey: "sk-secret",
                                       headers: { Authorization: "Bearer sk-secret" } } } },
      channels: { webhook: { accounts: { inbox: { token: "wh-secret", url: "https://example.com/in" } } },
                  telegram: { botToken: "bot-secret" },
                  slack: { botToken: "xoxb-secret", appToken: "xapp-secret",
                           accounts: { ops: { botToken: "xoxb-ops-secret", appToken: "xapp-ops-secret" } } },
                  matrix: { accessToken: "mx-secret", password: "mx-pw-secret",
                            accounts: { ops: { password: "mx-ops-secret" } } } },
      hooks: { token: "hook-secret" },
      observability: { otlp: { endpoint: "https://collector.example", headers: { "x-api-key": "otlp-secret" } } },
    }"#;
    let config = load(text).unwrap_or_else(|err| panic!("{err}")).config;
    let redacted = config.redacted();
    let shown = serde_json::to_string(&redacted).unwrap_or_default();
    assert!(!shown.contains("secret"), "{shown}");
    assert_eq!(redacted.gateway.auth.token.as_deref(), Some(REDACTED));
    assert_eq!(
        redacted.models.providers["openai"].api_key.as_deref(),
        Some(REDACTED)
    );
    assert_eq!(
        redacted.models.providers["openai"].headers["Authorization"],
        REDACTED
    );
    assert_eq!(
        redacted.channels.webhook.accounts["inbox"].token.as_deref(),
        Some(REDACTED)
    );
    assert_eq!(
        redacted.channels.telegram.bot.bot_token.as_deref(),
        Some(REDACTED)
    );
    assert_eq!(redacted.hooks.token.as_deref(), Some(REDACTED));
    assert_eq!(redacted.observability.otlp.headers["x-api-key"], REDACTED);
    let matrix = &redacted.channels.matrix.bot;
    assert_eq!(matrix.access_token.as_deref(), Some(REDACTED));
    assert_eq!(matrix.password.as_deref(), Some(REDACTED));
    // Everything else is untouched, and absent secrets stay absent.
    assert_eq!(
        redacted.channels.webhook.accounts["inbox"].url.as_deref(),
        Some("https://example.com/in")
    );
    assert_eq!(Config::default().redacted(), Config::default());
}

#[test]
fn the_default_agent_is_the_flagged_one_else_the_first_else_main() {
    assert_eq!(Config::default().default_agent_id(), "main");
    assert_eq!(Config::default().agent_ids(), vec!["main"]);

    let first = load(r#"{ agents: { list: [ { id: "Alpha" }, { id: "beta" } ] } }"#)
        .unwrap_or_else(|err| panic!("{err}"))
        .config;
    assert_eq!(first.default_agent_id(), "alpha");
    assert_eq!(first.agent_ids(), vec!["alpha", "beta"]);

    let flagged =
        load(r#"{ agents: { list: [ { id: "alpha" }, { id: "beta", default: true } ] } }"#)
            .unwrap_or_else(|err| panic!("{err}"))
            .config;
    assert_eq!(flagged.default_agent_id(), "beta");
}

#[test]
fn an_agent_merges_its_overrides_onto_the_defaults() {
    let text = r#"{
      agents: {
        defaults: { model: "builtin/echo", sandbox: { mode: "non-main", sessionToolsVisibility: "all" },
                    subagents: { model: "builtin/scripted" } },
        list: [
          { id: "main", default: true, name: "Main", systemPrompt: "Be kind.",
            subagents: { allowAgents: ["Research", "*"] }, tools: { deny: ["exec"] } },
          { id: "research", model: { primary: "builtin/scripted", fallbacks: ["builtin/echo"] },
            sandbox: { mode: "all" }, subagents: { model: "builtin/echo" } },
        ],
      },
    }"#;
    let config = load(text).unwrap_or_else(|err| panic!("{err}")).config;

    assert_eq!(
        config.agent("MAIN"),
        ResolvedAgent {
            id: "main".to_owned(),
            name: Some("Main".to_owned()),
            configured: true,
            is_default: true,
            system_prompt: Some("Be kind.".to_owned()),
            model: "builtin/echo".to_owned(),
            model_fallbacks: vec![],
            sandbox_mode: SandboxMode::NonMain,
            session_tools_visibility: SessionToolsVisibility::All,
            sandbox_network: false,
            allow_agents: vec!["research".to_owned(), "*".to_owned()],
            subagent_model: Some("builtin/scripted".to_owned()),
            tools_profile: None,
            tools_allow: vec![],
            tools_deny: vec!["exec".to_owned()],
            workspace: None,
            thinking_level: ThinkingLevel::Off,
        }
    );
    assert_eq!(
        config.agent("research"),
        ResolvedAgent {
            id: "research".to_owned(),
            name: None,
            configured: true,
            is_default: false,
            system_prompt: None,
            model: "builtin/scripted".to_owned(),
            model_fallbacks: vec!["builtin/echo".to_owned()],
            sandbox_mode: SandboxMode::All,
            session_tools_visibility: SessionToolsVisibility::All,
            sandbox_network: false,
            allow_agents: vec![],
            subagent_model: Some("builtin/echo".to_owned()),
            tools_profile: None,
            tools_allow: vec![],
            tools_deny: vec![],
            workspace: None,
            thinking_level: ThinkingLevel::Off,
        }
    );
    let stranger = config.agent("stranger");
    assert_eq!(
        (
            stranger.id.as_str(),
            stranger.configured,
            stranger.is_default,
            stranger.model.as_str()
        ),
        ("stranger", false, false, "builtin/echo")
    );
    assert_eq!(stranger.sandbox_mode, SandboxMode::NonMain);
}

#[test]
fn ids_are_normalised() {
    let text = r#"{
      models: { providers: { " Local ": { api: "openai-completions" } } },
      agents: { list: [ { id: " Research Bot " } ] },
      channels: { webhook: { accounts: { Inbox: { agentId: "Research Bot" } } } },
      session: { sendPolicy: { rules: [ { match: { channel: " Discord " }, action: "deny" } ] } },
    }"#;
    let config = load(text).unwrap_or_else(|err| panic!("{err}")).config;
    assert_eq!(
        config.models.providers.keys().collect::<Vec<_>>(),
        vec!["local"]
    );
    assert_eq!(
        config.agents.list[0].id,
        crate::keys::normalize_agent_id(" Research Bot ")
    );
    let inbox = &config.channels.webhook.accounts["inbox"];
    assert_eq!(
        inbox.agent_id.as_deref(),
        Some(config.agents.list[0].id.as_str())
    );
    assert_eq!(
        config.session.send_policy.rules[0]
            .r#match
            .channel
            .as_deref(),
        Some("discord")
    );
}

#[test]
fn tool_profiles_groups_and_workspaces_are_read_and_an_unknown_group_is_named() {
    let text = r#"{
      tools: { profile: "coding", deny: ["group:web"] },
      agents: { list: [ { id: "main", workspace: "~/agents/main",
                          tools: { profile: "minimal", allow: ["group:fs", "read"] } } ] },
    }"#;
    let config = load(text).unwrap_or_else(|err| panic!("{err}")).config;
    let main = config.agent("main");
    assert_eq!(
        main.tools_profile,
        Some(crate::config::ToolProfile::Minimal)
    );
    assert_eq!(main.workspace.as_deref(), Some("~/agents/main"));
    assert_eq!(
        config.agent("other").tools_profile,
        Some(crate::config::ToolProfile::Coding)
    );
    let text = error_text(r#"{ tools: { allow: ["group:files"], profile: "everything" } }"#);
    assert!(
        text.contains("tools.allow[0]: \"group:files\" is not allowed; expected one of group:fs, group:runtime,"),
        "{text}"
    );
    assert!(text.contains("tools.profile"), "{text}");
}

#[test]
fn sandbox_settings_are_read_and_bad_limits_and_paths_are_named() {
    let text = r#"{ agents: {
      defaults: { sandbox: { network: true, readOnlyPaths: ["/usr", "/opt/tools"],
                             limits: { cpuSeconds: 30, memoryMb: 256 }, uid: 4000 } },
      list: [ { id: "main", sandbox: { network: false } } ] } }"#;
    let config = load(text).unwrap_or_else(|err| panic!("{err}")).config;
    let sandbox = &config.agents.defaults.sandbox;
    assert_eq!(
        (
            sandbox.uid,
            sandbox.limits.cpu_seconds,
            sandbox.limits.memory_mb
        ),
        (4000, 30, 256)
    );
    assert_eq!(
        sandbox.limits.processes, 128,
        "an unset limit keeps its default"
    );
    assert!(!config.agent("main").sandbox_network && config.agent("other").sandbox_network);
    let text = error_text(
        r#"{ agents: { defaults: { sandbox: { readOnlyPaths: ["usr"], limits: { memoryMb: 1 } } } } }"#,
    );
    for expected in [
        "agents.defaults.sandbox.readOnlyPaths[0]: \"usr\" is not allowed; expected an absolute path such as /usr",
        "agents.defaults.sandbox.limits.memoryMb: 1 is not allowed",
    ] {
        assert!(text.contains(expected), "{text}");
    }
}
