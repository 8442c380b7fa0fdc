//! Which Signal messages start a run or are owner commands, and in which session (the
//! reference's routing): one-to-one chats by `session.dmScope` and `dmPolicy`; groups in
//! `agent:<agentId>:signal:group:<groupId>`, only when the account is mentioned or its message
//! quoted, unless `requireMention` is off. The reply goes back to the same chat: the sender
//! (number, else UUID), or `group:<groupId>` for a group.

use switchboard_protocol::sessions::DeliveryContext;

use super::SIGNAL;
use super::api::{DataMessage, Envelope, Mention};
use crate::channels::gate::{Decision, Gate, Sender, Turn, gate_of};
use crate::channels::owner::Order;
use crate::config::{Config, SignalChannel};
use crate::error::CoreError;
use crate::keys::{self, ChatType};

/// The route prefix of a group chat (`to` = `group:<groupId>`).
pub(super) const GROUP_PREFIX: &str = "group:";
/// What a mention stands in for in a message's text.
const PLACEHOLDER: char = '\u{FFFC}';

/// What to do with a data message from `sender` (see the module doc).
pub(super) fn decide(
    config: &Config,
    settings: &SignalChannel,
    (envelope, message, sender): (&Envelope, &DataMessage, &str),
) -> Result<Decision, CoreError> {
    let account = settings.account.as_deref().unwrap_or_default();
    let (text, mentioned) = text_of(message, account);
    let text = text.trim();
    if text.is_empty() {
        return Ok(Decision::ignore("no text (only text is read)"));
    }
    let (gate, from) = (gate(settings), self::sender(envelope, sender));
    let order = Order::of_text(text);
    let agent_id = settings
        .agent_id
        .clone()
        .unwrap_or_else(|| config.default_agent_id());
    let mut route = DeliveryContext {
        channel: SIGNAL.into(),
        to: sender.to_owned(),
        account_id: None,
        thread_id: None,
    };
    let name = envelope.source_name.as_deref().filter(|n| !n.is_empty());
    let (key, text, title) = match &message.group_info {
        None => {
            if let Err(why) = gate.may_dm(from) {
                return Ok(Decision::Ignore(why));
            }
            let direct = crate::channels::direct_key;
            let key = direct(config, &agent_id, SIGNAL, account, sender, None)?;
            (key, text.to_owned(), name.map(str::to_owned))
        }
        Some(group) => {
            let group = group.group_id.as_str();
            if let Err(why) = gate.group_allows(group, from) {
                return Ok(Decision::Ignore(why));
            }
            let quoted = message.quote.as_ref().is_some_and(|q| {
                [&q.author, &q.author_number, &q.author_uuid]
                    .iter()
                    .any(|a| is_account(a.as_deref(), account))
            });
            if gate.require_mention(group) && order.is_none() && !mentioned && !quoted {
                return Ok(Decision::ignore(
                    "a group message that does not mention the account",
                ));
            }
            route.to = format!("{GROUP_PREFIX}{group}");
            let key = keys::group_key(&agent_id, SIGNAL, ChatType::Group, group, None);
            let text = format!("[from {}]\n{text}", name.unwrap_or(sender));
            (key, text, None)
        }
    };
    let turn = Turn {
        key,
        route,
        text,
        title,
    };
    Ok(Decision::of(turn, order, gate.is_owner(from)))
}

/// A one-to-one sender whom `dmPolicy: "pairing"` must admit: their address and name.
pub(super) fn stranger(
    settings: &SignalChannel,
    (envelope, message, sender): (&Envelope, &DataMessage, &str),
) -> Option<(String, Option<String>)> {
    let direct = message.group_info.is_none();
    (direct && gate(settings).is_stranger(self::sender(envelope, sender)))
        .then(|| (sender.to_owned(), envelope.source_name.clone()))
}

/// The account's access settings.
fn gate(settings: &SignalChannel) -> Gate<'_> {
    gate_of!(SIGNAL, settings)
}

/// The sender by number (or UUID when the number is hidden), with the UUID as the second name
/// the config's lists may use.
fn sender<'a>(envelope: &'a Envelope, address: &'a str) -> Sender<'a> {
    Sender {
        id: address,
        username: envelope.source_uuid.as_deref(),
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
