//! Which WhatsApp messages start a run or are owner commands, and in which session (the
//! reference's routing): one-to-one chats by `session.dmScope` and `dmPolicy`; groups in
//! `agent:<agentId>:whatsapp:group:<groupId>`, only when the number is mentioned
//! (`@<its phone number>`) or replied to, unless `requireMention` is off. The reply goes back to
//! the same chat: the user's WhatsApp id, or `group:<groupId>` for a group.

use switchboard_protocol::sessions::DeliveryContext;

use super::WHATSAPP;
use super::api::Message;
use crate::channels::gate::{Decision, Gate, Sender, Turn, gate_of};
use crate::channels::owner::Order;
use crate::config::{Config, WhatsAppChannel};
use crate::error::CoreError;
use crate::keys::{self, ChatType};

/// The route prefix of a group chat (`to` = `group:<groupId>`).
pub(super) const GROUP_PREFIX: &str = "group:";

/// The number a message came to: its account id, settings and phone number (digits only).
pub(super) struct To<'a> {
    pub account: &'a str,
    pub settings: &'a WhatsAppChannel,
    pub phone: String,
}

/// What to do with a text message from `name` (its profile's name, when the platform gave it).
pub(super) fn decide(
    config: &Config,
    to: &To,
    (message, name): (&Message, Option<&str>),
) -> Result<Decision, CoreError> {
    let Some(text) = message.text.as_ref().map(|t| t.body.trim()) else {
        return Ok(Decision::ignore(format!(
            "a {} message (only text is read)",
            message.kind
        )));
    };
    if text.is_empty() {
        return Ok(Decision::ignore("no text"));
    }
    let (gate, sender) = (gate(to.settings), sender(message));
    let order = Order::of_text(text);
    let agent_id = to
        .settings
        .agent_id
        .clone()
        .unwrap_or_else(|| config.default_agent_id());
    let mut route = DeliveryContext {
        channel: WHATSAPP.into(),
        to: message.from.clone(),
        account_id: Some(to.account.into()),
        thread_id: None,
    };
    let turn = match &message.group_id {
        None => {
            if let Err(why) = gate.may_dm(sender) {
                return Ok(Decision::Ignore(why));
            }
            let key = crate::channels::direct_key(
                config,
                &agent_id,
                WHATSAPP,
                to.account,
                &message.from,
                None,
            )?;
            Turn {
                key,
                route,
                text: text.to_owned(),
                title: name.map(str::to_owned),
            }
        }
        Some(group) => {
            if let Err(why) = gate.group_allows(group, sender) {
                return Ok(Decision::Ignore(why));
            }
            let (text, mentioned) = strip_mention(text, &to.phone);
            let replied = message
                .context
                .as_ref()
                .and_then(|c| c.from.as_deref())
                .is_some_and(|from| digits(from) == to.phone);
            if gate.require_mention(group) && order.is_none() && !mentioned && !replied {
                return Ok(Decision::ignore(
                    "a group message that does not mention the number",
                ));
            }
            route.to = format!("{GROUP_PREFIX}{group}");
            let key = keys::group_key(&agent_id, WHATSAPP, ChatType::Group, group, None);
            let who = name.unwrap_or(&message.from);
            Turn {
                key,
                route,
                text: format!("[from {who}]\n{text}"),
                title: None,
            }
        }
    };
    Ok(Decision::of(turn, order, gate.is_owner(sender)))
}

/// A one-to-one sender whom `dmPolicy: "pairing"` must admit: their WhatsApp id and name.
pub(super) fn stranger(
    settings: &WhatsAppChannel,
    (message, name): (&Message, Option<&str>),
) -> Option<(String, Option<String>)> {
    let direct = message.group_id.is_none();
    (direct && gate(settings).is_stranger(sender(message)))
        .then(|| (message.from.clone(), name.map(str::to_owned)))
}

/// The number's access settings.
fn gate(settings: &WhatsAppChannel) -> Gate<'_> {
    gate_of!(WHATSAPP, settings)
}

/// The sender by WhatsApp id (the config's lists are digits only, `+` and spaces taken out).
fn sender(message: &Message) -> Sender<'_> {
    Sender {
        id: &message.from,
        username: None,
    }
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
