//! Which messages start a run or are owner commands, and in which session (the reference's routing): DMs by
//! `session.dmScope` and `dmPolicy`; guild text channels in
//! `agent:<agentId>:discord:group:<channelId>` (`:thread:<threadId>` in a thread), only when the
//! bot is mentioned or replied to (unless `requireMention` is off). The reply goes back to the
//! same channel or thread. The bot's own messages, and other bots', are ignored.

use switchboard_protocol::sessions::DeliveryContext;

use super::DISCORD;
use super::api::{ChannelInfo, Message, User};
use crate::channels::decision::{Decision, Turn};
use crate::channels::owner::Order;
use crate::config::{Config, DiscordChannel, Sender};
use crate::error::CoreError;
use crate::keys::{self, ChatType, SessionKey};

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
    let (rules, sender) = (channel.rules(), sender(from));
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
            if !rules.may_dm(sender) {
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
            if let Err(why) = rules.group_allows(&parent) {
                return Ok(Decision::Ignore(why));
            }
            if rules.require_mention(&parent) && order.is_none() && !addressed(me, message) {
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
    Ok(Decision::of(turn, order, rules.is_owner(sender)))
}

/// A DM sender whom `dmPolicy: "pairing"` must admit (neither in `allowFrom` nor an owner):
/// their id and username. `None` for anything else.
pub(super) fn stranger(
    channel: &DiscordChannel,
    message: &Message,
    place: &Place,
) -> Option<(String, Option<String>)> {
    let from = &message.author;
    let pairs = matches!(place, Place::Direct) && channel.rules().pairs(sender(from));
    (pairs && !from.bot).then(|| (from.id.clone(), Some(from.username.clone())))
}

fn sender(user: &User) -> Sender<'_> {
    Sender {
        id: &user.id,
        username: Some(&user.username),
    }
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
