//! A Telegram message as the kit's routing reads it: private chats are direct; groups and
//! supergroups are groups by chat id, a forum topic `:topic:<threadId>`; the bot is addressed
//! when it is mentioned (`@botname`) or replied to; owner commands as Telegram writes them in
//! groups (`/new@thisbot`) too. The reply goes back to the same chat and topic.

use super::api::{Message, User};
use crate::channels::kit::{ChatMessage, Group, Thread};
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

/// `message` as the kit reads it, or why it is none the bot reads.
pub(super) fn view(me: &User, message: &Message) -> Result<ChatMessage, String> {
    let Some(text) = message.text.as_ref().or(message.caption.as_ref()) else {
        return Err("no text".into());
    };
    let Some(from) = message.from.as_ref() else {
        return Err("not from a person".into());
    };
    let chat_id = message.chat.id.to_string();
    let topic = message
        .message_thread_id
        .filter(|_| message.is_topic_message)
        .map(|thread| thread.to_string());
    let (group, thread) = match message.chat.kind.as_str() {
        "private" => (None, None),
        "group" | "supergroup" => {
            let group = Group {
                id: chat_id.clone(),
                thread: topic.clone().map(Thread::Topic),
            };
            (Some(group), topic)
        }
        _ => return Err("a channel post".into()),
    };
    let title = group.as_ref().and(message.chat.title.clone());
    Ok(ChatMessage {
        sender: from.id.to_string(),
        alias: from.username.clone(),
        name: from.username.clone(),
        from_bot: from.is_bot,
        text: text.clone(),
        group,
        addressed: addressed(me, message, text),
        order: order(text, me),
        reply_to: (chat_id, thread),
        who: from
            .username
            .as_deref()
            .map_or_else(|| from.id.to_string(), |u| format!("@{u}")),
        title,
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
