//! [`FakeSignal`]: a `signal-cli` daemon's HTTP interface (`daemon --http`) on `127.0.0.1:0`,
//! in the shapes signal-cli serves:
//!
//! - `POST /api/v1/rpc`: JSON-RPC 2.0. `send` (`{recipient: [..]}` or `{groupId}`, `message`)
//!   answers `{result: {timestamp, results: [{recipientAddress, type: "SUCCESS"}]}}`;
//!   `sendTyping` answers `{result: {}}`; other methods `-32601`. A queued failure
//!   ([`FakeSignal::fail_next`]) answers the next `send` with the rate-limit error (-5), HTTP
//!   500, or a recipient result `UNREGISTERED_FAILURE`. Every call is recorded.
//! - `GET /api/v1/events`: Server-Sent Events `event: receive` with ids
//!   `"<daemon start ms>-<sequence>"` and keep-alive comments. A connection with
//!   `Last-Event-ID` first gets every kept event after it; an id the daemon does not know
//!   (after [`FakeSignal::restart`]) gets every kept event; none gets only new ones. Each
//!   connection's `Last-Event-ID` is recorded; [`FakeSignal::drop_streams`] ends them.
//! - `GET /api/v1/check`: 200.
//!
//! [`FakeSignal::dm`] and [`FakeSignal::group`] push a message event (a new timestamp each).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::fake::{FakeServer, Link};

/// The daemon's account (`signal-cli -a`) and its UUID.
pub const ACCOUNT: &str = "+15550001111";
pub const ACCOUNT_UUID: &str = "0b0b0b0b-1111-4000-8000-00000000b07a";
/// How often the stream says it is alive (signal-cli: every 15 s).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How the next `send` fails.
#[derive(Debug, Clone, PartialEq)]
pub enum SignalFailure {
    /// JSON-RPC error -5 (signal-cli's rate-limit exit code).
    RateLimit,
    /// HTTP 500.
    Server,
    /// A result whose `type` is `UNREGISTERED_FAILURE`.
    Unregistered,
}

/// How a group message addresses the account.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Address {
    /// Not at all.
    None,
    /// A mention (the placeholder U+FFFC first in the text).
    Mention,
    /// A quote of the account's message.
    Quote,
}

/// One JSON-RPC call the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcCall {
    pub method: String,
    pub params: Value,
    pub id: Value,
    /// Answered with an error.
    pub refused: bool,
}

struct Kept {
    seq: u64,
    name: String,
    data: String,
}

#[derive(Default)]
struct FakeState {
    calls: Vec<RpcCall>,
    failures: VecDeque<SignalFailure>,
    events: Vec<Kept>,
    start: u64,
    clock: i64,
    /// Each connection's `Last-Event-ID`.
    connections: Vec<Option<String>>,
    /// The event stream answers 503 (see [`FakeSignal::drop_connection`]).
    down: bool,
}

impl FakeState {
    fn id(&self, kept: &Kept) -> String {
        format!("{}-{}", self.start, kept.seq)
    }
}

/// The routes' shared part: the state; a cut ends every open event stream.
type Shared = crate::fake::Shared<(), FakeState>;

/// The fake daemon (see the module doc).
pub struct FakeSignal {
    server: FakeServer<(), FakeState>,
}

impl FakeSignal {
    /// Serves on `127.0.0.1:0`.
    ///
    /// # Panics
    /// If the loopback listener cannot be bound.
    pub async fn start() -> FakeSignal {
        let state = FakeState {
            start: 1_700_000_000_000,
            clock: 1_700_000_100_000,
            ..FakeState::default()
        };
        let routes = Router::new()
            .route("/api/v1/rpc", post(rpc))
            .route("/api/v1/events", get(events))
            .route("/api/v1/check", get(|| async { StatusCode::OK }));
        let server = FakeServer::start("FakeSignal", (), state, routes).await;
        FakeSignal { server }
    }

    /// The `httpUrl` to configure.
    pub fn http_url(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// The next `send` fails with `failure` (queued in order).
    pub fn fail_next(&self, failure: SignalFailure) {
        self.server.lock().failures.push_back(failure);
    }

    pub fn calls(&self) -> Vec<RpcCall> {
        self.server.lock().calls.clone()
    }

    /// The texts sent successfully, in order: (recipient or `group:<groupId>`, message).
    pub fn sent(&self) -> Vec<(String, String)> {
        sent_of(&self.calls())
    }

    /// The `Last-Event-ID` each connection to the event stream came with, in order.
    pub fn connections(&self) -> Vec<Option<String>> {
        self.server.lock().connections.clone()
    }

    /// The id of the last event pushed.
    pub fn last_event_id(&self) -> Option<String> {
        let state = self.server.lock();
        state.events.last().map(|kept| state.id(kept))
    }

    /// Waits until `check` holds for the calls and connections so far.
    pub async fn wait_for(&self, mut check: impl FnMut(&[RpcCall], &[Option<String>]) -> bool) {
        let server = &self.server;
        server
            .wait(|| {
                let (calls, connections) = {
                    let state = server.lock();
                    (state.calls.clone(), state.connections.clone())
                };
                check(&calls, &connections)
            })
            .await;
    }

    /// Waits until `n` texts were sent; answers them.
    pub async fn wait_sent(&self, n: usize) -> Vec<(String, String)> {
        self.wait_for(|calls, _| sent_of(calls).len() >= n).await;
        self.sent()
    }

    /// Waits until the event stream was opened `n` times.
    pub async fn wait_connections(&self, n: usize) {
        self.wait_for(|_, connections| connections.len() >= n).await;
    }

    /// A direct message from `from` (a number) named `name`; answers its timestamp.
    pub fn dm(&self, from: &str, name: &str, text: &str) -> i64 {
        self.message((from, name), json!({"message": text}))
    }

    /// A message in group `group` from `from` named `name`, addressing the account as asked.
    pub fn group(&self, group: &str, (from, name): (&str, &str), text: &str, to: Address) -> i64 {
        let mut message =
            json!({"message": text, "groupInfo": {"groupId": group, "type": "DELIVER"}});
        match to {
            Address::None => {}
            Address::Mention => {
                message["message"] = json!(format!("\u{FFFC} {text}"));
                message["mentions"] = json!([{"name": "Bot", "number": ACCOUNT, "uuid": ACCOUNT_UUID, "start": 0, "length": 1}]);
            }
            Address::Quote => {
                message["quote"] = json!({"id": 1_700_000_000_001_i64, "author": ACCOUNT, "authorNumber": ACCOUNT, "authorUuid": ACCOUNT_UUID, "text": "earlier"});
            }
        }
        self.message((from, name), message)
    }

    fn message(&self, (from, name): (&str, &str), mut message: Value) -> i64 {
        let at = {
            let mut state = self.server.lock();
            state.clock += 1000;
            state.clock
        };
        message["timestamp"] = json!(at);
        let data = json!({"envelope": {
            "source": from, "sourceNumber": from, "sourceUuid": uuid_of(from), "sourceName": name,
            "sourceDevice": 1, "timestamp": at, "dataMessage": message,
        }, "account": ACCOUNT});
        self.push_raw("receive", &data.to_string());
        at
    }

    /// An event with any name and data (a malformed one, a receipt).
    pub fn push_raw(&self, name: &str, data: &str) {
        let mut state = self.server.lock();
        let seq = state.events.len() as u64 + 1;
        state.events.push(Kept {
            seq,
            name: name.to_owned(),
            data: data.to_owned(),
        });
        drop(state);
        self.server.bump();
    }

    /// Ends every open event stream (the client reconnects with its `Last-Event-ID`).
    pub fn drop_streams(&self) {
        self.server.cut();
    }

    /// Ends every open stream and refuses new ones (503) while `meanwhile` runs (messages
    /// that arrive while the client is away reach it only through `Last-Event-ID`).
    pub fn drop_connection(&self, meanwhile: impl FnOnce(&Self)) {
        self.server.lock().down = true;
        self.drop_streams();
        meanwhile(self);
        self.server.lock().down = false;
    }

    /// The daemon "restarts": a new start time (so no earlier id is known: a client's
    /// `Last-Event-ID` gets every kept event again) and every stream ended.
    pub fn restart(&self) {
        self.server.lock().start += 60_000;
        self.drop_streams();
    }

    /// Stops the daemon; every open stream ends.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// A made-up UUID for a number (the same number, the same UUID).
pub fn uuid_of(number: &str) -> String {
    let digits: String = number.chars().filter(char::is_ascii_digit).collect();
    format!(
        "5e4de400-0000-4000-8000-{:0>12}",
        &digits[digits.len().saturating_sub(12)..]
    )
}

/// The texts among `calls` that were sent, in order: (recipient or `group:<groupId>`, message).
pub fn sent_of(calls: &[RpcCall]) -> Vec<(String, String)> {
    calls
        .iter()
        .filter(|c| c.method == "send" && !c.refused)
        .map(|c| {
            let to = match c.params["groupId"].as_str() {
                Some(group) => format!("group:{group}"),
                None => c.params["recipient"][0]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            };
            let text = c.params["message"].as_str().unwrap_or_default().to_owned();
            (to, text)
        })
        .collect()
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": id});
    axum::Json(body).into_response()
}

async fn rpc(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let Ok(call) = serde_json::from_slice::<Value>(&body) else {
        return rpc_error(&Value::Null, -32700, "Parse error");
    };
    let (method, id) = (
        call["method"].as_str().unwrap_or_default().to_owned(),
        call["id"].clone(),
    );
    let failure = match method.as_str() {
        "send" => shared.lock().failures.pop_front(),
        _ => None,
    };
    let known = matches!(method.as_str(), "send" | "sendTyping");
    shared.lock().calls.push(RpcCall {
        method: method.clone(),
        params: call["params"].clone(),
        id: id.clone(),
        refused: failure.is_some() || !known,
    });
    shared.bump();
    match (method.as_str(), failure) {
        (_, Some(SignalFailure::RateLimit)) => {
            rpc_error(&id, -5, "Failed to send message due to rate limiting")
        }
        (_, Some(SignalFailure::Server)) => {
            (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error").into_response()
        }
        (_, Some(SignalFailure::Unregistered)) => send_result(&call, &id, "UNREGISTERED_FAILURE"),
        ("send", None) => send_result(&call, &id, "SUCCESS"),
        ("sendTyping", None) => {
            axum::Json(json!({"jsonrpc": "2.0", "result": {}, "id": id})).into_response()
        }
        _ => rpc_error(&id, -32601, "Method not implemented"),
    }
}

fn send_result(call: &Value, id: &Value, kind: &str) -> Response {
    let recipient = &call["params"]["recipient"][0];
    let result = json!({"timestamp": 1_700_000_200_000_i64, "results": [
        {"recipientAddress": {"uuid": Value::Null, "number": recipient}, "type": kind},
    ]});
    axum::Json(json!({"jsonrpc": "2.0", "result": result, "id": id})).into_response()
}

/// One open stream: the next kept event to send, and its link (over once the fake stops or
/// its streams are dropped).
struct Stream {
    shared: Arc<Shared>,
    next: usize,
    link: Link,
    opened: bool,
}

async fn events(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let next = {
        let mut state = shared.lock();
        if state.down {
            return (StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
        }
        state.connections.push(last.clone());
        match last {
            None => state.events.len(),
            Some(last) => {
                let at = state.events.iter().position(|kept| state.id(kept) == last);
                at.map_or(0, |at| at + 1)
            }
        }
    };
    let stream = Stream {
        next,
        link: shared.link(),
        shared: shared.clone(),
        opened: false,
    };
    shared.bump();
    let body = futures_util::stream::unfold(stream, next_chunk);
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The stream's next bytes: an opening comment, the next kept event, a keep-alive, or the end.
async fn next_chunk(mut stream: Stream) -> Option<(Result<Bytes, Infallible>, Stream)> {
    if !stream.opened {
        stream.opened = true;
        return Some((Ok(Bytes::from_static(b": open\n\n")), stream));
    }
    loop {
        let event = {
            let state = stream.shared.lock_live(&stream.link)?;
            state.events.get(stream.next).map(|kept| {
                format!(
                    "id: {}\nevent: {}\ndata: {}\n\n",
                    state.id(kept),
                    kept.name,
                    kept.data
                )
            })
        };
        if let Some(event) = event {
            stream.next += 1;
            return Some((Ok(Bytes::from(event)), stream));
        }
        tokio::select! {
            live = stream.link.next() => if !live { return None },
            () = tokio::time::sleep(KEEP_ALIVE) => {
                return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), stream));
            }
        }
    }
}
