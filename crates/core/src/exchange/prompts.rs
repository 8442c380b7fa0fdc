//! The system-prompt blocks of an exchange's steps. Every instruction of a step lives here —
//! whose turn it is, both sessions and their channels, the skip tokens — so the user-role
//! message a step adds to a transcript carries only the other side's own text.

use crate::delivery::replies::{ANNOUNCE_SKIP, REPLY_SKIP};
use crate::keys::SessionKey;
use crate::store::SessionEntry;

/// Whether reply-back turn `turn` (from 1) runs in the requester's session: odd turns do, even
/// ones in the target's.
pub(super) fn runs_in_requester(turn: u32) -> bool {
    turn % 2 == 1
}

/// The two sessions of an exchange, with the channels their blocks name.
pub(super) struct Sides<'a> {
    pub requester: &'a SessionKey,
    /// `None` when the requester is not a session of this gateway (an operator's send).
    pub requester_channel: Option<String>,
    pub target: &'a SessionKey,
    pub target_channel: String,
}

impl<'a> Sides<'a> {
    fn requester_channel(&self) -> &str {
        self.requester_channel.as_deref().unwrap_or("unknown")
    }

    /// `(runs the turn, whose reply it receives)`: see [`runs_in_requester`].
    pub fn turn_sides(&self, turn: u32) -> (&'a SessionKey, &'a SessionKey) {
        match runs_in_requester(turn) {
            true => (self.requester, self.target),
            false => (self.target, self.requester),
        }
    }

    /// The primary run's block: who sends, to whom, on which channels.
    pub fn primary_block(&self) -> String {
        format!(
            "Agent-to-agent message: session {} (channel {}) sent you the message below. You are \
             session {} (channel {}). Answer it as its agent; your reply is returned to the \
             sender.",
            self.requester.display(),
            self.requester_channel(),
            self.target.display(),
            self.target_channel,
        )
    }

    /// A reply-back turn's block: whose turn it is, `Turn N of M`, both sessions, `REPLY_SKIP`.
    pub fn turn_block(&self, turn: u32, turns: u32) -> String {
        let (me, other) = self.turn_sides(turn);
        let channel_of = |key: &SessionKey| match key == self.target {
            true => self.target_channel.as_str(),
            false => self.requester_channel(),
        };
        format!(
            "Agent-to-agent reply exchange. Turn {turn} of {turns}: it is your turn. You are \
             session {} (channel {}); the other side is session {} (channel {}), and the user \
             message is its latest reply. Reply to continue the exchange, or reply exactly \
             {REPLY_SKIP} to stop it.",
            me.display(),
            channel_of(me),
            other.display(),
            channel_of(other),
        )
    }

    /// The announce step's block: the original request, the round-1 reply, the latest reply,
    /// `ANNOUNCE_SKIP`, and where anything else goes.
    pub fn announce_block(&self, request: &str, round1: &str, latest: &str) -> String {
        format!(
            "Agent-to-agent announce step. You are session {} (channel {}). Session {} (channel \
             {}) asked you:\n{request}\nYour first reply:\n{round1}\nThe latest reply of the \
             exchange:\n{latest}\nWrite the announcement of this exchange: it is posted to your \
             channel {} as you write it. Or reply exactly {ANNOUNCE_SKIP} to stay silent.",
            self.target.display(),
            self.target_channel,
            self.requester.display(),
            self.requester_channel(),
            self.target_channel,
        )
    }
}

/// The channel a session is on, as the blocks name it.
pub(super) fn channel(entry: &SessionEntry) -> String {
    entry
        .channel
        .clone()
        .or_else(|| entry.last_channel.clone())
        .or_else(|| entry.key.channel().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}
