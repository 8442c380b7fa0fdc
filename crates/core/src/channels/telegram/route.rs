//! Which updates start a run, and in which session (the reference's routing): private chats by
//! `session.dmScope` and `dmPolicy`; groups and supergroups in
//! `agent:<agentId>:telegram:group:<chatId>` (`:topic:<threadId>` in a forum topic), only when the
//! bot is mentioned or replied to (unless `requireMention` is off). The reply goes back to the
//! same chat and topic.

use switchboard_protocol::sessions::DeliveryContext;

use super::api::{Message, User};
use crate::config::{Config, TelegramChannel};
use crate::error::CoreError;
use crate::keys::{self, ChatType, SessionKey};

use super::TELEGRAM;

use crate::channels::gate::{Decision, Gate, Sender, Turn};
use crate::channels::owner::Order;

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
        return Ok(Decision::ignore("no text"));
    };
    let Some(from) = message.from.as_ref().filter(|f| !f.is_bot) else {
        return Ok(Decision::ignore("not from a person"));
    };
    let peer = from.id.to_string();
    let sender = sender(from, &peer);
    let gate = gate(channel);
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
            if let Err(why) = gate.may_dm(sender) {
                return Ok(Decision::Ignore(why));
            }
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
            if let Err(why) = gate.group_allows(&chat_id, sender) {
                return Ok(Decision::Ignore(why));
            }
            let command = order.is_some();
            if gate.require_mention(&chat_id) && !command && !addressed(me, message, text) {
                return Ok(Decision::ignore(
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
        _ => return Ok(Decision::ignore("a channel post")),
    };
    Ok(Decision::of(turn, order, gate.is_owner(sender)))
}

/// A private sender whom `dmPolicy: "pairing"` must admit (neither in `allowFrom` nor an
/// owner): their id and username. `None` for anything else.
pub(super) fn stranger(
    channel: &TelegramChannel,
    message: &Message,
) -> Option<(String, Option<String>)> {
    let from = message.from.as_ref()?;
    let id = from.id.to_string();
    let private = message.chat.kind == "private";
    (private && gate(channel).is_stranger(sender(from, &id))).then(|| (id, from.username.clone()))
}

/// The bot's access settings.
fn gate(channel: &TelegramChannel) -> Gate<'_> {
    Gate {
        channel: TELEGRAM,
        groups_are: ("groups", "groups"),
        dm_policy: channel.dm_policy,
        allow_from: &channel.allow_from,
        owners: &channel.owners,
        group_policy: channel.group_policy,
        groups: &channel.groups,
        group_allow_from: &channel.group_allow_from,
        require_mention: channel.require_mention,
    }
}

fn sender<'a>(from: &'a User, id: &'a str) -> Sender<'a> {
    Sender {
        id,
        username: from.username.as_deref(),
    }
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
