//! The bots of a chat channel: one per account (the top level's is [`DEFAULT_ACCOUNT`]), each
//! with its access rules, the caps on its replies, its link's state and the platform's own
//! part; which one a delivery names; and their states for `health` as one.

use std::sync::Arc;

use super::ChatPlatform;
use super::gate::Gate;
use super::parts::Caps;
use crate::channel::{ChannelStatus, LinkCell, LinkState};
use crate::config::{ChatSection, DEFAULT_ACCOUNT, Platform};

/// One bot of a chat channel.
pub(crate) struct Bot<P: ChatPlatform> {
    /// Its account id.
    pub id: String,
    /// The agent that answers; absent = the default agent.
    pub agent_id: Option<String>,
    /// Who may talk to it, and where.
    pub gate: Gate,
    /// How its replies are cut.
    pub caps: Caps,
    /// Its inbound link's state, set by its door, read by `health`.
    pub link: LinkCell,
    /// Its platform settings, resolved.
    pub settings: P::Settings,
    /// Its client of the platform's API.
    pub api: P::Api,
}

impl<P: ChatPlatform> Bot<P> {
    /// Where this bot is configured: `channels.<channel>`, or `channels.<channel>.accounts.<id>`.
    pub fn path(&self) -> String {
        let channel = P::name();
        match self.id.as_str() {
            DEFAULT_ACCOUNT => format!("channels.{channel}"),
            id => format!("channels.{channel}.accounts.{id}"),
        }
    }

    /// The setting that holds `key` of this bot (`channels.telegram.botToken`,
    /// `channels.telegram.accounts.work.botToken`), for messages about it.
    pub fn setting(&self, key: &str) -> String {
        format!("{}.{key}", self.path())
    }

    /// Why `api` (`the Bot API`) refused this bot's credential `key` with `e`: for `health`,
    /// the log, and a delivery's failure (never the credential itself).
    pub fn refusal(&self, api: &str, key: &str, e: &dyn std::fmt::Display) -> String {
        let setting = self.setting(key);
        format!("{api} refused {setting} ({e}); fix it and restart")
    }

    /// The platform refused this bot's credential (`why`, from [`Bot::refusal`]): the bot is
    /// shown failed, the log says why, and the delivery fails for good.
    pub fn refused(&self, why: String) -> crate::channel::ChannelError {
        tracing::error!(channel = P::name(), account = %self.id, "{why}");
        self.link.set(LinkState::Failed(why.clone()));
        crate::channel::ChannelError::Permanent(why)
    }

    /// An id for what this bot received: `<channel>:<id>` for the default bot, else
    /// `<channel>:<account>:<id>` (the idempotency key of the run it starts).
    pub fn source(&self, id: &str) -> String {
        let channel = P::name();
        match self.id.as_str() {
            DEFAULT_ACCOUNT => format!("{channel}:{id}"),
            account => format!("{channel}:{account}:{id}"),
        }
    }
}

/// Every bot a chat channel runs, in the config's order.
pub(crate) struct Bots<P: ChatPlatform> {
    enabled: bool,
    list: Vec<Arc<Bot<P>>>,
}

impl<P: ChatPlatform> Bots<P> {
    /// The bots `section` runs, each with its client from `api` (a bot without one does not
    /// run).
    pub fn new(
        section: &ChatSection<P::Settings>,
        api: impl Fn(&P::Settings) -> Option<P::Api>,
    ) -> Self {
        let list = section.bots().into_iter().filter_map(|config| {
            Some(Arc::new(Bot {
                api: api(&config.platform)?,
                gate: Gate::new::<P::Settings>(&config.access),
                caps: Caps::of::<P::Settings>(&config.access),
                link: LinkCell::new(LinkState::Off),
                id: config.id,
                agent_id: config.agent_id,
                settings: config.platform,
            }))
        });
        Self {
            enabled: section.enabled,
            list: list.collect(),
        }
    }

    /// The bot of `account` (the default one when none is named); when there is none, why, and
    /// which ones run.
    pub fn get(&self, account: Option<&str>) -> Result<&Arc<Bot<P>>, String> {
        let account = account.unwrap_or(DEFAULT_ACCOUNT);
        if let Some(bot) = self.list.iter().find(|b| b.id == account) {
            return Ok(bot);
        }
        let (name, noun) = (P::name(), P::Settings::BOTS.0);
        Err(match self.list.is_empty() {
            true => format!(
                "the {name} channel is off (set channels.{name}.enabled and {})",
                P::Settings::CREDENTIAL
            ),
            false => {
                let running: Vec<&str> = self.list.iter().map(|b| b.id.as_str()).collect();
                format!(
                    "no {name} {noun} has account id {account} (running: {})",
                    running.join(", ")
                )
            }
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Bot<P>>> {
        self.list.iter()
    }

    /// Each bot and its link's state; the whole as the default bot's.
    pub fn status(&self) -> ChannelStatus {
        let bots = self.list.iter().map(|b| (b.id.clone(), b.link.get()));
        ChannelStatus::of_bots(
            (P::name(), P::LABEL),
            self.enabled,
            DEFAULT_ACCOUNT,
            bots.collect(),
        )
    }
}
