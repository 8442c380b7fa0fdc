//! The reference's spellings of the chat channels' settings (SPEC §11a), read before the typed
//! config: a setting the reference (OpenClaw) documents is taken as written when it means the
//! same here — renamed (`token` → `botToken`), unfolded (`dm.policy` → `dmPolicy`, Discord's
//! `guilds.<id>.channels.<id>` → `channels.<id>`) or filled from the reference's environment
//! variables (`DISCORD_BOT_TOKEN`) — and refused, naming what to do instead, when nothing here
//! honours it. The import of a reference state dir reads its config through the same pass.
//! docs/configuration.md lists each spelling.

use serde_json::{Map, Value};

use super::ConfigError;
use super::error::push_key;

/// The chat channels both have.
pub(super) const CHANNELS: [&str; 6] = [
    "telegram", "discord", "slack", "matrix", "whatsapp", "signal",
];

/// The reference's name of a setting, and ours, per channel.
const RENAMES: &[(&str, &str, &str)] = &[
    ("discord", "token", "botToken"),
    ("telegram", "apiRoot", "apiBase"),
    ("matrix", "groups", "rooms"),
];

/// The reference's environment variables for the top level's credentials, used when the
/// section runs and leaves the setting out (the reference's fallback, for its default account).
const ENV_FALLBACKS: &[(&str, &str, &str)] = &[
    ("discord", "botToken", "DISCORD_BOT_TOKEN"),
    ("telegram", "botToken", "TELEGRAM_BOT_TOKEN"),
    ("slack", "botToken", "SLACK_BOT_TOKEN"),
    ("slack", "appToken", "SLACK_APP_TOKEN"),
];

const REMOVE: &str = "remove it";
const REPLIES: &str =
    "a reply is posted when it is complete, in parts of textChunkLimit characters; remove it";
const NO_HISTORY: &str = "the agent reads its session's own transcript; messages of a group it was not addressed in are not kept for it; remove it";

/// The reference's settings nothing here honours, per channel (`*`: every chat channel), with
/// what to do instead. A value in the third place is the one that is accepted (it is what
/// switchboard does anyway).
const NO_COUNTERPART: &[(&str, &str, Option<&str>, &str)] = &[
    ("*", "historyLimit", None, NO_HISTORY),
    ("*", "dmHistoryLimit", None, NO_HISTORY),
    ("*", "dms", None, NO_HISTORY),
    (
        "*",
        "replyToMode",
        Some("off"),
        "a reply is a new message in the chat or thread the message came from; remove it",
    ),
    ("*", "streaming", None, REPLIES),
    ("*", "streamMode", None, REPLIES),
    ("*", "chunkMode", None, REPLIES),
    ("*", "blockStreaming", None, REPLIES),
    (
        "*",
        "actions",
        None,
        "the agent acts on chats with the message tool; allow or deny it with tools.allow/deny (group:messaging)",
    ),
    ("*", "mediaMaxMb", None, "replies are text; remove it"),
    (
        "*",
        "reactionNotifications",
        Some("off"),
        "reactions are not passed to the agent; remove it",
    ),
    (
        "*",
        "reactionAllowlist",
        None,
        "reactions are not passed to the agent; remove it",
    ),
    (
        "*",
        "configWrites",
        Some("false"),
        "a chat never writes the config; remove it",
    ),
    (
        "*",
        "joinIntro",
        Some("false"),
        "the bot does not introduce itself when it joins; remove it",
    ),
    (
        "*",
        "execApprovals",
        None,
        "commands held for approval are answered with `switchboard approvals`, exec.approvals.* or the web page's Approvals screen",
    ),
    (
        "*",
        "proxy",
        None,
        "outbound requests follow the HTTPS_PROXY environment variable of the gateway's process",
    ),
    (
        "*",
        "defaultAccount",
        None,
        "the top level's bot is the account named `default`; more bots go under accounts.<id>",
    ),
    ("*", "name", None, REMOVE),
    ("*", "responsePrefix", None, REMOVE),
    ("*", "heartbeatVisibility", None, REMOVE),
    (
        "*",
        "commands",
        None,
        "the owner commands (/status, /new, /send) are built in; remove it",
    ),
    (
        "*",
        "customCommands",
        None,
        "the owner commands (/status, /new, /send) are built in; remove it",
    ),
    (
        "*",
        "slashCommand",
        None,
        "the owner commands (/status, /new, /send) are built in; remove it",
    ),
    (
        "*",
        "dangerouslyAllowNameMatching",
        Some("false"),
        "senders are matched by id, and by username where the platform has one",
    ),
    (
        "discord",
        "applicationId",
        None,
        "not needed: the bot learns its id from the Gateway; remove it",
    ),
    (
        "discord",
        "suppressEmbeds",
        Some("true"),
        "links are sent without embeds; remove it",
    ),
    (
        "discord",
        "maxLinesPerMessage",
        None,
        "replies are split by textChunkLimit only; remove it",
    ),
    (
        "discord",
        "threadBindings",
        None,
        "a thread is its own session under its channel's; remove it",
    ),
    (
        "discord",
        "voice",
        None,
        "voice channels have no counterpart; remove it",
    ),
    (
        "discord",
        "intents",
        None,
        "the bot asks for the intents it needs (guilds, guild and direct messages, message content); remove it",
    ),
    ("discord", "agentComponents", None, REMOVE),
    ("discord", "activities", None, REMOVE),
    ("discord", "autoPresence", None, REMOVE),
    ("discord", "activity", None, REMOVE),
    ("discord", "status", None, REMOVE),
    ("discord", "activityType", None, REMOVE),
    ("discord", "activityUrl", None, REMOVE),
    ("discord", "pluralkit", None, REMOVE),
    ("discord", "mentionAliases", None, REMOVE),
    (
        "slack",
        "mode",
        Some("socket"),
        "switchboard connects to Slack in Socket Mode only (botToken and appToken)",
    ),
    (
        "slack",
        "signingSecret",
        None,
        "switchboard connects to Slack in Socket Mode only (botToken and appToken)",
    ),
    (
        "slack",
        "webhookPath",
        None,
        "switchboard connects to Slack in Socket Mode only (botToken and appToken)",
    ),
    (
        "slack",
        "userToken",
        None,
        "the app reads and posts as its bot (botToken); posting as a person has no counterpart",
    ),
    (
        "slack",
        "postAs",
        Some("bot"),
        "the app reads and posts as its bot (botToken)",
    ),
    (
        "slack",
        "thread",
        None,
        "a thread is its own session under its channel's; remove it",
    ),
    ("slack", "typingReaction", None, REMOVE),
    ("slack", "unfurlLinks", None, REMOVE),
    ("slack", "unfurlMedia", None, REMOVE),
    (
        "telegram",
        "tokenFile",
        None,
        "write botToken: \"${TELEGRAM_BOT_TOKEN}\", or set TELEGRAM_BOT_TOKEN and leave botToken out",
    ),
    ("telegram", "linkPreview", None, REMOVE),
    ("telegram", "network", None, REMOVE),
    ("telegram", "trustedLocalFileRoots", None, REMOVE),
    (
        "telegram",
        "webhookUrl",
        None,
        "the bot reads updates by long polling (pollTimeoutSeconds); remove it",
    ),
    (
        "telegram",
        "webhookSecret",
        None,
        "the bot reads updates by long polling (pollTimeoutSeconds); remove it",
    ),
    (
        "telegram",
        "webhookPath",
        None,
        "the bot reads updates by long polling (pollTimeoutSeconds); remove it",
    ),
    (
        "signal",
        "cliPath",
        None,
        "switchboard talks to a running signal-cli daemon: set httpUrl (e.g. \"http://127.0.0.1:8080\")",
    ),
    (
        "signal",
        "httpPort",
        None,
        "switchboard talks to a running signal-cli daemon: set httpUrl (e.g. \"http://127.0.0.1:8080\")",
    ),
    (
        "signal",
        "httpHost",
        None,
        "switchboard talks to a running signal-cli daemon: set httpUrl (e.g. \"http://127.0.0.1:8080\")",
    ),
    (
        "signal",
        "autoStart",
        Some("false"),
        "switchboard does not start signal-cli: run its daemon and set httpUrl",
    ),
    (
        "signal",
        "startupTimeoutMs",
        None,
        "switchboard does not start signal-cli: run its daemon and set httpUrl",
    ),
    ("signal", "receiveMode", None, REMOVE),
    ("signal", "ignoreAttachments", None, REMOVE),
    ("signal", "ignoreStories", None, REMOVE),
    ("signal", "sendReadReceipts", None, REMOVE),
    ("matrix", "network", None, REMOVE),
    (
        "whatsapp",
        "authDir",
        None,
        "WhatsApp Web pairing has no counterpart: switchboard uses the WhatsApp Business Cloud API (accessToken, phoneNumberId, appSecret, verifyToken)",
    ),
    (
        "whatsapp",
        "selfChatMode",
        None,
        "WhatsApp Web pairing has no counterpart: switchboard uses the WhatsApp Business Cloud API (accessToken, phoneNumberId, appSecret, verifyToken)",
    ),
    ("whatsapp", "sendReadReceipts", None, REMOVE),
];

/// Reads the reference's spellings in `root`'s chat channels as switchboard's, and reports each
/// setting nothing here honours.
pub(super) fn translate(
    root: &mut Value,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<ConfigError>,
) {
    gateway(root, problems);
    commands(root, problems);
    for channel in CHANNELS {
        let path = format!("channels.{channel}");
        let Some(section) = root
            .get_mut("channels")
            .and_then(|c| c.get_mut(channel))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        one(channel, &path, section, problems);
        fall_back_to_env(channel, section, env);
        let Some(accounts) = section.get_mut("accounts").and_then(Value::as_object_mut) else {
            continue;
        };
        for (id, account) in accounts.iter_mut() {
            if let Some(account) = account.as_object_mut() {
                let path = push_key(&format!("{path}.accounts"), id);
                one(channel, &path, account, problems);
            }
        }
    }
}

/// The reference's `gateway.mode` and `gateway.tailscale`: what this gateway does anyway
/// (`"local"`, `{mode: "off"}`) is accepted; anything else has no counterpart.
fn gateway(root: &mut Value, problems: &mut Vec<ConfigError>) {
    let Some(gateway) = root.get_mut("gateway").and_then(Value::as_object_mut) else {
        return;
    };
    let remote =
        "a gateway here serves its own sessions on this machine; connect clients to it by its URL";
    let checks: [(&str, Value, &str); 2] = [
        ("mode", Value::String("local".into()), remote),
        (
            "tailscale",
            serde_json::json!({"mode": "off"}),
            "expose the gateway with gateway.bind and a token, or put it behind your own tunnel",
        ),
    ];
    for (key, accepted, instead) in checks {
        match gateway.remove(key) {
            Some(value) if value != accepted => problems.push(ConfigError::NoCounterpart {
                path: format!("gateway.{key}"),
                instead: instead.to_owned(),
            }),
            _ => {}
        }
    }
}

/// The reference's `commands`: its `ownerAllowFrom` (`"discord:123"`, or a sender of any
/// channel) are the owners of the chat channels here (`channels.<channel>.owners`); its other
/// command settings have no counterpart (the owner commands are built in).
fn commands(root: &mut Value, problems: &mut Vec<ConfigError>) {
    let Some(Value::Object(mut commands)) = root.as_object_mut().and_then(|r| r.remove("commands"))
    else {
        return;
    };
    let owners = commands.remove("ownerAllowFrom");
    for key in commands.keys() {
        problems.push(ConfigError::NoCounterpart {
            path: push_key("commands", key),
            instead: "the owner commands (/status, /new, /send) are built in; owners are channels.<channel>.owners".to_owned(),
        });
    }
    for owner in owners
        .iter()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_str)
    {
        let (only, sender) = match owner.split_once(':') {
            Some((channel, sender)) if CHANNELS.contains(&channel) => (Some(channel), sender),
            _ => (None, owner),
        };
        for channel in CHANNELS.iter().filter(|c| only.is_none_or(|o| o == **c)) {
            let Some(section) = root["channels"]
                .get_mut(*channel)
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let listed = section
                .entry("owners")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(listed) = listed
                && !listed.iter().any(|o| o == sender)
            {
                listed.push(Value::String(sender.to_owned()));
            }
        }
    }
}

/// One bot's settings (a section's top level or an account) at `path`.
fn one(channel: &str, path: &str, bot: &mut Map<String, Value>, problems: &mut Vec<ConfigError>) {
    for (_, theirs, ours) in RENAMES.iter().filter(|(c, ..)| *c == channel) {
        rename(path, bot, theirs, ours, problems);
    }
    if let Some(dm) = bot.remove("dm") {
        unfold_dm((channel, &format!("{path}.dm")), dm, bot, problems);
    }
    if channel == "discord"
        && let Some(guilds) = bot.remove("guilds")
    {
        unfold_guilds(&format!("{path}.guilds"), guilds, bot, problems);
    }
    let groups = match channel {
        "discord" | "slack" => "channels",
        "matrix" => "rooms",
        _ => "groups",
    };
    if let Some(Value::Object(entries)) = bot.get_mut(groups) {
        let path = format!("{path}.{groups}");
        entries.retain(|id, entry| keep_group(&push_key(&path, id), entry, problems));
    }
    for (_, key, accepted, instead) in NO_COUNTERPART
        .iter()
        .filter(|(c, ..)| *c == "*" || *c == channel)
    {
        let Some(value) = bot.remove(*key) else {
            continue;
        };
        if accepted.is_some_and(|a| same(&value, a)) {
            continue;
        }
        problems.push(ConfigError::NoCounterpart {
            path: push_key(path, key),
            instead: (*instead).to_owned(),
        });
    }
}

/// Whether `value` is the scalar written `accepted` (`"off"`, `false`).
fn same(value: &Value, accepted: &str) -> bool {
    match value {
        Value::String(s) => s == accepted,
        Value::Bool(b) => b.to_string() == accepted,
        _ => false,
    }
}

/// Moves `theirs` to `ours`; both written is refused (which one counts would be a guess).
pub(super) fn rename(
    path: &str,
    bot: &mut Map<String, Value>,
    theirs: &str,
    ours: &str,
    problems: &mut Vec<ConfigError>,
) {
    let Some(value) = bot.remove(theirs) else {
        return;
    };
    if bot.contains_key(ours) {
        problems.push(ConfigError::Invalid {
            path: push_key(path, theirs),
            value: format!("a second {ours}"),
            allowed: format!("one of {theirs} (the reference's name) and {ours}, not both"),
        });
        return;
    }
    bot.insert(ours.to_owned(), value);
}

/// The reference's `dm` object: `policy`, `allowFrom` and `enabled: false` become `dmPolicy`
/// and `allowFrom`; its other settings are reported.
fn unfold_dm(
    (channel, path): (&str, &str),
    dm: Value,
    bot: &mut Map<String, Value>,
    problems: &mut Vec<ConfigError>,
) {
    let Value::Object(mut dm) = dm else {
        problems.push(ConfigError::WrongType {
            path: path.to_owned(),
            expected: "an object ({ policy, allowFrom, enabled })".to_owned(),
            got: super::error::describe_value(&dm),
        });
        return;
    };
    rename(path, &mut dm, "policy", "dmPolicy", problems);
    if channel == "matrix" {
        rename(path, &mut dm, "threadReplies", "dmThreadReplies", problems);
    }
    if dm.remove("enabled") == Some(Value::Bool(false)) {
        dm.insert("dmPolicy".into(), Value::String("disabled".into()));
    }
    for (key, value) in dm {
        if !["dmPolicy", "allowFrom", "dmThreadReplies"].contains(&key.as_str()) {
            problems.push(ConfigError::NoCounterpart {
                path: push_key(path, &key),
                instead: "private messages follow dmPolicy and allowFrom; remove it".to_owned(),
            });
            continue;
        }
        if bot.contains_key(&key) {
            problems.push(ConfigError::Invalid {
                path: push_key(path, &key),
                value: format!("a second {key}"),
                allowed: format!("{key} written once, in dm or beside it"),
            });
            continue;
        }
        bot.insert(key, value);
    }
}

/// The top level's credentials from the reference's environment variables, when the section
/// runs and leaves them out.
fn fall_back_to_env(
    channel: &str,
    section: &mut Map<String, Value>,
    env: &dyn Fn(&str) -> Option<String>,
) {
    if section.get("enabled") != Some(&Value::Bool(true)) {
        return;
    }
    for (_, key, var) in ENV_FALLBACKS.iter().filter(|(c, ..)| *c == channel) {
        if section.contains_key(*key) {
            continue;
        }
        if let Some(value) = env(var).filter(|v| !v.trim().is_empty()) {
            section.insert((*key).to_owned(), Value::String(value));
        }
    }
}

/// The reference's settings of one group that have no counterpart (others are left for the
/// unknown-setting check, which suggests the nearest known one).
const GROUP_SETTINGS: &[&str] = &[
    "users",
    "skills",
    "systemPrompt",
    "allowFrom",
    "topics",
    "allowBots",
    "ignoreOtherMentions",
    "reactionNotifications",
    "tools",
    "toolsBySender",
    "autoReply",
    "includeThreadStarter",
];

/// What one group's entry says of it in the reference's spelling: `enabled`/`allow` false
/// leaves it out (false: the entry goes); true says nothing more than being listed. Settings
/// of a group other than `requireMention` are reported.
fn keep_group(path: &str, entry: &mut Value, problems: &mut Vec<ConfigError>) -> bool {
    let Some(settings) = entry.as_object_mut() else {
        return true;
    };
    let mut kept = true;
    for key in ["enabled", "allow"] {
        match settings.remove(key) {
            Some(Value::Bool(on)) => kept &= on,
            Some(other) => {
                settings.insert(key.to_owned(), other);
            }
            None => {}
        }
    }
    let others: Vec<String> = settings
        .keys()
        .filter(|k| GROUP_SETTINGS.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in others {
        settings.remove(&key);
        problems.push(ConfigError::NoCounterpart {
            path: push_key(path, &key),
            instead: "a group's own setting here is requireMention; its senders follow groupAllowFrom, its agent the channel's agentId".to_owned(),
        });
    }
    kept
}

/// Discord's `guilds.<guildId>.channels.<channelId>` become `channels.<channelId>`, each with
/// its own `requireMention`, else its server's. Channels are matched by id here; a server
/// listed without channels is reported.
fn unfold_guilds(
    path: &str,
    guilds: Value,
    bot: &mut Map<String, Value>,
    problems: &mut Vec<ConfigError>,
) {
    let Value::Object(guilds) = guilds else {
        problems.push(ConfigError::WrongType {
            path: path.to_owned(),
            expected: "an object of servers by id".to_owned(),
            got: super::error::describe_value(&guilds),
        });
        return;
    };
    let mut unfolded = Map::new();
    for (guild_id, guild) in guilds {
        let at = push_key(path, &guild_id);
        let Value::Object(mut guild) = guild else {
            continue;
        };
        let mention = guild.remove("requireMention");
        guild.remove("slug");
        let channels = guild.remove("channels");
        for key in guild.keys() {
            problems.push(ConfigError::NoCounterpart {
                path: push_key(&at, key),
                instead: "a server's own setting here is requireMention, over its listed channels"
                    .to_owned(),
            });
        }
        let Some(Value::Object(channels)) = channels else {
            problems.push(ConfigError::NoCounterpart {
                path: at,
                instead: "a whole server is not listed here: list its channels by id under channels.discord.channels (or \"*\" for every channel)".to_owned(),
            });
            continue;
        };
        for (channel_id, mut entry) in channels {
            let entry_path = push_key(&format!("{at}.channels"), &channel_id);
            if !channel_id.bytes().all(|b| b.is_ascii_digit()) {
                problems.push(ConfigError::NoCounterpart {
                    path: entry_path,
                    instead: "channels are matched by id here: write the channel's id".to_owned(),
                });
                continue;
            }
            if !keep_group(&entry_path, &mut entry, problems) {
                continue;
            }
            if let (Some(mention), Value::Object(settings)) = (&mention, &mut entry) {
                settings
                    .entry("requireMention")
                    .or_insert_with(|| mention.clone());
            }
            unfolded.insert(channel_id, entry);
        }
    }
    let listed = bot
        .entry("channels")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(listed) = listed {
        for (id, entry) in unfolded {
            listed.entry(id).or_insert(entry);
        }
    }
}
