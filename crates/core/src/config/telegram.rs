//! `channels.telegram`: a Telegram bot's own settings ([`TelegramBot`]); the rest of the section
//! (the access settings, `accounts`) is every chat channel's (`super::chat`).

use serde::{Deserialize, Serialize};

use super::ChannelsConfig;
use super::chat::{ChatSection, Platform, PlatformCheck, Running, hide, or};
use super::validate::{Checker, POLL_TIMEOUT_SECONDS, clear_if_empty};

/// `channels.telegram`.
pub type TelegramChannel = ChatSection<TelegramBot>;

/// A Telegram bot's own settings (the top level's, or an account's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TelegramBot {
    /// The bot's token from @BotFather (each bot its own).
    pub bot_token: Option<String>,
    /// Base URL of the Bot API (tests point it at a local fake).
    pub api_base: Option<String>,
    /// `getUpdates` long-poll timeout, in seconds.
    pub poll_timeout_seconds: Option<u64>,
}

impl Platform for TelegramBot {
    const NAME: &'static str = "telegram";
    const CREDENTIAL: &'static str = "botToken";
    const TEXT_LIMIT: u32 = 4096;

    fn section(channels: &ChannelsConfig) -> &ChatSection<Self> {
        &channels.telegram
    }

    fn defaults() -> Self {
        Self {
            bot_token: None,
            api_base: Some("https://api.telegram.org".to_owned()),
            poll_timeout_seconds: Some(30),
        }
    }

    fn over(&self, base: &Self) -> Self {
        Self {
            bot_token: self.bot_token.clone(),
            api_base: or(&self.api_base, &base.api_base),
            poll_timeout_seconds: self.poll_timeout_seconds.or(base.poll_timeout_seconds),
        }
    }

    fn configured(&self) -> bool {
        self.bot_token.is_some()
    }

    fn hide_secrets(&mut self) {
        hide(&mut self.bot_token);
    }
}

impl PlatformCheck for TelegramBot {
    const SECRET_IDENTITY: bool = true;

    fn check(&mut self, check: &mut Checker, path: &str) {
        if let Some(url) = &self.api_base {
            check.url(&format!("{path}.apiBase"), url);
        }
        if let Some(seconds) = self.poll_timeout_seconds {
            let at = format!("{path}.pollTimeoutSeconds");
            check.range(&at, seconds, &POLL_TIMEOUT_SECONDS);
        }
        clear_if_empty(&mut self.bot_token);
    }

    fn require(&mut self, _bot: &Self, check: &mut Checker, at: &Running) {
        let path = format!("{}.botToken", at.path);
        check.required_secret(&path, &mut self.bot_token, at.because);
    }

    fn identity(&self) -> Option<(&'static str, &str)> {
        Some(("botToken", self.bot_token.as_deref()?))
    }

    fn shared(other: &str) -> String {
        format!(
            "a token no other account uses ({other}.botToken has the same bot; two pollers of one bot take each other's updates)"
        )
    }
}
