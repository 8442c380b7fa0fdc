//! A WhatsApp message as the kit's routing reads it: one-to-one chats are direct; groups are
//! groups by group id; the number is addressed when it is mentioned (`@<its phone number>`) or
//! replied to. The reply goes back to the same chat: the user's WhatsApp id, or
//! `group:<groupId>` for a group. Only text is read.

use super::api::Message;
use crate::channels::kit::{ChatMessage, Group};
use crate::channels::owner::Order;

/// The route prefix of a group chat (`to` = `group:<groupId>`).
pub(super) const GROUP_PREFIX: &str = "group:";

/// A text message from `name` (its profile's name, when the platform gave it) to the number
/// `phone` (digits only), as the kit reads it; or why it is none the number reads.
pub(super) fn view(
    phone: &str,
    (message, name): (&Message, Option<&str>),
) -> Result<ChatMessage, String> {
    let Some(text) = message.text.as_ref().map(|t| t.body.trim()) else {
        return Err(format!("a {} message (only text is read)", message.kind));
    };
    let order = Order::of_text(text);
    let (text, group, addressed) = match &message.group_id {
        None => (text.to_owned(), None, false),
        Some(group) => {
            let (text, mentioned) = strip_mention(text, phone);
            let replied = message
                .context
                .as_ref()
                .and_then(|c| c.from.as_deref())
                .is_some_and(|from| digits(from) == phone);
            let group = Group {
                id: group.clone(),
                thread: None,
            };
            (text, Some(group), mentioned || replied)
        }
    };
    let reply_to = match &message.group_id {
        Some(group) => format!("{GROUP_PREFIX}{group}"),
        None => message.from.clone(),
    };
    let title = group.is_none().then(|| name.map(str::to_owned)).flatten();
    Ok(ChatMessage {
        sender: message.from.clone(),
        alias: None,
        name: name.map(str::to_owned),
        from_bot: false,
        text,
        group,
        addressed,
        order,
        reply_to: (reply_to, None),
        who: name.unwrap_or(&message.from).to_owned(),
        title,
    })
}

/// The digits of a phone number (`+1 555-0100` → `15550100`).
pub(super) fn digits(number: &str) -> String {
    number.chars().filter(char::is_ascii_digit).collect()
}

/// The text without `@<phone>` mentions of the number, and whether there was one. A mention
/// ends where the digits do: `@<phone>7` is another, longer number, kept as written.
pub(super) fn strip_mention(text: &str, phone: &str) -> (String, bool) {
    let mention = format!("@{phone}");
    if phone.is_empty() {
        return (text.to_owned(), false);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut mentioned = false;
    while let Some(at) = rest.find(&mention) {
        let after = &rest[at + mention.len()..];
        let whole = !after.starts_with(|c: char| c.is_ascii_digit());
        out.push_str(&rest[..at]);
        if whole {
            mentioned = true;
        } else {
            out.push_str(&mention);
        }
        rest = after;
    }
    if !mentioned {
        return (text.to_owned(), false);
    }
    out.push_str(rest);
    (out.trim().to_owned(), true)
}

#[cfg(test)]
mod tests {
    use super::strip_mention;

    #[test]
    fn the_numbers_mention_is_taken_out_and_longer_numbers_are_kept() {
        let phone = "15550001111";
        assert_eq!(strip_mention("@15550001111 hi", phone), ("hi".into(), true));
        assert_eq!(strip_mention("hi all", phone), ("hi all".into(), false));
        // Another number that starts with this one is not a mention of it (it was cut to `2`).
        assert_eq!(
            strip_mention("@155500011112 hi", phone),
            ("@155500011112 hi".into(), false)
        );
        assert_eq!(
            strip_mention("@155500011112 and @15550001111, hi", phone),
            ("@155500011112 and , hi".into(), true)
        );
        // Found by the whatsapp fuzz target: taking the inner one out joined the text around it
        // into a mention of the number, which was handed on.
        let joined = "@15@15550001111550001111$hi";
        assert_eq!(strip_mention(joined, phone), (joined.into(), false));
    }
}
