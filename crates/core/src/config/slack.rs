//! `channels.slack`: a Slack app's own settings ([`SlackApp`]), with Socket Mode's app-level
//! token beside the bot token; the rest of the section is every chat channel's (`super::chat`).

use serde::{Deserialize, Serialize};

use super::ChannelsConfig;
use super::REDACTED;
use super::chat::{ChatSection, Platform, PlatformCheck, Running, hide, or};
use super::validate::{Checker, clear_if_empty};

/// What a bot token looks like.
const BOT_TOKEN_EXPECTED: &str = "a bot token (xoxb-…, the app's OAuth & Permissions page)";
/// What an app-level token looks like.
const APP_TOKEN_EXPECTED: &str =
    "an app-level token (xapp-…, Basic Information → App-Level Tokens, scope connections:write)";

/// `channels.slack`.
pub type SlackChannel = ChatSection<SlackApp>;

/// A Slack app's own settings (the top level's, or an account's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlackApp {
    /// The bot token (`xoxb-…`): the Web API calls.
    pub bot_token: Option<String>,
    /// The app-level token (`xapp-…`, scope `connections:write`): opens the Socket Mode
    /// connections.
    pub app_token: Option<String>,
    /// Base URL of the Web API (tests point it at a local fake).
    pub api_base: Option<String>,
}

impl Platform for SlackApp {
    const NAME: &'static str = "slack";
    const BOTS: (&'static str, &'static str) = ("app", "apps");
    const GROUPS: (&'static str, &'static str) = ("channels", "channels");
    const CREDENTIAL: &'static str = "botToken and appToken";
    /// Slack's recommended limit for a message's `text`.
    const TEXT_LIMIT: u32 = 4000;

    fn section(channels: &ChannelsConfig) -> &ChatSection<Self> {
        &channels.slack
    }

    fn defaults() -> Self {
        Self {
            api_base: Some("https://slack.com/api".to_owned()),
            ..Self::default()
        }
    }

    fn over(&self, base: &Self) -> Self {
        Self {
            bot_token: self.bot_token.clone(),
            app_token: self.app_token.clone(),
            api_base: or(&self.api_base, &base.api_base),
        }
    }

    fn configured(&self) -> bool {
        self.bot_token.is_some() && self.app_token.is_some()
    }

    fn hide_secrets(&mut self) {
        hide(&mut self.bot_token);
        hide(&mut self.app_token);
    }
}

impl PlatformCheck for SlackApp {
    const SECRET_IDENTITY: bool = true;

    /// The URL, and each token of its kind (the value is never shown).
    fn check(&mut self, check: &mut Checker, path: &str) {
        if let Some(url) = &self.api_base {
            check.url(&format!("{path}.apiBase"), url);
        }
        let kinds = [
            ("botToken", &mut self.bot_token, "xoxb-", BOT_TOKEN_EXPECTED),
            ("appToken", &mut self.app_token, "xapp-", APP_TOKEN_EXPECTED),
        ];
        for (name, token, prefix, expected) in kinds {
            clear_if_empty(token);
            if token
                .as_deref()
                .is_some_and(|t| !t.trim().starts_with(prefix))
            {
                check.invalid(format!("{path}.{name}"), REDACTED, expected);
            }
        }
    }

    fn require(&mut self, _app: &Self, check: &mut Checker, at: &Running) {
        let tokens = [
            ("botToken", &mut self.bot_token),
            ("appToken", &mut self.app_token),
        ];
        for (name, token) in tokens {
            check.required_secret(&format!("{}.{name}", at.path), token, at.because);
        }
    }

    fn identity(&self) -> Option<(&'static str, &str)> {
        Some(("appToken", self.app_token.as_deref()?))
    }

    fn shared(other: &str) -> String {
        format!(
            "a token no other account uses ({other}.appToken has the same app; Slack hands each event to one of an app's connections)"
        )
    }
}
