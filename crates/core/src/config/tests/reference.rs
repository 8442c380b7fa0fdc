//! The reference's spellings of the chat channels' settings (config/reference.rs): read as
//! written where they mean the same here, refused naming what to do where nothing honours them.

use pretty_assertions::assert_eq;

use super::*;

/// A config as the reference's docs write it, for every chat channel both have.
const AS_THE_REFERENCE_WRITES_IT: &str = r#"{
  gateway: { mode: "local", tailscale: { mode: "off" } },
  channels: {
    discord: {
      enabled: true,
      token: "discord-token",
      allowBots: false,
      replyToMode: "off",
      dm: { enabled: true, policy: "allowlist", allowFrom: ["user:123456789012345678"] },
      guilds: {
        "111111111111111111": {
          slug: "friends",
          requireMention: false,
          channels: {
            "222222222222222222": { enabled: true },
            "333333333333333333": { enabled: false },
            "444444444444444444": { requireMention: true },
          },
        },
      },
      textChunkLimit: 1800,
    },
    telegram: { enabled: true, botToken: "123:abc", apiRoot: "http://127.0.0.1:9/",
                allowFrom: ["tg:123456789"], groups: { "*": { requireMention: true } } },
    slack: { enabled: true, botToken: "xoxb-1", appToken: "xapp-1", mode: "socket",
             allowFrom: ["U123", "*"], channels: { C123: { enabled: true, requireMention: false } } },
    matrix: { enabled: true, homeserver: "https://matrix.example.org", accessToken: "syt",
              userId: "@bot:example.org", encryption: false, groups: { "!room:example.org": { allow: true } } },
    signal: { enabled: true, account: "+15555550123", httpUrl: "http://127.0.0.1:8080",
              allowFrom: ["+15551234567", "uuid:123e4567-e89b-12d3-a456-426614174000"] },
  },
}"#;

#[test]
fn the_references_spellings_read_as_written() {
    let loaded = load(AS_THE_REFERENCE_WRITES_IT).unwrap();
    assert_eq!(loaded.unknown, Vec::<String>::new());
    let channels = &loaded.config.channels;
    let discord = &channels.discord;
    assert_eq!(discord.bot.bot_token.as_deref(), Some("discord-token"));
    assert_eq!(discord.access.dm_policy, Some(DmPolicy::Allowlist));
    assert_eq!(
        discord.access.allow_from,
        Some(vec!["123456789012345678".to_owned()]),
        "the reference's prefix is read off"
    );
    assert_eq!(
        channels.signal.access.allow_from,
        Some(vec![
            "+15551234567".to_owned(),
            "123e4567-e89b-12d3-a456-426614174000".to_owned()
        ])
    );
    assert_eq!(
        channels.telegram.access.allow_from,
        Some(vec!["123456789".to_owned()])
    );
    let listed = discord.access.groups.clone().unwrap_or_default();
    assert_eq!(
        listed.keys().collect::<Vec<_>>(),
        ["222222222222222222", "444444444444444444"],
        "a disabled channel is left out"
    );
    assert_eq!(listed["222222222222222222"].require_mention, Some(false));
    assert_eq!(listed["444444444444444444"].require_mention, Some(true));
    assert_eq!(
        channels.telegram.bot.api_base.as_deref(),
        Some("http://127.0.0.1:9/")
    );
    let rooms = channels.matrix.access.groups.clone().unwrap_or_default();
    assert_eq!(rooms.keys().collect::<Vec<_>>(), ["!room:example.org"]);
    assert_eq!(
        channels
            .slack
            .access
            .groups
            .clone()
            .unwrap_or_default()
            .len(),
        1
    );
}

#[test]
fn a_setting_nothing_here_honours_is_refused_naming_what_to_do() {
    let text = r#"{
  channels: {
    discord: { enabled: true, token: "t", historyLimit: 20, guilds: { "111": { slug: "s" },
               "222": { channels: { general: { enabled: true } } } } },
    signal: { enabled: true, account: "+15555550123", cliPath: "signal-cli", httpPort: 8080 },
    matrix: { enabled: true, homeserver: "https://m.example.org", accessToken: "syt",
              userId: "@b:m.example.org", encryption: true, network: { proxy: "socks5://127.0.0.1:1" } },
    slack: { enabled: true, botToken: "xoxb", appToken: "xapp", userToken: "xoxp", dm: { groupEnabled: true } },
  },
  gateway: { mode: "remote" },
}"#;
    let errors = error_text(text);
    for expected in [
        "line 3: config error at channels.discord.historyLimit: the reference's setting has no counterpart here: the agent reads its session's own transcript",
        "config error at channels.discord.guilds.111: the reference's setting has no counterpart here: a whole server is not listed here: list its channels by id under channels.discord.channels",
        "config error at channels.discord.guilds.222.channels.general: the reference's setting has no counterpart here: channels are matched by id here",
        "config error at channels.signal.cliPath: the reference's setting has no counterpart here: switchboard talks to a running signal-cli daemon: set httpUrl",
        "config error at channels.signal.httpPort:",
        "config error at channels.matrix.network: the reference's setting has no counterpart here",
        "config error at channels.slack.userToken: the reference's setting has no counterpart here: the app reads and posts as its bot",
        "config error at channels.slack.dm.groupEnabled: the reference's setting has no counterpart here: private messages follow dmPolicy and allowFrom",
        "config error at gateway.mode: the reference's setting has no counterpart here: a gateway here serves its own sessions",
    ] {
        assert!(errors.contains(expected), "{expected}\nnot in:\n{errors}");
    }
}

#[test]
fn a_setting_written_both_ways_is_refused() {
    let errors =
        error_text(r#"{ channels: { discord: { enabled: true, token: "a", botToken: "b" } } }"#);
    assert!(
        errors.contains("config error at channels.discord.token: a second botToken is not allowed; expected one of token (the reference's name) and botToken, not both"),
        "{errors}"
    );
}

#[test]
fn a_token_comes_from_the_references_environment_variable() {
    let env = |name: &str| (name == "DISCORD_BOT_TOKEN").then(|| "from-env".to_owned());
    let loaded = load_str(
        r#"{ channels: { discord: { enabled: true } } }"#,
        "test.json5",
        &env,
    )
    .unwrap();
    assert_eq!(
        loaded.config.channels.discord.bot.bot_token.as_deref(),
        Some("from-env")
    );
    let written = load_str(
        r#"{ channels: { discord: { enabled: true, botToken: "written" } } }"#,
        "test.json5",
        &env,
    )
    .unwrap();
    assert_eq!(
        written.config.channels.discord.bot.bot_token.as_deref(),
        Some("written"),
        "the config comes first"
    );
}

#[test]
fn anyone_is_not_an_owner() {
    let errors = error_text(r#"{ channels: { telegram: { owners: ["*"] } } }"#);
    assert!(
        errors.contains("config error at channels.telegram.owners: \"*\" is not allowed"),
        "{errors}"
    );
}

#[test]
fn the_references_owners_are_the_owners_of_its_channels() {
    let loaded = load(
        r#"{
  commands: { ownerAllowFrom: ["discord:123456789012345678", "@olga"] },
  channels: { discord: { token: "t" }, telegram: { botToken: "1:a", owners: ["@olga"] } },
}"#,
    )
    .unwrap();
    let channels = &loaded.config.channels;
    assert_eq!(
        channels.discord.access.owners,
        Some(vec!["123456789012345678".to_owned(), "@olga".to_owned()])
    );
    assert_eq!(
        channels.telegram.access.owners,
        Some(vec!["@olga".to_owned()])
    );
    let errors = error_text(r#"{ commands: { bash: true, ownerAllowFrom: [] } }"#);
    assert!(
        errors.contains("config error at commands.bash: the reference's setting has no counterpart here: the owner commands"),
        "{errors}"
    );
}
