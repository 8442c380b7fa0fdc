//! Which messages start a run or are owner commands, and in which session (the reference's routing): DMs by
//! `session.dmScope` and `dmPolicy`; guild text channels in
//! `agent:<agentId>:discord:group:<channelId>` (`:thread:<threadId>` in a thread), only when the
//! bot is mentioned or replied to (unless `requireMention` is off). The reply goes back to the
//! same channel or thread. The bot's own messages, and other bots', are ignored.

use switchboard_protocol::sessions::DeliveryContext;

use super::DISCORD;
use super::api::{ChannelInfo, Message, User};
use crate::channels::owner::Order;
use crate::config::{Config, DiscordChannel, DiscordDmPolicy, DiscordGroupPolicy};
use crate::error::CoreError;
use crate::keys::{self, ChatType, SessionKey};

/// A message that starts a run.
pub(super) struct Turn {
    pub key: SessionKey,
    pub route: DeliveryContext,
    pub text: String,
    pub title: Option<String>,
}

/// An owner command from a chat the bot may talk in.
pub(super) struct Command {
    pub chat: Turn,
    /// The sender is in `channels.discord.owners`.
    pub owner: bool,
    pub order: Order,
}

/// What a message asks for.
pub(super) enum Decision {
    /// A run in the chat's session.
    Run(Turn),
    /// An owner command (it needs no mention in a guild channel).
    Command(Command),
    /// Nothing, and why (for the log).
    Ignore(&'static str),
}

/// Where a message was written.
pub(super) enum Place {
    /// A DM channel.
    Direct,
    /// A guild channel, or a thread in one (`info` says which).
    Guild(ChannelInfo),
}

/// What to do with a message: a run or nothing.
pub(super) fn decide(
    config: &Config,
    (account, channel): (&str, &DiscordChannel),
    me: &User,
    (message, place): (&Message, &Place),
) -> Result<Decision, CoreError> {
    let from = &message.author;
    if from.id == me.id {
        return Ok(Decision::Ignore("the bot's own message"));
    }
    if from.bot {
        return Ok(Decision::Ignore("not from a person"));
    }
    let text = strip_mention(&message.content, me);
    if text.is_empty() {
        return Ok(Decision::Ignore("no text"));
    }
    let order = {
        let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((&text, ""));
        Order::parse(&word.to_lowercase(), rest)
    };
    let agent_id = channel
        .agent_id
        .clone()
        .unwrap_or_else(|| config.default_agent_id());
    let mut route = DeliveryContext {
        channel: DISCORD.into(),
        to: message.channel_id.clone(),
        account_id: Some(account.into()),
        thread_id: None,
    };
    let turn = match place {
        Place::Direct => {
            if !may_dm(channel, from) {
                return Ok(Decision::Ignore(
                    "the sender may not talk to the bot (channels.discord.dmPolicy)",
                ));
            }
            let key =
                crate::channels::direct_key(config, &agent_id, DISCORD, account, &from.id, None)?;
            Turn {
                key,
                route,
                text,
                title: None,
            }
        }
        Place::Guild(info) => {
            let thread = info.is_thread().then(|| info.id.clone());
            let parent = match &thread {
                Some(_) => info.parent_id.clone().unwrap_or_else(|| info.id.clone()),
                None => info.id.clone(),
            };
            if let Err(why) = group_allows(channel, &parent) {
                return Ok(Decision::Ignore(why));
            }
            if require_mention(channel, &parent) && order.is_none() && !addressed(me, message) {
                return Ok(Decision::Ignore(
                    "a guild message that does not mention the bot",
                ));
            }
            let mut key = keys::group_key(&agent_id, DISCORD, ChatType::Group, &parent, None);
            route.to = parent;
            if let Some(thread) = thread {
                key = SessionKey::from_canonical(format!("{}:thread:{thread}", key.as_str()));
                route.thread_id = Some(thread);
            }
            Turn {
                key,
                route,
                text: format!("[from {}]\n{text}", from.username),
                title: info.name.as_ref().map(|n| format!("#{n}")),
            }
        }
    };
    Ok(match order {
        Some(order) => Decision::Command(Command {
            owner: is_listed(&channel.owners, from),
            chat: turn,
            order,
        }),
        None => Decision::Run(turn),
    })
}

/// A DM sender whom `dmPolicy: "pairing"` must admit (neither in `allowFrom` nor an owner):
/// their id and username. `None` for anything else.
pub(super) fn stranger(
    channel: &DiscordChannel,
    message: &Message,
    place: &Place,
) -> Option<(String, Option<String>)> {
    let from = &message.author;
    let pairs = channel.dm_policy == DiscordDmPolicy::Pairing && matches!(place, Place::Direct);
    (pairs && !from.bot && !let_in(channel, from))
        .then(|| (from.id.clone(), Some(from.username.clone())))
}

/// `dmPolicy`: open, disabled, the sender in `allowFrom`, or (pairing) decided by the pairing
/// check after this one.
fn may_dm(channel: &DiscordChannel, from: &User) -> bool {
    match channel.dm_policy {
        DiscordDmPolicy::Open | DiscordDmPolicy::Pairing => true,
        DiscordDmPolicy::Disabled => false,
        DiscordDmPolicy::Allowlist => let_in(channel, from),
    }
}

/// In `allowFrom`, or an owner: let in without asking.
fn let_in(channel: &DiscordChannel, from: &User) -> bool {
    is_listed(&channel.allow_from, from) || is_listed(&channel.owners, from)
}

/// `groupPolicy` and `channels`: may the bot talk in this guild channel?
fn group_allows(channel: &DiscordChannel, channel_id: &str) -> Result<(), &'static str> {
    let listed = channel.channels.contains_key(channel_id) || channel.channels.contains_key("*");
    match channel.group_policy {
        DiscordGroupPolicy::Disabled => {
            Err("guild channels are off (channels.discord.groupPolicy)")
        }
        DiscordGroupPolicy::Allowlist if !listed => {
            Err("a guild channel not listed in channels.discord.channels")
        }
        _ => Ok(()),
    }
}

/// The channel's own `requireMention`, else `"*"`'s, else the account's.
fn require_mention(channel: &DiscordChannel, channel_id: &str) -> bool {
    [channel_id, "*"]
        .iter()
        .find_map(|id| channel.channels.get(*id).and_then(|c| c.require_mention))
        .unwrap_or(channel.require_mention)
}

/// The sender's id or username (with or without `@`, any case) is in `list`.
fn is_listed(list: &[String], from: &User) -> bool {
    list.iter().any(|listed| {
        let listed = listed.trim();
        listed == from.id
            || listed
                .trim_start_matches('@')
                .eq_ignore_ascii_case(&from.username)
    })
}

/// The bot is mentioned or the message replies to one of its messages.
fn addressed(me: &User, message: &Message) -> bool {
    let mentioned = message.mentions.iter().any(|u| u.id == me.id);
    let replied = message
        .referenced_message
        .as_ref()
        .is_some_and(|m| m.author.id == me.id);
    mentioned || replied
}

/// The text without the bot's own mention (`<@id>` or `<@!id>`), trimmed.
fn strip_mention(content: &str, me: &User) -> String {
    content
        .replace(&format!("<@{}>", me.id), "")
        .replace(&format!("<@!{}>", me.id), "")
        .trim()
        .to_string()
}
