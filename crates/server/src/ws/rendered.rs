//! A run event's frames, written once for every connection that sends them.
//!
//! Every connection receives every run event (the runtime's broadcast) and sends those its
//! subscriptions want. The frames are the same text on every connection but for its `seq`, so
//! the first connection that sends an event writes them, and the others take them from a short
//! list of the newest events ([`KEPT`]); each connection only closes a frame with its own `seq`
//! (issue 38: events built once and shared). An event is known by its `Arc` (the broadcast's),
//! held by the list, so no other event can take its address while it is listed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use switchboard_core::runtime::RunEvent;
use switchboard_protocol::events::ServerEvent;

use super::events::run_events;
use super::subscriptions::run_change;

/// How many of the newest run events keep their frames: every connection sends an event within
/// a few events of the others.
const KEPT: usize = 16;

/// A run event's frames, each without its closing `}` ([`ServerEvent::frame_head`]).
pub(super) struct Frames {
    /// The `agent`/`chat` frames, for connections that follow the run's session.
    pub(super) run: Vec<String>,
    /// The `sessions.changed` frame, for connections that list sessions.
    pub(super) change: Option<String>,
}

/// The frames of the newest run events.
#[derive(Default)]
pub(crate) struct Rendered(Mutex<VecDeque<(Arc<RunEvent>, Arc<Frames>)>>);

impl Rendered {
    /// `event`'s frames: written now, on the server's clock `ts`, unless another connection
    /// wrote them already.
    pub(super) fn frames(&self, event: &Arc<RunEvent>, ts: i64) -> Arc<Frames> {
        if let Some(frames) = find(&self.lock(), event) {
            return frames;
        }
        let frames = Arc::new(write(event, ts));
        let mut kept = self.lock();
        // Another connection wrote them meanwhile: one text for all.
        if let Some(theirs) = find(&kept, event) {
            return theirs;
        }
        if kept.len() >= KEPT {
            kept.pop_front();
        }
        kept.push_back((event.clone(), frames.clone()));
        frames
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(Arc<RunEvent>, Arc<Frames>)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn find(
    kept: &VecDeque<(Arc<RunEvent>, Arc<Frames>)>,
    event: &Arc<RunEvent>,
) -> Option<Arc<Frames>> {
    kept.iter()
        .rev()
        .find(|(e, _)| Arc::ptr_eq(e, event))
        .map(|(_, frames)| frames.clone())
}

fn write(event: &RunEvent, ts: i64) -> Frames {
    let head = |event: ServerEvent| match event.frame_head() {
        Ok(head) => Some(head),
        Err(e) => {
            tracing::warn!(error = %e, "an event could not be encoded");
            None
        }
    };
    Frames {
        run: run_events(event, ts).into_iter().filter_map(head).collect(),
        change: run_change(event, ts)
            .map(ServerEvent::SessionsChanged)
            .and_then(head),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_core::RunId;
    use switchboard_core::keys::SessionKey;
    use switchboard_core::runtime::RunEventData;

    fn event() -> Arc<RunEvent> {
        Arc::new(RunEvent {
            run_id: RunId::from_string("r1"),
            session_key: SessionKey::from_canonical("agent:main:main".to_string()),
            data: RunEventData::Started,
        })
    }

    #[test]
    fn an_event_is_written_once_for_every_connection() {
        let rendered = Rendered::default();
        let (started, other) = (event(), event());
        let first = rendered.frames(&started, 1);
        // A later connection, on a later clock, takes the same text.
        assert!(Arc::ptr_eq(&first, &rendered.frames(&started, 2)));
        assert!(first.run[0].contains(r#""ts":1"#), "{}", first.run[0]);
        // An equal event that is another event is written for itself.
        assert!(!Arc::ptr_eq(&first, &rendered.frames(&other, 3)));
        let change = first.change.as_deref().unwrap();
        assert!(
            change.starts_with(r#"{"type":"event","event":"sessions.changed","#),
            "{change}"
        );
    }

    #[test]
    fn only_the_newest_events_are_kept() {
        let rendered = Rendered::default();
        let events: Vec<_> = (0..=KEPT).map(|_| event()).collect();
        let first = rendered.frames(&events[0], 1);
        for e in &events[1..] {
            rendered.frames(e, 1);
        }
        assert_eq!(rendered.lock().len(), KEPT);
        assert!(!Arc::ptr_eq(&first, &rendered.frames(&events[0], 1)));
    }
}
