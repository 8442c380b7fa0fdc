//! The Signal channel's inbound door: one task holds the daemon's event stream and hands each
//! data message on — a run (committed with the sender's last-message time), an owner command, a
//! pairing code, or nothing. See the module doc of `signal` for what a replay does.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use super::api::{Envelope, Event, Received, SILENCE, SseReader};
use super::{ACCOUNT_ID, CONNECTED, SIGNAL, Signal, route};
use crate::channel::{Door, LinkState};
use crate::channels::pairing::Stranger;
use crate::channels::{DoorParts, Taken};
use crate::error::CoreResult;
use crate::store::WriteOp;

/// Waits between failed connections grow to this.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Failed connections in a row before `health` shows the link failed (with the reason; the
/// door keeps trying).
const FAILURES_SHOWN: u32 = 3;
/// Signal shows "typing…" for about 15 s; it is sent again this often while a run works.
const TYPING_EVERY: Duration = Duration::from_secs(10);
/// The cursor holding the start time (ms) of the daemon whose events were handled last.
const DAEMON_CURSOR: &str = "signal:events:daemon";

/// The event stream of the channel's account.
pub(super) struct Events {
    signal: Arc<Signal>,
    parts: DoorParts,
}

/// Why a connection ended.
enum End {
    /// It was open, then dropped (the daemon went away, a silent stream, a failed commit).
    Dropped(String),
    /// It never opened.
    Refused(String),
}

impl Events {
    pub(super) fn new(signal: Arc<Signal>, parts: &DoorParts) -> Self {
        Self {
            signal,
            parts: parts.clone(),
        }
    }
}

impl Door for Events {
    /// Connects to the daemon; stops when intake stops.
    fn start(self: Arc<Self>) {
        self.signal.status.set(LinkState::Starting);
        let this = self.clone();
        self.parts
            .spawn_until_stopped(async move { this.run().await });
    }
}

impl Events {
    /// Connects, and reconnects after every drop with the last event id handled, until the
    /// gateway stops.
    async fn run(&self) {
        let mut last = self.stored_position().await;
        let mut backoff = Duration::from_millis(250);
        let mut failures = 0;
        loop {
            match self.connection(&mut last).await {
                End::Dropped(why) => {
                    tracing::info!(why, "signal: the event stream ended; reconnecting");
                    self.signal.status.set(LinkState::Starting);
                    backoff = Duration::from_millis(250);
                    failures = 0;
                }
                End::Refused(why) => {
                    failures += 1;
                    let why = format!(
                        "cannot open the signal-cli daemon's event stream at {}: {why}; retrying",
                        self.signal.daemon.base()
                    );
                    tracing::warn!("signal: {why}");
                    self.signal.status.set(match failures >= FAILURES_SHOWN {
                        true => LinkState::Failed(why),
                        false => LinkState::Starting,
                    });
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// One connection: events handled in order, `last` moved past each.
    async fn connection(&self, last: &mut Option<String>) -> End {
        let daemon = &self.signal.daemon;
        let response = match daemon.events(last.as_deref()).await {
            Ok(response) => response,
            // The check tells a daemon that is not there from one that refuses the stream.
            Err(e) => match daemon.check().await {
                Ok(()) => return End::Refused(format!("{e} (the daemon runs: /api/v1/check)")),
                Err(_) => return End::Refused(e.to_string()),
            },
        };
        tracing::info!(after = last.as_deref().unwrap_or("-"), "signal: connected");
        self.signal.status.set(LinkState::Up(CONNECTED));
        let mut stream = response.bytes_stream();
        let mut reader = SseReader::default();
        loop {
            let chunk = match tokio::time::timeout(SILENCE, stream.next()).await {
                Err(_) => return End::Dropped(format!("no keep-alive for {}s", SILENCE.as_secs())),
                Ok(None) => return End::Dropped("the daemon closed it".into()),
                Ok(Some(Err(e))) => return End::Dropped(crate::channels::why_no_answer(&e).into()),
                Ok(Some(Ok(chunk))) => chunk,
            };
            let events = reader.push(&chunk);
            let before = last.clone();
            for event in events {
                if let Err(e) = self.event(&event).await {
                    // Not moved past: the reconnection asks for it again.
                    self.keep_position(before.as_deref(), last.as_deref()).await;
                    return End::Dropped(format!("an event could not be handled: {e}"));
                }
                if let Some(id) = event.id {
                    *last = Some(id);
                }
            }
            self.keep_position(before.as_deref(), last.as_deref()).await;
        }
    }

    /// One event: a `receive` with a data message is a message; anything else (receipts,
    /// typing, sync messages, other events) is passed over, and a malformed one skipped.
    async fn event(&self, event: &Event) -> CoreResult<()> {
        if event.name.as_deref().is_some_and(|name| name != "receive") {
            return Ok(());
        }
        let envelope = match serde_json::from_str::<Received>(&event.data) {
            Ok(received) => received.envelope,
            Err(e) => {
                tracing::warn!(id = event.id.as_deref().unwrap_or("-"), error = %e, "signal: an event of an unexpected shape; skipped");
                return Ok(());
            }
        };
        self.message(&envelope).await
    }

    /// One envelope: a run committed with the sender's last-message time, an owner command
    /// answered, a pairing code, or nothing.
    async fn message(&self, envelope: &Envelope) -> CoreResult<()> {
        let (Some(message), Some(sender)) = (&envelope.data_message, envelope.sender()) else {
            return Ok(());
        };
        let settings = &self.signal.settings;
        let account = settings.account.as_deref().unwrap_or_default();
        let own = [Some(sender), envelope.source_uuid.as_deref()]
            .into_iter()
            .flatten()
            .any(|who| who.eq_ignore_ascii_case(account));
        if own {
            return Ok(());
        }
        let source = format!("{SIGNAL}:{sender}:{}", envelope.timestamp);
        let parts = (envelope, message, sender);
        let mut decision = route::decide(&self.signal.config, settings, parts)?;
        if let Some((id, username)) = route::stranger(settings, parts) {
            let stranger = Stranger {
                channel: SIGNAL,
                id_name: "Signal number",
                account_id: ACCOUNT_ID.into(),
                id,
                username,
                source: source.clone(),
            };
            decision = self.parts.admit(decision, stranger).await?;
        }
        let cursor = WriteOp::SetCursor {
            name: format!("{SIGNAL}:from:{sender}"),
            position: envelope.timestamp,
        };
        match self
            .parts
            .take(SIGNAL, decision, (source, vec![cursor]))
            .await?
        {
            Taken::Run(run, route) => self.show_typing(route.to, run),
            Taken::Answered => {}
            Taken::Ignored(why) => {
                tracing::debug!(
                    timestamp = envelope.timestamp,
                    why,
                    "signal: message ignored"
                );
            }
        }
        Ok(())
    }

    /// "typing…" in the chat until the run ends (bounded by the gateway's stop).
    fn show_typing(&self, to: String, run: crate::RunId) {
        let daemon = self.signal.daemon.clone();
        let id = format!("typing:{}", run.as_str());
        self.parts.typing_until_done(run, TYPING_EVERY, move || {
            let (daemon, to, id) = (daemon.clone(), to.clone(), id.clone());
            async move {
                let _ = daemon.typing(super::target(&to), &id).await;
            }
        });
    }

    /// The last event id handled, as kept by [`Events::keep_position`] (none: the door starts
    /// with what comes next).
    async fn stored_position(&self) -> Option<String> {
        let store = &self.signal.store;
        let start = store.cursor(DAEMON_CURSOR).await.ok().flatten()?;
        let seq = store.cursor(&sequence_cursor(start)).await.ok().flatten()?;
        Some(format!("{start}-{seq}"))
    }

    /// Keeps `now` when it moved past `before`, so a gateway restart asks the daemon for what
    /// came after it. Losing it costs a replay, not a message: the runs are once-only.
    async fn keep_position(&self, before: Option<&str>, now: Option<&str>) {
        let Some((start, seq)) = now.filter(|now| Some(*now) != before).and_then(position) else {
            return;
        };
        let writes = vec![
            WriteOp::SetCursor {
                name: DAEMON_CURSOR.into(),
                position: start,
            },
            WriteOp::SetCursor {
                name: sequence_cursor(start),
                position: seq,
            },
        ];
        if let Err(e) = self.signal.store.write_batch(writes).await {
            tracing::warn!(error = %e, "signal: cannot keep the event position");
        }
    }
}

/// The cursor holding the last sequence handled of the daemon started at `start`.
fn sequence_cursor(start: i64) -> String {
    format!("{SIGNAL}:events:{start}")
}

/// An event id's daemon start time and sequence (`"1700000000000-42"`).
fn position(id: &str) -> Option<(i64, i64)> {
    let (start, seq) = id.split_once('-')?;
    Some((start.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_id_is_the_daemon_start_and_a_sequence() {
        assert_eq!(position("1700000000000-42"), Some((1_700_000_000_000, 42)));
        assert_eq!(position("42"), None);
        assert_eq!(position("a-1"), None);
    }
}
