//! `channels.discord`: one bot at the top level, more under `accounts.<id>` (each account's
//! unset settings are the channel's), and [`DiscordChannel::bots`], the resolved list the
//! channel runs. Shaped like `channels.telegram`, with the Gateway's URL beside the REST base.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{push_key, quote};
use super::validate::{
    ACCOUNT_ID_EXPECTED, Checker, clear_if_empty, is_id, normalize_optional_agent,
};
use super::{DmPolicy, GroupPolicy, GroupSettings, REDACTED};

pub use super::bots::DEFAULT_ACCOUNT;

/// What `channels.discord.gatewayUrl` accepts.
pub(super) const WS_URL_EXPECTED: &str = "a ws:// or wss:// URL";

/// `channels.discord`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DiscordChannel {
    /// Whether the bots connect to the Gateway.
    pub enabled: bool,
    /// The bot token of the `default` account (required while enabled, unless `accounts`
    /// configures the bots).
    pub bot_token: Option<String>,
    /// Base URL of the REST API, version included (tests point it at a local fake).
    pub api_base: String,
    /// The Gateway's WebSocket URL (tests point it at a local fake).
    pub gateway_url: String,
    /// The agent that answers; absent = the default agent.
    pub agent_id: Option<String>,
    /// Who may talk to the bot in a DM.
    pub dm_policy: DmPolicy,
    /// User ids (`80351110224678912`) or usernames (`alice`) who may always DM the bot
    /// (`dmPolicy` `allowlist` and `pairing`; approved pairings add to them).
    pub allow_from: Vec<String>,
    /// User ids or usernames who own the bot's chats: they may use owner commands
    /// (`/send on|off|inherit`, `/status`, `/new`) and are always let in by DM.
    pub owners: Vec<String>,
    /// Which guild channels the bot answers in.
    pub group_policy: GroupPolicy,
    /// Guild channels by channel id, or `"*"` for every channel: listed ones pass
    /// `groupPolicy: "allowlist"`, and each may set its own `requireMention`.
    pub channels: BTreeMap<String, GroupSettings>,
    /// In guild channels, answer only messages that mention the bot or reply to it.
    pub require_mention: bool,
    /// More bots, by account id; each runs with the settings above except those it sets.
    pub accounts: BTreeMap<String, DiscordAccount>,
}

/// `channels.discord.accounts.<id>`: one more bot. Unset settings are the channel's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DiscordAccount {
    /// False = this bot does not connect (the others still do).
    pub enabled: bool,
    /// The bot's own token (required while it is enabled).
    pub bot_token: Option<String>,
    pub api_base: Option<String>,
    pub gateway_url: Option<String>,
    pub agent_id: Option<String>,
    pub dm_policy: Option<DmPolicy>,
    pub allow_from: Option<Vec<String>>,
    pub owners: Option<Vec<String>>,
    pub group_policy: Option<GroupPolicy>,
    pub channels: Option<BTreeMap<String, GroupSettings>>,
    pub require_mention: Option<bool>,
}

impl Default for DiscordAccount {
    fn default() -> Self {
        Self {
            enabled: true,
            bot_token: None,
            api_base: None,
            gateway_url: None,
            agent_id: None,
            dm_policy: None,
            allow_from: None,
            owners: None,
            group_policy: None,
            channels: None,
            require_mention: None,
        }
    }
}

impl Default for DiscordChannel {
    fn default() -> Self {
        Self {
            enabled: false,
            bot_token: None,
            api_base: "https://discord.com/api/v10".to_owned(),
            gateway_url: "wss://gateway.discord.gg".to_owned(),
            agent_id: None,
            dm_policy: DmPolicy::default(),
            allow_from: Vec::new(),
            owners: Vec::new(),
            group_policy: GroupPolicy::default(),
            channels: BTreeMap::new(),
            require_mention: true,
            accounts: BTreeMap::new(),
        }
    }
}

impl DiscordChannel {
    /// The bots that run, by account id, each with its settings resolved (and no `accounts`):
    /// `default` from the top level when it has a token (an account named `default` replaces
    /// it), then every enabled account. Empty while the channel is off.
    pub fn bots(&self) -> Vec<(String, DiscordChannel)> {
        let base = DiscordChannel {
            accounts: BTreeMap::new(),
            ..self.clone()
        };
        let top = self.bot_token.is_some().then(|| base.clone());
        let over = |account: &DiscordAccount| account.over(&base);
        super::bots::resolve(self.enabled, top, &self.accounts, |a| a.enabled, over)
    }

    /// The resolved settings of the bot `account` (`None`: no such running bot).
    pub fn bot(&self, account: &str) -> Option<DiscordChannel> {
        super::bots::find(self.bots(), account)
    }
}

impl DiscordAccount {
    /// This account's settings over the channel's.
    fn over(&self, base: &DiscordChannel) -> DiscordChannel {
        DiscordChannel {
            enabled: true,
            bot_token: self.bot_token.clone(),
            api_base: self.api_base.clone().unwrap_or(base.api_base.clone()),
            gateway_url: self.gateway_url.clone().unwrap_or(base.gateway_url.clone()),
            agent_id: self.agent_id.clone().or(base.agent_id.clone()),
            dm_policy: self.dm_policy.unwrap_or(base.dm_policy),
            allow_from: self.allow_from.clone().unwrap_or(base.allow_from.clone()),
            owners: self.owners.clone().unwrap_or(base.owners.clone()),
            group_policy: self.group_policy.unwrap_or(base.group_policy),
            channels: self.channels.clone().unwrap_or(base.channels.clone()),
            require_mention: self.require_mention.unwrap_or(base.require_mention),
            accounts: BTreeMap::new(),
        }
    }
}

/// `ws://…` or `wss://…` with a host.
fn is_ws_url(url: &str) -> bool {
    ["ws://", "wss://"].iter().any(|scheme| {
        url.strip_prefix(scheme)
            .is_some_and(|rest| !rest.is_empty())
    })
}

impl Checker<'_> {
    /// The top-level bot and each account: URLs, tokens (each enabled bot its own), agent ids.
    pub(super) fn discord(&mut self, discord: &mut DiscordChannel) {
        self.url("channels.discord.apiBase", &discord.api_base);
        if !is_ws_url(&discord.gateway_url) {
            self.invalid(
                "channels.discord.gatewayUrl",
                quote(&discord.gateway_url),
                WS_URL_EXPECTED,
            );
        }
        if discord.enabled && discord.accounts.is_empty() {
            self.required_secret(
                "channels.discord.botToken",
                &mut discord.bot_token,
                "required while channels.discord.enabled is true, unless accounts configures the bots",
            );
        }
        clear_if_empty(&mut discord.bot_token);
        normalize_optional_agent(&mut discord.agent_id);
        let mut tokens: BTreeMap<String, String> = BTreeMap::new();
        if let Some(token) = &discord.bot_token {
            tokens.insert(token.clone(), "channels.discord.botToken".into());
        }
        for (id, account) in &mut discord.accounts {
            let path = push_key("channels.discord.accounts", id);
            if !is_id(id) {
                self.invalid(&path, quote(id), ACCOUNT_ID_EXPECTED);
            }
            if let Some(url) = &account.api_base {
                self.url(&format!("{path}.apiBase"), url);
            }
            if let Some(url) = account.gateway_url.as_deref().filter(|u| !is_ws_url(u)) {
                self.invalid(format!("{path}.gatewayUrl"), quote(url), WS_URL_EXPECTED);
            }
            normalize_optional_agent(&mut account.agent_id);
            if !(discord.enabled && account.enabled) {
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
                    format!("a token no other account uses ({other} has the same bot; two Gateway sessions of one bot each get every event)"),
                );
            }
        }
    }
}
