//! Who may talk to a chat channel's bot, and where (the reference's access model, one copy for
//! every chat channel): `dmPolicy` with `allowFrom` and `owners` in private chats, `groupPolicy`
//! with the channel's map of groups (`"*"` for all) and `groupAllowFrom` in groups, and
//! `requireMention` per group. A channel describes one bot's settings as a [`Gate`] and its
//! sender as a [`Sender`]; its routing decides with what the gate answers, and answers a
//! [`Decision`].

use std::collections::BTreeMap;

use switchboard_protocol::sessions::DeliveryContext;

use super::inbound::Chat;
use super::owner::Order;
use crate::config::{DmPolicy, GroupPolicy, GroupSettings};
use crate::keys::SessionKey;

/// A message that starts a run: its session, where the reply goes, the text the agent reads
/// and the chat's name (the session's `displayName`) when it has one.
pub(super) struct Turn {
    pub key: SessionKey,
    pub route: DeliveryContext,
    pub text: String,
    pub title: Option<String>,
}

impl Turn {
    /// The chat the turn came from, to answer an owner command or a pairing code in (once per
    /// `source` message).
    pub fn chat(&self, channel: &str, source: &str) -> Chat {
        Chat {
            key: self.key.clone(),
            route: self.route.clone(),
            setting: format!("channels.{channel}.owners"),
            idempotency_key: Some(source.to_string()),
        }
    }
}

/// An owner command from a chat the bot may talk in.
pub(super) struct Command {
    pub chat: Turn,
    /// The sender is one of the bot's `owners`.
    pub owner: bool,
    pub order: Order,
}

/// What a message asks for.
pub(super) enum Decision {
    /// A run in the chat's session.
    Run(Turn),
    /// An owner command (it needs no mention in a group).
    Command(Command),
    /// Nothing, and why (for the log).
    Ignore(String),
}

impl Decision {
    /// A run, or an owner command when the text is one.
    pub fn of(turn: Turn, order: Option<Order>, owner: bool) -> Decision {
        match order {
            Some(order) => Decision::Command(Command {
                chat: turn,
                owner,
                order,
            }),
            None => Decision::Run(turn),
        }
    }

    pub fn ignore(why: impl Into<String>) -> Decision {
        Decision::Ignore(why.into())
    }
}

/// Who wrote a message: the platform's user id and, where it has them, the username.
#[derive(Clone, Copy)]
pub(super) struct Sender<'a> {
    pub id: &'a str,
    pub username: Option<&'a str>,
}

impl Sender<'_> {
    /// The sender's id or username (with or without `@`, any case) is in `list`.
    fn is_in(&self, list: &[String]) -> bool {
        list.iter().any(|listed| {
            let listed = listed.trim();
            listed == self.id
                || self
                    .username
                    .is_some_and(|u| listed.trim_start_matches('@').eq_ignore_ascii_case(u))
        })
    }
}

/// The [`Gate`] of a channel's settings whose access fields have the shared names
/// (`dm_policy`, `allow_from`, `owners`, `group_policy`, `groups`, `group_allow_from`,
/// `require_mention`), its groups listed under `groups`.
macro_rules! gate_of {
    ($channel:expr, $settings:expr) => {
        $crate::channels::gate::Gate {
            channel: $channel,
            groups_are: ("groups", "groups"),
            dm_policy: $settings.dm_policy,
            allow_from: &$settings.allow_from,
            owners: &$settings.owners,
            group_policy: $settings.group_policy,
            groups: &$settings.groups,
            group_allow_from: &$settings.group_allow_from,
            require_mention: $settings.require_mention,
        }
    };
}
pub(super) use gate_of;

/// One bot's access settings, as its channel's config has them.
pub(super) struct Gate<'a> {
    /// The channel's name in setting paths (`channels.<channel>.dmPolicy`).
    pub channel: &'static str,
    /// What the channel calls its groups, and the setting that lists them.
    pub groups_are: (&'static str, &'static str),
    pub dm_policy: DmPolicy,
    pub allow_from: &'a [String],
    pub owners: &'a [String],
    pub group_policy: GroupPolicy,
    pub groups: &'a BTreeMap<String, GroupSettings>,
    /// In groups, only these senders; empty = anyone.
    pub group_allow_from: &'a [String],
    pub require_mention: bool,
}

impl Gate<'_> {
    /// `dmPolicy`: open, disabled, the sender in `allowFrom` or an owner, or (pairing) decided
    /// by the pairing check after this one. `Err` says why not, for the log.
    pub fn may_dm(&self, from: Sender) -> Result<(), String> {
        let may = match self.dm_policy {
            DmPolicy::Open | DmPolicy::Pairing => true,
            DmPolicy::Disabled => false,
            DmPolicy::Allowlist => self.lets_in(from),
        };
        match may {
            true => Ok(()),
            false => Err(format!(
                "the sender may not talk to the bot (channels.{}.dmPolicy)",
                self.channel
            )),
        }
    }

    /// A private sender whom `dmPolicy: "pairing"` must admit: neither in `allowFrom` nor an
    /// owner.
    pub fn is_stranger(&self, from: Sender) -> bool {
        self.dm_policy == DmPolicy::Pairing && !self.lets_in(from)
    }

    /// In `allowFrom`, or an owner: let in without asking.
    pub fn lets_in(&self, from: Sender) -> bool {
        from.is_in(self.allow_from) || self.is_owner(from)
    }

    /// One of the bot's `owners`: may use owner commands.
    pub fn is_owner(&self, from: Sender) -> bool {
        from.is_in(self.owners)
    }

    /// `groupPolicy`, the groups listed and `groupAllowFrom`: may this sender talk to the bot
    /// in group `group`? `Err` says why not, for the log.
    pub fn group_allows(&self, group: &str, from: Sender) -> Result<(), String> {
        let (kind, setting) = self.groups_are;
        let listed = self.groups.contains_key(group) || self.groups.contains_key("*");
        match self.group_policy {
            GroupPolicy::Disabled => {
                return Err(format!(
                    "{kind} are off (channels.{}.groupPolicy)",
                    self.channel
                ));
            }
            GroupPolicy::Allowlist if !listed => {
                return Err(format!(
                    "one of the {kind} not listed in channels.{}.{setting}",
                    self.channel
                ));
            }
            _ => {}
        }
        if !self.group_allow_from.is_empty() && !from.is_in(self.group_allow_from) {
            return Err(format!(
                "a sender not in channels.{}.groupAllowFrom",
                self.channel
            ));
        }
        Ok(())
    }

    /// The group's own `requireMention`, else `"*"`'s, else the bot's.
    pub fn require_mention(&self, group: &str) -> bool {
        [group, "*"]
            .iter()
            .find_map(|id| self.groups.get(*id).and_then(|g| g.require_mention))
            .unwrap_or(self.require_mention)
    }
}
