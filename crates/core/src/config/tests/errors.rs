//! The exact text of every kind of config error, and unknown paths.

use pretty_assertions::assert_eq;

use super::{error_text, load};
use crate::config::*;

#[test]
fn unknown_keys_are_reported_with_full_paths() {
    let text = r#"{
      gateway: { prot: 1, auth: { tokn: "x" } },
      agents: { defaults: { model: { primary: "builtin/echo", extra: 1 } },
                list: [ { id: "a" }, { id: "b", colour: "red", tools: { alow: [] } } ] },
      models: { providers: { "eu.openai": { api: "openai-completions", region: "eu" } } },
      bogus: { x: 1 },
      observability: { metrics: { enabled: true, path: "/m" }, otlp: { sampling: 1 } },
      logging: { level: "debug" },
    }"#;
    let loaded = load(text).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(
        loaded.unknown_paths,
        vec![
            "agents.defaults.model.extra",
            "agents.list[1].colour",
            "agents.list[1].tools.alow",
            "bogus",
            "gateway.auth.tokn",
            "gateway.prot",
            "logging.level",
            "models.providers[\"eu.openai\"].region",
            "observability.metrics.path",
            "observability.otlp.sampling",
        ]
    );
}

#[test]
fn a_bad_value_names_path_value_and_allowed_set() {
    let cases = [
        (
            r#"{ observability: { metrics: { auth: "open" } } }"#,
            r#"line 1: config error at observability.metrics.auth: "open" is not allowed; expected one of "token", "loopback""#,
        ),
        (
            r#"{ observability: { otlp: { protocol: "thrift" } } }"#,
            r#"line 1: config error at observability.otlp.protocol: "thrift" is not allowed; expected one of "http/protobuf", "grpc""#,
        ),
        (
            r#"{ observability: { otlp: { endpoint: "collector:4318" } } }"#,
            r#"line 1: config error at observability.otlp.endpoint: "collector:4318" is not allowed; expected an http:// or https:// URL"#,
        ),
        (
            r#"{ observability: { otlp: { sampleRatio: 2 } } }"#,
            "line 1: config error at observability.otlp.sampleRatio: 2 is not allowed; expected a number from 0.0 (no new trace) to 1.0 (every trace)",
        ),
        (
            r#"{ logging: { format: "xml" } }"#,
            r#"line 1: config error at logging.format: "xml" is not allowed; expected one of "text", "json""#,
        ),
        (
            r#"{ agents: { defaults: { sandbox: { mode: "sometimes" } } } }"#,
            r#"line 1: config error at agents.defaults.sandbox.mode: "sometimes" is not allowed; expected one of "off", "non-main", "all""#,
        ),
        (
            r#"{ gateway: { port: "abc" } }"#,
            r#"line 1: config error at gateway.port: expected an integer 1–65535 (0 picks a free port), got "abc""#,
        ),
        (
            "{ gateway: { port: 70000 } }",
            "line 1: config error at gateway.port: 70000 is not allowed; expected an integer 1–65535 (0 picks a free port)",
        ),
        (
            r#"{ gateway: { bind: "everywhere" } }"#,
            r#"line 1: config error at gateway.bind: "everywhere" is not allowed; expected "loopback", "lan" or an IP address"#,
        ),
        (
            "{ agents: { defaults: { timeoutSeconds: 0 } } }",
            "line 1: config error at agents.defaults.timeoutSeconds: 0 is not allowed; expected an integer 1–86400",
        ),
        (
            "{ agents: { defaults: { maxConcurrent: -1 } } }",
            "line 1: config error at agents.defaults.maxConcurrent: -1 is not allowed; expected an integer 1–256",
        ),
        (
            "{ gateway: { maxPayloadBytes: 10 } }",
            "line 1: config error at gateway.maxPayloadBytes: 10 is not allowed; expected an integer 1024–67108864",
        ),
        (
            "{ gateway: { limits: { maxUnauthenticated: 0 } } }",
            "line 1: config error at gateway.limits.maxUnauthenticated: 0 is not allowed; expected an integer 1–65536",
        ),
        (
            "{ gateway: { limits: { maxUnauthenticatedPerAddress: -3 } } }",
            "line 1: config error at gateway.limits.maxUnauthenticatedPerAddress: -3 is not allowed; expected an integer 1–65536",
        ),
        (
            "{ gateway: { limits: { maxUnauthenticated: 16, maxUnauthenticatedPerAddress: 32 } } }",
            "line 1: config error at gateway.limits.maxUnauthenticatedPerAddress: 32 is not allowed; expected an integer 1–16 (at most gateway.limits.maxUnauthenticated)",
        ),
        (
            r#"{ gateway: { controlUi: { allowedOrigins: ["http://ok:1", "evil.com/page"] } } }"#,
            r#"line 1: config error at gateway.controlUi.allowedOrigins[1]: "evil.com/page" is not allowed; expected a web origin: http:// or https://, a host, an optional port, no path (e.g. "http://192.168.1.5:18790")"#,
        ),
        (
            "{ gateway: 5 }",
            "line 1: config error at gateway: expected an object, got 5",
        ),
        (
            "{ cron: { enabled: \"yes\" } }",
            "line 1: config error at cron.enabled: expected true or false, got \"yes\"",
        ),
        (
            r#"{ session: { mainKey: "my main" } }"#,
            r#"line 1: config error at session.mainKey: "my main" is not allowed; expected a non-empty key without ':' or whitespace"#,
        ),
        (
            r#"{ session: { sendPolicy: { rules: [ { match: { chatType: "private" }, action: "deny" } ] } } }"#,
            r#"line 1: config error at session.sendPolicy.rules[0].match.chatType: "private" is not allowed; expected one of "direct", "dm", "group", "channel""#,
        ),
        (
            r#"{ session: { sendPolicy: { rules: [ { match: { channel: "x" } } ] } } }"#,
            r#"line 1: config error at session.sendPolicy.rules[0].action: missing; expected one of "allow", "deny""#,
        ),
        (
            r#"{ models: { providers: { p: { baseUrl: "ftp://x" } } } }"#,
            "line 1: config error at models.providers.p.api: missing; expected one of \"openai-completions\", \"anthropic-messages\"\n\
             line 1: config error at models.providers.p.baseUrl: \"ftp://x\" is not allowed; expected an http:// or https:// URL",
        ),
        (
            r#"{ models: { providers: { p: { api: "openai-completions", baseUrl: "ftp://x" } } } }"#,
            r#"line 1: config error at models.providers.p.baseUrl: "ftp://x" is not allowed; expected an http:// or https:// URL"#,
        ),
        (
            r#"{ models: { providers: { builtin: { api: "openai-completions" } } } }"#,
            r#"line 1: config error at models.providers.builtin: "builtin" is not allowed; expected a provider id other than "builtin" (reserved for builtin/echo and builtin/scripted)"#,
        ),
        (
            r#"{ models: { providers: { "my provider": { api: "openai-completions" } } } }"#,
            r#"line 1: config error at models.providers["my provider"]: "my provider" is not allowed; expected a provider id matching ^[a-z0-9][a-z0-9_.-]*$"#,
        ),
        (
            r#"{ models: { providers: { p: { api: "openai-completions", models: [ { id: "m", cost: { input: -1, output: 1 } } ] } } } }"#,
            "line 1: config error at models.providers.p.models[0].cost.input: -1 is not allowed; expected a number >= 0 (USD per million tokens)",
        ),
        (
            r#"{ gateway: { bind: "lan", auth: { mode: "none" } } }"#,
            r#"line 1: config error at gateway.auth.mode: "none" is not allowed; expected "token" while gateway.bind is "lan" (binding beyond loopback requires a token)"#,
        ),
        (
            r#"{ agents: { list: [ { name: "nameless" } ] } }"#,
            "line 1: config error at agents.list[0].id: missing; expected an agent id (letters, digits, '-' and '_')",
        ),
        (
            r#"{ models: { providers: { p: 5 } }, agents: { list: ["main"] } }"#,
            "line 1: config error at agents.list[0]: expected an object, got \"main\"\n\
             line 1: config error at models.providers.p: expected an object, got 5",
        ),
        (
            r#"{ tools: { agentToAgent: { allow: ["a", 5] } } }"#,
            "line 1: config error at tools.agentToAgent.allow[1]: expected a string, got 5",
        ),
        (
            r#"{ channels: { telegram: { enabled: true, apiBase: "api.telegram.org" } } }"#,
            "line 1: config error at channels.telegram.apiBase: \"api.telegram.org\" is not allowed; expected an http:// or https:// URL\n\
             line 1: config error at channels.telegram.botToken: missing; expected a token (required while channels.telegram.enabled is true, unless accounts configures the bots)",
        ),
        (
            r#"{ channels: { discord: { enabled: true, gatewayUrl: "https://gateway", dmPolicy: "everyone" } } }"#,
            "line 1: config error at channels.discord.dmPolicy: \"everyone\" is not allowed; expected one of \"pairing\", \"allowlist\", \"open\", \"disabled\"\n\
             line 1: config error at channels.discord.gatewayUrl: \"https://gateway\" is not allowed; expected a ws:// or wss:// URL\n\
             line 1: config error at channels.discord.botToken: missing; expected a token (required while channels.discord.enabled is true, unless accounts configures the bots)",
        ),
        (
            r#"{ channels: { discord: { enabled: true, gatewayUrl: "https://gateway", accounts: { ops: { apiBase: "nowhere" } } } } }"#,
            "line 1: config error at channels.discord.gatewayUrl: \"https://gateway\" is not allowed; expected a ws:// or wss:// URL\n\
             line 1: config error at channels.discord.accounts.ops.apiBase: \"nowhere\" is not allowed; expected an http:// or https:// URL\n\
             line 1: config error at channels.discord.accounts.ops.botToken: missing; expected a token (each enabled account needs its own bot)",
        ),
        (
            r#"{ channels: { whatsapp: { enabled: true, phoneNumberId: "+1 555 0100", dmPolicy: "all" } } }"#,
            "line 1: config error at channels.whatsapp.dmPolicy: \"all\" is not allowed; expected one of \"pairing\", \"allowlist\", \"open\", \"disabled\"\n\
             line 1: config error at channels.whatsapp.phoneNumberId: \"+1 555 0100\" is not allowed; expected the phone number's id from the app's WhatsApp settings (digits, not the phone number)\n\
             line 1: config error at channels.whatsapp.accessToken: missing; expected a token (required for every served number (its own or the channel's))\n\
             line 1: config error at channels.whatsapp.appSecret: missing; expected a token (required for every served number (its own or the channel's))\n\
             line 1: config error at channels.whatsapp.verifyToken: missing; expected a token (required for every served number (its own or the channel's))",
        ),
        (
            r#"{ channels: { whatsapp: { enabled: true, accessToken: "t", appSecret: "s", verifyToken: "v", accounts: { a: { phoneNumberId: "10" }, b: { phoneNumberId: "10" }, c: {} } } } }"#,
            "line 1: config error at channels.whatsapp.accounts.b.phoneNumberId: \"10\" is not allowed; expected a number no other account serves (channels.whatsapp.accounts.a has it)\n\
             line 1: config error at channels.whatsapp.accounts.c.phoneNumberId: missing; expected each enabled account is one number",
        ),
        (
            r#"{ channels: { slack: { enabled: true, apiBase: "slack.com/api" } } }"#,
            "line 1: config error at channels.slack.apiBase: \"slack.com/api\" is not allowed; expected an http:// or https:// URL\n\
             line 1: config error at channels.slack.botToken: missing; expected a token (required while channels.slack.enabled is true, unless accounts configures the apps)\n\
             line 1: config error at channels.slack.appToken: missing; expected a token (required while channels.slack.enabled is true, unless accounts configures the apps)",
        ),
        (
            r#"{ channels: { slack: { enabled: true, botToken: "xapp-swapped", appToken: "xoxb-swapped" } } }"#,
            "line 1: config error at channels.slack.botToken: [redacted] is not allowed; expected a bot token (xoxb-…, the app's OAuth & Permissions page)\n\
             line 1: config error at channels.slack.appToken: [redacted] is not allowed; expected an app-level token (xapp-…, Basic Information → App-Level Tokens, scope connections:write)",
        ),
        (
            r#"{ channels: { slack: { enabled: true, accounts: { ops: { botToken: "xoxb-ops" }, off: { enabled: false } } } } }"#,
            "line 1: config error at channels.slack.accounts.ops.appToken: missing; expected a token (each enabled account needs its own app)",
        ),
        (
            r#"{ channels: { signal: { enabled: true, httpUrl: "127.0.0.1:8080" } } }"#,
            "line 1: config error at channels.signal.httpUrl: \"127.0.0.1:8080\" is not allowed; expected an http:// or https:// URL\n\
             line 1: config error at channels.signal.account: missing; expected required while channels.signal.enabled is true (the account signal-cli's daemon runs, -a)",
        ),
        (
            r#"{ channels: { signal: { enabled: true, account: "5551234567" } } }"#,
            "line 1: config error at channels.signal.account: \"5551234567\" is not allowed; expected the daemon's account: a phone number in E.164 form (\"+15551234567\") or the account's UUID",
        ),
        (
            r#"{ channels: { matrix: { enabled: true, homeserver: "matrix.example.org", userId: "bot", autoJoin: "sometimes" } } }"#,
            "line 1: config error at channels.matrix.autoJoin: \"sometimes\" is not allowed; expected one of \"always\", \"allowlist\", \"off\"\n\
             line 1: config error at channels.matrix.homeserver: \"matrix.example.org\" is not allowed; expected an http:// or https:// URL\n\
             line 1: config error at channels.matrix.userId: \"bot\" is not allowed; expected a Matrix user id such as \"@bot:example.org\"\n\
             line 1: config error at channels.matrix.accessToken: missing; expected an accessToken, or a password to log in with (required while the bot is enabled)",
        ),
        (
            r#"{ channels: { matrix: { enabled: true, homeserver: "http://127.0.0.1:8008", accounts: { a: { userId: "@bot:hs", password: "p" }, b: { userId: "@bot:hs" } } } } }"#,
            "line 1: config error at channels.matrix.accounts.b.userId: \"@bot:hs\" is not allowed; expected a user no other account uses (channels.matrix.accounts.a.userId names it too; two syncs of one user each get every event)\n\
             line 1: config error at channels.matrix.accounts.b.accessToken: missing; expected an accessToken, or a password to log in with (required while the bot is enabled)",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(error_text(text), expected, "for {text}");
    }
}

#[test]
fn several_bad_values_are_reported_together() {
    let text = r#"{
      gateway: { port: "abc", bind: "nowhere" },
      agents: {
        defaults: { sandbox: { mode: "sometimes" }, timeoutSeconds: 0 },
        list: [ { id: "Main", default: true }, { id: "main", default: true, sandbox: { mode: "never" } } ],
      },
      cron: { maxConcurrentRuns: 0 },
      hooks: { enabled: true },
    }"#;
    let err = load(text).unwrap_err();
    assert_eq!(err.problems().len(), 9, "{err}");
    // In file order, each with its line.
    assert_eq!(
        err.to_string(),
        [
            r#"line 2: config error at gateway.bind: "nowhere" is not allowed; expected "loopback", "lan" or an IP address"#,
            r#"line 2: config error at gateway.port: expected an integer 1–65535 (0 picks a free port), got "abc""#,
            r#"line 4: config error at agents.defaults.sandbox.mode: "sometimes" is not allowed; expected one of "off", "non-main", "all""#,
            "line 4: config error at agents.defaults.timeoutSeconds: 0 is not allowed; expected an integer 1–86400",
            r#"line 5: config error at agents.list[1].sandbox.mode: "never" is not allowed; expected one of "off", "non-main", "all""#,
            r#"line 5: config error at agents.list[1].id: "main" is not allowed; expected an id no other agent has (agents.list[0] is already "main")"#,
            "line 5: config error at agents.list[1].default: true is not allowed; expected false: only one agent can be the default (agents.list[0] is)",
            "line 7: config error at cron.maxConcurrentRuns: 0 is not allowed; expected an integer 1–64",
            "line 8: config error at hooks.token: missing; expected a token (required while hooks.enabled is true)",
        ]
        .join("\n")
    );
}

#[test]
fn unknown_keys_are_listed_with_bad_values_with_the_closest_known_key() {
    let text = "{\n  gateway: { port: \"abc\", bnd: \"lan\" },\n  agents: { defaults: { modle: \"x\" } },\n}";
    assert_eq!(
        error_text(text),
        [
            r#"line 2: config error at gateway.port: expected an integer 1–65535 (0 picks a free port), got "abc""#,
            "line 2: config error at gateway.bnd: unknown setting; did you mean `bind`?",
            "line 3: config error at agents.defaults.modle: unknown setting; did you mean `model`?",
        ]
        .join("\n")
    );
}

#[test]
fn a_syntax_error_shows_line_and_column() {
    let text = "{\n  gateway: { port: 1 }\n  cron: {}\n}";
    // The missing comma belongs at the end of line 2, where the parser cannot see it.
    assert_eq!(
        error_text(text),
        "config syntax error in test.json5 at line 2, column 23: a comma is missing here (the next item starts at line 3, column 3)"
    );
    assert_eq!(
        error_text("{ gateway: {"),
        "config syntax error in test.json5 at line 1, column 12: unexpected end of file while parsing object"
    );
    assert_eq!(
        error_text("[1, 2]"),
        "config error at (top level): expected an object ({ gateway: …, agents: …, … }), got an array"
    );
}

#[test]
fn a_missing_variable_names_the_path_and_the_variable() {
    assert_eq!(
        error_text(r#"{ agents: { list: [ { id: "a", systemPrompt: "hi ${NOT_SET}" } ] } }"#),
        "line 1: config error at agents.list[0].systemPrompt: environment variable NOT_SET is not set (or is empty)"
    );
    let err = load(r#"{ channels: { webhook: { accounts: { a: { url: "https://${HOST}/${PATH_PART}" } } } } }"#)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 1: config error at channels.webhook.accounts.a.url: environment variable HOST is not set (or is empty)\n\
         line 1: config error at channels.webhook.accounts.a.url: environment variable PATH_PART is not set (or is empty)"
    );
    assert_eq!(err.problems().len(), 2);
    let empty = |name: &str| (name == "EMPTY").then(String::new);
    let err = load_str(r#"{ session: { mainKey: "${EMPTY}" } }"#, "t", &empty);
    assert_eq!(
        err.map(|_| ()).map_err(|e| e.to_string()),
        Err(
            "line 1: config error at session.mainKey: environment variable EMPTY is not set (or is empty)"
                .to_owned()
        )
    );
}

#[test]
fn an_enabled_slack_app_with_both_tokens_is_accepted() {
    let text = r#"{ channels: { slack: { enabled: true, botToken: "xoxb-1-abc", appToken: "xapp-1-abc",
                                     apiBase: "http://127.0.0.1:9/api" } } }"#;
    let loaded = load(text).unwrap_or_else(|err| panic!("{err}"));
    assert!(
        loaded.unknown_paths.is_empty(),
        "{:?}",
        loaded.unknown_paths
    );
    let slack = &loaded.config.channels.slack;
    let bots = slack.bots();
    assert_eq!(bots.len(), 1);
    let bot = &bots[0];
    assert_eq!(bot.id, DEFAULT_ACCOUNT);
    assert_eq!(
        bot.platform.api_base.as_deref(),
        Some("http://127.0.0.1:9/api")
    );
    assert_eq!(bot.access.dm_policy, Some(DmPolicy::Pairing));
    assert_eq!(bot.access.require_mention, Some(true));
}

#[test]
fn a_slack_account_takes_the_channels_settings_it_leaves_out() {
    let text = r#"{ agents: { list: [{ id: "main" }, { id: "ops" }] },
      channels: { slack: { enabled: true, dmPolicy: "open", owners: ["U1"],
        accounts: { ops: { botToken: "xoxb-ops", appToken: "xapp-ops", agentId: "Ops", requireMention: false },
                    off: { enabled: false } } } } }"#;
    let loaded = load(text).unwrap_or_else(|err| panic!("{err}"));
    let bots = loaded.config.channels.slack.bots();
    let ids: Vec<&str> = bots.iter().map(|bot| bot.id.as_str()).collect();
    assert_eq!(
        ids,
        ["ops"],
        "no top-level tokens: no default app; off is off"
    );
    let ops = &bots[0];
    assert_eq!(ops.agent_id.as_deref(), Some("ops"));
    assert_eq!(ops.access.dm_policy, Some(DmPolicy::Open));
    assert_eq!(ops.access.owners.as_deref(), Some(&["U1".to_owned()][..]));
    assert_eq!(ops.access.require_mention, Some(false));
    assert_eq!(ops.platform.api_base, SlackChannel::default().bot.api_base);
}

/// Found by the `config` fuzz target: an empty key (`"": …`) made the loader look for it in the
/// text forever, so `config check` and the gateway's start hung. It is an unknown setting like
/// any other, reported at its object's line.
#[test]
fn an_empty_key_is_an_unknown_setting_at_its_objects_line() {
    let text = "{ agents: {\n list: [ { id: \"a\", \"\": 1 } ] } }";
    let loaded = load(text).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(loaded.unknown_paths, vec!["agents.list[0][\"\"]"]);
    assert_eq!(
        loaded.unknown,
        vec!["line 2: config error at agents.list[0][\"\"]: unknown setting"]
    );
}

/// Found by the `config` fuzz target: a key that starts with a multi-byte character, with a bad
/// value under it, made the line search slice inside that character (a panic).
#[test]
fn a_bad_value_under_a_key_starting_with_a_multibyte_character_is_reported() {
    let text = "{\n  models: { providers: {\n    \"\u{5f0}penAI\": { api: \"bogus\" } } },\n}";
    let err = error_text(text);
    assert!(
        err.starts_with("line 3: config error at models.providers[\"\u{5f0}penAI\"].api: \"bogus\" is not allowed"),
        "{err}"
    );
}
