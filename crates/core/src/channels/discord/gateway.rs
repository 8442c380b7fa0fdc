//! The Discord channel's inbound door: one task per bot holds a Gateway session over a
//! WebSocket and hands each MESSAGE_CREATE on — a run (committed with the channel's cursor), an
//! owner command, a pairing code, or nothing. See the module doc of `discord` for the session's life.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::api::{ChannelInfo, Message, Payload, Ready, User};
use super::route::{self, Place};
use super::{Account, CONNECTED, DISCORD, Discord};
use crate::channel::{Door, LinkState};
use crate::channels::bot::{Socket, connect};
use crate::channels::pairing::Stranger;
use crate::channels::{DoorParts, Taken};
use crate::error::CoreResult;
use crate::store::WriteOp;

/// GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT.
pub(super) const INTENTS: u64 = (1 << 0) | (1 << 9) | (1 << 12) | (1 << 15);
/// Waits between failed connections grow to this.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Discord shows "typing…" for about 10 s; it is sent again this often while a run works.
const TYPING_EVERY: Duration = Duration::from_secs(8);

/// The Gateway sessions of every configured bot.
pub struct Gateway {
    discord: Arc<Discord>,
    parts: DoorParts,
}

/// A Gateway session that can be resumed.
struct Session {
    id: String,
    resume_url: String,
    /// The last sequence number handled.
    seq: Option<u64>,
    me: User,
}

/// How one connection ended.
enum End {
    /// Reconnect and resume the session (a drop, op 7, op 9 with `d: true`).
    Resume,
    /// Reconnect with a new session (op 9 with `d: false`, a session Discord forgot).
    Identify,
    /// Stop for good, and why (a refused token, intents not allowed).
    Fatal(String),
}

impl Gateway {
    pub(super) fn new(discord: Arc<Discord>, parts: &DoorParts) -> Self {
        Self {
            discord,
            parts: parts.clone(),
        }
    }
}

impl Door for Gateway {
    /// Connects every configured bot; each stops when intake stops.
    fn start(self: Arc<Self>) {
        for account in &self.discord.accounts {
            account.status.set(LinkState::Starting);
            let (this, account) = (self.clone(), account.clone());
            self.parts.spawn_until_stopped(async move {
                let channels = Mutex::new(HashMap::new());
                this.run(&account, &channels).await;
            });
        }
    }
}

/// What the door knows of the bot's guild channels (threads and their parents, names).
type Known = Mutex<HashMap<String, ChannelInfo>>;

impl Gateway {
    /// Connects, and reconnects after every drop (resuming when it can), until the gateway
    /// stops or Discord refuses the bot.
    async fn run(&self, account: &Arc<Account>, known: &Known) {
        let mut session: Option<Session> = None;
        let mut backoff = Duration::from_millis(250);
        loop {
            let base = session
                .as_ref()
                .map_or(account.settings.gateway_url.as_str(), |s| {
                    s.resume_url.as_str()
                });
            let url = format!("{}/?v=10&encoding=json", base.trim_end_matches('/'));
            let socket = match connect(&url).await {
                Ok(socket) => socket,
                Err(e) => {
                    tracing::warn!(account = %account.id, error = %e, "discord: cannot reach the Gateway; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            match self.connection(account, known, socket, &mut session).await {
                End::Resume => {
                    tracing::info!(account = %account.id, "discord: connection ended; resuming");
                }
                End::Identify => {
                    tracing::info!(account = %account.id, "discord: session invalid; identifying anew");
                    session = None;
                    // Discord asks for a wait of 1–5 s before identifying again.
                    tokio::time::sleep(jitter(Duration::from_secs(1), Duration::from_secs(4)))
                        .await;
                }
                End::Fatal(why) => {
                    tracing::error!(account = %account.id, "discord: {why}");
                    account.status.set(LinkState::Failed(why));
                    return;
                }
            }
            account.status.set(LinkState::Starting);
            backoff = Duration::from_millis(250);
        }
    }

    /// One WebSocket connection: HELLO, IDENTIFY or RESUME, then heartbeats and dispatches until
    /// it ends.
    async fn connection(
        &self,
        account: &Arc<Account>,
        known: &Known,
        mut socket: Socket,
        session: &mut Option<Session>,
    ) -> End {
        let interval = match hello(&mut socket).await {
            Ok(interval) => interval,
            Err(why) => {
                tracing::warn!(account = %account.id, "discord: {why}");
                return End::Resume;
            }
        };
        let token = account.rest.token();
        let opening = match session {
            Some(s) => json!({"op": 6, "d": {"token": token, "session_id": s.id, "seq": s.seq}}),
            None => json!({"op": 2, "d": {
                "token": token,
                "intents": INTENTS,
                "properties": {"os": std::env::consts::OS, "browser": "switchboard", "device": "switchboard"},
            }}),
        };
        if socket.send(Frame::text(opening.to_string())).await.is_err() {
            return End::Resume;
        }
        let mut next_beat = Instant::now() + jitter(Duration::ZERO, interval);
        let mut acked = true;
        loop {
            let frame = tokio::select! {
                frame = socket.next() => frame,
                () = tokio::time::sleep_until(next_beat) => {
                    if !acked {
                        // No ACK since the last beat: a zombie connection.
                        tracing::warn!(account = %account.id, "discord: heartbeat not acknowledged; reconnecting");
                        let _ = socket.close(None).await;
                        return End::Resume;
                    }
                    let seq = session.as_ref().and_then(|s| s.seq);
                    if socket.send(Frame::text(json!({"op": 1, "d": seq}).to_string())).await.is_err() {
                        return End::Resume;
                    }
                    acked = false;
                    next_beat = Instant::now() + interval;
                    continue;
                }
            };
            let text = match frame {
                Some(Ok(Frame::Text(text))) => text,
                Some(Ok(Frame::Close(close))) => return closed(close.map(|c| c.code)),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return End::Resume,
            };
            let payload: Payload = match serde_json::from_str(text.as_str()) {
                Ok(payload) => payload,
                Err(e) => {
                    tracing::warn!(account = %account.id, error = %e, "discord: a Gateway payload that is not JSON; skipped");
                    continue;
                }
            };
            match payload.op {
                0 => {
                    if let Err(end) = self.dispatch(account, known, session, payload).await {
                        let _ = socket.close(None).await;
                        return end;
                    }
                }
                1 => {
                    let seq = session.as_ref().and_then(|s| s.seq);
                    let _ = socket
                        .send(Frame::text(json!({"op": 1, "d": seq}).to_string()))
                        .await;
                }
                7 => {
                    let _ = socket.close(None).await;
                    return End::Resume;
                }
                9 => {
                    let _ = socket.close(None).await;
                    return match (payload.d.as_bool(), session.is_some()) {
                        (Some(true), true) => End::Resume,
                        _ => End::Identify,
                    };
                }
                11 => acked = true,
                _ => {}
            }
        }
    }

    /// One dispatch (op 0). The sequence moves past it only once it is handled: an error ends
    /// the connection, and the resume replays it.
    async fn dispatch(
        &self,
        account: &Arc<Account>,
        known: &Known,
        session: &mut Option<Session>,
        payload: Payload,
    ) -> Result<(), End> {
        match payload.t.as_deref() {
            Some("READY") => match serde_json::from_value::<Ready>(payload.d) {
                Ok(ready) => {
                    tracing::info!(account = %account.id, bot = %ready.user.username, "discord: connected");
                    account.status.set(LinkState::Up(CONNECTED));
                    *session = Some(Session {
                        id: ready.session_id,
                        resume_url: ready.resume_gateway_url,
                        seq: None,
                        me: ready.user,
                    });
                }
                Err(e) => {
                    tracing::warn!(account = %account.id, error = %e, "discord: a READY without its session");
                    return Err(End::Identify);
                }
            },
            Some("RESUMED") => account.status.set(LinkState::Up(CONNECTED)),
            Some("GUILD_CREATE") => learn(known, &payload.d),
            Some("THREAD_CREATE" | "CHANNEL_CREATE" | "THREAD_UPDATE" | "CHANNEL_UPDATE") => {
                if let Ok(info) = serde_json::from_value::<ChannelInfo>(payload.d.clone()) {
                    lock(known).insert(info.id.clone(), info);
                }
            }
            Some("MESSAGE_CREATE") => {
                let Some(me) = session.as_ref().map(|s| s.me.clone()) else {
                    return Ok(());
                };
                match serde_json::from_value::<Message>(payload.d) {
                    Ok(message) => {
                        if let Err(e) = self.message(account, known, &me, message).await {
                            tracing::warn!(account = %account.id, error = %e, "discord: a message could not be handled; resuming to see it again");
                            return Err(End::Resume);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(account = %account.id, error = %e, "discord: a MESSAGE_CREATE of an unexpected shape; skipped");
                    }
                }
            }
            _ => {}
        }
        if let (Some(s), Some(seq)) = (session.as_mut(), payload.s) {
            s.seq = Some(s.seq.map_or(seq, |old| old.max(seq)));
        }
        Ok(())
    }

    /// One message: a run committed with the channel's cursor, a pairing code, or nothing.
    async fn message(
        &self,
        account: &Arc<Account>,
        known: &Known,
        me: &User,
        message: Message,
    ) -> CoreResult<()> {
        let store = &self.discord.store;
        let id: i64 = message.id.parse().unwrap_or(0);
        let cursor = account.cursor(&message.channel_id);
        if store.cursor(&cursor).await?.is_some_and(|done| id <= done) {
            tracing::debug!(message = %message.id, "discord: a message handled before; skipped");
            return Ok(());
        }
        let place = match &message.guild_id {
            None => Place::Direct,
            Some(_) => Place::Guild(
                self.channel_info(account, known, &message.channel_id)
                    .await?,
            ),
        };
        let source = match account.id.as_str() {
            crate::config::DISCORD_DEFAULT_ACCOUNT => format!("{DISCORD}:{}", message.id),
            account => format!("{DISCORD}:{account}:{}", message.id),
        };
        let (settings, account_id) = (&account.settings, account.id.as_str());
        let config = &self.discord.config;
        let mut decision = route::decide(config, (account_id, settings), me, (&message, &place))?;
        if let Some((sender, username)) = route::stranger(settings, &message, &place) {
            let stranger = Stranger {
                channel: DISCORD,
                id_name: "Discord user id",
                account_id: account_id.into(),
                id: sender,
                username,
                source: source.clone(),
            };
            decision = self.parts.admit(decision, stranger).await?;
        }
        let position = WriteOp::SetCursor {
            name: cursor,
            position: id,
        };
        match self
            .parts
            .take(DISCORD, decision, (source, vec![position]))
            .await?
        {
            Taken::Run(run, route) => {
                self.show_typing(account, route.thread_id.unwrap_or(route.to), run);
            }
            Taken::Answered => {}
            Taken::Ignored(why) => {
                tracing::debug!(message = %message.id, why, "discord: message ignored");
            }
        }
        Ok(())
    }

    /// The guild channel a message was written in: known from GUILD_CREATE or THREAD_CREATE,
    /// else asked of the REST API (and remembered). A channel the API will not describe is
    /// taken as a plain text channel.
    async fn channel_info(
        &self,
        account: &Account,
        known: &Known,
        id: &str,
    ) -> CoreResult<ChannelInfo> {
        if let Some(info) = lock(known).get(id).cloned() {
            return Ok(info);
        }
        let info = match account.rest.channel(id).await {
            Ok(info) => info,
            Err(e) if matches!(e.status, 0 | 429 | 500..=599) => {
                return Err(crate::error::CoreError::Unavailable(e.to_string()));
            }
            Err(e) => {
                tracing::warn!(channel = id, error = %e, "discord: cannot describe the channel; taken as a text channel");
                ChannelInfo {
                    id: id.into(),
                    kind: 0,
                    parent_id: None,
                    name: None,
                }
            }
        };
        lock(known).insert(id.into(), info.clone());
        Ok(info)
    }

    /// "typing…" in the channel until the run ends (bounded by the gateway's stop).
    fn show_typing(&self, account: &Arc<Account>, channel: String, run: crate::RunId) {
        let rest = account.rest.clone();
        self.parts.typing_until_done(run, TYPING_EVERY, move || {
            let (rest, channel) = (rest.clone(), channel.clone());
            async move {
                let _ = rest.typing(&channel).await;
            }
        });
    }
}

/// The first payload, HELLO (op 10): the heartbeat interval.
async fn hello(socket: &mut Socket) -> Result<Duration, String> {
    let first = tokio::time::timeout(Duration::from_secs(30), socket.next()).await;
    let Ok(Some(Ok(Frame::Text(text)))) = first else {
        return Err("no HELLO from the Gateway".into());
    };
    let payload: Payload = serde_json::from_str(text.as_str())
        .map_err(|e| format!("a HELLO that is not JSON: {e}"))?;
    match (payload.op, payload.d["heartbeat_interval"].as_u64()) {
        (10, Some(ms)) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(format!(
            "the Gateway opened with op {} instead of HELLO",
            payload.op
        )),
    }
}

/// What a close code asks for: 4004 (authentication failed) and 4010–4014 (shard, version,
/// intents) are fatal; 4007 (bad sequence) and 4009 (session timed out) need a new session;
/// anything else is resumed.
fn closed(code: Option<CloseCode>) -> End {
    match code.map(u16::from) {
        Some(4004) => End::Fatal(
            "the Gateway refused channels.discord.botToken (authentication failed); fix the token and restart".into(),
        ),
        Some(code @ 4010..=4014) => End::Fatal(format!(
            "the Gateway closed the connection with {code} (check the bot's privileged intents: Message Content)"
        )),
        Some(4007 | 4009) => End::Identify,
        _ => End::Resume,
    }
}

/// The channels and threads of a GUILD_CREATE.
fn learn(known: &Known, guild: &Value) {
    let mut known = lock(known);
    for list in ["channels", "threads"] {
        for item in guild[list].as_array().into_iter().flatten() {
            if let Ok(info) = serde_json::from_value::<ChannelInfo>(item.clone()) {
                known.insert(info.id.clone(), info);
            }
        }
    }
}

fn lock(known: &Known) -> std::sync::MutexGuard<'_, HashMap<String, ChannelInfo>> {
    known
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A random wait in `from..from + span` (the first heartbeat's jitter, op 9's wait).
fn jitter(from: Duration, span: Duration) -> Duration {
    let random = uuid::Uuid::new_v4().as_u128() as u64;
    let fraction = (random % 10_000) as f64 / 10_000.0;
    from + span.mul_f64(fraction)
}
