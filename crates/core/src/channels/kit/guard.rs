//! What keeps a chat from looping or flooding (SPEC §9.2), for every chat channel: this
//! gateway's own bots ignore each other (each registers its platform id once it has signed in),
//! and a per-chat breaker stops answering bots after [`BOT_TURNS`] of their messages in a row
//! without a person, saying so once; a person's message closes it again. The breaker's counts
//! live in memory: a restart starts them anew. (Bots' messages are read at all only with
//! `allowBots`; a message over `maxInboundChars` is cut in the routing, a reply over
//! `maxReplyParts` in the sender.)

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, RwLock};

/// Bot messages answered in one chat, in a row without a person, before the breaker opens.
pub(crate) const BOT_TURNS: u32 = 10;

/// A channel's own bots and its chats' breakers.
#[derive(Default)]
pub(crate) struct Guard {
    /// The platform ids of the channel's own bots (a user id, a number), as each signed in.
    own: RwLock<BTreeSet<String>>,
    /// Per chat: the bot messages answered since a person last wrote there.
    bot_turns: Mutex<HashMap<String, u32>>,
}

/// What the breaker says of a bot's message a chat would answer.
#[derive(Debug, PartialEq)]
pub(crate) enum Breaker {
    /// Answer it.
    Closed,
    /// Do not: it just opened, so say so in the chat, once.
    Opened,
    /// Do not (it opened before).
    Open,
}

impl Guard {
    /// `id` is one of the channel's own bots.
    pub fn own(&self, id: &str) {
        if let Ok(mut own) = self.own.write() {
            own.insert(id.to_owned());
        }
    }

    /// `id` is one of the channel's own bots (one that has signed in).
    pub fn is_own(&self, id: &str) -> bool {
        self.own.read().is_ok_and(|own| own.contains(id))
    }

    /// A bot's message that `chat` would answer: counted, and whether to.
    pub fn bot_turn(&self, chat: &str) -> Breaker {
        let Ok(mut turns) = self.bot_turns.lock() else {
            return Breaker::Closed;
        };
        let turns = turns.entry(chat.to_owned()).or_default();
        *turns = turns.saturating_add(1);
        match *turns {
            n if n <= BOT_TURNS => Breaker::Closed,
            n if n == BOT_TURNS + 1 => Breaker::Opened,
            _ => Breaker::Open,
        }
    }

    /// A person wrote in `chat`: its breaker closes, its count starts anew.
    pub fn person(&self, chat: &str) {
        if let Ok(mut turns) = self.bot_turns.lock() {
            turns.remove(chat);
        }
    }
}

/// What the chat is told when its breaker opens.
pub(crate) fn notice() -> String {
    format!(
        "I have answered {BOT_TURNS} messages from bots here in a row without a person writing; I stop answering bots in this chat until a person writes."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breaker_opens_after_the_bot_turns_once_and_a_person_closes_it() {
        let guard = Guard::default();
        let turns: Vec<Breaker> = (0..BOT_TURNS + 2).map(|_| guard.bot_turn("c")).collect();
        assert!(
            turns[..BOT_TURNS as usize]
                .iter()
                .all(|t| *t == Breaker::Closed)
        );
        assert_eq!(
            turns[BOT_TURNS as usize..],
            [Breaker::Opened, Breaker::Open]
        );
        assert_eq!(guard.bot_turn("another chat"), Breaker::Closed);
        guard.person("c");
        assert_eq!(guard.bot_turn("c"), Breaker::Closed);
        guard.own("u1");
        assert!(guard.is_own("u1") && !guard.is_own("u2"));
    }
}
