//! What the sections of the channels of bots (`channels.telegram`, `.discord`, `.slack`) share:
//! the top level configures the bot of account [`DEFAULT_ACCOUNT`], `accounts.<id>` more bots
//! (each account's unset settings are the top level's), and the resolved list the channel runs;
//! and, for the sections that share the reference's access model (Discord, Slack), [`Rules`]:
//! who may DM the bot (`dmPolicy`, `allowFrom`, owners), in which channels it answers
//! (`groupPolicy`, `channels`), and whether a message there must mention it (`requireMention`,
//! per channel or `"*"`). Pairing itself is the channels' business.

use std::collections::BTreeMap;

use super::{DmPolicy, GroupPolicy, GroupSettings};

/// The account id of the bot the top level of a channel's section configures.
pub const DEFAULT_ACCOUNT: &str = "default";

/// The bots that run, by account id: `top` (the top level resolved, when it configures a bot)
/// unless an account is named [`DEFAULT_ACCOUNT`], then every account `on` keeps, each resolved
/// by `over`. Empty while the channel is off.
pub(super) fn resolve<T, A>(
    enabled: bool,
    top: Option<T>,
    accounts: &BTreeMap<String, A>,
    on: impl Fn(&A) -> bool,
    over: impl Fn(&A) -> T,
) -> Vec<(String, T)> {
    if !enabled {
        return Vec::new();
    }
    let mut bots = Vec::new();
    if let Some(top) = top.filter(|_| !accounts.contains_key(DEFAULT_ACCOUNT)) {
        bots.push((DEFAULT_ACCOUNT.to_owned(), top));
    }
    let kept = accounts.iter().filter(|(_, a)| on(a));
    bots.extend(kept.map(|(id, a)| (id.clone(), over(a))));
    bots
}

/// The bot of `account` among `bots` (`None`: no such running bot).
pub(super) fn find<T>(bots: Vec<(String, T)>, account: &str) -> Option<T> {
    bots.into_iter()
        .find_map(|(id, bot)| (id == account).then_some(bot))
}

/// The [`Rules`] of a resolved section that has the access settings' fields.
macro_rules! rules_of {
    ($section:expr) => {
        $crate::config::Rules {
            dm_policy: $section.dm_policy,
            allow_from: &$section.allow_from,
            owners: &$section.owners,
            group_policy: $section.group_policy,
            channels: &$section.channels,
            require_mention: $section.require_mention,
        }
    };
}
pub(super) use rules_of;

/// One bot's access settings, borrowed from its resolved section.
pub struct Rules<'a> {
    pub dm_policy: DmPolicy,
    pub allow_from: &'a [String],
    pub owners: &'a [String],
    pub group_policy: GroupPolicy,
    /// `channels`: by channel id, or `"*"`.
    pub channels: &'a BTreeMap<String, GroupSettings>,
    pub require_mention: bool,
}

/// Who wrote a message: their id, and their username when the platform gives one.
#[derive(Clone, Copy)]
pub struct Sender<'a> {
    pub id: &'a str,
    pub username: Option<&'a str>,
}

impl Rules<'_> {
    /// `dmPolicy`: open, disabled, the sender in `allowFrom` (or an owner), or (pairing)
    /// decided by the pairing check after this one.
    pub fn may_dm(&self, from: Sender<'_>) -> bool {
        match self.dm_policy {
            DmPolicy::Open | DmPolicy::Pairing => true,
            DmPolicy::Disabled => false,
            DmPolicy::Allowlist => self.let_in(from),
        }
    }

    /// A DM sender `dmPolicy: "pairing"` must admit: neither in `allowFrom` nor an owner.
    pub fn pairs(&self, from: Sender<'_>) -> bool {
        self.dm_policy == DmPolicy::Pairing && !self.let_in(from)
    }

    /// The sender may use owner commands.
    pub fn is_owner(&self, from: Sender<'_>) -> bool {
        is_listed(self.owners, from)
    }

    /// In `allowFrom`, or an owner: let in without asking.
    fn let_in(&self, from: Sender<'_>) -> bool {
        is_listed(self.allow_from, from) || is_listed(self.owners, from)
    }

    /// `groupPolicy` and `channels`: may the bot talk in channel `id`? If not, why (for the log).
    pub fn group_allows(&self, id: &str) -> Result<(), &'static str> {
        let listed = self.channels.contains_key(id) || self.channels.contains_key("*");
        match self.group_policy {
            GroupPolicy::Disabled => Err("messages in channels are off (groupPolicy)"),
            GroupPolicy::Allowlist if !listed => {
                Err("a channel not listed in the bot's channels (groupPolicy allowlist)")
            }
            _ => Ok(()),
        }
    }

    /// Channel `id`'s own `requireMention`, else `"*"`'s, else the bot's.
    pub fn require_mention(&self, id: &str) -> bool {
        [id, "*"]
            .iter()
            .find_map(|id| self.channels.get(*id).and_then(|c| c.require_mention))
            .unwrap_or(self.require_mention)
    }
}

/// The sender's id or username (with or without `@`, any case) is in `list`.
fn is_listed(list: &[String], from: Sender<'_>) -> bool {
    list.iter().any(|listed| {
        let listed = listed.trim();
        listed == from.id
            || from
                .username
                .is_some_and(|name| listed.trim_start_matches('@').eq_ignore_ascii_case(name))
    })
}
