//! Which updates start a run, and in which session (the reference's routing): private chats by
//! `session.dmScope` and `dmPolicy`; groups and supergroups in
//! `agent:<agentId>:telegram:group:<chatId>` (`:topic:<threadId>` in a forum topic), only when the
//! bot is mentioned or replied to (unless `requireMention` is off). The reply goes back to the
//! same chat and topic.

use switchboard_protocol::sessions::DeliveryContext;

use super::api::{Message, User};
use crate::channels::decision::{Decision, Turn};
use crate::config::{Config, TelegramChannel, TelegramDmPolicy, TelegramGroupPolicy};
use crate::error::CoreError;
use crate::keys::{self, ChatType, SessionKey};

use super::TELEGRAM;

pub(super) use crate::channels::owner::Order;

/// An owner command the bot understands: `/send …`, `/status` or `/new`, also as Telegram
/// writes them in groups (`/new@thisbot`); `None` for anything else (another bot's command
/// included).
fn order(text: &str, me: &User) -> Option<Order> {
    let text = text.trim();
    let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let word = word.to_lowercase();
    let word = match (word.split_once('@'), me.username.as_deref()) {
        (Some((command, bot)), Some(name)) if bot.eq_ignore_ascii_case(name) => command,
        (Some(_), _) => return None,
        (None, _) => word.as_str(),
    };
    Order::parse(word, rest)
}

/// What to do with a message: a run, an owner command, or nothing.
pub(super) fn decide(
    config: &Config,
    (account, channel): (&str, &TelegramChannel),
    me: &User,
    message: &Message,
) -> Result<Decision, CoreError> {
    let Some(text) = message.text.as_ref().or(message.caption.as_ref()) else {
        return Ok(Decision::Ignore("no text"));
    };
    let Some(from) = message.from.as_ref().filter(|f| !f.is_bot) else {
        return Ok(Decision::Ignore("not from a person"));
    };
    let order = order(text, me);
    let agent_id = channel
        .agent_id
        .clone()
        .unwrap_or_else(|| config.default_agent_id());
    let chat_id = message.chat.id.to_string();
    let mut route = DeliveryContext {
        channel: TELEGRAM.into(),
        to: chat_id.clone(),
        account_id: Some(account.into()),
        thread_id: None,
    };
    let turn = match message.chat.kind.as_str() {
        "private" => {
            if !may_dm(channel, from) {
                return Ok(Decision::Ignore(
                    "the sender may not talk to the bot (channels.telegram.dmPolicy)",
                ));
            }
            let peer = from.id.to_string();
            let key =
                crate::channels::direct_key(config, &agent_id, TELEGRAM, account, &peer, None)?;
            Turn {
                key,
                route,
                text: text.clone(),
                title: None,
            }
        }
        "group" | "supergroup" => {
            if let Err(why) = group_allows(channel, &chat_id, from) {
                return Ok(Decision::Ignore(why));
            }
            let command = order.is_some();
            if require_mention(channel, &chat_id) && !command && !addressed(me, message, text) {
                return Ok(Decision::Ignore(
                    "a group message that does not mention the bot",
                ));
            }
            let mut key = keys::group_key(&agent_id, TELEGRAM, ChatType::Group, &chat_id, None);
            if let Some(thread) = message
                .message_thread_id
                .filter(|_| message.is_topic_message)
            {
                key = SessionKey::from_canonical(format!("{}:topic:{thread}", key.as_str()));
                route.thread_id = Some(thread.to_string());
            }
            let who = from
                .username
                .as_deref()
                .map_or_else(|| from.id.to_string(), |u| format!("@{u}"));
            Turn {
                key,
                route,
                text: format!("[from {who}]\n{text}"),
                title: message.chat.title.clone(),
            }
        }
        _ => return Ok(Decision::Ignore("a channel post")),
    };
    Ok(Decision::of(turn, order, is_listed(&channel.owners, from)))
}

/// A private sender whom `dmPolicy: "pairing"` must admit (neither in `allowFrom` nor an
/// owner): their id and username. `None` for anything else.
pub(super) fn stranger(
    channel: &TelegramChannel,
    message: &Message,
) -> Option<(String, Option<String>)> {
    let from = message.from.as_ref()?;
    let pairs = channel.dm_policy == TelegramDmPolicy::Pairing && message.chat.kind == "private";
    (pairs && !let_in(channel, from)).then(|| (from.id.to_string(), from.username.clone()))
}

/// `dmPolicy`: open, disabled, the sender's id or username in `allowFrom`, or (pairing) decided
/// by the pairing check after this one.
fn may_dm(channel: &TelegramChannel, from: &User) -> bool {
    match channel.dm_policy {
        TelegramDmPolicy::Open | TelegramDmPolicy::Pairing => true,
        TelegramDmPolicy::Disabled => false,
        TelegramDmPolicy::Allowlist => let_in(channel, from),
    }
}

/// In `allowFrom`, or an owner: let in without asking.
fn let_in(channel: &TelegramChannel, from: &User) -> bool {
    is_listed(&channel.allow_from, from) || is_listed(&channel.owners, from)
}

/// `groupPolicy`, `groups` and `groupAllowFrom`: may this sender talk to the bot in this group?
fn group_allows(channel: &TelegramChannel, chat_id: &str, from: &User) -> Result<(), &'static str> {
    let listed = channel.groups.contains_key(chat_id) || channel.groups.contains_key("*");
    match channel.group_policy {
        TelegramGroupPolicy::Disabled => {
            return Err("groups are off (channels.telegram.groupPolicy)");
        }
        TelegramGroupPolicy::Allowlist if !listed => {
            return Err("a group not listed in channels.telegram.groups");
        }
        _ => {}
    }
    if !channel.group_allow_from.is_empty() && !is_listed(&channel.group_allow_from, from) {
        return Err("a sender not in channels.telegram.groupAllowFrom");
    }
    Ok(())
}

/// The group's own `requireMention`, else `"*"`'s, else the channel's.
fn require_mention(channel: &TelegramChannel, chat_id: &str) -> bool {
    [chat_id, "*"]
        .iter()
        .find_map(|id| channel.groups.get(*id).and_then(|g| g.require_mention))
        .unwrap_or(channel.require_mention)
}

/// The sender's id or username (with or without `@`, any case) is in `list`.
fn is_listed(list: &[String], from: &User) -> bool {
    list.iter().any(|listed| {
        let listed = listed.trim();
        listed == from.id.to_string()
            || from
                .username
                .as_deref()
                .is_some_and(|u| listed.trim_start_matches('@').eq_ignore_ascii_case(u))
    })
}

/// The bot is mentioned (`@name`) or the message replies to one of its messages.
fn addressed(me: &User, message: &Message, text: &str) -> bool {
    let mentioned = me.username.as_deref().is_some_and(|name| {
        text.to_lowercase()
            .contains(&format!("@{}", name.to_lowercase()))
    });
    let replied = message
        .reply_to_message
        .as_ref()
        .and_then(|m| m.from.as_ref())
        .is_some_and(|f| f.id == me.id);
    mentioned || replied
}
