//! What every chat channel's section shares (`channels.telegram`, `.discord`, `.slack`,
//! `.matrix`, `.whatsapp`, `.signal`): one bot at the top level and more under `accounts.<id>`,
//! each with the access settings ([`Access`]: who may talk to it, where, and how long its
//! answers may be) and its platform's own settings (a [`Platform`]); an account's unset
//! settings are the channel's, and [`ChatSection::bots`] resolves the list the channel runs.
//!
//! A platform's config file (`telegram.rs`, …) holds only its platform's settings and checks;
//! the access settings are read, written and checked here, once for every channel (`flat.rs`
//! reads a section's one JSON object into both parts, `check.rs` checks them).

mod check;
mod flat;

use std::collections::BTreeMap;
use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{DmPolicy, GroupPolicy};

pub(super) use check::{INBOUND_CHARS, PlatformCheck, REPLY_PARTS, Running};

/// The account id of the bot the top level of a channel's section configures.
pub const DEFAULT_ACCOUNT: &str = "default";

/// One group's own settings (`channels.telegram.groups.<chatId>`,
/// `channels.discord.channels.<channelId>`; `"*"` for every group).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GroupSettings {
    /// Overrides the channel's `requireMention` in this group (and its threads or topics).
    pub require_mention: Option<bool>,
}

/// Who may talk to a bot and where, and how long its answers may be: the settings every chat
/// channel has at the top of its section, and again in each account (unset: the channel's,
/// then the default named here).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Access {
    /// `dmPolicy`: who may talk to the bot in a private chat (default `pairing`).
    pub dm_policy: Option<DmPolicy>,
    /// `allowFrom`: senders (ids, or usernames where the platform has them) who may always talk
    /// to the bot in private (`dmPolicy` `allowlist` and `pairing`; approved pairings add to
    /// them).
    pub allow_from: Option<Vec<String>>,
    /// `owners`: senders who own the bot's chats: they may use owner commands (`/send
    /// on|off|inherit`, `/status`, `/new`) and are always let in privately.
    pub owners: Option<Vec<String>>,
    /// `groupPolicy`: which groups the bot answers in (default `allowlist`).
    pub group_policy: Option<GroupPolicy>,
    /// The groups by id, or `"*"` for every group (the channel names the setting: Telegram's
    /// `groups`, Discord's `channels`, Matrix's `rooms`): listed ones pass
    /// `groupPolicy: "allowlist"`, and each may set its own `requireMention`.
    pub groups: Option<BTreeMap<String, GroupSettings>>,
    /// `groupAllowFrom`: in groups, only these senders; empty = anyone.
    pub group_allow_from: Option<Vec<String>>,
    /// `requireMention`: in groups, answer only messages that mention the bot or reply to it
    /// (default true).
    pub require_mention: Option<bool>,
    /// `allowBots`: answer messages other bots wrote (default false).
    pub allow_bots: Option<bool>,
    /// `textChunkLimit`: the most characters in one part of a reply (default, and at most: the
    /// platform's limit).
    pub text_chunk_limit: Option<u32>,
    /// `maxReplyParts`: the most parts one reply is posted in; a longer one ends with a note
    /// that the rest is in the session's transcript (default [`MAX_REPLY_PARTS`]).
    pub max_reply_parts: Option<u32>,
    /// `maxInboundChars`: the most characters of one message the agent reads; a longer one is
    /// cut, with a note saying so (default [`MAX_INBOUND_CHARS`]).
    pub max_inbound_chars: Option<u32>,
}

/// How many parts a reply is posted in at most, unless `maxReplyParts` says otherwise.
pub const MAX_REPLY_PARTS: u32 = 10;
/// How many characters of one message the agent reads at most, unless `maxInboundChars` says
/// otherwise: about 12,000 tokens, more than the longest message Slack takes (40,000).
pub const MAX_INBOUND_CHARS: u32 = 50_000;

impl Access {
    /// The groups listed, to change them (an unset list becomes an empty one).
    pub fn groups_mut(&mut self) -> &mut BTreeMap<String, GroupSettings> {
        self.groups.get_or_insert_default()
    }

    /// Every setting set to its default, for a platform whose messages hold `text_limit`
    /// characters.
    pub fn defaults(text_limit: u32) -> Self {
        Self {
            dm_policy: Some(DmPolicy::default()),
            allow_from: Some(Vec::new()),
            owners: Some(Vec::new()),
            group_policy: Some(GroupPolicy::default()),
            groups: Some(BTreeMap::new()),
            group_allow_from: Some(Vec::new()),
            require_mention: Some(true),
            allow_bots: Some(false),
            text_chunk_limit: Some(text_limit),
            max_reply_parts: Some(MAX_REPLY_PARTS),
            max_inbound_chars: Some(MAX_INBOUND_CHARS),
        }
    }

    /// These settings, each unset one taken from `base`.
    pub fn over(&self, base: &Access) -> Access {
        Access {
            dm_policy: self.dm_policy.or(base.dm_policy),
            allow_from: or(&self.allow_from, &base.allow_from),
            owners: or(&self.owners, &base.owners),
            group_policy: self.group_policy.or(base.group_policy),
            groups: or(&self.groups, &base.groups),
            group_allow_from: or(&self.group_allow_from, &base.group_allow_from),
            require_mention: self.require_mention.or(base.require_mention),
            allow_bots: self.allow_bots.or(base.allow_bots),
            text_chunk_limit: self.text_chunk_limit.or(base.text_chunk_limit),
            max_reply_parts: self.max_reply_parts.or(base.max_reply_parts),
            max_inbound_chars: self.max_inbound_chars.or(base.max_inbound_chars),
        }
    }
}

/// A chat platform's own settings of one bot, as written at the top of the channel's section
/// or in an account (unset: the channel's, then the platform's default). Everything else a
/// section holds is the kit's.
pub trait Platform:
    Clone + Default + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// The channel's name in setting paths, keys and records (`telegram`).
    const NAME: &'static str;
    /// What the platform calls one bot and several (`("bot", "bots")`, Slack's `app`).
    const BOTS: (&'static str, &'static str) = ("bot", "bots");
    /// What the platform calls its groups, and the setting that lists them.
    const GROUPS: (&'static str, &'static str) = ("groups", "groups");
    /// Whether the section may configure more bots under `accounts`.
    const ACCOUNTS: bool = true;
    /// The setting that makes the top level configure a bot (`botToken`), for "the channel is
    /// off" messages.
    const CREDENTIAL: &'static str;
    /// The most characters one message carries on the platform (`textChunkLimit` at most).
    const TEXT_LIMIT: u32;

    /// Its section of `channels`.
    fn section(channels: &super::ChannelsConfig) -> &ChatSection<Self>;
    /// Every setting that has a default, set to it.
    fn defaults() -> Self;
    /// These settings, each unset one taken from `base` — except the bot's own identity and
    /// credentials, which an account never takes from the channel.
    fn over(&self, base: &Self) -> Self;
    /// The top level configures a bot of its own (its identity is set).
    fn configured(&self) -> bool;
    /// Replaces every secret with [`super::REDACTED`] (for `config show`).
    fn hide_secrets(&mut self);
}

/// `channels.<name>` of a chat channel whose bots' own settings are `P`. In the file it is one
/// object: `enabled`, `agentId`, the [`Access`] settings and `P`'s side by side, and `accounts`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatSection<P> {
    /// Whether the channel runs.
    pub enabled: bool,
    /// The agent that answers; absent = the default agent.
    pub agent_id: Option<String>,
    /// Who may talk to the bots, where, and how long their answers may be.
    pub access: Access,
    /// The top level's bot (and what every account leaves unset).
    pub bot: P,
    /// More bots, by account id; each runs with the settings above except those it sets.
    pub accounts: BTreeMap<String, ChatAccount<P>>,
}

/// `channels.<name>.accounts.<id>`: one more bot. Unset settings are the channel's.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatAccount<P> {
    /// False = this bot does not run (the others still do).
    pub enabled: bool,
    /// The agent that answers this bot's chats; absent = the channel's.
    pub agent_id: Option<String>,
    /// Its access settings; each one unset is the channel's.
    pub access: Access,
    /// Its platform settings; each one unset is the channel's, but its identity and
    /// credentials, which are its own.
    pub bot: P,
}

/// Off, every setting of the top level at its default, no accounts.
impl<P: Platform> Default for ChatSection<P> {
    fn default() -> Self {
        Self {
            enabled: false,
            agent_id: None,
            access: Access::defaults(P::TEXT_LIMIT),
            bot: P::defaults(),
            accounts: BTreeMap::new(),
        }
    }
}

impl<P> Default for ChatAccount<P>
where
    P: Default,
{
    fn default() -> Self {
        Self {
            enabled: true,
            agent_id: None,
            access: Access::default(),
            bot: P::default(),
        }
    }
}

/// One bot a chat channel runs, every setting resolved: its account's over the channel's over
/// the defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct BotConfig<P> {
    /// Its account id ([`DEFAULT_ACCOUNT`] for the top level's bot).
    pub id: String,
    /// The agent that answers; absent = the default agent.
    pub agent_id: Option<String>,
    /// Every access setting set.
    pub access: Access,
    /// Every platform setting that has a default set.
    pub platform: P,
}

impl<P: Platform> ChatSection<P> {
    /// The bots that run, in order: the top level's (account [`DEFAULT_ACCOUNT`]) when it
    /// configures one (an account named `default` replaces it), then every enabled account.
    /// Empty while the channel is off.
    pub fn bots(&self) -> Vec<BotConfig<P>> {
        if !self.enabled {
            return Vec::new();
        }
        let access = self.access.over(&Access::defaults(P::TEXT_LIMIT));
        let top = BotConfig {
            id: DEFAULT_ACCOUNT.to_owned(),
            agent_id: self.agent_id.clone(),
            access,
            platform: self.bot.over(&P::defaults()),
        };
        let mut bots = Vec::new();
        if self.top_runs() {
            bots.push(top.clone());
        }
        let running = self.accounts.iter().filter(|(_, a)| a.enabled);
        bots.extend(running.map(|(id, account)| BotConfig {
            id: id.clone(),
            agent_id: account.agent_id.clone().or_else(|| top.agent_id.clone()),
            access: account.access.over(&top.access),
            platform: account.bot.over(&top.platform),
        }));
        bots
    }

    /// The top level runs a bot of its own: it configures one and no account replaces it.
    fn top_runs(&self) -> bool {
        self.bot.configured() && !self.accounts.contains_key(DEFAULT_ACCOUNT)
    }

    /// This section with one account of every setting unset under `"*"`, so that the keys an
    /// account may have are known (for "did you mean …?").
    pub(crate) fn template(mut self) -> Self {
        if P::ACCOUNTS {
            self.accounts.insert("*".into(), ChatAccount::default());
        }
        self
    }

    /// Replaces every secret of the section and its accounts with [`super::REDACTED`].
    pub(crate) fn hide_secrets(&mut self) {
        self.bot.hide_secrets();
        for account in self.accounts.values_mut() {
            account.bot.hide_secrets();
        }
    }
}

/// `own`, else `base` (a platform's [`Platform::over`] for settings an account takes from the
/// channel).
pub fn or<T: Clone>(own: &Option<T>, base: &Option<T>) -> Option<T> {
    own.clone().or_else(|| base.clone())
}

/// Replaces `secret` with [`super::REDACTED`] when it is set.
pub fn hide(secret: &mut Option<String>) {
    if secret.is_some() {
        *secret = Some(super::REDACTED.to_owned());
    }
}

/// The most characters one message of chat channel `channel` carries (`textChunkLimit` at
/// most), when `channel` is one.
pub(super) fn text_limit(channel: &str) -> Option<u32> {
    use super::{DiscordBot, MatrixBot, SignalAccount, SlackApp, TelegramBot, WhatsAppNumber};
    [
        (TelegramBot::NAME, TelegramBot::TEXT_LIMIT),
        (DiscordBot::NAME, DiscordBot::TEXT_LIMIT),
        (SlackApp::NAME, SlackApp::TEXT_LIMIT),
        (WhatsAppNumber::NAME, WhatsAppNumber::TEXT_LIMIT),
        (SignalAccount::NAME, SignalAccount::TEXT_LIMIT),
        (MatrixBot::NAME, MatrixBot::TEXT_LIMIT),
    ]
    .into_iter()
    .find_map(|(name, limit)| (name == channel).then_some(limit))
}
