//! The Slack channel's inbound door: one task per app holds a Socket Mode connection and hands
//! each event on — a run, an owner command, a pairing code, or nothing — acknowledging its
//! envelope once that is committed. See the module doc of `slack` for the connection's life.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message as WsFrame;

use super::api::{ApiError, Event, Frame, Me};
use super::{Account, CONNECTED, SLACK, Slack, route};
use crate::channel::{Door, LinkState};
use crate::channels::DoorParts;
use crate::channels::Taken;
use crate::channels::bot::{Socket, connect};
use crate::channels::pairing::Stranger;
use crate::error::CoreResult;

/// Waits between failed attempts grow to this.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Slack pings its connections every few seconds; after this long without a frame the door
/// pings, and after twice this long it takes the connection as dead.
const IDLE: Duration = Duration::from_secs(60);
/// The first wait after a failed attempt.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// Slack's errors that no retry mends: the token is wrong, revoked, or of the wrong kind.
const REFUSED: &[&str] = &[
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "not_allowed_token_type",
    "missing_scope",
];

/// The Socket Mode connections of every configured app.
pub(super) struct SocketMode {
    slack: Arc<Slack>,
    parts: DoorParts,
}

/// How one connection ended.
enum End {
    /// Slack asked for a new connection (`disconnect`): open one now.
    Refresh,
    /// The socket went (or an event could not be committed): open a new one after a wait.
    Dropped,
    /// Stop for good, and why (`link_disabled`).
    Fatal(String),
}

impl SocketMode {
    pub(super) fn new(slack: Arc<Slack>, parts: &DoorParts) -> Self {
        Self {
            slack,
            parts: parts.clone(),
        }
    }
}

impl Door for SocketMode {
    /// Connects every configured app; each stops when intake stops.
    fn start(self: Arc<Self>) {
        for account in &self.slack.accounts {
            account.link.set(LinkState::Starting);
            let (this, account) = (self.clone(), account.clone());
            self.parts
                .spawn_until_stopped(async move { this.run(&account).await });
        }
    }
}

impl SocketMode {
    /// Learns who the bot is, then connects, and reconnects after every drop or `disconnect`,
    /// until the gateway stops or Slack refuses the app.
    async fn run(&self, account: &Arc<Account>) {
        let mut backoff = FIRST_BACKOFF;
        let me = loop {
            match account.web.auth_test().await {
                Ok(me) => break me,
                Err(e) => match refused(account, "botToken", &e) {
                    Some(why) => return fail(account, why),
                    None => wait(account, "auth.test", &e.to_string(), &mut backoff).await,
                },
            }
        };
        tracing::info!(account = %account.id, bot = %me.user, user_id = %me.user_id, "slack: signed in");
        loop {
            let url = match account.app.open_connection().await {
                Ok(url) => url,
                Err(e) => {
                    match refused(account, "appToken", &e) {
                        Some(why) => return fail(account, why),
                        None => wait(account, "a connection", &e.to_string(), &mut backoff).await,
                    }
                    continue;
                }
            };
            let socket = match connect(&url).await {
                Ok(socket) => socket,
                Err(e) => {
                    wait(account, "the Socket Mode URL", &e, &mut backoff).await;
                    continue;
                }
            };
            let end = self.connection(account, &me, socket).await;
            if account.link.get().is_up() {
                backoff = FIRST_BACKOFF;
                account.link.set(LinkState::Starting);
            }
            match end {
                End::Refresh => {
                    tracing::info!(account = %account.id, "slack: a new connection, as Slack asked");
                }
                End::Dropped => {
                    tracing::info!(account = %account.id, "slack: the connection ended; reconnecting");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                End::Fatal(why) => return fail(account, why),
            }
        }
    }

    /// One connection: `hello`, then envelopes, each acknowledged once handled, until it ends.
    /// A connection silent for [`IDLE`] is pinged; silent for another, it is taken as dead.
    async fn connection(&self, account: &Arc<Account>, me: &Me, mut socket: Socket) -> End {
        let mut pinged = false;
        loop {
            let text = match tokio::time::timeout(IDLE, socket.next()).await {
                Err(_) if pinged => {
                    tracing::warn!(account = %account.id, "slack: the connection went silent; reconnecting");
                    return End::Dropped;
                }
                Err(_) => {
                    pinged = true;
                    if socket
                        .send(WsFrame::Ping(Default::default()))
                        .await
                        .is_err()
                    {
                        return End::Dropped;
                    }
                    continue;
                }
                Ok(Some(Ok(WsFrame::Text(text)))) => text,
                Ok(Some(Ok(WsFrame::Close(_)) | Err(_)) | None) => return End::Dropped,
                Ok(Some(Ok(_))) => {
                    pinged = false;
                    continue;
                }
            };
            pinged = false;
            let frame: Frame = match serde_json::from_str(text.as_str()) {
                Ok(frame) => frame,
                Err(e) => {
                    tracing::warn!(account = %account.id, error = %e, "slack: a frame that is not a Socket Mode message; skipped");
                    continue;
                }
            };
            if let Some(end) = self.frame(account, me, &mut socket, frame).await {
                let _ = socket.close(None).await;
                return end;
            }
        }
    }

    /// One Socket Mode message: `hello`, `disconnect` (how the connection ends), or an envelope
    /// handled and acknowledged (or, when it could not be handled, left for Slack to deliver
    /// again on the next connection).
    async fn frame(
        &self,
        account: &Arc<Account>,
        me: &Me,
        socket: &mut Socket,
        frame: Frame,
    ) -> Option<End> {
        match frame.kind.as_str() {
            "hello" => {
                tracing::info!(account = %account.id, "slack: connected");
                account.link.set(LinkState::Up(CONNECTED));
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
                    && let Err(e) = self.envelope(account, me, &frame).await
                {
                    tracing::warn!(account = %account.id, error = %e, "slack: an event could not be handled; reconnecting to see it again");
                    return Some(End::Dropped);
                }
                let ack = json!({"envelope_id": envelope}).to_string();
                socket.send(WsFrame::text(ack)).await.err().map(|_| End::Dropped)
            }
        }
    }

    /// An `events_api` envelope: its `message` or `app_mention` handled; any other event, or
    /// one of an unexpected shape, skipped (and acknowledged: a redelivery would not mend it).
    async fn envelope(&self, account: &Arc<Account>, me: &Me, frame: &Frame) -> CoreResult<()> {
        let event = match Event::deserialize(&frame.payload["event"]) {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(account = %account.id, error = %e, "slack: an event of an unexpected shape; skipped");
                return Ok(());
            }
        };
        if !matches!(event.kind.as_str(), "message" | "app_mention") {
            return Ok(());
        }
        if let Some(attempt) = frame.retry_attempt.filter(|n| *n > 0) {
            let reason = frame.retry_reason.as_deref().unwrap_or_default();
            tracing::debug!(account = %account.id, attempt, reason, "slack: an event delivered again");
        }
        self.message(account, me, &event).await
    }

    /// One message: a run (its idempotency key the conversation and `ts`, so a second
    /// delivery starts nothing), an owner command, a pairing code, or nothing.
    async fn message(&self, account: &Arc<Account>, me: &Me, event: &Event) -> CoreResult<()> {
        let id = format!("{SLACK}:{}:{}:{}", account.id, event.channel, event.ts);
        let config = &self.slack.config;
        let settings = (account.id.as_str(), &account.settings);
        let mut decision = route::decide(config, settings, me, event)?;
        if let Some(user) = route::stranger(&account.settings, event) {
            let stranger = Stranger {
                channel: SLACK,
                id_name: "Slack user id",
                account_id: account.id.clone(),
                id: user,
                username: None,
                source: id.clone(),
            };
            decision = self.parts.admit(decision, stranger).await?;
        }
        // No cursor: Slack redelivers out of order; the idempotency key keeps a message once.
        if let Taken::Ignored(why) = self.parts.take(SLACK, decision, (id, Vec::new())).await? {
            tracing::debug!(account = %account.id, ts = %event.ts, why, "slack: message ignored");
        }
        Ok(())
    }
}

/// Why Slack will not take the app's `token` (`botToken`, `appToken`), when no retry mends it.
fn refused(account: &Account, token: &str, e: &ApiError) -> Option<String> {
    let code = e.error.rsplit(": ").next().unwrap_or_default();
    REFUSED.contains(&code).then(|| {
        let path = match account.id.as_str() {
            crate::config::SLACK_DEFAULT_ACCOUNT => format!("channels.slack.{token}"),
            id => format!("channels.slack.accounts.{id}.{token}"),
        };
        format!("Slack refused {path} ({code}); fix the token and restart")
    })
}

fn fail(account: &Account, why: String) {
    tracing::error!(account = %account.id, "slack: {why}");
    account.link.set(LinkState::Failed(why));
}

/// Says what failed, waits, and doubles the next wait (up to [`MAX_BACKOFF`]).
async fn wait(account: &Account, what: &str, error: &str, backoff: &mut Duration) {
    tracing::warn!(account = %account.id, error, "slack: cannot reach {what}; retrying");
    tokio::time::sleep(*backoff).await;
    *backoff = (*backoff * 2).min(MAX_BACKOFF);
}
