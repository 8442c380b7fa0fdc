//! `channels.slack`: one Slack app at the top level, more under `accounts.<id>` (each account's
//! unset settings are the channel's), and [`SlackChannel::bots`], the resolved list the channel
//! runs. Shaped like `channels.discord`, with Socket Mode's app-level token beside the bot token.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{push_key, quote};
use super::validate::{
    ACCOUNT_ID_EXPECTED, Checker, clear_if_empty, is_id, normalize_optional_agent,
};
use super::{DmPolicy, GroupPolicy, GroupSettings, REDACTED};

pub use super::bots::DEFAULT_ACCOUNT;

/// What a bot token looks like.
pub(super) const BOT_TOKEN_EXPECTED: &str =
    "a bot token (xoxb-…, the app's OAuth & Permissions page)";
/// What an app-level token looks like.
pub(super) const APP_TOKEN_EXPECTED: &str =
    "an app-level token (xapp-…, Basic Information → App-Level Tokens, scope connections:write)";

/// `channels.slack`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SlackChannel {
    /// Whether the apps connect over Socket Mode.
    pub enabled: bool,
    /// The bot token (`xoxb-…`) of the `default` account: the Web API calls (required while
    /// enabled, unless `accounts` configures the apps).
    pub bot_token: Option<String>,
    /// The app-level token (`xapp-…`, scope `connections:write`) of the `default` account:
    /// opens the Socket Mode connections (required with `botToken`).
    pub app_token: Option<String>,
    /// Base URL of the Web API (tests point it at a local fake).
    pub api_base: String,
    /// The agent that answers; absent = the default agent.
    pub agent_id: Option<String>,
    /// Who may talk to the app in a DM.
    pub dm_policy: DmPolicy,
    /// User ids (`U0123ABCD`) who may always DM the app (`dmPolicy` `allowlist` and
    /// `pairing`; approved pairings add to them).
    pub allow_from: Vec<String>,
    /// User ids who own the app's chats: they may use owner commands (`/send on|off|inherit`,
    /// `/status`, `/new`, as messages) and are always let in by DM.
    pub owners: Vec<String>,
    /// Which channels the app answers in.
    pub group_policy: GroupPolicy,
    /// Channels by channel id (`C0123ABCD`), or `"*"` for every channel: listed ones pass
    /// `groupPolicy: "allowlist"`, and each may set its own `requireMention`.
    pub channels: BTreeMap<String, GroupSettings>,
    /// In channels, answer only messages that mention the app (`@app`).
    pub require_mention: bool,
    /// More apps, by account id; each runs with the settings above except those it sets.
    pub accounts: BTreeMap<String, SlackAccount>,
}

/// `channels.slack.accounts.<id>`: one more app. Unset settings are the channel's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SlackAccount {
    /// False = this app does not connect (the others still do).
    pub enabled: bool,
    /// The app's own bot token (required while it is enabled).
    pub bot_token: Option<String>,
    /// The app's own app-level token (required while it is enabled).
    pub app_token: Option<String>,
    pub api_base: Option<String>,
    pub agent_id: Option<String>,
    pub dm_policy: Option<DmPolicy>,
    pub allow_from: Option<Vec<String>>,
    pub owners: Option<Vec<String>>,
    pub group_policy: Option<GroupPolicy>,
    pub channels: Option<BTreeMap<String, GroupSettings>>,
    pub require_mention: Option<bool>,
}

impl Default for SlackAccount {
    fn default() -> Self {
        Self {
            enabled: true,
            bot_token: None,
            app_token: None,
            api_base: None,
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

impl Default for SlackChannel {
    fn default() -> Self {
        Self {
            enabled: false,
            bot_token: None,
            app_token: None,
            api_base: "https://slack.com/api".to_owned(),
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

impl SlackChannel {
    /// The apps that run, by account id, each with its settings resolved (and no `accounts`):
    /// `default` from the top level when it has both tokens (an account named `default`
    /// replaces it), then every enabled account. Empty while the channel is off.
    pub fn bots(&self) -> Vec<(String, SlackChannel)> {
        let base = SlackChannel {
            accounts: BTreeMap::new(),
            ..self.clone()
        };
        let tokens = self.bot_token.is_some() && self.app_token.is_some();
        let top = tokens.then(|| base.clone());
        let over = |account: &SlackAccount| account.over(&base);
        super::bots::resolve(self.enabled, top, &self.accounts, |a| a.enabled, over)
    }

    /// The resolved settings of the app `account` (`None`: no such running app).
    pub fn bot(&self, account: &str) -> Option<SlackChannel> {
        super::bots::find(self.bots(), account)
    }
}

impl SlackAccount {
    /// This account's settings over the channel's.
    fn over(&self, base: &SlackChannel) -> SlackChannel {
        SlackChannel {
            enabled: true,
            bot_token: self.bot_token.clone(),
            app_token: self.app_token.clone(),
            api_base: self.api_base.clone().unwrap_or(base.api_base.clone()),
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

impl Checker<'_> {
    /// The top-level app and each account: URLs, both tokens (each enabled app its own, of the
    /// right kind), agent ids.
    pub(super) fn slack(&mut self, slack: &mut SlackChannel) {
        self.url("channels.slack.apiBase", &slack.api_base);
        if slack.enabled && slack.accounts.is_empty() {
            let because = "required while channels.slack.enabled is true, unless accounts configures the apps";
            self.slack_tokens(
                "channels.slack",
                (&mut slack.bot_token, &mut slack.app_token),
                because,
            );
        }
        clear_if_empty(&mut slack.bot_token);
        clear_if_empty(&mut slack.app_token);
        normalize_optional_agent(&mut slack.agent_id);
        let mut tokens: BTreeMap<String, String> = BTreeMap::new();
        if let Some(token) = &slack.app_token {
            tokens.insert(token.clone(), "channels.slack.appToken".into());
        }
        for (id, account) in &mut slack.accounts {
            let path = push_key("channels.slack.accounts", id);
            if !is_id(id) {
                self.invalid(&path, quote(id), ACCOUNT_ID_EXPECTED);
            }
            if let Some(url) = &account.api_base {
                self.url(&format!("{path}.apiBase"), url);
            }
            normalize_optional_agent(&mut account.agent_id);
            if !(slack.enabled && account.enabled) {
                clear_if_empty(&mut account.bot_token);
                clear_if_empty(&mut account.app_token);
                continue;
            }
            let because = "each enabled account needs its own app";
            self.slack_tokens(
                &path,
                (&mut account.bot_token, &mut account.app_token),
                because,
            );
            let Some(token) = &account.app_token else {
                continue;
            };
            if let Some(other) = tokens.insert(token.clone(), format!("{path}.appToken")) {
                self.invalid(
                    format!("{path}.appToken"),
                    REDACTED,
                    format!("a token no other account uses ({other} has the same app; Slack hands each event to one of an app's connections)"),
                );
            }
        }
    }

    /// Both tokens of one app, each present and of its kind (the value is never shown).
    fn slack_tokens(
        &mut self,
        path: &str,
        (bot, app): (&mut Option<String>, &mut Option<String>),
        because: &str,
    ) {
        let kinds = [
            ("botToken", bot, "xoxb-", BOT_TOKEN_EXPECTED),
            ("appToken", app, "xapp-", APP_TOKEN_EXPECTED),
        ];
        for (name, token, prefix, expected) in kinds {
            let at = format!("{path}.{name}");
            self.required_secret(&at, token, because);
            if token
                .as_deref()
                .is_some_and(|t| !t.trim().starts_with(prefix))
            {
                self.invalid(at, REDACTED, expected);
            }
        }
    }
}
