//! A Matrix event as the kit's routing reads it: direct rooms (two members) are direct; other
//! rooms are groups by room id, a thread `:thread:<eventId>`; the bot is addressed when it is
//! mentioned (`m.mentions`, its user id or its display name). The reply goes back to the same
//! room and thread. The bot's own events, edits and anything but text are not read; notices
//! are bots' output (read with `allowBots`). Which invitations the bot accepts (`autoJoin`) is
//! decided here too.

use serde_json::Value;

use super::api::Event;
use crate::channels::kit::gate::{Gate, Sender};
use crate::channels::kit::{ChatMessage, Group, Thread};
use crate::channels::owner::Order;
use crate::config::{AutoJoin, ThreadReplies};

/// The bot as the door knows it.
pub(crate) struct Me {
    pub user_id: String,
    pub display_name: Option<String>,
}

/// A text message someone wrote.
pub(super) struct Text<'a> {
    pub sender: &'a str,
    /// The message's own event id (the root of a thread `threadReplies: "always"` starts).
    pub event_id: &'a str,
    /// The body without the bot's mention.
    pub body: String,
    /// The thread's root event, in a thread.
    pub thread: Option<&'a str>,
    /// The bot is mentioned (`m.mentions`, its user id or its display name).
    pub mentioned: bool,
    /// An `m.notice`: a bot's output.
    pub notice: bool,
    /// The event it replies to (`m.in_reply_to`, not a thread's fallback).
    pub replies_to: Option<&'a str>,
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
    let notice = match content["msgtype"].as_str() {
        Some("m.text") => false,
        Some("m.notice") => true,
        _ => return Err("not text"),
    };
    let relation = &content["m.relates_to"];
    if relation["rel_type"].as_str() == Some("m.replace") {
        return Err("an edit");
    }
    let body = content["body"].as_str().unwrap_or_default();
    let thread = thread_of(content);
    let (mentioned, body) = mention(content, body, me);
    // A thread's `m.in_reply_to` with `is_falling_back` is for clients without threads.
    let replies_to = match relation["is_falling_back"].as_bool() {
        Some(true) => None,
        _ => relation["m.in_reply_to"]["event_id"].as_str(),
    };
    if body.is_empty() {
        return Err("no text");
    }
    Ok(Text {
        sender: &event.sender,
        event_id: &event.event_id,
        body,
        thread,
        mentioned,
        notice,
        replies_to,
    })
}

/// The root of the thread an event's `content` was written in (`m.relates_to` of
/// `rel_type: "m.thread"`; clear even in an encrypted event).
pub(super) fn thread_of(content: &Value) -> Option<&str> {
    let relation = &content["m.relates_to"];
    match relation["rel_type"].as_str() {
        Some("m.thread") => relation["event_id"].as_str(),
        _ => None,
    }
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

/// The thread a reply to `text` goes to, per `threadReplies`: none (`off`), the message's own
/// (`inbound`), or one rooted at the message when it is in none (`always`).
fn reply_thread<'a>(text: &Text<'a>, replies: ThreadReplies) -> Option<&'a str> {
    match replies {
        ThreadReplies::Off => None,
        ThreadReplies::Inbound => text.thread,
        ThreadReplies::Always => text.thread.or(Some(text.event_id)),
    }
}

/// A message in `room` (`direct`: the room has two members) as the kit reads it; `replies`:
/// the room's `threadReplies` (`dm.threadReplies` for a direct room). In a group room a thread
/// the reply goes to is the session's (`…:thread:<root>`).
pub(super) fn view(
    text: &Text,
    (room, direct): (&str, bool),
    replies: ThreadReplies,
) -> ChatMessage {
    let thread = reply_thread(text, replies);
    let group = (!direct).then(|| Group {
        id: room.to_owned(),
        thread: thread.map(|root| Thread::Thread(root.to_owned())),
    });
    ChatMessage {
        sender: text.sender.to_owned(),
        alias: None,
        name: None,
        from_bot: text.notice,
        text: text.body.clone(),
        group,
        addressed: text.mentioned,
        order: Order::of_text(&text.body),
        reply_to: (room.to_owned(), thread.map(str::to_owned)),
        who: text.sender.to_owned(),
        title: None,
    }
}

/// Whether the bot accepts an invitation to `room` from `inviter`, per `autoJoin`: always,
/// never, or (`allowlist`) when `listed` (`autoJoinAllowlist` names the room), the inviter is
/// let in by `allowFrom` or `owners`, or the room passes `groupPolicy` and `rooms`.
pub(super) fn may_join(
    (gate, auto_join): (&Gate, AutoJoin),
    (room, listed): (&str, bool),
    inviter: &str,
) -> bool {
    match auto_join {
        AutoJoin::Always => true,
        AutoJoin::Off => false,
        AutoJoin::Allowlist => {
            let from = Sender {
                id: inviter,
                username: None,
            };
            listed || gate.lets_in(from) || gate.group_allows(room, from).is_ok()
        }
    }
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
            unreadable: None,
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
    fn edits_and_the_bots_own_messages_are_not_read_and_notices_are_a_bots() {
        let me = me();
        let notice = event(json!({"msgtype": "m.notice", "body": "x"}));
        assert!(
            text(&notice, &me).is_ok_and(|t| t.notice),
            "a notice is a bot's output"
        );
        let edit = event(
            json!({"msgtype": "m.text", "body": "x", "m.relates_to": {"rel_type": "m.replace"}}),
        );
        assert_eq!(text(&edit, &me).err(), Some("an edit"));
        let mut own = event(json!({"msgtype": "m.text", "body": "x"}));
        own.sender = "@bot:hs".into();
        assert_eq!(text(&own, &me).err(), Some("the bot's own message"));
    }
}
