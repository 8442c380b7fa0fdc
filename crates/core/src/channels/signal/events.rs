//! The Signal channel's inbound link: each session holds the daemon's event stream from the
//! last event handled, and hands each data message on — a run (committed with the sender's
//! last-message time), an owner command, a pairing code, or nothing. See the module doc of
//! `signal` for what a replay does.

use futures_util::StreamExt;

use super::api::{self, Envelope, Received, SILENCE};
use super::{SIGNAL, Signal, route};
use crate::channel::LinkState;
use crate::channels::kit::link::{CONNECTED, Linked};
use crate::channels::kit::{Again, BotDoor, Failure, Link};
use crate::error::CoreResult;
use crate::sse::{Decoder, Event};
use crate::store::WriteOp;

/// The cursor holding the start time (ms) of the daemon whose events were handled last.
const DAEMON_CURSOR: &str = "signal:events:daemon";

/// The account's event stream.
pub(crate) struct Events {
    door: BotDoor<Signal>,
    /// The last event id handled.
    last: Option<String>,
}

/// Why a connection ended.
enum End {
    /// It was open, then dropped (the daemon went away, a silent stream).
    Dropped(String),
    /// It never opened.
    Refused(String),
    /// An event could not be handled: reopened after a wait (growing while it lasts), from
    /// the last one handled.
    Failed(String),
}

impl Linked for Signal {
    type Link = Events;

    fn link(door: BotDoor<Self>) -> Events {
        Events { door, last: None }
    }
}

impl Link for Events {
    type Me = ();

    /// The last event id handled, as kept by [`Events::keep_position`].
    async fn sign_in(&mut self) -> Result<(), Failure> {
        if let Some(account) = &self.door.settings().account {
            self.door.own(account);
        }
        self.last = self.stored_position().await;
        Ok(())
    }

    /// One connection, after the last event handled.
    async fn session(&mut self, _: &()) -> Result<Again, Failure> {
        match self.connection().await {
            End::Dropped(why) => {
                tracing::info!(why, "signal: the event stream ended; reconnecting");
                self.door.bot.link.set(LinkState::Starting);
                Ok(Again::Soon)
            }
            End::Refused(why) => Err(Failure::Retry(format!(
                "cannot open the signal-cli daemon's event stream at {}: {why}",
                self.door.api().base()
            ))),
            End::Failed(why) => Err(Failure::Retry(format!("signal: {why}"))),
        }
    }
}

impl Events {
    /// One connection: events handled in order, the last id moved past each.
    async fn connection(&mut self) -> End {
        let daemon = self.door.api();
        let response = match daemon.events(self.last.as_deref()).await {
            Ok(response) => response,
            // The check tells a daemon that is not there from one that refuses the stream.
            Err(e) => match daemon.check().await {
                Ok(()) => return End::Refused(format!("{e} (the daemon runs: /api/v1/check)")),
                Err(_) => return End::Refused(e.to_string()),
            },
        };
        tracing::info!(
            after = self.last.as_deref().unwrap_or("-"),
            "signal: connected"
        );
        self.door.up(CONNECTED);
        let mut stream = response.bytes_stream();
        let mut reader = Decoder::default();
        loop {
            let chunk = match tokio::time::timeout(SILENCE, stream.next()).await {
                Err(_) => return End::Dropped(format!("no keep-alive for {}s", SILENCE.as_secs())),
                Ok(None) => return End::Dropped("the daemon closed it".into()),
                Ok(Some(Err(e))) => return End::Dropped(crate::channels::why_no_answer(&e).into()),
                Ok(Some(Ok(chunk))) => chunk,
            };
            let events = api::events(&mut reader, &chunk);
            let before = self.last.clone();
            for event in events {
                if let Err(e) = self.event(&event).await {
                    // Not moved past: the reconnection asks for it again.
                    self.keep_position(before.as_deref()).await;
                    return End::Failed(format!("an event could not be handled: {e}"));
                }
                if event.id.is_some() {
                    self.last = event.id;
                }
            }
            self.keep_position(before.as_deref()).await;
        }
    }

    /// One event: a `receive` with a data message is a message; anything else (receipts,
    /// typing, sync messages, other events) is passed over, and a malformed one skipped.
    async fn event(&self, event: &Event) -> CoreResult<()> {
        if !api::is_receive(event) {
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
    /// answered, a pairing code, or nothing. The account's own messages are not read.
    async fn message(&self, envelope: &Envelope) -> CoreResult<()> {
        let (Some(message), Some(sender)) = (&envelope.data_message, envelope.sender()) else {
            return Ok(());
        };
        let account = self.door.settings().account.as_deref().unwrap_or_default();
        let own = [Some(sender), envelope.source_uuid.as_deref()]
            .into_iter()
            .flatten()
            .any(|who| who.eq_ignore_ascii_case(account));
        if own {
            return Ok(());
        }
        let source = format!("{SIGNAL}:{sender}:{}", envelope.timestamp);
        let view = Ok(route::view(account, (envelope, message, sender)));
        let cursor = WriteOp::SetCursor {
            name: format!("{SIGNAL}:from:{sender}"),
            position: envelope.timestamp,
        };
        self.door.receive(view, source, vec![cursor]).await?;
        Ok(())
    }

    /// The last event id handled, as kept by [`Events::keep_position`] (none: the door starts
    /// with what comes next).
    async fn stored_position(&self) -> Option<String> {
        let store = &self.door.chat.store;
        let start = store.cursor(DAEMON_CURSOR).await.ok().flatten()?;
        let seq = store.cursor(&sequence_cursor(start)).await.ok().flatten()?;
        Some(format!("{start}-{seq}"))
    }

    /// Keeps the last event id when it moved past `before`, so a gateway restart asks the
    /// daemon for what came after it. Losing it costs a replay, not a message: the runs are
    /// once-only.
    async fn keep_position(&self, before: Option<&str>) {
        let now = self.last.as_deref();
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
        if let Err(e) = self.door.parts.commit(writes).await {
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
