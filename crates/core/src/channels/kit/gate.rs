//! Who may talk to a chat channel's bot, and where (the reference's access model, one copy for
//! every chat channel): `dmPolicy` with `allowFrom` and `owners` in private chats, `groupPolicy`
//! with the channel's map of groups (`"*"` for all) and `groupAllowFrom` in groups,
//! `requireMention` per group, and `allowBots`. Each bot has its [`Gate`], resolved from its
//! settings once; the kit's routing (`route.rs`) asks it about a message's [`Sender`] and
//! answers a [`Decision`].

use std::collections::BTreeMap;

use switchboard_protocol::sessions::DeliveryContext;

use crate::channels::inbound::Chat;
use crate::channels::owner::Order;
use crate::config::{Access, DmPolicy, GroupPolicy, GroupSettings, Platform};
use crate::keys::SessionKey;

/// A message that starts a run: its session, where the reply goes, the text the agent reads
/// and the chat's name (the session's `displayName`) when it has one.
pub(crate) struct Turn {
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
pub(crate) struct Command {
    pub chat: Turn,
    /// The sender is one of the bot's `owners`.
    pub owner: bool,
    pub order: Order,
}

/// What a message asks for.
pub(crate) enum Decision {
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
pub(crate) struct Sender<'a> {
    pub id: &'a str,
    pub username: Option<&'a str>,
}

impl Sender<'_> {
    /// The sender's id or username (with or without `@`, any case) is in `list`, or the list
    /// holds `*` (anyone).
    fn is_in(&self, list: &[String]) -> bool {
        list.iter().any(|listed| {
            let listed = listed.trim();
            listed == "*"
                || listed == self.id
                || self
                    .username
                    .is_some_and(|u| listed.trim_start_matches('@').eq_ignore_ascii_case(u))
        })
    }
}

/// One bot's access rules, resolved from its channel's settings (`dmPolicy`, `allowFrom`,
/// `owners`, `groupPolicy`, the groups, `groupAllowFrom`, `requireMention`, `allowBots`).
pub(crate) struct Gate {
    /// The channel's name in setting paths (`channels.<channel>.dmPolicy`).
    pub channel: &'static str,
    /// What the channel calls its groups, and the setting that lists them.
    pub groups_are: (&'static str, &'static str),
    pub dm_policy: DmPolicy,
    pub allow_from: Vec<String>,
    pub owners: Vec<String>,
    pub group_policy: GroupPolicy,
    pub groups: BTreeMap<String, GroupSettings>,
    /// In groups, only these senders; empty = anyone.
    pub group_allow_from: Vec<String>,
    pub require_mention: bool,
    /// Messages other bots wrote are read.
    pub allow_bots: bool,
}

impl Gate {
    /// The rules of `access` (every setting resolved) for a bot of platform `P`.
    pub fn new<P: Platform>(access: &Access) -> Self {
        Self {
            channel: P::NAME,
            groups_are: P::GROUPS,
            dm_policy: access.dm_policy.unwrap_or_default(),
            allow_from: access.allow_from.clone().unwrap_or_default(),
            owners: access.owners.clone().unwrap_or_default(),
            group_policy: access.group_policy.unwrap_or_default(),
            groups: access.groups.clone().unwrap_or_default(),
            group_allow_from: access.group_allow_from.clone().unwrap_or_default(),
            require_mention: access.require_mention.unwrap_or(true),
            allow_bots: access.allow_bots.unwrap_or(false),
        }
    }
}

impl Gate {
    /// `dmPolicy`: open, disabled, or decided by the pairing check after this one for a sender
    /// neither in `allowFrom` nor an owner (`pairing` asks for a code; `allowlist` lets in only
    /// senders approved before, as the reference does). `Err` says why not, for the log.
    pub fn may_dm(&self, _from: Sender) -> Result<(), String> {
        let may = match self.dm_policy {
            DmPolicy::Open | DmPolicy::Pairing | DmPolicy::Allowlist => true,
            DmPolicy::Disabled => false,
        };
        match may {
            true => Ok(()),
            false => Err(format!(
                "the sender may not talk to the bot (channels.{}.dmPolicy)",
                self.channel
            )),
        }
    }

    /// A private sender whom the pairing check must admit (`dmPolicy` `pairing` or
    /// `allowlist`): neither in `allowFrom` nor an owner.
    pub fn is_stranger(&self, from: Sender) -> bool {
        matches!(self.dm_policy, DmPolicy::Pairing | DmPolicy::Allowlist) && !self.lets_in(from)
    }

    /// Whether a stranger is given a pairing code (`pairing`), or only let in when approved
    /// before (`allowlist`).
    pub fn asks_strangers(&self) -> bool {
        self.dm_policy == DmPolicy::Pairing
    }

    /// In `allowFrom`, or an owner: let in without asking.
    pub fn lets_in(&self, from: Sender) -> bool {
        from.is_in(&self.allow_from) || self.is_owner(from)
    }

    /// One of the bot's `owners`: may use owner commands.
    pub fn is_owner(&self, from: Sender) -> bool {
        from.is_in(&self.owners)
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
        if !self.group_allow_from.is_empty() && !from.is_in(&self.group_allow_from) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Access;

    fn gate(policy: DmPolicy, allow_from: &[&str]) -> Gate {
        let access = Access {
            dm_policy: Some(policy),
            allow_from: Some(allow_from.iter().map(|s| s.to_string()).collect()),
            ..Access::defaults(4096)
        };
        Gate::new::<crate::config::TelegramBot>(&access)
    }

    fn sender<'a>(id: &'a str, username: Option<&'a str>) -> Sender<'a> {
        Sender { id, username }
    }

    #[test]
    fn a_star_lets_anyone_in_and_a_username_matches_in_any_case() {
        let anyone = gate(DmPolicy::Allowlist, &["*"]);
        assert!(!anyone.is_stranger(sender("42", None)));
        let prefixed = gate(DmPolicy::Allowlist, &["42", "AbC-1"]);
        assert!(!prefixed.is_stranger(sender("42", None)));
        assert!(!prefixed.is_stranger(sender("+15550001", Some("abc-1"))));
        assert!(prefixed.is_stranger(sender("43", None)));
        assert!(!prefixed.asks_strangers());
        assert!(!gate(DmPolicy::Pairing, &["*"]).is_stranger(sender("7", None)));
    }
}
