//! A chat channel's section as the kit reads it (`config/chat`): the access settings beside the
//! platform's in one object, at the top and in each account, with unknown keys and bad values
//! reported at their full path, limits checked against the platform, and accounts resolved
//! over the channel.

use pretty_assertions::assert_eq;

use super::{error_text, load};
use crate::config::*;

#[test]
fn unknown_keys_of_a_section_an_account_and_a_group_keep_their_path_and_a_suggestion() {
    let text = r#"{ channels: {
      discord: { enabled: true, botToken: "t", dmPolicyy: "open",
        accounts: { ops: { botToken: "u", requireMentoin: false,
          channels: { "9": { requireMention: false, mention: true } } } } },
      signal: { accounts: {} },
    } }"#;
    let loaded = load(text).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(
        loaded.unknown_paths,
        vec![
            "channels.discord.accounts.ops.channels.9.mention",
            "channels.discord.accounts.ops.requireMentoin",
            "channels.discord.dmPolicyy",
            "channels.signal.accounts",
        ]
    );
    let said = loaded.unknown.join("\n");
    assert!(
        said.contains("channels.discord.dmPolicyy: unknown setting; did you mean `dmPolicy`?"),
        "{said}"
    );
    assert!(
        said.contains(
            "accounts.ops.requireMentoin: unknown setting; did you mean `requireMention`?"
        ),
        "{said}"
    );
}

#[test]
fn a_bad_value_in_an_account_or_a_group_is_reported_where_it_is() {
    let text = r#"{ channels: { slack: { enabled: true, botToken: "xoxb-a", appToken: "xapp-a",
        accounts: { ops: { botToken: "xoxb-b", appToken: "xapp-b", dmPolicy: "sometimes",
          channels: { C1: { requireMention: "yes" } } } } } } }"#;
    assert_eq!(
        error_text(text),
        "line 2: config error at channels.slack.accounts.ops.dmPolicy: \"sometimes\" is not allowed; expected one of \"pairing\", \"allowlist\", \"open\", \"disabled\"\n\
         line 3: config error at channels.slack.accounts.ops.channels.C1.requireMention: expected true or false, got \"yes\""
    );
}

#[test]
fn reply_caps_are_checked_against_the_platform() {
    let text = r#"{ channels: { discord: { textChunkLimit: 2500, maxReplyParts: 0, maxInboundChars: 5,
        accounts: { ops: { botToken: "t", textChunkLimit: 0 } } } } }"#;
    assert_eq!(
        error_text(text),
        "line 1: config error at channels.discord.textChunkLimit: 2500 is not allowed; expected an integer 1–2000\n\
         line 1: config error at channels.discord.maxReplyParts: 0 is not allowed; expected an integer 1–1000\n\
         line 1: config error at channels.discord.maxInboundChars: 5 is not allowed; expected an integer 100–1000000\n\
         line 2: config error at channels.discord.accounts.ops.textChunkLimit: 0 is not allowed; expected an integer 1–2000"
    );
}

#[test]
fn a_value_of_the_wrong_type_says_what_the_setting_takes() {
    let text = r#"{ channels: { matrix: { maxReplyParts: "10", textChunkLimit: -1,
        accounts: { b: { pollTimeoutSeconds: "30" } } } } }"#;
    assert_eq!(
        error_text(text),
        "line 1: config error at channels.matrix.maxReplyParts: expected an integer 1–1000, got \"10\"\n\
         line 1: config error at channels.matrix.textChunkLimit: -1 is not allowed; expected an integer 1–16000\n\
         line 2: config error at channels.matrix.accounts.b.pollTimeoutSeconds: expected an integer 0–300, got \"30\""
    );
}

#[test]
fn an_account_takes_every_access_setting_it_leaves_out_from_the_channel() {
    let text = r#"{ agents: { list: [{ id: "main" }, { id: "ops" }] },
      channels: { discord: { enabled: true, botToken: "t", groupAllowFrom: ["1"],
        allowBots: true, textChunkLimit: 900, channels: { "*": {} },
        accounts: { ops: { botToken: "u", dmPolicy: "open", agentId: "Ops",
          channels: { "9": { requireMention: false } } } } } } }"#;
    let loaded = load(text).unwrap_or_else(|err| panic!("{err}"));
    let bots = loaded.config.channels.discord.bots();
    let ids: Vec<&str> = bots.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["default", "ops"]);
    let (top, ops) = (&bots[0], &bots[1]);
    assert_eq!(top.access.dm_policy, Some(DmPolicy::Pairing));
    assert_eq!(ops.access.dm_policy, Some(DmPolicy::Open));
    assert_eq!(ops.agent_id.as_deref(), Some("ops"));
    assert_eq!(ops.access.group_allow_from, Some(vec!["1".to_owned()]));
    assert_eq!(ops.access.allow_bots, Some(true));
    assert_eq!(ops.access.text_chunk_limit, Some(900));
    assert_eq!(ops.access.max_reply_parts, Some(MAX_REPLY_PARTS));
    let groups: Vec<&String> = ops
        .access
        .groups
        .iter()
        .flatten()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(groups, ["9"], "an account's groups replace the channel's");
    assert_eq!(
        ops.platform.gateway_url.as_deref(),
        Some("wss://gateway.discord.gg"),
        "a platform setting the account leaves out is the channel's default"
    );
    // Written back, the section reads the same (`config show`, the Control UI's config page).
    let written = serde_json::to_value(&loaded.config.channels.discord).unwrap();
    assert_eq!(written["accounts"]["ops"]["dmPolicy"], "open");
    assert_eq!(written["groupAllowFrom"], serde_json::json!(["1"]));
    let read: DiscordChannel = serde_json::from_value(written).unwrap();
    assert_eq!(read, loaded.config.channels.discord);
}
