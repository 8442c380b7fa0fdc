//! Tests of the config contract as a user meets it: the SPEC §3 example, the defaults, and the
//! exact text of every kind of error.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;

use super::*;

mod a2a;
mod agents;
mod chat;
mod errors;
mod import;
mod mcp;
mod reference;
mod store;

pub(super) fn no_env(_: &str) -> Option<String> {
    None
}

pub(super) fn load(text: &str) -> Result<LoadedConfig, ConfigError> {
    load_str(text, "test.json5", &no_env)
}

pub(super) fn error_text(text: &str) -> String {
    match load(text) {
        Ok(loaded) => panic!("expected an error, loaded {:?}", loaded.config),
        Err(err) => err.to_string(),
    }
}

/// SPEC §3's example with its `…` placeholders filled in or removed.
const SPEC_EXAMPLE: &str = r#"{
  gateway: { bind: "loopback", port: 18790,                 // "loopback" | "lan" | an IP
             auth: { mode: "token", token: "${SWITCHBOARD_TOKEN}" } },  // generated and stored if absent
  models: { providers: {
    openai:    { api: "openai-completions", baseUrl: "https://api.openai.com/v1", apiKey: "${OPENAI_API_KEY}",
                 models: [{ id: "gpt-4o-mini", contextWindow: 128000, cost: { input: 0.15, output: 0.6 } }] },
    anthropic: { api: "anthropic-messages", apiKey: "${ANTHROPIC_API_KEY}", models: [{ id: "claude-sonnet-4-5" }] },
    local:     { api: "openai-completions", baseUrl: "http://127.0.0.1:11434/v1", models: [{ id: "qwen3:8b" }] },
  } },                                                       // cost = USD per million tokens
  agents: {
    defaults: {
      model: "openai/gpt-4o-mini",                           // "provider/model"; also { primary: "…" }
      timeoutSeconds: 600, maxConcurrent: 4,
      sandbox: { mode: "off", sessionToolsVisibility: "spawned" },   // mode: off | non-main | all
      subagents: { model: null, maxConcurrent: 8, archiveAfterMinutes: 60 },
    },
    list: [ { id: "main", default: true, name: "Main", systemPrompt: "You are Main.",
              subagents: { allowAgents: ["research"] }, sandbox: { mode: "off" },
              tools: { allow: [], deny: [] } } ],
  },
  session: {
    scope: "per-sender", mainKey: "main", dmScope: "main",
    sendPolicy: { rules: [ { match: { channel: "discord", chatType: "group" }, action: "deny" } ], default: "allow" },
    agentToAgent: { maxPingPongTurns: 5 },
  },
  tools: {
    agentToAgent: { enabled: false, allow: [] },            // cross-agent list/history/send
    subagents: { tools: { allow: [], deny: [] } },
  },
  channels: { webhook: {}, telegram: {} },
  hooks: { enabled: false },
  cron: { enabled: true, maxConcurrentRuns: 1 },
}"#;

fn provider(api: ProviderApi, base_url: Option<&str>, models: Vec<ModelEntry>) -> ProviderConfig {
    ProviderConfig {
        api,
        base_url: base_url.map(str::to_owned),
        models,
        ..ProviderConfig::default()
    }
}

fn model(id: &str) -> ModelEntry {
    ModelEntry {
        id: id.to_owned(),
        ..ModelEntry::default()
    }
}

#[test]
fn the_spec_example_loads_with_defaults_filled_and_no_env_set() {
    let loaded = load(SPEC_EXAMPLE).unwrap_or_else(|err| panic!("{err}"));

    let mut expected = Config::default();
    expected.models.providers = BTreeMap::from([
        (
            "openai".to_owned(),
            provider(
                ProviderApi::OpenAiCompletions,
                Some("https://api.openai.com/v1"),
                vec![ModelEntry {
                    context_window: Some(128_000),
                    cost: Some(ModelCost {
                        input: 0.15,
                        output: 0.6,
                        cache_read: None,
                        cache_write: None,
                    }),
                    ..model("gpt-4o-mini")
                }],
            ),
        ),
        (
            "anthropic".to_owned(),
            provider(
                ProviderApi::AnthropicMessages,
                None,
                vec![model("claude-sonnet-4-5")],
            ),
        ),
        (
            "local".to_owned(),
            provider(
                ProviderApi::OpenAiCompletions,
                Some("http://127.0.0.1:11434/v1"),
                vec![model("qwen3:8b")],
            ),
        ),
    ]);
    expected.agents.defaults.model = ModelRef::new("openai/gpt-4o-mini");
    expected.agents.list = vec![AgentEntry {
        id: "main".to_owned(),
        default: true,
        name: Some("Main".to_owned()),
        system_prompt: Some("You are Main.".to_owned()),
        subagents: AgentSubagents {
            allow_agents: vec!["research".to_owned()],
            model: None,
        },
        sandbox: SandboxOverride {
            mode: Some(SandboxMode::Off),
            session_tools_visibility: None,
            network: None,
        },
        ..AgentEntry::default()
    }];
    expected.session.send_policy.rules = vec![SendPolicyRule {
        r#match: SendPolicyMatch {
            channel: Some("discord".to_owned()),
            chat_type: Some(ChatType::Group),
            key_prefix: None,
        },
        action: SendAction::Deny,
    }];

    assert_eq!(loaded.config, expected);
    assert_eq!(loaded.unknown_paths, Vec::<String>::new());
    assert_eq!(loaded.origin, "test.json5");
}

#[test]
fn the_spec_example_picks_up_secrets_from_the_environment() {
    let env = |name: &str| match name {
        "OPENAI_API_KEY" => Some("sk-test".to_owned()),
        "SWITCHBOARD_TOKEN" => Some("gw-token".to_owned()),
        _ => None,
    };
    let config = load_str(SPEC_EXAMPLE, "example", &env)
        .unwrap_or_else(|err| panic!("{err}"))
        .config;
    assert_eq!(config.gateway.auth.token.as_deref(), Some("gw-token"));
    assert_eq!(
        config.models.providers["openai"].api_key.as_deref(),
        Some("sk-test")
    );
    assert_eq!(config.models.providers["anthropic"].api_key, None);
}

#[test]
fn every_default_equals_the_spec() {
    let config = Config::default();
    assert_eq!(config.gateway.bind, GatewayBind::Loopback);
    assert_eq!(config.gateway.port, 18790);
    assert_eq!(config.gateway.auth.mode, AuthMode::Token);
    assert_eq!(config.gateway.auth.token, None);
    assert_eq!(config.gateway.max_payload_bytes, 1_048_576);
    assert_eq!(config.gateway.limits.max_unauthenticated, 256);
    assert_eq!(config.gateway.limits.max_unauthenticated_per_address, 32);
    assert!(config.models.providers.is_empty());
    let defaults = &config.agents.defaults;
    assert_eq!(defaults.model, ModelRef::new("builtin/scripted"));
    assert_eq!(defaults.timeout_seconds, 600);
    assert_eq!(defaults.max_concurrent, 4);
    assert_eq!(defaults.sandbox.mode, SandboxMode::Off);
    assert_eq!(
        defaults.sandbox.session_tools_visibility,
        SessionToolsVisibility::Spawned
    );
    assert_eq!(defaults.subagents.model, None);
    assert_eq!(defaults.subagents.max_concurrent, 8);
    assert_eq!(defaults.subagents.archive_after_minutes, 60);
    assert!(config.agents.list.is_empty());
    assert_eq!(config.session.scope, SessionScope::PerSender);
    assert_eq!(config.session.main_key, "main");
    assert_eq!(config.session.dm_scope, DmScope::Main);
    assert!(config.session.send_policy.rules.is_empty());
    assert_eq!(config.session.send_policy.default, SendAction::Allow);
    assert_eq!(config.session.agent_to_agent.max_ping_pong_turns, 5);
    assert_eq!(config.session.agent_to_agent.max_hops, 6);
    assert!(!config.tools.agent_to_agent.enabled);
    assert!(config.tools.agent_to_agent.allow.is_empty());
    assert_eq!(config.tools.subagents.tools, ToolPolicy::default());
    assert!(!config.channels.webhook.enabled);
    assert!(config.channels.webhook.accounts.is_empty());
    assert!(!config.channels.telegram.enabled);
    let telegram = &config.channels.telegram.bot;
    assert_eq!(
        telegram.api_base.as_deref(),
        Some("https://api.telegram.org")
    );
    assert_eq!(telegram.poll_timeout_seconds, Some(30));
    assert_eq!(config.hooks, HooksConfig::default());
    assert!(!config.hooks.enabled);
    assert!(config.cron.enabled);
    assert_eq!(config.cron.max_concurrent_runs, 1);

    // An empty file is the default, and the default is valid.
    assert_eq!(load("{}").map(|l| l.config).ok(), Some(Config::default()));
    assert_eq!(
        load("// nothing\n{ }").map(|l| l.config).ok(),
        Some(Config::default())
    );
    assert_eq!(Config::default().validated().ok(), Some(Config::default()));
}

#[test]
fn a_shown_config_loads_back_to_the_same_config() {
    let original = load(SPEC_EXAMPLE)
        .unwrap_or_else(|err| panic!("{err}"))
        .config;
    let shown = serde_json::to_string_pretty(&original).unwrap_or_default();
    let reloaded = load(&shown).unwrap_or_else(|err| panic!("{err}\n{shown}"));
    assert_eq!(reloaded.config, original);
    assert_eq!(reloaded.unknown_paths, Vec::<String>::new());
}

#[test]
fn env_references_are_substituted_in_every_string() {
    let env = |name: &str| match name {
        "PROMPT" => Some("be brief".to_owned()),
        "HOST" => Some("127.0.0.1:8080".to_owned()),
        _ => None,
    };
    let text = r#"{
      models: { providers: { local: { api: "openai-completions", baseUrl: "http://${HOST}/v1",
                                      headers: { "X-Note": "$${HOST} stays" } } } },
      agents: { list: [ { id: "a", systemPrompt: "${PROMPT}; costs $5; ${lower} ok" } ] },
    }"#;
    let config = load_str(text, "t", &env)
        .unwrap_or_else(|err| panic!("{err}"))
        .config;
    let local = &config.models.providers["local"];
    assert_eq!(local.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
    assert_eq!(local.headers["X-Note"], "${HOST} stays");
    assert_eq!(
        config.agents.list[0].system_prompt.as_deref(),
        Some("be brief; costs $5; ${lower} ok")
    );
}

#[test]
fn an_unset_secret_is_absent_unless_it_is_required() {
    let text = r#"{
      gateway: { auth: { token: "${GW}" } },
      models: { providers: { openai: { api: "openai-completions", apiKey: "${KEY}" } } },
      channels: { webhook: { accounts: { inbox: { token: "${INBOX}" } } }, telegram: { botToken: "${BOT}" } },
      hooks: { token: "${HOOK}" },
    }"#;
    let config = load(text).unwrap_or_else(|err| panic!("{err}")).config;
    assert_eq!(config.gateway.auth.token, None);
    assert_eq!(config.models.providers["openai"].api_key, None);
    assert_eq!(config.channels.webhook.accounts["inbox"].token, None);
    assert_eq!(config.channels.telegram.bot.bot_token, None);
    assert_eq!(config.hooks.token, None);

    assert_eq!(
        error_text(r#"{ hooks: { enabled: true, token: "${HOOK_TOKEN}" } }"#),
        "line 1: config error at hooks.token: missing; expected a token (required while hooks.enabled is true); \
         environment variable HOOK_TOKEN is not set"
    );
    assert_eq!(
        error_text("{ hooks: { enabled: true } }"),
        "line 1: config error at hooks.token: missing; expected a token (required while hooks.enabled is true)"
    );
}

#[test]
fn files_load_and_a_missing_file_means_defaults() {
    let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
    let path = dir.path().join("config.json5");
    std::fs::write(&path, "{ gateway: { port: 0 } }").unwrap_or_else(|err| panic!("{err}"));
    let loaded = load_file(&path, &no_env).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(loaded.config.gateway.port, 0);
    assert_eq!(loaded.origin, path.display().to_string());

    let missing = dir.path().join("absent.json5");
    assert!(matches!(
        load_file(&missing, &no_env),
        Err(ConfigError::Io { .. })
    ));
    let defaults = load_file_or_default(&missing, &no_env).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(defaults.config, Config::default());

    std::fs::write(&path, "{ gateway: { port: 0 ").unwrap_or_else(|err| panic!("{err}"));
    let err = load_file_or_default(&path, &no_env).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("config syntax error in {}", path.display())),
        "{err}"
    );
}

#[test]
fn allowed_origins_are_normalised_as_browsers_send_them() {
    let config =
        load(r#"{ gateway: { controlUi: { allowedOrigins: [" HTTP://Box.LAN:18790/ "] } } }"#)
            .unwrap()
            .config;
    assert_eq!(
        config.gateway.control_ui.allowed_origins,
        vec!["http://box.lan:18790".to_string()]
    );
}
