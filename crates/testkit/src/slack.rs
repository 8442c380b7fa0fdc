//! [`FakeSlack`]: a fake Slack on `127.0.0.1:0` that speaks the documented Web API and Socket
//! Mode shapes, so the channel's real client code runs against it with no network beyond
//! loopback.
//!
//! - The Web API under `/api`: `auth.test` (the bot token: the bot's user id [`BOT_USER`]),
//!   `apps.connections.open` (the app-level token: a `ws://` URL to this server), and
//!   `chat.postMessage` (`{channel, text, thread_ts?}`, at most 4,000 characters here). A wrong
//!   token is `{"ok": false, "error": "invalid_auth"}` (HTTP 200, as Slack does). A queued
//!   failure ([`FakeSlack::fail_next`]) answers the next `chat.postMessage` with HTTP 429 and
//!   `Retry-After`, `{ok: false, error: "not_in_channel"}`, `{ok: false, error: <code>}`, or a
//!   500. Every call is recorded.
//! - Socket Mode, a WebSocket at `/link`: `hello` on connect, then every envelope not yet
//!   acknowledged (`{"envelope_id"}` from the client) and not yet sent on this connection — so an
//!   envelope left unacknowledged on a connection that went is delivered again on the next one,
//!   with `retry_attempt` counting up, as Slack does. The test pushes events
//!   ([`FakeSlack::dm`], [`FakeSlack::channel_message`], [`FakeSlack::mention`]), can send a
//!   `disconnect` ([`FakeSlack::disconnect`]) or cut the socket ([`FakeSlack::drop_connection`]),
//!   and sees the acknowledgements ([`FakeSlack::acked`]).

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use axum::Router;
use axum::extract::ws::{WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use serde_json::{Value, json};

use crate::fake::{Conversation, FakeServer, Reply};

pub use crate::telegram::FakeFailure;

/// The bot's user id (`auth.test`'s `user_id`): its mentions are `<@U0BOT>`.
pub const BOT_USER: &str = "U0BOT";
/// The bot's id: set on the bot's own messages.
pub const BOT_ID: &str = "B0BOT";
/// Slack's limit in this fake for one message's `text`.
const LIMIT: usize = 4000;

/// One Web API call the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct SlackCall {
    pub method: String,
    pub body: Value,
    /// The fake answered it with an error (a queued failure, a wrong token, a long text).
    pub refused: bool,
}

/// A message `chat.postMessage` took.
#[derive(Debug, Clone, PartialEq)]
pub struct Posted {
    pub channel: String,
    pub text: String,
    pub thread_ts: Option<String>,
}

/// One envelope and its fate.
struct Envelope {
    id: String,
    event: Value,
    /// The connections it was sent on.
    sent_on: BTreeSet<u64>,
    acked: bool,
}

struct FakeState {
    envelopes: Vec<Envelope>,
    /// Envelope ids acknowledged, in order (a second ack of one is listed again).
    acks: Vec<String>,
    calls: Vec<SlackCall>,
    failures: VecDeque<FakeFailure>,
    /// Connections opened by `apps.connections.open` (the live one is the last).
    connections: u64,
    /// Frames for the live connection (`disconnect`).
    control: VecDeque<Value>,
    next_ts: u64,
    /// Acknowledgements are lost on the way (recorded, not honoured).
    lose_acks: bool,
}

/// The app's tokens.
struct Tokens {
    bot: String,
    app: String,
}

/// The routes' shared part: the tokens and the state; a cut ends the live connection.
type Shared = crate::fake::Shared<Tokens, FakeState>;

/// The fake Slack (see the module doc).
pub struct FakeSlack {
    server: FakeServer<Tokens, FakeState>,
}

impl FakeSlack {
    /// Serves an app whose bot token is `bot_token` and app-level token `app_token`.
    ///
    /// # Panics
    /// If the loopback listener cannot be bound.
    pub async fn start(bot_token: &str, app_token: &str) -> FakeSlack {
        let tokens = Tokens {
            bot: bot_token.to_string(),
            app: app_token.to_string(),
        };
        let state = FakeState {
            envelopes: Vec::new(),
            acks: Vec::new(),
            calls: Vec::new(),
            failures: VecDeque::new(),
            connections: 0,
            control: VecDeque::new(),
            next_ts: 1_764_000_000_000_100,
            lose_acks: false,
        };
        let routes = Router::new()
            .route("/link", any(upgrade))
            .route("/api/{method}", post(method));
        let server = FakeServer::start("FakeSlack", tokens, state, routes).await;
        FakeSlack { server }
    }

    /// `http://127.0.0.1:PORT/api`: the channel's `apiBase`.
    pub fn api_base(&self) -> String {
        format!("http://{}/api", self.server.addr)
    }

    /// A new message `ts` (`1764000000.000101`, growing).
    fn ts(&self) -> String {
        let mut state = self.server.lock();
        state.next_ts += 1;
        let n = state.next_ts;
        format!("{}.{:06}", n / 1_000_000, n % 1_000_000)
    }

    /// Queues an `events_api` envelope of `event` as it is (a malformed one included).
    pub fn push_event(&self, event: Value) {
        let mut state = self.server.lock();
        let id = format!("env-{}", state.envelopes.len() + 1);
        state.envelopes.push(Envelope {
            id,
            event,
            sent_on: BTreeSet::new(),
            acked: false,
        });
        drop(state);
        self.server.bump();
    }

    /// A `message` event of `fields` with a new `ts` (and `type`, `ts`, `event_ts` filled in);
    /// answers the `ts`.
    pub fn message(&self, mut fields: Value) -> String {
        let ts = self.ts();
        fields["type"] = json!("message");
        fields["ts"] = json!(ts);
        fields["event_ts"] = json!(ts);
        self.push_event(fields);
        ts
    }

    /// A DM from user `from` (its conversation is `"D" + from`). Answers the `ts`.
    pub fn dm(&self, from: &str, text: &str) -> String {
        self.message(json!({
            "channel": format!("D{from}"), "channel_type": "im", "user": from, "text": text,
        }))
    }

    /// A message in channel `channel` (in the thread of `thread_ts`, when given), with the bot's
    /// mention in front when `mention` — as a `message` event only. Answers the `ts`.
    pub fn channel_message(
        &self,
        (channel, thread_ts): (&str, Option<&str>),
        from: &str,
        text: &str,
        mention: bool,
    ) -> String {
        let text = match mention {
            true => format!("<@{BOT_USER}> {text}"),
            false => text.to_string(),
        };
        let mut event =
            json!({"channel": channel, "channel_type": "channel", "user": from, "text": text});
        if let Some(thread) = thread_ts {
            event["thread_ts"] = json!(thread);
        }
        self.message(event)
    }

    /// A message in `channel` that mentions the bot, delivered as Slack does: a `message` event
    /// and an `app_mention` event of the same `ts`. Answers the `ts`.
    pub fn mention(&self, channel: &str, from: &str, text: &str) -> String {
        let ts = self.channel_message((channel, None), from, text, true);
        self.push_event(json!({
            "type": "app_mention", "channel": channel, "user": from,
            "text": format!("<@{BOT_USER}> {text}"), "ts": ts, "event_ts": ts,
        }));
        ts
    }

    /// A message the bot itself wrote (Slack sends those too).
    pub fn own_message(&self, channel: &str, text: &str) -> String {
        self.message(json!({
            "channel": channel, "channel_type": "channel", "user": BOT_USER, "bot_id": BOT_ID,
            "subtype": "bot_message", "text": text,
        }))
    }

    /// The event of the message `ts` once more, in a new envelope (as Slack retries an event
    /// it thinks was not received).
    pub fn redeliver(&self, ts: &str) {
        let event = {
            let state = self.server.lock();
            let found = state.envelopes.iter().find(|e| e.event["ts"] == json!(ts));
            found.map(|e| e.event.clone())
        };
        if let Some(event) = event {
            self.push_event(event);
        }
    }

    /// Slack gives up on the envelopes not acknowledged (its retries run out after about an
    /// hour): they are never sent again; the messages stay in `conversations.history`.
    pub fn give_up_unacknowledged(&self) {
        for envelope in self.server.lock().envelopes.iter_mut() {
            envelope.acked = true;
        }
    }

    /// Sends `{"type": "disconnect", "reason": reason}` on the live connection.
    pub fn disconnect(&self, reason: &str) {
        let frame = json!({"type": "disconnect", "reason": reason,
            "debug_info": {"host": "applink-fake"}});
        self.server.lock().control.push_back(frame);
        self.server.bump();
    }

    /// Cuts the live connection without a close frame; events queued by `then` (called with
    /// the socket already cut) wait for the next connection.
    pub fn drop_connection(&self, then: impl FnOnce(&Self)) {
        self.server.cut();
        then(self);
    }

    /// While `lose`, acknowledgements are lost on the way: the envelopes stay unacknowledged,
    /// and the next connection gets them again.
    pub fn lose_acks(&self, lose: bool) {
        self.server.lock().lose_acks = lose;
    }

    /// The next `chat.postMessage` fails as `failure` (queued in order): `Blocked` is
    /// `not_in_channel`, `BadRequest(code)` is that error code.
    pub fn fail_next(&self, failure: FakeFailure) {
        self.server.lock().failures.push_back(failure);
    }

    /// Every Web API call received, in order.
    pub fn calls(&self) -> Vec<SlackCall> {
        self.server.lock().calls.clone()
    }

    /// Each `chat.postMessage` attempt, in order: whether it was refused.
    pub fn post_attempts(&self) -> Vec<bool> {
        let calls = self.server.lock().calls.clone();
        let posts = calls.iter().filter(|c| c.method == "chat.postMessage");
        posts.map(|c| c.refused).collect()
    }

    /// The envelope ids acknowledged, in order.
    pub fn acked(&self) -> Vec<String> {
        self.server.lock().acks.clone()
    }

    /// How many envelopes were pushed, and how many of them are acknowledged.
    pub fn envelopes(&self) -> (usize, usize) {
        let state = self.server.lock();
        let acked = state.envelopes.iter().filter(|e| e.acked).count();
        (state.envelopes.len(), acked)
    }

    /// The Socket Mode connections opened so far.
    pub fn connections(&self) -> u64 {
        self.server.lock().connections
    }

    /// The messages posted, in order.
    pub fn sent(&self) -> Vec<Posted> {
        posted_of(&self.server.lock().calls)
    }

    /// Waits until `check` holds for the fake (checked on each change).
    pub async fn wait_for(&self, mut check: impl FnMut(&FakeSlack) -> bool) {
        self.server.wait(|| check(self)).await;
    }

    /// Waits until `n` messages were posted; answers them.
    pub async fn wait_sent(&self, n: usize) -> Vec<Posted> {
        self.wait_for(|fake| fake.sent().len() >= n).await;
        self.sent()
    }

    /// Stops the server and every connection.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// The messages posted among `calls`, in order.
pub fn posted_of(calls: &[SlackCall]) -> Vec<Posted> {
    calls
        .iter()
        .filter(|c| c.method == "chat.postMessage" && !c.refused)
        .map(|c| Posted {
            channel: c.body["channel"].as_str().unwrap_or_default().to_string(),
            text: c.body["text"].as_str().unwrap_or_default().to_string(),
            thread_ts: c.body["thread_ts"].as_str().map(str::to_string),
        })
        .collect()
}

fn answer(body: Value) -> Response {
    axum::Json(body).into_response()
}

fn slack_error(code: &str) -> Response {
    answer(json!({"ok": false, "error": code}))
}

/// `POST /api/{method}`: the bearer token checked against the one the method takes.
async fn method(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    // JSON, or a form (a read method's arguments).
    let body: Value = serde_json::from_slice(&body).unwrap_or_else(|_| form(&body));
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_string();
    let wanted = match name.as_str() {
        "apps.connections.open" => &shared.config.app,
        _ => &shared.config.bot,
    };
    let authorized = token == *wanted;
    let (response, refused) = match (name.as_str(), authorized) {
        (_, false) => (slack_error("invalid_auth"), true),
        ("auth.test", true) => (
            answer(
                json!({"ok": true, "url": "https://fake.example/", "team": "Fake",
                "user": "switchboard", "team_id": "T0FAKE", "user_id": BOT_USER, "bot_id": BOT_ID}),
            ),
            false,
        ),
        ("apps.connections.open", true) => {
            let mut state = shared.lock();
            state.connections += 1;
            let url = format!("ws://{}/link?ticket={}", shared.addr, state.connections);
            (answer(json!({"ok": true, "url": url})), false)
        }
        ("chat.postMessage", true) => post_message(&shared, &body).await,
        ("conversations.history", true) => (history(&shared, &body), false),
        _ => (slack_error("unknown_method"), true),
    };
    shared.lock().calls.push(SlackCall {
        method: name,
        body,
        refused,
    });
    shared.bump();
    response
}

/// A form body (`a=1&b=2`) as a JSON object of strings.
fn form(body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    let pairs = text.split('&').filter_map(|pair| pair.split_once('='));
    Value::Object(pairs.map(|(k, v)| (k.to_string(), json!(v))).collect())
}

/// `conversations.history {channel, oldest, limit}`: the messages pushed to the conversation
/// after `oldest`, the first `limit` of them (100 by default), newest first, as Slack answers
/// (without `channel`).
fn history(shared: &Shared, body: &Value) -> Response {
    let channel = body["channel"].as_str().unwrap_or_default();
    let oldest = body["oldest"].as_str().unwrap_or("0");
    let number = |ts: &str| ts.replace('.', "").parse::<u128>().unwrap_or(0);
    let limit = body["limit"]
        .as_str()
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(100);
    let mut found: Vec<Value> = shared
        .lock()
        .envelopes
        .iter()
        .map(|e| &e.event)
        .filter(|e| e["type"] == "message" && e["channel"] == channel)
        .filter(|e| number(e["ts"].as_str().unwrap_or("0")) > number(oldest))
        .map(|e| {
            let mut message = e.clone();
            message.as_object_mut().map(|m| m.remove("channel"));
            message
        })
        .collect();
    found.sort_by_key(|m| number(m["ts"].as_str().unwrap_or("0")));
    found.dedup_by(|a, b| a["ts"] == b["ts"]);
    found.truncate(limit);
    found.reverse();
    answer(json!({"ok": true, "messages": found, "has_more": false}))
}

/// `chat.postMessage`: a queued failure, or the message taken.
async fn post_message(shared: &Shared, body: &Value) -> (Response, bool) {
    let failure = shared.lock().failures.pop_front();
    match failure {
        Some(FakeFailure::Slow(wait)) => tokio::time::sleep(wait).await,
        Some(FakeFailure::TooManyRequests { retry_after }) => {
            let headers = [("retry-after", retry_after.to_string())];
            let body = json!({"ok": false, "error": "ratelimited"});
            return (
                (StatusCode::TOO_MANY_REQUESTS, headers, axum::Json(body)).into_response(),
                true,
            );
        }
        Some(FakeFailure::Blocked) => return (slack_error("not_in_channel"), true),
        Some(FakeFailure::BadRequest(code)) => return (slack_error(&code), true),
        Some(FakeFailure::Server) => {
            return (StatusCode::INTERNAL_SERVER_ERROR.into_response(), true);
        }
        Some(FakeFailure::Unauthorized) => return (slack_error("invalid_auth"), true),
        None => {}
    }
    let text = body["text"].as_str().unwrap_or_default();
    match body["channel"].as_str() {
        None | Some("") => (slack_error("channel_not_found"), true),
        Some(_) if text.is_empty() => (slack_error("no_text"), true),
        Some(_) if text.chars().count() > LIMIT => (slack_error("msg_too_long"), true),
        Some(channel) => {
            let ts = format!("1764000000.{:06}", shared.lock().calls.len());
            let answer = json!({"ok": true, "channel": channel, "ts": ts,
                "message": {"type": "message", "text": text, "user": BOT_USER, "bot_id": BOT_ID, "ts": ts}});
            (axum::Json(answer).into_response(), false)
        }
    }
}

async fn upgrade(State(shared): State<Arc<Shared>>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| connection(shared, socket))
}

/// One Socket Mode connection (see the module doc): `hello`, then the frames due on it, and
/// the acknowledgements it sends.
async fn connection(shared: Arc<Shared>, socket: WebSocket) {
    let (link, me) = (shared.link(), shared.lock().connections);
    let hello = json!({"type": "hello", "num_connections": 1,
        "connection_info": {"app_id": "A0FAKE"}, "debug_info": {"host": "applink-fake"}});
    crate::fake::converse(&shared, link, socket, hello, SocketMode { me }).await;
}

/// Connection `me`'s side of Socket Mode.
struct SocketMode {
    me: u64,
}

impl Conversation<Tokens, FakeState> for SocketMode {
    /// Control frames, then every envelope not acknowledged and not sent on this connection yet
    /// (counting a redelivery's attempt).
    fn due(&mut self, state: &mut FakeState) -> Vec<Value> {
        let mut out: Vec<Value> = state.control.drain(..).collect();
        for envelope in state.envelopes.iter_mut().filter(|e| !e.acked) {
            if envelope.sent_on.insert(self.me) {
                let attempt = envelope.sent_on.len() - 1;
                out.push(json!({
                    "envelope_id": envelope.id, "type": "events_api", "accepts_response_payload": false,
                    "retry_attempt": attempt, "retry_reason": if attempt > 0 { "timeout" } else { "" },
                    "payload": {"token": "verification", "team_id": "T0FAKE", "api_app_id": "A0FAKE",
                        "type": "event_callback", "event_id": format!("Ev{}", envelope.id),
                        "event_time": 1_764_000_000, "event": envelope.event},
                }));
            }
        }
        out
    }

    /// An acknowledgement (`{"envelope_id"}`): recorded, and honoured unless acks are lost.
    fn take(&mut self, shared: &Shared, text: &str) -> Reply {
        let ack: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        if let Some(id) = ack["envelope_id"].as_str() {
            let mut state = shared.lock();
            state.acks.push(id.to_string());
            let honoured = !state.lose_acks;
            let found = state.envelopes.iter_mut().find(|e| e.id == id);
            if let Some(envelope) = found.filter(|_| honoured) {
                envelope.acked = true;
            }
            drop(state);
            shared.bump();
        }
        Reply::Frames(Vec::new())
    }
}
