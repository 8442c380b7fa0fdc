//! `channels.discord`: a Discord bot's own settings ([`DiscordBot`]), with the Gateway's URL
//! beside the REST base; the rest of the section is every chat channel's (`super::chat`).

use serde::{Deserialize, Serialize};

use super::ChannelsConfig;
use super::chat::{ChatSection, Platform, PlatformCheck, Running, hide, or};
use super::error::quote;
use super::validate::{Checker, clear_if_empty};

/// What `gatewayUrl` accepts.
pub(super) const WS_URL_EXPECTED: &str = "a ws:// or wss:// URL";

/// `channels.discord`.
pub type DiscordChannel = ChatSection<DiscordBot>;

/// A Discord bot's own settings (the top level's, or an account's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscordBot {
    /// The bot's token (each bot its own).
    pub bot_token: Option<String>,
    /// Base URL of the REST API, version included (tests point it at a local fake).
    pub api_base: Option<String>,
    /// The Gateway's WebSocket URL (tests point it at a local fake).
    pub gateway_url: Option<String>,
}

impl Platform for DiscordBot {
    const NAME: &'static str = "discord";
    const GROUPS: (&'static str, &'static str) = ("guild channels", "channels");
    const CREDENTIAL: &'static str = "botToken";
    const TEXT_LIMIT: u32 = 2000;

    fn section(channels: &ChannelsConfig) -> &ChatSection<Self> {
        &channels.discord
    }

    fn defaults() -> Self {
        Self {
            bot_token: None,
            api_base: Some("https://discord.com/api/v10".to_owned()),
            gateway_url: Some("wss://gateway.discord.gg".to_owned()),
        }
    }

    fn over(&self, base: &Self) -> Self {
        Self {
            bot_token: self.bot_token.clone(),
            api_base: or(&self.api_base, &base.api_base),
            gateway_url: or(&self.gateway_url, &base.gateway_url),
        }
    }

    fn configured(&self) -> bool {
        self.bot_token.is_some()
    }

    fn hide_secrets(&mut self) {
        hide(&mut self.bot_token);
    }
}

/// `ws://…` or `wss://…` with a host.
fn is_ws_url(url: &str) -> bool {
    ["ws://", "wss://"].iter().any(|scheme| {
        url.strip_prefix(scheme)
            .is_some_and(|rest| !rest.is_empty())
    })
}

impl PlatformCheck for DiscordBot {
    const SECRET_IDENTITY: bool = true;

    fn check(&mut self, check: &mut Checker, path: &str) {
        if let Some(url) = &self.api_base {
            check.url(&format!("{path}.apiBase"), url);
        }
        if let Some(url) = self.gateway_url.as_deref().filter(|u| !is_ws_url(u)) {
            check.invalid(format!("{path}.gatewayUrl"), quote(url), WS_URL_EXPECTED);
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
            "a token no other account uses ({other}.botToken has the same bot; two Gateway sessions of one bot each get every event)"
        )
    }
}
