//! Which events start a run or are owner commands, and in which session (the reference's
//! routing): direct rooms by `session.dmScope` and `dmPolicy`; group rooms in
//! `agent:<agentId>:matrix:group:<roomId>` (`:thread:<eventId>` in a thread), only when the bot
//! is mentioned (unless `requireMention` is off). The reply goes back to the same room and
//! thread. The bot's own events, notices (other bots' output), edits and anything but text are
//! ignored. Which invitations the bot accepts (`autoJoin`) is decided here too.

use serde_json::Value;
use switchboard_protocol::sessions::DeliveryContext;

use super::MATRIX;
use super::api::Event;
use crate::channels::gate::{Decision, Gate, Sender, Turn};
use crate::channels::owner::Order;
use crate::config::{AutoJoin, Config, MatrixChannel};
use crate::error::CoreError;
use crate::keys::{self, ChatType, SessionKey};

/// The bot as the door knows it.
pub(super) struct Me {
    pub user_id: String,
    pub display_name: Option<String>,
}

/// A text message someone wrote.
pub(super) struct Text<'a> {
    pub sender: &'a str,
    /// The body without the bot's mention.
    pub body: String,
    /// The thread's root event, in a thread.
    pub thread: Option<&'a str>,
    /// The bot is mentioned (`m.mentions`, its user id or its display name).
    pub mentioned: bool,
}

/// The text message `event` carries, or why it is none the bot reads.
pub(super) fn text<'a>(event: &'a Event, me: &Me) -> Result<Text<'a>, &'static str> {
    if event.kind != "m.room.message" {
        return Err("not a message");
    }
    if event.sender == me.user_id {
        return Err("the bot's own message");
    }
    let content = &event.content;
    match content["msgtype"].as_str() {
        Some("m.text") => {}
        Some("m.notice") => return Err("a notice (a bot's output)"),
        _ => return Err("not text"),
    }
    let relation = &content["m.relates_to"];
    if relation["rel_type"].as_str() == Some("m.replace") {
        return Err("an edit");
    }
    let body = content["body"].as_str().unwrap_or_default();
    let thread = match relation["rel_type"].as_str() {
        Some("m.thread") => relation["event_id"].as_str(),
        _ => None,
    };
    let (mentioned, body) = mention(content, body, me);
    if body.is_empty() {
        return Err("no text");
    }
    Ok(Text {
        sender: &event.sender,
        body,
        thread,
        mentioned,
    })
}

/// Whether the bot is mentioned, and the body without its leading mentions (`bot: hi`,
/// `@bot:hs hi`, `Bot: @bot:hs hi`).
fn mention(content: &Value, body: &str, me: &Me) -> (bool, String) {
    let listed = content["m.mentions"]["user_ids"]
        .as_array()
        .is_some_and(|ids| ids.iter().any(|id| id.as_str() == Some(&me.user_id)));
    let names: Vec<String> = std::iter::once(me.user_id.as_str())
        .chain(me.display_name.as_deref())
        .filter(|n| !n.is_empty())
        .map(str::to_lowercase)
        .collect();
    let lower = body.to_lowercase();
    let mentioned = listed
        || names.iter().any(|name| {
            lower
                .match_indices(name.as_str())
                .any(|(at, _)| alone(&lower, at, name.len()))
        });
    let mut rest = body.trim();
    // A client may put both the display name and the user id first: each is taken off.
    while let Some(name) = names.iter().find(|name| {
        let leads = rest
            .get(..name.len())
            .is_some_and(|l| l.to_lowercase() == **name);
        leads && alone(rest, 0, name.len())
    }) {
        rest = rest[name.len()..].trim_start_matches([':', ',']).trim();
    }
    (mentioned, rest.to_string())
}

/// The `len` bytes of `text` at `at` stand as a word: no letter or digit right before or after.
fn alone(text: &str, at: usize, len: usize) -> bool {
    let before = text[..at].chars().next_back();
    let after = text[at + len..].chars().next();
    [before, after]
        .iter()
        .all(|c| !c.is_some_and(char::is_alphanumeric))
}

/// What to do with a message in `room` (`direct`: the room has two members): a run, an owner
/// command, or nothing.
pub(super) fn decide(
    config: &Config,
    (account, channel): (&str, &MatrixChannel),
    (room, direct): (&str, bool),
    text: &Text,
) -> Result<Decision, CoreError> {
    let (gate, sender) = (gate(channel), sender(text.sender));
    let order = Order::of_text(&text.body);
    let agent_id = channel
        .agent_id
        .clone()
        .unwrap_or_else(|| config.default_agent_id());
    let mut route = DeliveryContext {
        channel: MATRIX.into(),
        to: room.to_string(),
        account_id: Some(account.into()),
        thread_id: None,
    };
    let turn = if direct {
        if let Err(why) = gate.may_dm(sender) {
            return Ok(Decision::Ignore(why));
        }
        let peer = text.sender;
        let key = crate::channels::direct_key(config, &agent_id, MATRIX, account, peer, None)?;
        Turn {
            key,
            route,
            text: text.body.clone(),
            title: None,
        }
    } else {
        if let Err(why) = gate.group_allows(room, sender) {
            return Ok(Decision::Ignore(why));
        }
        if gate.require_mention(room) && order.is_none() && !text.mentioned {
            return Ok(Decision::ignore(
                "a room message that does not mention the bot",
            ));
        }
        let mut key = keys::group_key(&agent_id, MATRIX, ChatType::Group, room, None);
        if let Some(root) = text.thread {
            let thread = keys::group_key(&agent_id, MATRIX, ChatType::Group, room, Some(root));
            key = SessionKey::from_canonical(thread.as_str().to_string());
            route.thread_id = Some(root.to_string());
        }
        Turn {
            key,
            route,
            text: format!("[from {}]\n{}", text.sender, text.body),
            title: None,
        }
    };
    Ok(Decision::of(turn, order, gate.is_owner(sender)))
}

/// A direct-room sender whom `dmPolicy: "pairing"` must admit (neither in `allowFrom` nor an
/// owner). `None` for anything else.
pub(super) fn stranger(channel: &MatrixChannel, text: &Text, direct: bool) -> Option<String> {
    let stranger = direct && gate(channel).is_stranger(sender(text.sender));
    stranger.then(|| text.sender.to_string())
}

/// Whether the bot accepts an invitation to `room` from `inviter`, per `autoJoin`: always,
/// never, or (`allowlist`) when the inviter is let in by `allowFrom` or `owners`, or the room
/// passes `groupPolicy` and `rooms`.
pub(super) fn may_join(channel: &MatrixChannel, room: &str, inviter: &str) -> bool {
    let gate = gate(channel);
    match channel.auto_join {
        AutoJoin::Always => true,
        AutoJoin::Off => false,
        AutoJoin::Allowlist => {
            let from = sender(inviter);
            gate.lets_in(from) || gate.group_allows(room, from).is_ok()
        }
    }
}

/// The bot's access settings (Matrix has no `groupAllowFrom`).
fn gate(channel: &MatrixChannel) -> Gate<'_> {
    Gate {
        channel: MATRIX,
        groups_are: ("rooms", "rooms"),
        dm_policy: channel.dm_policy,
        allow_from: &channel.allow_from,
        owners: &channel.owners,
        group_policy: channel.group_policy,
        groups: &channel.rooms,
        group_allow_from: &[],
        require_mention: channel.require_mention,
    }
}

/// A Matrix user is named by their user id alone (`@alice:example.org`).
fn sender(id: &str) -> Sender<'_> {
    Sender { id, username: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn me() -> Me {
        Me {
            user_id: "@bot:hs".into(),
            display_name: Some("Bot".into()),
        }
    }

    fn event(content: Value) -> Event {
        Event {
            kind: "m.room.message".into(),
            event_id: "$e".into(),
            sender: "@alice:hs".into(),
            state_key: None,
            content,
            unsigned: Value::Null,
        }
    }

    #[test]
    fn a_leading_mention_is_taken_off_and_counts() {
        let me = me();
        for body in [
            "Bot: hello",
            "@bot:hs hello",
            "bot, hello",
            "Bot: @bot:hs hello",
            "@bot:hs: bot, hello",
        ] {
            let e = event(json!({"msgtype": "m.text", "body": body}));
            let t = text(&e, &me).unwrap();
            assert_eq!((t.mentioned, t.body.as_str()), (true, "hello"), "{body}");
        }
        let listed = event(
            json!({"msgtype": "m.text", "body": "hi", "m.mentions": {"user_ids": ["@bot:hs"]}}),
        );
        assert!(text(&listed, &me).unwrap().mentioned);
        let plain = event(json!({"msgtype": "m.text", "body": "hello all"}));
        assert!(!text(&plain, &me).unwrap().mentioned);
        // A display name inside another word is no mention.
        let word = event(json!({"msgtype": "m.text", "body": "bottles: @reply x"}));
        let word = text(&word, &me).unwrap();
        assert_eq!(
            (word.mentioned, word.body.as_str()),
            (false, "bottles: @reply x")
        );
        let inside = event(json!({"msgtype": "m.text", "body": "thanks, Bot!"}));
        assert!(text(&inside, &me).unwrap().mentioned);
    }

    #[test]
    fn notices_edits_and_the_bots_own_messages_are_not_read() {
        let me = me();
        let notice = event(json!({"msgtype": "m.notice", "body": "x"}));
        assert_eq!(text(&notice, &me).err(), Some("a notice (a bot's output)"));
        let edit = event(
            json!({"msgtype": "m.text", "body": "x", "m.relates_to": {"rel_type": "m.replace"}}),
        );
        assert_eq!(text(&edit, &me).err(), Some("an edit"));
        let mut own = event(json!({"msgtype": "m.text", "body": "x"}));
        own.sender = "@bot:hs".into();
        assert_eq!(text(&own, &me).err(), Some("the bot's own message"));
    }
}
