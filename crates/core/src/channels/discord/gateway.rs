//! The Discord channel's inbound link: each session is one WebSocket connection to the
//! Gateway — HELLO, IDENTIFY or RESUME, then heartbeats and dispatches until it ends — and each
//! MESSAGE_CREATE is handed on: a run (committed with the channel's cursor), an owner command,
//! a pairing code, or nothing. See the module doc of `discord` for the session's life.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::api::{ChannelInfo, Message, Payload, Ready, User};
use super::route::{self, Place};
use super::{DISCORD, Discord};
use crate::channel::LinkState;
use crate::channels::kit::http::{Socket, connect};
use crate::channels::kit::link::{CONNECTED, Linked};
use crate::channels::kit::{Again, BotDoor, Failure, Link};
use crate::error::{CoreError, CoreResult};
use crate::store::WriteOp;

/// The channel type of a DM.
const DM: u8 = 1;
/// The channel type of a group DM.
const GROUP_DM: u8 = 3;
/// Chats a new session looks back into for messages sent while the bot was away (the most
/// recently active), and messages fetched per chat.
const BACKFILL_CHATS: usize = 50;
const BACKFILL_MESSAGES: u8 = 100;
/// GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT.
pub(super) const INTENTS: u64 = (1 << 0) | (1 << 9) | (1 << 12) | (1 << 15);

/// One bot's Gateway link: its session (to resume) and what it knows of the guild channels.
pub(crate) struct Gateway {
    door: BotDoor<Discord>,
    session: Option<Session>,
    /// The bot's guild channels (threads and their parents, names), by id.
    known: HashMap<String, ChannelInfo>,
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
    /// It never got going (no HELLO), or a message could not be handled: resume after a wait
    /// (the resume replays what was not handled).
    Failed(String),
    /// Refused, and why (a refused token, intents not allowed): tried again seldom.
    Fatal(String),
}

impl Linked for Discord {
    type Link = Gateway;

    fn link(door: BotDoor<Self>) -> Gateway {
        Gateway {
            door,
            session: None,
            known: HashMap::new(),
        }
    }
}

impl Link for Gateway {
    /// Discord says who the bot is in each session's READY.
    type Me = ();

    async fn sign_in(&mut self) -> Result<(), Failure> {
        Ok(())
    }

    /// One connection, resuming the session when there is one.
    async fn session(&mut self, _: &()) -> Result<Again, Failure> {
        let base = match &self.session {
            Some(session) => session.resume_url.as_str(),
            None => self
                .door
                .settings()
                .gateway_url
                .as_deref()
                .unwrap_or_default(),
        };
        let url = format!("{}/?v=10&encoding=json", base.trim_end_matches('/'));
        let socket = connect(&url).await;
        let socket =
            socket.map_err(|e| Failure::Retry(format!("cannot reach the Gateway: {e}")))?;
        let end = self.connection(socket).await;
        self.door.bot.link.set(LinkState::Starting);
        match end {
            End::Resume => {
                tracing::info!(
                    account = self.door.account(),
                    "discord: connection ended; resuming"
                );
                Ok(Again::Now)
            }
            End::Identify => {
                tracing::info!(
                    account = self.door.account(),
                    "discord: session invalid; identifying anew"
                );
                self.session = None;
                // Discord asks for a wait of 1–5 s before identifying again.
                Ok(Again::After(jitter(
                    Duration::from_secs(1),
                    Duration::from_secs(4),
                )))
            }
            End::Failed(why) => Err(Failure::Retry(format!("discord: {why}"))),
            End::Fatal(why) => Err(Failure::Fatal(why)),
        }
    }
}

impl Gateway {
    /// One WebSocket connection: HELLO, IDENTIFY or RESUME, then heartbeats and dispatches until
    /// it ends.
    async fn connection(&mut self, mut socket: Socket) -> End {
        let interval = match hello(&mut socket).await {
            Ok(interval) => interval,
            Err(why) => return End::Failed(why),
        };
        let token = self.door.api().token();
        let opening = match &self.session {
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
                        tracing::warn!(account = self.door.account(), "discord: heartbeat not acknowledged; reconnecting");
                        let _ = socket.close(None).await;
                        return End::Resume;
                    }
                    if socket.send(self.beat()).await.is_err() {
                        return End::Resume;
                    }
                    acked = false;
                    next_beat = Instant::now() + interval;
                    continue;
                }
            };
            let text = match frame {
                Some(Ok(Frame::Text(text))) => text,
                Some(Ok(Frame::Close(close))) => return closed(&self.door, close.map(|c| c.code)),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return End::Resume,
            };
            let payload: Payload = match serde_json::from_str(text.as_str()) {
                Ok(payload) => payload,
                Err(e) => {
                    tracing::warn!(account = self.door.account(), error = %e, "discord: a Gateway payload that is not JSON; skipped");
                    continue;
                }
            };
            let end = match payload.op {
                0 => self.dispatch(payload).await.err(),
                1 => socket.send(self.beat()).await.err().map(|_| End::Resume),
                7 => Some(End::Resume),
                9 => Some(match (payload.d.as_bool(), self.session.is_some()) {
                    (Some(true), true) => End::Resume,
                    _ => End::Identify,
                }),
                11 => {
                    acked = true;
                    None
                }
                _ => None,
            };
            if let Some(end) = end {
                let _ = socket.close(None).await;
                return end;
            }
        }
    }

    /// A heartbeat with the last sequence handled.
    fn beat(&self) -> Frame {
        let seq = self.session.as_ref().and_then(|s| s.seq);
        Frame::text(json!({"op": 1, "d": seq}).to_string())
    }

    /// One dispatch (op 0). The sequence moves past it only once it is handled: an error ends
    /// the connection, and the resume replays it.
    async fn dispatch(&mut self, payload: Payload) -> Result<(), End> {
        match payload.t.as_deref() {
            Some("READY") => {
                self.ready(payload.d)?;
                self.backfill().await;
            }
            Some("RESUMED") => self.door.up(CONNECTED),
            Some("GUILD_CREATE") => self.learn(&payload.d),
            Some("THREAD_CREATE" | "CHANNEL_CREATE" | "THREAD_UPDATE" | "CHANNEL_UPDATE") => {
                if let Ok(info) = serde_json::from_value::<ChannelInfo>(payload.d.clone()) {
                    self.known.insert(info.id.clone(), info);
                }
            }
            Some("MESSAGE_CREATE") => self.message_created(payload.d).await?,
            _ => {}
        }
        if let (Some(s), Some(seq)) = (self.session.as_mut(), payload.s) {
            s.seq = Some(s.seq.map_or(seq, |old| old.max(seq)));
        }
        Ok(())
    }

    /// READY: the new session, and who the bot is.
    fn ready(&mut self, d: Value) -> Result<(), End> {
        let ready = serde_json::from_value::<Ready>(d).map_err(|e| {
            tracing::warn!(account = self.door.account(), error = %e, "discord: a READY without its session");
            End::Identify
        })?;
        tracing::info!(account = self.door.account(), bot = %ready.user.username, "discord: connected");
        self.door.up(CONNECTED);
        self.door.own(&ready.user.id);
        self.session = Some(Session {
            id: ready.session_id,
            resume_url: ready.resume_gateway_url,
            seq: None,
            me: ready.user,
        });
        Ok(())
    }

    /// A MESSAGE_CREATE: handled, or (when that failed) the connection ended to resume and see
    /// it again after a wait.
    async fn message_created(&mut self, d: Value) -> Result<(), End> {
        let Some(me) = self.session.as_ref().map(|s| s.me.clone()) else {
            return Ok(());
        };
        match serde_json::from_value::<Message>(d) {
            Ok(message) => {
                // Outside a guild: a DM, or a group DM.
                let private = message.guild_id.is_none();
                self.message(&me, message, private).await.map_err(|e| {
                    End::Failed(format!(
                        "a message could not be handled ({e}); resuming to see it again"
                    ))
                })
            }
            Err(e) => {
                tracing::warn!(account = self.door.account(), error = %e, "discord: a MESSAGE_CREATE of an unexpected shape; skipped");
                Ok(())
            }
        }
    }

    /// One message: skipped when handled before, else handed on with the channel's cursor.
    /// `private`: written outside a guild.
    async fn message(&mut self, me: &User, message: Message, private: bool) -> CoreResult<()> {
        let id: i64 = message.id.parse().unwrap_or(0);
        let cursor = format!("{DISCORD}:{}:{}", self.door.account(), message.channel_id);
        let done = self.door.chat.store.cursor(&cursor).await?;
        if done.is_some_and(|done| id <= done) {
            tracing::debug!(message = %message.id, "discord: a message handled before; skipped");
            return Ok(());
        }
        // Outside a guild: a DM, or a group DM (type 3), which is a group like a guild channel.
        let info = self.channel_info(&message.channel_id, private).await?;
        let place = match (private, info.kind) {
            (true, GROUP_DM) => Place::GroupDm(info),
            (true, _) => Place::Direct,
            (false, _) => Place::Guild(info),
        };
        let source = self.door.bot.source(&message.id);
        let view = route::view(me, (&message, &place));
        let position = WriteOp::SetCursor {
            name: cursor,
            position: id,
        };
        self.door.receive(view, source, vec![position]).await?;
        Ok(())
    }

    /// After a new session (SPEC §9.2): the messages sent while the bot was away (its process
    /// stopped, its session lost) to the chats it knows — those with a cursor, the
    /// [`BACKFILL_CHATS`] most recently active — fetched over REST after each chat's cursor and
    /// handled in order, like live ones; one handled before is skipped by its cursor, so none is
    /// answered twice. A chat that cannot be read is logged and left: live messages go on.
    async fn backfill(&mut self) {
        let Some(me) = self.session.as_ref().map(|s| s.me.clone()) else {
            return;
        };
        // Snowflakes grow with time: the highest cursors are the chats active last.
        for (channel, after) in self.door.known_chats(BACKFILL_CHATS).await {
            if let Err(e) = self.look_back(&me, &channel, after).await {
                tracing::warn!(account = self.door.account(), channel, error = %e, "discord: cannot fetch the messages sent while away");
            }
        }
    }

    /// The messages of `channel` after `after`, handled in order.
    async fn look_back(&mut self, me: &User, channel: &str, after: i64) -> CoreResult<()> {
        let api = self.door.api().clone();
        let missed = api.messages_after(channel, after, BACKFILL_MESSAGES).await;
        let missed = missed.map_err(|e| CoreError::Unavailable(e.to_string()))?;
        if missed.is_empty() {
            return Ok(());
        }
        tracing::info!(
            account = self.door.account(),
            channel,
            count = missed.len(),
            "discord: messages sent while away"
        );
        // A message read over REST does not name its guild: its channel says whether it is one.
        let info = self.channel_info(channel, true).await?;
        let private = matches!(info.kind, DM | GROUP_DM);
        for message in missed {
            self.message(me, message, private).await?;
        }
        Ok(())
    }

    /// The channel a message was written in: known from GUILD_CREATE or THREAD_CREATE, else
    /// asked of the REST API (and remembered). A channel the API will not describe is taken as
    /// a plain text channel, or (`private`: outside a guild) as a DM.
    async fn channel_info(&mut self, id: &str, private: bool) -> CoreResult<ChannelInfo> {
        if let Some(info) = self.known.get(id) {
            return Ok(info.clone());
        }
        let info = match self.door.api().channel(id).await {
            Ok(info) => info,
            Err(e) if matches!(e.status, 0 | 429 | 500..=599) => {
                return Err(CoreError::Unavailable(e.to_string()));
            }
            Err(e) => {
                tracing::debug!(channel = id, error = %e, "discord: cannot describe the channel; taken as a text channel or a DM");
                ChannelInfo {
                    id: id.into(),
                    kind: if private { DM } else { 0 },
                    parent_id: None,
                    name: None,
                }
            }
        };
        self.known.insert(id.into(), info.clone());
        Ok(info)
    }

    /// The channels and threads of a GUILD_CREATE.
    fn learn(&mut self, guild: &Value) {
        for list in ["channels", "threads"] {
            for item in guild[list].as_array().into_iter().flatten() {
                if let Ok(info) = serde_json::from_value::<ChannelInfo>(item.clone()) {
                    self.known.insert(info.id.clone(), info);
                }
            }
        }
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
fn closed(door: &BotDoor<Discord>, code: Option<CloseCode>) -> End {
    match code.map(u16::from) {
        Some(4004) => End::Fatal(door.bot.refusal(
            "the Gateway",
            "botToken",
            &"4004, authentication failed",
        )),
        Some(code @ 4010..=4014) => End::Fatal(format!(
            "the Gateway closed the connection with {code} (check the bot's privileged intents: Message Content)"
        )),
        Some(4007 | 4009) => End::Identify,
        _ => End::Resume,
    }
}

/// A random wait in `from..from + span` (the first heartbeat's jitter, op 9's wait).
fn jitter(from: Duration, span: Duration) -> Duration {
    let random = uuid::Uuid::new_v4().as_u128() as u64;
    let fraction = (random % 10_000) as f64 / 10_000.0;
    from + span.mul_f64(fraction)
}
