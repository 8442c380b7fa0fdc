//! [`FakeDiscord`]: a fake Discord on `127.0.0.1:0` that speaks the documented wire shapes, so
//! the channel's real client code runs against it with no network beyond loopback.
//!
//! - REST under `/api/v10`: `POST /channels/{id}/messages` (`{"content"}`, at most 2,000
//!   characters), `POST /channels/{id}/typing` (204), `GET /channels/{id}` (the channels the
//!   test described), `POST /users/@me/channels` (a DM channel, `"5" + userId`), `GET /users/@me` (the bot), each checking `Authorization: Bot <token>` (401 otherwise). A message to a user's id (not a channel's) is
//!   404 `Unknown Channel` (10003). A create-message with a `nonce` and `enforce_nonce` an
//!   earlier one had is answered with that message and creates none (Discord's dedup). A queued
//!   failure ([`FakeDiscord::fail_next`]) answers the next create-message with 429 (JSON
//!   `retry_after` and a `Retry-After` header), 403, 400 or 500. Every call is recorded.
//! - The Gateway, a WebSocket at `/gateway` (and `/resume`, READY's `resume_gateway_url`):
//!   HELLO (op 10, `heartbeat_interval`) on connect; IDENTIFY (op 2) → READY (op 0, with
//!   `session_id`, `resume_gateway_url` and the bot `user`), or close 4004 for a wrong token;
//!   heartbeat (op 1) → ACK (op 11); RESUME (op 6) of the current session → the events after
//!   its `seq` replayed, then RESUMED; of another session → INVALID_SESSION (op 9, `false`).
//! - Events are numbered per session (`s`) and kept in its log, so a resume replays exactly what
//!   the client did not confirm. Messages are queued by the test ([`FakeDiscord::dm`],
//!   [`FakeDiscord::guild_message`]); [`FakeDiscord::drop_connection`] cuts the live socket
//!   (no close frame), [`FakeDiscord::reconnect`] sends op 7, [`FakeDiscord::invalidate`] op 9.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use axum::Router;
use axum::extract::ws::{WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::{Value, json};

use crate::fake::{Conversation, FakeServer, Reply};

pub use crate::telegram::FakeFailure;

/// The bot's user id and username (READY's `user`).
pub const BOT_ID: &str = "1100000000000000001";
pub const BOT_USERNAME: &str = "switchboard-test";
/// The guild every guild message is in.
pub const GUILD_ID: &str = "1200000000000000001";

/// One REST call the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscordCall {
    pub method: String,
    pub path: String,
    pub body: Value,
    /// The fake answered it with a queued failure.
    pub refused: bool,
    /// A create-message whose `nonce` (with `enforce_nonce`) an earlier one had: answered with
    /// that message, nothing created.
    pub deduplicated: bool,
}

/// What the Gateway side saw, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum GatewayEvent {
    /// An IDENTIFY (op 2) and its `intents`.
    Identify { intents: u64 },
    /// A RESUME (op 6) of `session_id` from `seq`.
    Resume {
        session_id: String,
        seq: Option<u64>,
    },
    /// A heartbeat (op 1).
    Heartbeat,
}

struct Session {
    id: String,
    /// Every dispatch of the session, by sequence number.
    log: Vec<(u64, Value)>,
}

struct FakeState {
    session: Option<Session>,
    sessions_made: u64,
    /// Dispatches queued while no session exists (sent after the next READY).
    pending: Vec<Value>,
    next_message: u64,
    /// The authors of the messages pushed: ids that are users, not channels.
    users: std::collections::BTreeSet<String>,
    /// The messages the bot created with `enforce_nonce`, by nonce.
    nonces: BTreeMap<String, Value>,
    /// Every message pushed, by id (for [`FakeDiscord::repeat`]).
    messages: BTreeMap<String, Value>,
    channels: BTreeMap<String, Value>,
    calls: Vec<DiscordCall>,
    gateway: Vec<GatewayEvent>,
    failures: VecDeque<FakeFailure>,
    /// Control frames for the live connection (op 7, op 9).
    control: VecDeque<Value>,
    heartbeat_ms: u64,
}

/// The routes' shared part: the bot token and the state; a cut ends the live connection.
type Shared = crate::fake::Shared<String, FakeState>;

/// Appends a dispatch to the session's log (or to the pending ones); answers its `s`.
fn dispatch(shared: &Shared, t: &str, d: Value) -> Option<u64> {
    let seq = {
        let mut state = shared.lock();
        let event = json!({"op": 0, "t": t, "d": d});
        match state.session.as_mut() {
            Some(session) => {
                let seq = session.log.len() as u64 + 1;
                session.log.push((seq, event));
                Some(seq)
            }
            None => {
                state.pending.push(event);
                None
            }
        }
    };
    shared.bump();
    seq
}

/// The fake Discord (see the module doc).
pub struct FakeDiscord {
    server: FakeServer<String, FakeState>,
}

impl FakeDiscord {
    /// Serves a bot whose token is `token` on `127.0.0.1:0`.
    ///
    /// # Panics
    /// If the loopback listener cannot be bound.
    pub async fn start(token: &str) -> FakeDiscord {
        let state = FakeState {
            session: None,
            sessions_made: 0,
            pending: Vec::new(),
            next_message: 1_300_000_000_000_000_000,
            messages: BTreeMap::new(),
            nonces: BTreeMap::new(),
            users: std::collections::BTreeSet::new(),
            channels: BTreeMap::new(),
            calls: Vec::new(),
            gateway: Vec::new(),
            failures: VecDeque::new(),
            control: VecDeque::new(),
            heartbeat_ms: 41_250,
        };
        let server =
            FakeServer::start("FakeDiscord", token.to_string(), state, routes(token)).await;
        FakeDiscord { server }
    }

    /// `http://127.0.0.1:PORT/api/v10`: the channel's `apiBase`.
    pub fn api_base(&self) -> String {
        format!("http://{}/api/v10", self.server.addr)
    }

    /// `ws://127.0.0.1:PORT/gateway`: the channel's `gatewayUrl`.
    pub fn gateway_url(&self) -> String {
        format!("ws://{}/gateway", self.server.addr)
    }

    /// The `heartbeat_interval` HELLO gives to the next connections.
    pub fn set_heartbeat_ms(&self, ms: u64) {
        self.server.lock().heartbeat_ms = ms;
    }

    /// Describes a guild text channel (`GET /channels/{id}`, type 0).
    pub fn text_channel(&self, id: &str, name: &str) {
        let channel = json!({"id": id, "type": 0, "guild_id": GUILD_ID, "name": name});
        self.server.lock().channels.insert(id.into(), channel);
    }

    /// Describes a group DM (type 3, outside any guild).
    pub fn group_dm(&self, id: &str, name: &str) {
        let channel = json!({"id": id, "type": 3, "name": name});
        self.server.lock().channels.insert(id.into(), channel);
    }

    /// A message in group DM `channel`, mentioning the bot. Answers the message id.
    pub fn group_dm_message(
        &self,
        channel: &str,
        from: &str,
        username: &str,
        text: &str,
    ) -> String {
        self.push_message(json!({
            "channel_id": channel, "type": 0, "content": format!("<@{BOT_ID}> {text}"),
            "author": author(from, username), "mentions": [author(BOT_ID, BOT_USERNAME)],
            "timestamp": "2026-11-26T00:00:00.000000+00:00",
        }))
    }

    /// Describes a public thread (type 11) in channel `parent`.
    pub fn thread(&self, id: &str, parent: &str, name: &str) {
        let channel =
            json!({"id": id, "type": 11, "guild_id": GUILD_ID, "parent_id": parent, "name": name});
        self.server.lock().channels.insert(id.into(), channel);
    }

    fn message_id(&self) -> String {
        let mut state = self.server.lock();
        state.next_message += 1;
        state.next_message.to_string()
    }

    /// A MESSAGE_CREATE of `d` (its `id` given); answers the message id.
    pub fn push_message(&self, mut d: Value) -> String {
        let id = self.message_id();
        d["id"] = json!(id);
        {
            let mut state = self.server.lock();
            state.messages.insert(id.clone(), d.clone());
            if let Some(author) = d["author"]["id"].as_str().filter(|a| *a != BOT_ID) {
                state.users.insert(author.to_string());
            }
        }
        dispatch(&self.server, "MESSAGE_CREATE", d);
        id
    }

    /// Dispatches any event `t` with data `d` as it is (a malformed one included).
    pub fn dispatch(&self, t: &str, d: Value) {
        dispatch(&self.server, t, d);
    }

    /// Dispatches the message `id` pushed before once more (as a new event of the current
    /// session), as a client that lost its session may see it again.
    pub fn repeat(&self, id: &str) {
        let message = self.server.lock().messages.get(id).cloned();
        if let Some(d) = message {
            dispatch(&self.server, "MESSAGE_CREATE", d);
        }
    }

    /// A DM from user `from` (its DM channel is `"5" + from`). Answers the message id.
    pub fn dm(&self, from: &str, username: &str, text: &str) -> String {
        self.push_message(json!({
            "channel_id": format!("5{from}"), "type": 0, "content": text,
            "author": author(from, username), "mentions": [], "timestamp": "2026-11-26T00:00:00.000000+00:00",
        }))
    }

    /// A message in guild channel (or thread) `channel`, mentioning the bot (`<@id>` in the
    /// content and in `mentions`) when `mention`. Answers the message id.
    pub fn guild_message(
        &self,
        channel: &str,
        from: &str,
        username: &str,
        text: &str,
        mention: bool,
    ) -> String {
        let (content, mentions) = match mention {
            true => (
                format!("<@{BOT_ID}> {text}"),
                json!([author(BOT_ID, BOT_USERNAME)]),
            ),
            false => (text.to_string(), json!([])),
        };
        self.push_message(json!({
            "channel_id": channel, "guild_id": GUILD_ID, "type": 0, "content": content,
            "author": author(from, username), "mentions": mentions,
            "timestamp": "2026-11-26T00:00:00.000000+00:00",
        }))
    }

    /// A guild message that replies to a message of the bot (no mention). Answers the id.
    pub fn reply_to_bot(&self, channel: &str, from: &str, username: &str, text: &str) -> String {
        let replied = json!({
            "id": "1300000000000000000", "channel_id": channel, "content": "earlier",
            "author": {"id": BOT_ID, "username": BOT_USERNAME, "bot": true}, "mentions": [],
        });
        self.push_message(json!({
            "channel_id": channel, "guild_id": GUILD_ID, "type": 19, "content": text,
            "author": author(from, username), "mentions": [],
            "message_reference": {"message_id": "1300000000000000000", "channel_id": channel},
            "referenced_message": replied,
        }))
    }

    /// A message written by the bot itself (Discord echoes it on the Gateway).
    pub fn own_message(&self, channel: &str, text: &str) -> String {
        self.push_message(json!({
            "channel_id": channel, "guild_id": GUILD_ID, "type": 0, "content": text,
            "author": {"id": BOT_ID, "username": BOT_USERNAME, "bot": true}, "mentions": [],
        }))
    }

    /// Cuts the live Gateway connection without a close frame; the events queued by `then`
    /// (called with the socket already cut) are in the session's log for the resume to replay.
    pub fn drop_connection(&self, then: impl FnOnce(&Self)) {
        self.server.cut();
        then(self);
    }

    /// Sends op 7 (RECONNECT) on the live connection.
    pub fn reconnect(&self) {
        self.server
            .lock()
            .control
            .push_back(json!({"op": 7, "d": null}));
        self.server.bump();
    }

    /// Sends op 9 (INVALID_SESSION) with `d: resumable`; an unresumable one forgets the session.
    pub fn invalidate(&self, resumable: bool) {
        let mut state = self.server.lock();
        if !resumable {
            state.session = None;
        }
        state.control.push_back(json!({"op": 9, "d": resumable}));
        drop(state);
        self.server.bump();
    }

    /// The next create-message fails as `failure` (queued in order).
    pub fn fail_next(&self, failure: FakeFailure) {
        self.server.lock().failures.push_back(failure);
    }

    /// Every REST call received, in order.
    pub fn calls(&self) -> Vec<DiscordCall> {
        self.server.lock().calls.clone()
    }

    /// What the Gateway saw (identifies, resumes, heartbeats), in order.
    pub fn gateway_events(&self) -> Vec<GatewayEvent> {
        self.server.lock().gateway.clone()
    }

    /// The created messages that succeeded, in order: (channel id, content).
    pub fn sent(&self) -> Vec<(String, String)> {
        sent_of(&self.server.lock().calls)
    }

    /// Waits until `check` holds for the REST calls and Gateway events (checked on each change).
    pub async fn wait_for(&self, mut check: impl FnMut(&[DiscordCall], &[GatewayEvent]) -> bool) {
        let server = &self.server;
        server
            .wait(|| {
                let state = server.lock();
                check(&state.calls, &state.gateway)
            })
            .await;
    }

    /// Waits until `n` messages were created; answers them.
    pub async fn wait_sent(&self, n: usize) -> Vec<(String, String)> {
        self.wait_for(|calls, _| sent_of(calls).len() >= n).await;
        self.sent()
    }

    /// Stops the server and every Gateway connection.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// The Gateway's WebSocket routes, and the REST routes behind the bot token's check.
fn routes(token: &str) -> Router<Arc<Shared>> {
    let expected = format!("Bot {token}");
    let authorized = move |request: Request, next: Next| {
        let given = request.headers().get("authorization");
        let granted = given.and_then(|v| v.to_str().ok()) == Some(expected.as_str());
        async move {
            match granted {
                true => next.run(request).await,
                false => error(StatusCode::UNAUTHORIZED, 0, "401: Unauthorized"),
            }
        }
    };
    let rest = Router::new()
        .route("/api/v10/channels/{id}", get(describe))
        .route(
            "/api/v10/channels/{id}/messages",
            post(create_message).get(list_messages),
        )
        .route("/api/v10/channels/{id}/typing", post(typing))
        .route("/api/v10/users/@me/channels", post(open_dm))
        .route("/api/v10/users/@me", get(async || axum::Json(me())))
        .route_layer(middleware::from_fn(authorized));
    Router::new()
        .route("/gateway", any(upgrade))
        .route("/gateway/", any(upgrade))
        .route("/resume", any(upgrade))
        .route("/resume/", any(upgrade))
        .merge(rest)
}

/// `GET /users/@me`: the bot's own user (what `switchboard doctor` asks of the token).
fn me() -> Value {
    json!({"id": BOT_ID, "username": BOT_USERNAME, "discriminator": "0", "bot": true})
}

fn author(id: &str, username: &str) -> Value {
    json!({"id": id, "username": username, "discriminator": "0", "global_name": username})
}

/// The created messages that succeeded among `calls`, in order: (channel id, content).
pub fn sent_of(calls: &[DiscordCall]) -> Vec<(String, String)> {
    calls
        .iter()
        .filter(|c| c.method == "POST" && c.path.ends_with("/messages"))
        .filter(|c| !c.refused && !c.deduplicated)
        .map(|c| {
            let channel = c.path.split('/').nth(2).unwrap_or_default().to_string();
            (
                channel,
                c.body["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn error(status: StatusCode, code: u64, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"code": code, "message": message})),
    )
        .into_response()
}

fn record(shared: &Shared, method: &str, path: String, body: Value, refused: bool) {
    record_call(shared, method, path, body, (refused, false));
}

/// Records a call, refused and/or deduplicated, in one step: a call recorded by another task
/// meanwhile can never be the one marked.
fn record_call(
    shared: &Shared,
    method: &str,
    path: String,
    body: Value,
    (refused, deduplicated): (bool, bool),
) {
    shared.lock().calls.push(DiscordCall {
        method: method.into(),
        path,
        body,
        refused,
        deduplicated,
    });
    shared.bump();
}

async fn describe(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    record(
        &shared,
        "GET",
        format!("/channels/{id}"),
        Value::Null,
        false,
    );
    match shared.lock().channels.get(&id) {
        Some(channel) => axum::Json(channel.clone()).into_response(),
        None => error(StatusCode::NOT_FOUND, 10003, "Unknown Channel"),
    }
}

/// `GET /channels/{id}/messages?after=&limit=`: the first `limit` messages pushed to the channel
/// after the message `after` (50 by default, 100 at most), newest first, as Discord's REST
/// answers them (without `guild_id`).
async fn list_messages(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let path = format!("/channels/{id}/messages");
    record(&shared, "GET", path, json!(query), false);
    let number = |key: &str| query.get(key).and_then(|v| v.parse::<u64>().ok());
    let (after, limit) = (number("after").unwrap_or(0), number("limit").unwrap_or(50));
    let mut found: Vec<(u64, Value)> = shared
        .lock()
        .messages
        .iter()
        .filter_map(|(key, message)| Some((key.parse::<u64>().ok()?, message)))
        .filter(|(n, m)| *n > after && m["channel_id"] == json!(id))
        .map(|(n, m)| {
            let mut m = m.clone();
            m.as_object_mut().map(|o| o.remove("guild_id"));
            (n, m)
        })
        .collect();
    // The oldest `limit` after `after`, answered newest first (as Discord does).
    found.sort_by_key(|(n, _)| *n);
    found.truncate(limit.min(100) as usize);
    let list: Vec<Value> = found.into_iter().rev().map(|(_, m)| m).collect();
    axum::Json(list).into_response()
}

async fn typing(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    record(
        &shared,
        "POST",
        format!("/channels/{id}/typing"),
        Value::Null,
        false,
    );
    StatusCode::NO_CONTENT.into_response()
}

async fn create_message(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let path = format!("/channels/{id}/messages");
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        record(&shared, "POST", path, Value::Null, true);
        return error(
            StatusCode::BAD_REQUEST,
            50109,
            "The request body contains invalid JSON.",
        );
    };
    if shared.lock().users.contains(&id) {
        // A user's id is not a channel's: a DM goes to the channel `open_dm` answers.
        record(&shared, "POST", path, body, true);
        return error(StatusCode::NOT_FOUND, 10003, "Unknown Channel");
    }
    let mut failure = shared.lock().failures.pop_front();
    if let Some(FakeFailure::Slow(wait)) = failure {
        tokio::time::sleep(wait).await;
        failure = None;
    }
    let nonce = body["nonce"]
        .as_str()
        .filter(|_| body["enforce_nonce"] == json!(true));
    let content = body["content"].as_str().unwrap_or_default().to_string();
    let message = json!({
        "id": "1300000000000000999", "channel_id": id, "content": content, "type": 0,
        "author": {"id": BOT_ID, "username": BOT_USERNAME, "bot": true},
    });
    let valid = !content.is_empty() && content.chars().count() <= 2000;
    // The nonce is looked up and taken in one step: a retry that comes while the first create
    // is still being answered (its sender killed meanwhile) is answered with the same message.
    let earlier = match (nonce, &failure) {
        (Some(n), None) => {
            let mut shared = shared.lock();
            let earlier = shared.nonces.get(n).cloned();
            if earlier.is_none() && valid {
                shared.nonces.insert(n.to_string(), message.clone());
            }
            earlier
        }
        _ => None,
    };
    if let Some(earlier) = earlier {
        record_call(&shared, "POST", path, body.clone(), (false, true));
        return axum::Json(earlier).into_response();
    }
    record(&shared, "POST", path, body.clone(), failure.is_some());
    match failure {
        Some(FakeFailure::TooManyRequests { retry_after }) => {
            let body = json!({"message": "You are being rate limited.", "retry_after": retry_after as f64, "global": false});
            let headers = [
                ("retry-after", retry_after.to_string()),
                ("x-ratelimit-scope", "user".into()),
            ];
            return (StatusCode::TOO_MANY_REQUESTS, headers, axum::Json(body)).into_response();
        }
        Some(FakeFailure::Blocked) => return error(StatusCode::FORBIDDEN, 50001, "Missing Access"),
        Some(FakeFailure::BadRequest(message)) => {
            return error(StatusCode::BAD_REQUEST, 50035, &message);
        }
        Some(FakeFailure::Unauthorized) => {
            return error(StatusCode::UNAUTHORIZED, 0, "401: Unauthorized");
        }
        Some(FakeFailure::Server) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                0,
                "500: Internal Server Error",
            );
        }
        Some(FakeFailure::Slow(_)) | None => {}
    }
    if content.is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            50006,
            "Cannot send an empty message",
        );
    }
    if content.chars().count() > 2000 {
        return error(
            StatusCode::BAD_REQUEST,
            50035,
            "Invalid Form Body (content: Must be 2000 or fewer in length.)",
        );
    }
    axum::Json(message).into_response()
}

/// `POST /users/@me/channels {recipient_id}`: the DM channel with a user (`"5" + id`).
async fn open_dm(State(shared): State<Arc<Shared>>, body: axum::body::Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    record(
        &shared,
        "POST",
        "/users/@me/channels".into(),
        body.clone(),
        false,
    );
    let Some(user) = body["recipient_id"]
        .as_str()
        .filter(|u| shared.lock().users.contains(*u))
    else {
        return error(
            StatusCode::BAD_REQUEST,
            50035,
            "Invalid Form Body (recipient_id)",
        );
    };
    let channel =
        json!({"id": format!("5{user}"), "type": 1, "recipients": [author(user, "user")]});
    axum::Json(channel).into_response()
}

async fn upgrade(State(shared): State<Arc<Shared>>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| connection(shared, socket))
}

/// One Gateway connection (see the module doc): HELLO, then the frames due on it and the
/// answers to its payloads.
async fn connection(shared: Arc<Shared>, socket: WebSocket) {
    let (link, interval) = (shared.link(), shared.lock().heartbeat_ms);
    let hello = json!({"op": 10, "d": {"heartbeat_interval": interval}});
    crate::fake::converse(&shared, link, socket, hello, Gateway { live: None }).await;
}

/// One connection's side of the Gateway.
struct Gateway {
    /// The session this connection serves and the last sequence it sent.
    live: Option<(String, u64)>,
}

impl Conversation<String, FakeState> for Gateway {
    /// Control frames, then the session's events not sent yet.
    fn due(&mut self, state: &mut FakeState) -> Vec<Value> {
        let Some((session_id, sent)) = self.live.as_mut() else {
            return Vec::new();
        };
        let mut outgoing: Vec<Value> = state.control.drain(..).collect();
        if let Some(session) = state.session.as_ref().filter(|s| s.id == *session_id) {
            let from = *sent;
            for (seq, event) in session.log.iter().filter(|(seq, _)| *seq > from) {
                let mut event = event.clone();
                event["s"] = json!(seq);
                outgoing.push(event);
                *sent = *seq;
            }
        }
        outgoing
    }

    fn take(&mut self, shared: &Shared, text: &str) -> Reply {
        match serde_json::from_str::<Value>(text) {
            Ok(payload) => answer(shared, &payload, &mut self.live),
            Err(_) => Reply::Close(4002, "Decode error"),
        }
    }
}

/// A client payload: heartbeat, IDENTIFY or RESUME.
fn answer(shared: &Shared, payload: &Value, live: &mut Option<(String, u64)>) -> Reply {
    let d = &payload["d"];
    match payload["op"].as_u64() {
        Some(1) => {
            shared.lock().gateway.push(GatewayEvent::Heartbeat);
            shared.bump();
            Reply::Frames(vec![json!({"op": 11})])
        }
        Some(2) => {
            if d["token"].as_str() != Some(shared.config.as_str()) {
                return Reply::Close(4004, "Authentication failed.");
            }
            let intents = d["intents"].as_u64().unwrap_or(0);
            let mut state = shared.lock();
            state.gateway.push(GatewayEvent::Identify { intents });
            state.sessions_made += 1;
            let id = format!("session-{}", state.sessions_made);
            let ready = json!({"op": 0, "t": "READY", "d": {
                "v": 10, "session_id": id, "resume_gateway_url": format!("ws://{}/resume", shared.addr),
                "user": {"id": BOT_ID, "username": BOT_USERNAME, "bot": true, "discriminator": "0"},
                "guilds": [{"id": GUILD_ID, "unavailable": true}], "application": {"id": BOT_ID, "flags": 0},
            }});
            let mut log = vec![(1, ready)];
            for event in state.pending.drain(..) {
                log.push((log.len() as u64 + 1, event));
            }
            state.session = Some(Session {
                id: id.clone(),
                log,
            });
            *live = Some((id, 0));
            drop(state);
            shared.bump();
            Reply::Frames(Vec::new())
        }
        Some(6) => {
            let session_id = d["session_id"].as_str().unwrap_or_default().to_string();
            let seq = d["seq"].as_u64();
            let mut state = shared.lock();
            state.gateway.push(GatewayEvent::Resume {
                session_id: session_id.clone(),
                seq,
            });
            let known = state.session.as_ref().is_some_and(|s| s.id == session_id);
            if d["token"].as_str() != Some(shared.config.as_str()) {
                return Reply::Close(4004, "Authentication failed.");
            }
            if !known {
                drop(state);
                shared.bump();
                return Reply::Frames(vec![json!({"op": 9, "d": false})]);
            }
            // Replays what follows `seq` (the loop sends it), then RESUMED.
            if let Some(session) = state.session.as_mut() {
                let next = session.log.len() as u64 + 1;
                session
                    .log
                    .push((next, json!({"op": 0, "t": "RESUMED", "d": {}})));
            }
            *live = Some((session_id, seq.unwrap_or(0)));
            drop(state);
            shared.bump();
            Reply::Frames(Vec::new())
        }
        _ => Reply::Close(4001, "Unknown opcode."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every REST route sits behind the one token check: a wrong token is a 401 that records
    /// nothing, the right one gets through.
    #[tokio::test]
    async fn the_rest_routes_take_only_the_bot_token() {
        let fake = FakeDiscord::start("right").await;
        let client = crate::http_client();
        let typing = format!("{}/channels/10/typing", fake.api_base());
        for (token, status) in [("wrong", 401), ("right", 204)] {
            let answer = client
                .post(&typing)
                .header("authorization", format!("Bot {token}"))
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status().as_u16(), status);
        }
        let answer = client.get(format!("{}/channels/10", fake.api_base()));
        assert_eq!(answer.send().await.unwrap().status().as_u16(), 401);
        let paths: Vec<String> = fake.calls().into_iter().map(|c| c.path).collect();
        assert_eq!(paths, ["/channels/10/typing"]);
        fake.stop().await;
    }
}
