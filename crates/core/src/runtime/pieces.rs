//! A run's streamed reply, piece by piece, and what else the run did that is not written yet
//! ([`Partial`]). Each piece is numbered in its run, and the whole text of the model turn so far
//! rides along with a piece at most every [`SNAPSHOT_EVERY`] (and with each model turn's first
//! piece). A long reply so costs its events a bounded number of copies of its text, not one per
//! piece, while clients that show a snapshot (the reference's TUI) still see it grow.

use std::time::{Duration, Instant};

use super::RunEventData;

/// How often the text so far rides along: the reference's own pacing of its live text.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(75);

/// What the run did that is not in the transcript yet: text streamed in the current model
/// turn, and tool calls still waiting for their result.
#[derive(Default)]
pub(super) struct Partial {
    pub(super) text: String,
    pub(super) pieces: Pieces,
    pub(super) model: String,
    pub(super) provider: String,
    pub(super) unanswered: Vec<(String, String)>,
    /// The model of the last answer recorded, and what the answers cost: kept on the run
    /// record however the run ends.
    pub(super) spent: Spent,
    /// The model turn's events held back while the tool result before it commits (`Some`
    /// then): that result is reported first, once written (`run/beside.rs`).
    pub(super) held: Option<Vec<RunEventData>>,
    /// The reply of the call being made, when the call's write may take it (`joined.rs`).
    pub(super) joined: super::joined::Joined,
}

impl Partial {
    /// Adds a streamed piece of text to the model turn's, and makes its event.
    pub(super) fn piece(&mut self, text: String) -> RunEventData {
        self.text.push_str(&text);
        self.pieces.next(text, &self.text)
    }

    /// `event`, to be sent now; `None` when it is held back ([`Partial::held`]).
    pub(super) fn report(&mut self, event: RunEventData) -> Option<RunEventData> {
        match &mut self.held {
            Some(held) => {
                held.push(event);
                None
            }
            None => Some(event),
        }
    }
}

/// Which model answered a run last and what its answers cost.
#[derive(Default, Clone)]
pub(super) struct Spent {
    pub(super) model: Option<String>,
    pub(super) cost_usd: Option<f64>,
}

/// Where a run's stream stands: the last piece's number and when a snapshot last went out.
#[derive(Debug, Default)]
pub(super) struct Pieces {
    seq: u64,
    snapshot_at: Option<Instant>,
}

impl Pieces {
    /// A model call starts: its text starts anew, and its first piece carries the snapshot.
    pub(super) fn call_starts(&mut self) {
        self.snapshot_at = None;
    }

    /// The event of `piece`, `so_far` being the model turn's text up to and with it.
    pub(super) fn next(&mut self, piece: String, so_far: &str) -> RunEventData {
        self.seq += 1;
        RunEventData::Delta {
            text: piece,
            seq: self.seq,
            so_far: self.snapshot(so_far),
        }
    }

    /// `so_far` when a snapshot is due, and then not again for [`SNAPSHOT_EVERY`].
    pub(super) fn snapshot(&mut self, so_far: &str) -> Option<String> {
        let now = Instant::now();
        let due = self
            .snapshot_at
            .is_none_or(|at| now.duration_since(at) >= SNAPSHOT_EVERY);
        if due {
            self.snapshot_at = Some(now);
        }
        due.then(|| so_far.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(event: RunEventData) -> (String, u64, Option<String>) {
        match event {
            RunEventData::Delta { text, seq, so_far } => (text, seq, so_far),
            other => panic!("not a piece: {other:?}"),
        }
    }

    #[test]
    fn pieces_are_numbered_and_the_snapshot_rides_along_at_a_bounded_rate() {
        let mut pieces = Pieces::default();
        pieces.call_starts();
        assert_eq!(
            parts(pieces.next("He".into(), "He")),
            ("He".into(), 1, Some("He".into()))
        );
        // Within the window: the piece alone.
        assert_eq!(
            parts(pieces.next("llo".into(), "Hello")),
            ("llo".into(), 2, None)
        );
        std::thread::sleep(SNAPSHOT_EVERY);
        assert_eq!(
            parts(pieces.next("!".into(), "Hello!")).2.as_deref(),
            Some("Hello!")
        );
        // The next model call's first piece carries its own text, and the numbers go on.
        pieces.call_starts();
        assert_eq!(
            parts(pieces.next("Ok".into(), "Ok")),
            ("Ok".into(), 4, Some("Ok".into()))
        );
    }
}
