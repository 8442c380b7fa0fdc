//! A model's reply left to commit with its tool call's first write (docs/decisions.md, "A send's
//! reply commits with its target's start").
//!
//! A reply that calls `sessions_send` is not written on its own: the run leaves it here, the
//! send adds it to the commit that starts the target's run (with the exchange's record), and
//! the reply, the target's start and the exchange are one commit or none. A send's window has
//! one commit fewer. What the call did not take (it was refused before it wrote, or its write
//! failed) is written with the call's result. Only where the store commits in the order writes
//! were sent ([`Store::commits_in_order`](crate::store::Store::commits_in_order)), and only for a
//! call whose every effect is that one write ([`Tool::joins_reply`](super::tool::Tool)): a call
//! that acts elsewhere first has its reply written before it starts.
//!
//! A run cut off while the call holds the reply closes its transcript with it (`cut.rs`): a
//! reply not yet sent is written with the closing; one sent with a write whose answer the cut
//! dropped is looked for in the transcript once every write sent before the closing committed.

use std::sync::{Arc, Mutex};

use crate::store::WriteOp;

/// The reply of the tool call being made, while the call may take it into its write.
#[derive(Clone, Default)]
pub struct Joined(Arc<Mutex<State>>);

#[derive(Default)]
enum State {
    /// No reply waits (none was left, or it was written).
    #[default]
    Written,
    /// Left to the call; nothing was sent. `call`: the tool call's id.
    Left { ops: Vec<WriteOp>, call: String },
    /// Sent with the call's write, whose answer is not known yet.
    Sent { ops: Vec<WriteOp>, call: String },
}

impl std::fmt::Debug for Joined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Joined")
    }
}

/// Two requests carry the same reply only when they share it.
impl PartialEq for Joined {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Joined {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Leaves `ops` (a reply's append and token counts, after the run's fence) to the tool
    /// call `call`.
    pub(super) fn leave(&self, ops: Vec<WriteOp>, call: &str) {
        *self.state() = State::Left {
            ops,
            call: call.to_string(),
        };
    }

    /// Whether a reply waits for the call's write.
    pub fn is_left(&self) -> bool {
        matches!(*self.state(), State::Left { .. })
    }

    /// Adds the reply left (if any) to `batch`, a write sent in this same poll; its sender
    /// then says how the write ended ([`Joined::answered`]).
    pub(crate) fn send_with(&self, batch: &mut Vec<WriteOp>) {
        let mut state = self.state();
        if let State::Left { ops, call } = std::mem::take(&mut *state) {
            batch.extend(ops.iter().cloned());
            *state = State::Sent { ops, call };
        }
    }

    /// The answer of the write [`Joined::send_with`] joined: a reply that failed with it is
    /// left again, for the run to write with the call's result.
    pub(crate) fn answered(&self, committed: bool) {
        let mut state = self.state();
        if let State::Sent { ops, call } = std::mem::take(&mut *state)
            && !committed
        {
            *state = State::Left { ops, call };
        }
    }

    /// The call whose write took the reply, when that write's answer is not known.
    fn sent(&self) -> Option<String> {
        match &*self.state() {
            State::Sent { call, .. } => Some(call.clone()),
            _ => None,
        }
    }

    /// The writes of a reply left unwritten, taken to be sent with the writes after it in
    /// this same poll: nothing waits here after.
    pub(super) fn take_left(&self) -> Vec<WriteOp> {
        let mut state = self.state();
        match std::mem::take(&mut *state) {
            State::Left { ops, .. } => ops,
            other => {
                *state = other;
                Vec::new()
            }
        }
    }
}

impl super::Runtime {
    /// Finds out what became of a reply sent with a write whose answer nobody heard (the call
    /// was cut off while its write was in flight): once every write sent before this one has
    /// committed (the store commits in order), the transcript of `session_id` ends with the
    /// reply, or it is left again to be written.
    pub(super) async fn settle_sent(
        &self,
        joined: &Joined,
        session_id: &str,
    ) -> Result<(), crate::store::StoreError> {
        let Some(call) = joined.sent() else {
            return Ok(());
        };
        self.store().write_batch(Vec::new()).await?;
        let tail = self.store().history(session_id, TAIL, None).await?;
        // Landed, it is the last assistant message, its call still without a result.
        let unanswered = super::cut::unanswered_calls(&tail.messages);
        let landed = unanswered.iter().any(|(id, _)| *id == call);
        joined.answered(landed);
        Ok(())
    }
}

/// The newest messages read to find the reply: it is the last assistant message when it landed.
const TAIL: usize = 8;
