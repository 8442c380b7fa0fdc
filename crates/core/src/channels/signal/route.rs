//! A Signal message as the kit's routing reads it: one-to-one chats are direct; groups are
//! groups by group id; the account is addressed when it is mentioned or its message quoted. The
//! reply goes back to the same chat: the sender (number, else UUID), or `group:<groupId>` for a
//! group. Only text is read.

use super::api::{DataMessage, Envelope, Mention};
use crate::channels::kit::{ChatMessage, Group};
use crate::channels::owner::Order;

/// The route prefix of a group chat (`to` = `group:<groupId>`).
pub(super) const GROUP_PREFIX: &str = "group:";
/// What a mention stands in for in a message's text.
const PLACEHOLDER: char = '\u{FFFC}';

/// A data message from `sender` to `account` as the kit reads it.
pub(super) fn view(
    account: &str,
    (envelope, message, sender): (&Envelope, &DataMessage, &str),
) -> ChatMessage {
    let (text, mentioned) = text_of(message, account);
    let text = text.trim().to_owned();
    let name = envelope.source_name.clone().filter(|n| !n.is_empty());
    let group = message.group_info.as_ref().map(|g| Group {
        id: g.group_id.clone(),
        thread: None,
    });
    let quoted = message.quote.as_ref().is_some_and(|q| {
        [&q.author, &q.author_number, &q.author_uuid]
            .iter()
            .any(|a| is_account(a.as_deref(), account))
    });
    let reply_to = match &group {
        Some(group) => format!("{GROUP_PREFIX}{}", group.id),
        None => sender.to_owned(),
    };
    ChatMessage {
        sender: sender.to_owned(),
        alias: envelope.source_uuid.clone(),
        name: name.clone(),
        from_bot: false,
        order: Order::of_text(&text),
        text,
        addressed: mentioned || quoted,
        title: group.is_none().then(|| name.clone()).flatten(),
        group,
        reply_to: (reply_to, None),
        who: name.unwrap_or_else(|| sender.to_owned()),
    }
}

/// `who` is the account (a number or a UUID, any case).
fn is_account(who: Option<&str>, account: &str) -> bool {
    who.is_some_and(|who| !account.is_empty() && who.eq_ignore_ascii_case(account))
}

/// The text with each mention's placeholder replaced: a mention of the account taken out
/// (and reported), any other written as `@name`.
pub(super) fn text_of(message: &DataMessage, account: &str) -> (String, bool) {
    let raw = message.message.as_deref().unwrap_or_default();
    let mut mentioned = false;
    let mut text = String::with_capacity(raw.len());
    let mut at = 0; // UTF-16 units, as signal-cli counts `start`
    for c in raw.chars() {
        if c == PLACEHOLDER {
            match message.mentions.iter().find(|m| m.start == at) {
                Some(m) if mentions(m, account) => mentioned = true,
                Some(m) => {
                    let who = [&m.name, &m.number, &m.uuid]
                        .into_iter()
                        .find_map(|n| n.as_deref().filter(|n| !n.is_empty()));
                    text.push('@');
                    text.push_str(who.unwrap_or("someone"));
                }
                None => {}
            }
        } else {
            text.push(c);
        }
        at += c.len_utf16();
    }
    (text, mentioned)
}

fn mentions(mention: &Mention, account: &str) -> bool {
    is_account(mention.number.as_deref(), account) || is_account(mention.uuid.as_deref(), account)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str, mentions: serde_json::Value) -> DataMessage {
        serde_json::from_value(serde_json::json!({"message": text, "mentions": mentions})).unwrap()
    }

    #[test]
    fn the_accounts_mention_is_taken_out_and_others_are_named() {
        let m = message(
            "\u{FFFC} ask 😀 \u{FFFC}",
            serde_json::json!([
                {"number": "+15550001111", "uuid": "u-bot", "start": 0, "length": 1},
                {"name": "Carol", "number": "+1555333", "start": 9, "length": 1},
            ]),
        );
        assert_eq!(text_of(&m, "+15550001111"), (" ask 😀 @Carol".into(), true));
        assert_eq!(text_of(&m, "u-BOT"), (" ask 😀 @Carol".into(), true));
        let (text, mentioned) = text_of(&m, "+19999");
        assert_eq!(
            (text.as_str(), mentioned),
            ("@+15550001111 ask 😀 @Carol", false)
        );
    }
}
