//! Streamed pieces that arrived together, told as one event: a model's text (or thinking) pieces
//! decoded from the chunks of its stream received so far are joined before they reach the run,
//! which sends each event to every client and channel that follows it. Nothing waits for more:
//! what is held is told before the reader waits for the next chunk, before any other kind of
//! event and when the stream ends (docs/decisions.md, "Pieces that arrive together are one
//! event").

use std::sync::{Mutex, PoisonError};

use super::{EventSink, StreamEvent};

/// The pieces received together, held until [`Merged::flush`].
pub(super) struct Merged<'a> {
    sink: EventSink<'a>,
    held: Mutex<Option<StreamEvent>>,
}

impl<'a> Merged<'a> {
    pub(super) fn new(sink: EventSink<'a>) -> Self {
        Self {
            sink,
            held: Mutex::new(None),
        }
    }

    /// Joins `event` to the held piece of its kind; otherwise tells the held one first, then
    /// holds `event` when it is a piece or tells it too.
    pub(super) fn push(&self, event: StreamEvent) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let told = match (held.as_mut(), event) {
            (Some(StreamEvent::TextDelta(text)), StreamEvent::TextDelta(more))
            | (Some(StreamEvent::ThinkingDelta(text)), StreamEvent::ThinkingDelta(more)) => {
                text.push_str(&more);
                return;
            }
            (_, piece @ (StreamEvent::TextDelta(_) | StreamEvent::ThinkingDelta(_))) => {
                [held.replace(piece), None]
            }
            (_, other) => [held.take(), Some(other)],
        };
        drop(held);
        told.into_iter().flatten().for_each(self.sink);
    }

    /// Whether a piece is held.
    pub(super) fn holds(&self) -> bool {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Tells the held piece, if any.
    pub(super) fn flush(&self) {
        let held = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(event) = held {
            (self.sink)(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> StreamEvent {
        StreamEvent::TextDelta(t.into())
    }

    #[test]
    fn pieces_of_a_kind_join_until_a_flush_or_another_kind() {
        let told = Mutex::new(Vec::new());
        let sink = |e: StreamEvent| told.lock().unwrap().push(e);
        let merged = Merged::new(&sink);
        merged.push(text("Hel"));
        merged.push(text("lo"));
        assert!(
            told.lock().unwrap().is_empty(),
            "held until the reader would wait"
        );
        merged.flush();
        merged.push(text(" wor"));
        merged.push(StreamEvent::ThinkingDelta("hm".into()));
        merged.push(StreamEvent::ThinkingDelta("m".into()));
        let call = StreamEvent::ToolCallStarted {
            id: "c1".into(),
            name: "t".into(),
        };
        merged.push(call.clone());
        merged.push(text("ld"));
        merged.flush();
        merged.flush();
        assert_eq!(
            *told.lock().unwrap(),
            [
                text("Hello"),
                text(" wor"),
                StreamEvent::ThinkingDelta("hmm".into()),
                call,
                text("ld"),
            ]
        );
    }
}
