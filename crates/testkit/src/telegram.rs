//! [`FakeTelegram`]: a fake Telegram Bot API on `127.0.0.1:0` that speaks the real HTTP shapes
//! (`POST /bot<token>/<method>` with a JSON body, answers `{"ok": true, "result": …}` or
//! `{"ok": false, "error_code", "description", "parameters"?}`), so a channel's real client code
//! runs against it with no network beyond loopback.
//!
//! - Updates are queued by the test ([`FakeTelegram::private_message`], [`FakeTelegram::group_message`],
//!   [`FakeTelegram::push_update`]) and numbered; `getUpdates {offset, timeout}` confirms (drops)
//!   every update below `offset`, answers the rest, and holds an empty answer up to `timeout`
//!   seconds (long polling) until an update arrives or the fake stops.
//! - `sendMessage`, `sendChatAction` and `getMe` answer as Telegram does; every call is recorded
//!   ([`FakeTelegram::calls`], [`FakeTelegram::sent`]).
//! - A queued failure ([`FakeTelegram::fail_next`]) answers the next call of a method with 429
//!   (`parameters.retry_after`), 403 (blocked), 400 or 500.
//! - A wrong token is 401 `Unauthorized`, an unknown method 404, as the real API answers.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::fake::FakeServer;

/// The bot's user id and username (`getMe`).
pub const BOT_ID: i64 = 7_000_000_001;
pub const BOT_USERNAME: &str = "switchboard_test_bot";

/// A failure the next call of a method answers.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeFailure {
    /// 429 `Too Many Requests: retry after N` with `parameters.retry_after`.
    TooManyRequests { retry_after: u64 },
    /// 403 `Forbidden: bot was blocked by the user`.
    Blocked,
    /// 400 with this description (e.g. `Bad Request: can't parse entities`).
    BadRequest(String),
    /// 500 `Internal Server Error`.
    Server,
    /// 401 `Unauthorized`: the token refused (a token revoked, then issued again).
    Unauthorized,
    /// Taken after this long: the call is recorded, and answered as usual, once it has passed
    /// (a platform slow to take one message).
    Slow(Duration),
}

/// One call the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct TelegramCall {
    pub method: String,
    pub body: Value,
}

struct FakeState {
    /// Updates not yet confirmed by an offset past them.
    updates: VecDeque<Value>,
    next_update_id: i64,
    next_message_id: i64,
    calls: Vec<TelegramCall>,
    /// A method, how many of its calls still succeed first, and the failure.
    failures: VecDeque<(String, usize, FakeFailure)>,
}

/// The routes' shared part: the token, and the state (changed on every queued update and every
/// call; long polls and waiters watch it).
type Shared = crate::fake::Shared<String, FakeState>;

/// The fake Bot API server (see the module doc).
pub struct FakeTelegram {
    server: FakeServer<String, FakeState>,
}

impl FakeTelegram {
    /// Serves a bot whose token is `token` on `127.0.0.1:0`.
    ///
    /// # Panics
    /// If the loopback listener cannot be bound.
    pub async fn start(token: &str) -> FakeTelegram {
        let state = FakeState {
            updates: VecDeque::new(),
            next_update_id: 100_001,
            next_message_id: 1,
            calls: Vec::new(),
            failures: VecDeque::new(),
        };
        let routes = Router::new().route("/{bot}/{method}", post(route));
        let server = FakeServer::start("FakeTelegram", token.to_string(), state, routes).await;
        FakeTelegram { server }
    }

    /// `http://127.0.0.1:PORT`: the channel's `apiBase`.
    pub fn api_base(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// Queues an update; `update` gets its `update_id`. Answers the id.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut state = self.server.lock();
            let id = state.next_update_id;
            state.next_update_id += 1;
            update["update_id"] = json!(id);
            state.updates.push_back(update);
            id
        };
        self.server.bump();
        id
    }

    /// A private message from user `from` (chat id = user id). Answers the update id.
    pub fn private_message(&self, from: i64, username: &str, text: &str) -> i64 {
        let chat =
            json!({"id": from, "type": "private", "first_name": username, "username": username});
        self.message(chat, from, username, text, None, None)
    }

    /// A message in group `chat_id` ("supergroup", titled `title`), in forum topic `thread` when
    /// given, replying to the bot's message when `reply_to_bot`. Answers the update id.
    pub fn group_message(
        &self,
        chat_id: i64,
        title: &str,
        from: i64,
        username: &str,
        text: &str,
        thread: Option<i64>,
    ) -> i64 {
        let mut chat = json!({"id": chat_id, "type": "supergroup", "title": title});
        if thread.is_some() {
            chat["is_forum"] = json!(true);
        }
        self.message(chat, from, username, text, thread, None)
    }

    /// A group message that replies to a message of the bot.
    pub fn group_reply_to_bot(
        &self,
        chat_id: i64,
        title: &str,
        from: i64,
        username: &str,
        text: &str,
    ) -> i64 {
        let chat = json!({"id": chat_id, "type": "supergroup", "title": title});
        let replied = json!({
            "message_id": 1, "date": 0, "chat": chat.clone(), "text": "earlier",
            "from": {"id": BOT_ID, "is_bot": true, "first_name": "bot", "username": BOT_USERNAME},
        });
        self.message(chat, from, username, text, None, Some(replied))
    }

    fn message(
        &self,
        chat: Value,
        from: i64,
        username: &str,
        text: &str,
        thread: Option<i64>,
        reply_to: Option<Value>,
    ) -> i64 {
        let message_id = {
            let mut state = self.server.lock();
            state.next_message_id += 1;
            state.next_message_id
        };
        let mut message = json!({
            "message_id": message_id,
            "date": 1_790_000_000,
            "chat": chat,
            "from": {"id": from, "is_bot": false, "first_name": username, "username": username},
            "text": text,
        });
        if let Some(thread) = thread {
            message["message_thread_id"] = json!(thread);
            message["is_topic_message"] = json!(true);
        }
        if let Some(reply_to) = reply_to {
            message["reply_to_message"] = reply_to;
        }
        self.push_update(json!({"message": message}))
    }

    /// The next call of `method` fails as `failure` (queued in order).
    pub fn fail_next(&self, method: &str, failure: FakeFailure) {
        self.fail_after(method, 0, failure);
    }

    /// After `successes` more successful calls of `method`, the next one fails as `failure`.
    pub fn fail_after(&self, method: &str, successes: usize, failure: FakeFailure) {
        self.server
            .lock()
            .failures
            .push_back((method.to_string(), successes, failure));
    }

    /// Every call received, in order.
    pub fn calls(&self) -> Vec<TelegramCall> {
        self.server.lock().calls.clone()
    }

    /// The bodies of the `sendMessage` calls that succeeded, in order.
    pub fn sent(&self) -> Vec<Value> {
        self.server
            .lock()
            .calls
            .iter()
            .filter(|c| c.method == "sendMessage" && c.body.get("__failed").is_none())
            .map(|c| c.body.clone())
            .collect()
    }

    /// For each call of `method`, in order: whether the fake refused it (a queued failure).
    pub fn refusals(&self, method: &str) -> Vec<bool> {
        self.server
            .lock()
            .calls
            .iter()
            .filter(|c| c.method == method)
            .map(|c| c.body.get("__failed").is_some())
            .collect()
    }

    /// Updates queued and not yet confirmed by an offset past them.
    pub fn unconfirmed(&self) -> usize {
        self.server.lock().updates.len()
    }

    /// Waits until `check` holds for the calls received (it is checked on every call).
    pub async fn wait_for(&self, mut check: impl FnMut(&[TelegramCall]) -> bool) {
        let server = &self.server;
        server.wait(|| check(&server.lock().calls)).await;
    }

    /// Waits until `n` messages were sent successfully; answers them.
    pub async fn wait_sent(&self, n: usize) -> Vec<Value> {
        self.wait_for(|calls| {
            calls
                .iter()
                .filter(|c| c.method == "sendMessage" && c.body.get("__failed").is_none())
                .count()
                >= n
        })
        .await;
        self.sent()
    }

    /// Stops the server (long polls end empty).
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

fn answer(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn failed(code: u16, description: &str, parameters: Option<Value>) -> Response {
    let mut body = json!({"ok": false, "error_code": code, "description": description});
    if let Some(parameters) = parameters {
        body["parameters"] = parameters;
    }
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    answer(status, body)
}

async fn route(
    State(shared): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    if bot.strip_prefix("bot") != Some(shared.config.as_str()) {
        return failed(401, "Unauthorized", None);
    }
    let body: Value = match body.is_empty() {
        true => json!({}),
        false => match serde_json::from_slice(&body) {
            Ok(body) => body,
            Err(e) => return failed(400, &format!("Bad Request: invalid JSON: {e}"), None),
        },
    };
    if method == "getUpdates" {
        return get_updates(&shared, &body).await;
    }
    let mut failure = next_failure(&shared, &method);
    if let Some(FakeFailure::Slow(wait)) = failure {
        tokio::time::sleep(wait).await;
        failure = None;
    }
    {
        let mut state = shared.lock();
        let mut recorded = body.clone();
        if failure.is_some() {
            recorded["__failed"] = json!(true);
        }
        state.calls.push(TelegramCall {
            method: method.clone(),
            body: recorded,
        });
    }
    shared.bump();
    match failure {
        Some(FakeFailure::TooManyRequests { retry_after }) => failed(
            429,
            &format!("Too Many Requests: retry after {retry_after}"),
            Some(json!({"retry_after": retry_after})),
        ),
        Some(FakeFailure::Blocked) => failed(403, "Forbidden: bot was blocked by the user", None),
        Some(FakeFailure::BadRequest(description)) => failed(400, &description, None),
        Some(FakeFailure::Server) => failed(500, "Internal Server Error", None),
        Some(FakeFailure::Unauthorized) => failed(401, "Unauthorized", None),
        Some(FakeFailure::Slow(_)) | None => succeed(&shared, &method, &body),
    }
}

/// The failure queued for this call of `method`, if its turn has come.
fn next_failure(shared: &Shared, method: &str) -> Option<FakeFailure> {
    let mut state = shared.lock();
    let at = state.failures.iter().position(|(m, _, _)| m == method)?;
    if state.failures[at].1 > 0 {
        state.failures[at].1 -= 1;
        return None;
    }
    state.failures.remove(at).map(|(_, _, f)| f)
}

fn succeed(shared: &Shared, method: &str, body: &Value) -> Response {
    let result = match method {
        "getMe" => json!({
            "id": BOT_ID, "is_bot": true, "first_name": "Switchboard test bot",
            "username": BOT_USERNAME, "can_join_groups": true,
        }),
        "sendChatAction" => json!(true),
        "sendMessage" => {
            let Some(chat_id) = body.get("chat_id").filter(|c| c.is_i64() || c.is_string()) else {
                return failed(400, "Bad Request: chat_id is empty", None);
            };
            let Some(text) = body
                .get("text")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            else {
                return failed(400, "Bad Request: message text is empty", None);
            };
            if text.chars().count() > 4096 {
                return failed(400, "Bad Request: message is too long", None);
            }
            let message_id = {
                let mut state = shared.lock();
                state.next_message_id += 1;
                state.next_message_id
            };
            json!({
                "message_id": message_id, "date": 1_790_000_000, "text": text,
                "chat": {"id": chat_id, "type": "private"},
                "from": {"id": BOT_ID, "is_bot": true, "first_name": "bot", "username": BOT_USERNAME},
            })
        }
        _ => return failed(404, "Not Found", None),
    };
    answer(StatusCode::OK, json!({"ok": true, "result": result}))
}

/// `getUpdates`: confirms what is below `offset`, answers the rest, or holds up to `timeout`.
async fn get_updates(shared: &Shared, body: &Value) -> Response {
    let offset = body.get("offset").and_then(Value::as_i64).unwrap_or(0);
    let timeout = body.get("timeout").and_then(Value::as_u64).unwrap_or(0);
    let limit = body.get("limit").and_then(Value::as_u64).unwrap_or(100) as usize;
    shared.lock().calls.push(TelegramCall {
        method: "getUpdates".into(),
        body: body.clone(),
    });
    shared.bump();
    let mut link = shared.link();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    loop {
        let ready: Vec<Value> = {
            let mut state = shared.lock();
            while state
                .updates
                .front()
                .is_some_and(|u| u["update_id"].as_i64().unwrap_or(0) < offset)
            {
                state.updates.pop_front();
            }
            state.updates.iter().take(limit).cloned().collect()
        };
        if !ready.is_empty() || tokio::time::Instant::now() >= deadline {
            return answer(StatusCode::OK, json!({"ok": true, "result": ready}));
        }
        tokio::select! {
            live = link.next() => if !live {
                return answer(StatusCode::OK, json!({"ok": true, "result": []}));
            },
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}
