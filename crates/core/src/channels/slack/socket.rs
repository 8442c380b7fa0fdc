//! The Slack channel's inbound link: an app signs in with `auth.test`; each session is one
//! Socket Mode connection, each event handed on — a run, an owner command, a pairing code, or
//! nothing — and its envelope acknowledged once that is committed. See the module doc of
//! `slack` for the connection's life.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message as WsFrame;

use super::api::{Event, Frame, Me, ts_of, ts_position};
use super::{SLACK, Slack, route};
use crate::channel::LinkState;
use crate::channels::kit::http::{ApiError, Socket, connect};
use crate::channels::kit::link::{CONNECTED, Linked};
use crate::channels::kit::{Again, BotDoor, Failure, Link};
use crate::error::CoreResult;
use crate::store::WriteOp;

/// Slack pings its connections every few seconds; after this long without a frame the door
/// pings, and after twice this long it takes the connection as dead.
const IDLE: Duration = Duration::from_secs(60);

/// Conversations a sign-in looks back into for messages sent while the app was away (the most
/// recently active), and messages fetched per conversation.
const LOOK_BACK_CHATS: usize = 50;
const LOOK_BACK_MESSAGES: u32 = 100;

/// One app's Socket Mode link.
pub(crate) struct SocketMode {
    door: BotDoor<Slack>,
}

/// How one connection ended.
enum End {
    /// Slack asked for a new connection (`disconnect`), or the socket went after it was up:
    /// open one now.
    Refresh,
    /// The socket went before it was up: open a new one after a wait.
    Dropped(String),
    /// An event could not be committed: open a new one after a wait (growing while it lasts);
    /// Slack delivers the event again, unacknowledged.
    Failed(String),
    /// Refused, and why (`link_disabled`): tried again seldom.
    Fatal(String),
}

impl Linked for Slack {
    type Link = SocketMode;

    fn link(door: BotDoor<Self>) -> SocketMode {
        SocketMode { door }
    }
}

impl Link for SocketMode {
    type Me = Me;

    async fn sign_in(&mut self) -> Result<Me, Failure> {
        let me = self.door.api().web.auth_test().await;
        let me = me.map_err(|e| self.refused("botToken", "auth.test", e))?;
        self.door.own(&me.user_id);
        tracing::info!(account = self.door.account(), bot = %me.user, user_id = %me.user_id, "slack: signed in");
        self.look_back(&me).await;
        Ok(me)
    }

    /// One Socket Mode connection, from `apps.connections.open` to its end.
    async fn session(&mut self, me: &Me) -> Result<Again, Failure> {
        let url = self.door.api().app.open_connection().await;
        let url = url.map_err(|e| self.refused("appToken", "a connection", e))?;
        let socket = connect(&url)
            .await
            .map_err(|e| Failure::Retry(format!("slack: cannot reach the Socket Mode URL: {e}")))?;
        let end = self.connection(me, socket).await;
        let was_up = self.door.bot.link.get().is_up();
        self.door.bot.link.set(LinkState::Starting);
        match end {
            End::Refresh => {
                tracing::info!(account = self.door.account(), "slack: a new connection");
                Ok(Again::Now)
            }
            End::Dropped(why) if was_up => {
                tracing::info!(
                    account = self.door.account(),
                    why,
                    "slack: the connection ended; reconnecting"
                );
                Ok(Again::Soon)
            }
            End::Dropped(why) | End::Failed(why) => Err(Failure::Retry(format!("slack: {why}"))),
            End::Fatal(why) => Err(Failure::Fatal(why)),
        }
    }
}

impl SocketMode {
    /// One connection: `hello`, then envelopes, each acknowledged once handled, until it ends.
    /// A connection silent for [`IDLE`] is pinged; silent for another, it is taken as dead.
    async fn connection(&self, me: &Me, mut socket: Socket) -> End {
        let mut pinged = false;
        loop {
            let text = match tokio::time::timeout(IDLE, socket.next()).await {
                Err(_) if pinged => return End::Dropped("the connection went silent".into()),
                Err(_) => {
                    pinged = true;
                    let ping = socket.send(WsFrame::Ping(Default::default())).await;
                    if ping.is_err() {
                        return End::Dropped("the ping could not be sent".into());
                    }
                    continue;
                }
                Ok(Some(Ok(WsFrame::Text(text)))) => text,
                Ok(Some(Ok(WsFrame::Close(_)) | Err(_)) | None) => {
                    return End::Dropped("the socket closed".into());
                }
                Ok(Some(Ok(_))) => {
                    pinged = false;
                    continue;
                }
            };
            pinged = false;
            let frame: Frame = match serde_json::from_str(text.as_str()) {
                Ok(frame) => frame,
                Err(e) => {
                    tracing::warn!(account = self.door.account(), error = %e, "slack: a frame that is not a Socket Mode message; skipped");
                    continue;
                }
            };
            if let Some(end) = self.frame(me, &mut socket, frame).await {
                let _ = socket.close(None).await;
                return end;
            }
        }
    }

    /// One Socket Mode message: `hello`, `disconnect` (how the connection ends), or an envelope
    /// handled and acknowledged (or, when it could not be handled, left for Slack to deliver
    /// again on the next connection).
    async fn frame(&self, me: &Me, socket: &mut Socket, frame: Frame) -> Option<End> {
        match frame.kind.as_str() {
            "hello" => {
                tracing::info!(account = self.door.account(), "slack: connected");
                self.door.up(CONNECTED);
                None
            }
            "disconnect" => Some(match frame.reason.as_deref() {
                Some("link_disabled") => End::Fatal(
                    "Slack turned Socket Mode off for this app (link_disabled); turn it on in the app's settings and restart".into(),
                ),
                _ => End::Refresh,
            }),
            _ => {
                let envelope = frame.envelope_id.clone()?;
                if frame.kind == "events_api"
                    && let Err(e) = self.envelope(me, &frame).await
                {
                    let why = format!("an event could not be handled ({e}); reconnecting to see it again");
                    return Some(End::Failed(why));
                }
                let ack = json!({"envelope_id": envelope}).to_string();
                let acked = socket.send(WsFrame::text(ack)).await;
                acked.err().map(|_| End::Dropped("the acknowledgement could not be sent".into()))
            }
        }
    }

    /// An `events_api` envelope: its `message` or `app_mention` handled; any other event, or
    /// one of an unexpected shape, skipped (and acknowledged: a redelivery would not mend it).
    async fn envelope(&self, me: &Me, frame: &Frame) -> CoreResult<()> {
        let event = match Event::deserialize(&frame.payload["event"]) {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(account = self.door.account(), error = %e, "slack: an event of an unexpected shape; skipped");
                return Ok(());
            }
        };
        if !matches!(event.kind.as_str(), "message" | "app_mention") {
            return Ok(());
        }
        if let Some(attempt) = frame.retry_attempt.filter(|n| *n > 0) {
            let reason = frame.retry_reason.as_deref().unwrap_or_default();
            tracing::debug!(
                account = self.door.account(),
                attempt,
                reason,
                "slack: an event delivered again"
            );
        }
        self.take(me, &event).await
    }

    /// One message, live or fetched: handed on under its idempotency key (Slack redelivers out
    /// of order: the key, not the cursor, keeps a message once), with its conversation's cursor
    /// — where a later sign-in looks back from.
    async fn take(&self, me: &Me, event: &Event) -> CoreResult<()> {
        let account = self.door.account();
        let source = format!("{SLACK}:{account}:{}:{}", event.channel, event.ts);
        let cursor = WriteOp::SetCursor {
            name: format!("{SLACK}:{account}:{}", event.channel),
            position: ts_position(&event.ts),
        };
        let view = route::view(me, event);
        self.door.receive(view, source, vec![cursor]).await?;
        Ok(())
    }

    /// At sign-in (SPEC §9.2): the messages sent while the app was away to the conversations it
    /// answered before — the [`LOOK_BACK_CHATS`] most recently active — fetched with
    /// `conversations.history` after each one's cursor and handled in order, none twice (Slack
    /// retries an unacknowledged event for about an hour only). Threads' replies are not
    /// fetched. A conversation that cannot be read is logged and left.
    async fn look_back(&self, me: &Me) {
        for (channel, after) in self.door.known_chats(LOOK_BACK_CHATS).await {
            let channel = channel.as_str();
            let api = &self.door.api().web;
            let missed = api
                .history(channel, &ts_of(after), LOOK_BACK_MESSAGES)
                .await;
            let handled = match missed {
                Ok(missed) => self.take_all(me, &missed).await,
                Err(e) => Err(crate::error::CoreError::Unavailable(e.to_string())),
            };
            if let Err(e) = handled {
                tracing::warn!(account = self.door.account(), channel, error = %e, "slack: cannot fetch the messages sent while away");
            }
        }
    }

    async fn take_all(&self, me: &Me, events: &[Event]) -> CoreResult<()> {
        if !events.is_empty() {
            tracing::info!(
                account = self.door.account(),
                count = events.len(),
                "slack: messages sent while away"
            );
        }
        for event in events {
            self.take(me, event).await?;
        }
        Ok(())
    }

    /// Why Slack will not take the app's `token` (`botToken`, `appToken`) when no retry mends
    /// it; else a failure to try again.
    fn refused(&self, token: &str, what: &str, e: ApiError) -> Failure {
        match super::refused(&e) {
            true => Failure::Fatal(self.door.bot.refusal("Slack", token, &e)),
            false => Failure::Retry(format!("slack: cannot reach {what}: {e}")),
        }
    }
}
