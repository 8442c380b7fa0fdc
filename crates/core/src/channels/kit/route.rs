//! Which messages start a run or are owner commands, and in which session (the reference's
//! routing), for every chat channel: a platform maps its message to a [`ChatMessage`] and
//! [`decide`] does the rest. Direct chats go to the session `session.dmScope` names, if
//! `dmPolicy` lets the sender in; groups to `agent:<agentId>:<channel>:group:<groupId>`
//! (`:thread:<id>` in a thread, Telegram's `:topic:<id>` in a forum topic), if `groupPolicy`,
//! the listed groups and `groupAllowFrom` let them in and the bot is addressed (unless
//! `requireMention` is off, or the message is an owner command). Bots' messages are read only
//! with `allowBots`. The reply goes back where the message came from.

use switchboard_protocol::sessions::DeliveryContext;

use super::gate::{Decision, Sender, Turn};
use super::{Bot, ChatPlatform};
use crate::channels::owner::Order;
use crate::channels::pairing::Stranger;
use crate::config::Config;
use crate::error::CoreError;
use crate::keys::{self, ChatType, SessionKey};

/// A message as the kit's routing reads it, whatever its platform.
pub(crate) struct ChatMessage {
    /// The sender's id: what session keys, access lists and pairing name them by.
    pub sender: String,
    /// Another name access lists may give the sender (a username, Signal's UUID).
    pub alias: Option<String>,
    /// The sender's display name, where the platform gives one (a pairing request shows it).
    pub name: Option<String>,
    /// A bot wrote it (read only with `allowBots`).
    pub from_bot: bool,
    /// What the agent reads: the text, the bot's own mention taken out.
    pub text: String,
    /// The group it was written in; `None`: a direct chat with the bot.
    pub group: Option<Group>,
    /// The bot is mentioned, or the message replies to one of its messages.
    pub addressed: bool,
    /// The owner command the text is, in the platform's spelling.
    pub order: Option<Order>,
    /// Where the reply goes: the chat, and the thread in it.
    pub reply_to: (String, Option<String>),
    /// How the sender is named to the agent in a group (`[from …]`).
    pub who: String,
    /// The chat's name, for the session's `displayName`.
    pub title: Option<String>,
}

/// Where a group message was written.
pub(crate) struct Group {
    /// The group's id: what `groupPolicy` and the listed groups decide on.
    pub id: String,
    /// The thread in it, when it was written in one.
    pub thread: Option<Thread>,
}

/// A thread in a group: its own session under the group's (`…:thread:<id>`).
pub(crate) enum Thread {
    /// A thread (Discord, Slack, Matrix).
    Thread(String),
    /// A Telegram forum topic (`…:topic:<id>`).
    Topic(String),
}

impl ChatMessage {
    fn from(&self) -> Sender<'_> {
        Sender {
            id: &self.sender,
            username: self.alias.as_deref(),
        }
    }
}

/// What to do with `message`, received by `bot`: a run, an owner command, or nothing (and
/// why, for the log).
pub(crate) fn decide<P: ChatPlatform>(
    config: &Config,
    bot: &Bot<P>,
    message: ChatMessage,
) -> Result<Decision, CoreError> {
    let (channel, gate) = (P::name(), &bot.gate);
    if message.from_bot && !gate.allow_bots {
        return Ok(Decision::ignore(format!(
            "a bot's message (channels.{channel}.allowBots is off)"
        )));
    }
    if message.text.trim().is_empty() {
        return Ok(Decision::ignore("no text"));
    }
    let from = message.from();
    let read = read_at_most(&message.text, bot.caps.inbound);
    let agent_id = bot
        .agent_id
        .clone()
        .unwrap_or_else(|| config.default_agent_id());
    let route = DeliveryContext {
        channel: channel.into(),
        to: message.reply_to.0.clone(),
        account_id: Some(bot.id.clone()),
        thread_id: message.reply_to.1.clone(),
    };
    let (key, text) = match &message.group {
        None => {
            if let Err(why) = gate.may_dm(from) {
                return Ok(Decision::Ignore(why));
            }
            let (account, peer) = (P::key_account(bot), &message.sender);
            let key = crate::channels::direct_key(config, &agent_id, channel, account, peer, None)?;
            (key, read)
        }
        Some(group) => {
            if let Err(why) = gate.group_allows(&group.id, from) {
                return Ok(Decision::Ignore(why));
            }
            let asked = message.order.is_some() || message.addressed;
            if gate.require_mention(&group.id) && !asked {
                return Ok(Decision::ignore(
                    "a group message that does not mention the bot",
                ));
            }
            let key = group_key(&agent_id, channel, group);
            (key, format!("[from {}]\n{read}", message.who))
        }
    };
    let owner = gate.is_owner(from);
    let turn = Turn {
        key,
        route,
        text,
        title: message.title,
    };
    Ok(Decision::of(turn, message.order, owner))
}

/// `text` as the agent reads it: at most `max` characters, and a note saying how much more
/// there was.
fn read_at_most(text: &str, max: usize) -> String {
    let length = text.chars().count();
    if length <= max {
        return text.to_owned();
    }
    let start: String = text.chars().take(max).collect();
    let more = length - max;
    format!(
        "{start}\n[… the message goes on for {more} more characters, not shown: it was cut at {max} (maxInboundChars)]"
    )
}

/// The session of a group (and of a thread or topic in it).
fn group_key(agent_id: &str, channel: &str, group: &Group) -> SessionKey {
    let in_group = |thread| keys::group_key(agent_id, channel, ChatType::Group, &group.id, thread);
    match &group.thread {
        None => in_group(None),
        Some(Thread::Thread(id)) => in_group(Some(id)),
        Some(Thread::Topic(id)) => {
            let key = in_group(None);
            SessionKey::from_canonical(format!("{}:topic:{id}", key.as_str()))
        }
    }
}

/// The private sender of `message`, received by `bot`, when the pairing check must admit them
/// (neither in `allowFrom` nor an owner), as the pairing component takes them.
pub(crate) fn stranger<P: ChatPlatform>(
    bot: &Bot<P>,
    message: &ChatMessage,
    source: &str,
) -> Option<Stranger> {
    let gate = &bot.gate;
    let read = gate.allow_bots || !message.from_bot;
    (read && message.group.is_none() && gate.is_stranger(message.from())).then(|| Stranger {
        channel: P::name(),
        id_name: P::ID_NAME,
        account_id: bot.id.clone(),
        id: message.sender.clone(),
        username: message.name.clone(),
        source: source.to_owned(),
        ask: gate.asks_strangers(),
    })
}
