//! The bots of a chat channel: one per account (the top level's is [`DEFAULT_ACCOUNT`]), each
//! with its access rules, the caps on its replies, its link's state and the platform's own
//! part; which one a delivery names; and their states for `health` as one.

use std::sync::Arc;

use super::gate::Gate;
use super::parts::Caps;
use crate::channel::{ChannelStatus, LinkCell, LinkState};
use crate::config::{BotConfig, ChatSection, DEFAULT_ACCOUNT, Platform};

/// One bot of a chat channel.
pub(crate) struct Bot<B> {
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
    /// The platform's part: its API client, its settings.
    pub api: B,
}

impl<B> Bot<B> {
    /// The setting that holds `key` of this bot (`channels.telegram.botToken`,
    /// `channels.telegram.accounts.work.botToken`), for messages about it.
    pub fn setting(&self, channel: &str, key: &str) -> String {
        match self.id.as_str() {
            DEFAULT_ACCOUNT => format!("channels.{channel}.{key}"),
            id => format!("channels.{channel}.accounts.{id}.{key}"),
        }
    }

    /// An id for what this bot received: `<channel>:<id>` for the default bot, else
    /// `<channel>:<account>:<id>` (the idempotency key of the run it starts).
    pub fn source(&self, channel: &str, id: &str) -> String {
        match self.id.as_str() {
            DEFAULT_ACCOUNT => format!("{channel}:{id}"),
            account => format!("{channel}:{account}:{id}"),
        }
    }
}

/// Every bot a chat channel runs, in the config's order.
pub(crate) struct Bots<B> {
    name: &'static str,
    label: &'static str,
    enabled: bool,
    /// What the channel calls a bot (`bot`, `app`, `number`).
    noun: &'static str,
    /// The setting that configures the top level's bot.
    credential: &'static str,
    list: Vec<Arc<Bot<B>>>,
}

impl<B> Bots<B> {
    /// The bots `section` runs, each with its platform part from `make` (a bot `make` cannot
    /// build does not run).
    pub fn new<P: Platform>(
        section: &ChatSection<P>,
        label: &'static str,
        mut make: impl FnMut(&BotConfig<P>) -> Option<B>,
    ) -> Self {
        let list = section.bots().into_iter().filter_map(|config| {
            let api = make(&config)?;
            Some(Arc::new(Bot {
                gate: Gate::new::<P>(&config.access),
                caps: Caps::of::<P>(&config.access),
                link: LinkCell::new(LinkState::Off),
                id: config.id,
                agent_id: config.agent_id,
                api,
            }))
        });
        Self {
            name: P::NAME,
            label,
            enabled: section.enabled,
            noun: P::BOTS.0,
            credential: P::CREDENTIAL,
            list: list.collect(),
        }
    }

    /// The bot of `account` (the default one when none is named); when there is none, why, and
    /// which ones run.
    pub fn get(&self, account: Option<&str>) -> Result<&Arc<Bot<B>>, String> {
        let account = account.unwrap_or(DEFAULT_ACCOUNT);
        if let Some(bot) = self.list.iter().find(|b| b.id == account) {
            return Ok(bot);
        }
        let (name, noun) = (self.name, self.noun);
        Err(match self.list.is_empty() {
            true => format!(
                "the {name} channel is off (set channels.{name}.enabled and {})",
                self.credential
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

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Bot<B>>> {
        self.list.iter()
    }

    /// Each bot and its link's state; the whole as the default bot's.
    pub fn status(&self) -> ChannelStatus {
        let bots = self.list.iter().map(|b| (b.id.clone(), b.link.get()));
        ChannelStatus::of_bots(
            (self.name, self.label),
            self.enabled,
            DEFAULT_ACCOUNT,
            bots.collect(),
        )
    }
}
