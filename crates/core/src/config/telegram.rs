//! `channels.telegram`: one bot at the top level, more under `accounts.<id>` (each account's
//! unset settings are the channel's), and [`TelegramChannel::bots`], the resolved list the
//! channel runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{push_key, quote};
use super::validate::{
    ACCOUNT_ID_EXPECTED, Checker, POLL_TIMEOUT_SECONDS, clear_if_empty, is_id,
    normalize_optional_agent,
};
use super::{DmPolicy, GroupPolicy, GroupSettings, REDACTED};

pub use super::bots::DEFAULT_ACCOUNT;

/// `channels.telegram`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TelegramChannel {
    /// Whether the bots poll for updates.
    pub enabled: bool,
    /// The bot token of the `default` account (required while enabled, unless `accounts`
    /// configures the bots).
    pub bot_token: Option<String>,
    /// Base URL of the Bot API (tests point it at a local fake).
    pub api_base: String,
    /// The agent that answers; absent = the default agent.
    pub agent_id: Option<String>,
    /// `getUpdates` long-poll timeout.
    pub poll_timeout_seconds: u64,
    /// Who may talk to the bot in a private chat.
    pub dm_policy: DmPolicy,
    /// User ids (`42`) or usernames (`@alice`) who may always talk to the bot in private
    /// (`dmPolicy` `allowlist` and `pairing`; approved pairings add to them).
    pub allow_from: Vec<String>,
    /// In groups, answer only messages that mention the bot (`@botname`) or reply to it.
    pub require_mention: bool,
    /// User ids (`42`) or usernames (`@alice`) who own the bot's chats: they may use owner
    /// commands such as `/send on|off|inherit`. Empty = nobody, through this channel.
    pub owners: Vec<String>,
    /// Which groups the bot answers in.
    pub group_policy: GroupPolicy,
    /// Groups by chat id (`"-1001234"`), or `"*"` for every group: listed groups pass
    /// `groupPolicy: "allowlist"`, and each may set its own `requireMention`.
    pub groups: BTreeMap<String, GroupSettings>,
    /// In groups, only these senders (ids or usernames) may talk to the bot; empty = anyone.
    pub group_allow_from: Vec<String>,
    /// More bots, by account id; each runs with the settings above except those it sets.
    pub accounts: BTreeMap<String, TelegramAccount>,
}

/// `channels.telegram.accounts.<id>`: one more bot. Unset settings are the channel's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TelegramAccount {
    /// False = this bot does not poll (the others still do).
    pub enabled: bool,
    /// The bot's own token (required while it is enabled).
    pub bot_token: Option<String>,
    pub api_base: Option<String>,
    pub agent_id: Option<String>,
    pub dm_policy: Option<DmPolicy>,
    pub allow_from: Option<Vec<String>>,
    pub require_mention: Option<bool>,
    pub owners: Option<Vec<String>>,
    pub group_policy: Option<GroupPolicy>,
    pub groups: Option<BTreeMap<String, GroupSettings>>,
    pub group_allow_from: Option<Vec<String>>,
}

impl Default for TelegramAccount {
    fn default() -> Self {
        Self {
            enabled: true,
            bot_token: None,
            api_base: None,
            agent_id: None,
            dm_policy: None,
            allow_from: None,
            require_mention: None,
            owners: None,
            group_policy: None,
            groups: None,
            group_allow_from: None,
        }
    }
}

impl Default for TelegramChannel {
    fn default() -> Self {
        Self {
            enabled: false,
            bot_token: None,
            api_base: "https://api.telegram.org".to_owned(),
            agent_id: None,
            poll_timeout_seconds: 30,
            dm_policy: DmPolicy::default(),
            allow_from: Vec::new(),
            require_mention: true,
            owners: Vec::new(),
            group_policy: GroupPolicy::default(),
            groups: BTreeMap::new(),
            group_allow_from: Vec::new(),
            accounts: BTreeMap::new(),
        }
    }
}

impl TelegramChannel {
    /// The bots that run, by account id, each with its settings resolved (and no `accounts`):
    /// `default` from the top level when it has a token (an account named `default` replaces
    /// it), then every enabled account. Empty while the channel is off.
    pub fn bots(&self) -> Vec<(String, TelegramChannel)> {
        let base = TelegramChannel {
            accounts: BTreeMap::new(),
            ..self.clone()
        };
        let top = self.bot_token.is_some().then(|| base.clone());
        let over = |account: &TelegramAccount| account.over(&base);
        super::bots::resolve(self.enabled, top, &self.accounts, |a| a.enabled, over)
    }

    /// The resolved settings of the bot `account` (`None`: no such running bot).
    pub fn bot(&self, account: &str) -> Option<TelegramChannel> {
        super::bots::find(self.bots(), account)
    }
}

impl TelegramAccount {
    /// This account's settings over the channel's.
    fn over(&self, base: &TelegramChannel) -> TelegramChannel {
        let or =
            |own: &Option<Vec<String>>, base: &Vec<String>| own.clone().unwrap_or(base.clone());
        TelegramChannel {
            enabled: true,
            bot_token: self.bot_token.clone(),
            api_base: self.api_base.clone().unwrap_or(base.api_base.clone()),
            agent_id: self.agent_id.clone().or(base.agent_id.clone()),
            poll_timeout_seconds: base.poll_timeout_seconds,
            dm_policy: self.dm_policy.unwrap_or(base.dm_policy),
            allow_from: or(&self.allow_from, &base.allow_from),
            require_mention: self.require_mention.unwrap_or(base.require_mention),
            owners: or(&self.owners, &base.owners),
            group_policy: self.group_policy.unwrap_or(base.group_policy),
            groups: self.groups.clone().unwrap_or(base.groups.clone()),
            group_allow_from: or(&self.group_allow_from, &base.group_allow_from),
            accounts: BTreeMap::new(),
        }
    }
}

impl Checker<'_> {
    /// The top-level bot and each account: URLs, tokens (each enabled bot its own), agent ids.
    pub(super) fn telegram(&mut self, telegram: &mut TelegramChannel) {
        self.url("channels.telegram.apiBase", &telegram.api_base);
        self.range(
            "channels.telegram.pollTimeoutSeconds",
            telegram.poll_timeout_seconds,
            &POLL_TIMEOUT_SECONDS,
        );
        if telegram.enabled && telegram.accounts.is_empty() {
            self.required_secret(
                "channels.telegram.botToken",
                &mut telegram.bot_token,
                "required while channels.telegram.enabled is true, unless accounts configures the bots",
            );
        }
        clear_if_empty(&mut telegram.bot_token);
        normalize_optional_agent(&mut telegram.agent_id);
        let mut tokens: BTreeMap<String, String> = BTreeMap::new();
        if let Some(token) = &telegram.bot_token {
            tokens.insert(token.clone(), "channels.telegram.botToken".into());
        }
        for (id, account) in &mut telegram.accounts {
            let path = push_key("channels.telegram.accounts", id);
            if !is_id(id) {
                self.invalid(&path, quote(id), ACCOUNT_ID_EXPECTED);
            }
            if let Some(url) = &account.api_base {
                self.url(&format!("{path}.apiBase"), url);
            }
            normalize_optional_agent(&mut account.agent_id);
            if !(telegram.enabled && account.enabled) {
                clear_if_empty(&mut account.bot_token);
                continue;
            }
            let because = "each enabled account needs its own bot";
            self.required_secret(&format!("{path}.botToken"), &mut account.bot_token, because);
            let Some(token) = &account.bot_token else {
                continue;
            };
            if let Some(other) = tokens.insert(token.clone(), format!("{path}.botToken")) {
                self.invalid(
                    format!("{path}.botToken"),
                    REDACTED,
                    format!("a token no other account uses ({other} has the same bot; two pollers of one bot take each other's updates)"),
                );
            }
        }
    }
}
