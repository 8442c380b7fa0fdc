//! One WebSocket connection speaking the reference's protocol v4 (SPEC §5.1).
//!
//! Life of a connection: the server sends `connect.challenge`; the first frame must be a
//! `connect` request with an acceptable protocol range and the token, answered by `hello-ok`.
//! After that every `req` is handled on its own task (a slow method never blocks the others) and
//! answered through one outgoing queue, which a single writer task drains into the socket, so
//! frames never interleave. Bad frames get an error that says what was wrong; the connection is
//! closed (with a reason) only where going on makes no sense: before a successful `connect`, and
//! for a frame over `maxPayload`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use switchboard_core::clock::now_ms;
use switchboard_core::runtime::cancel::CancelToken;

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use switchboard_core::runtime::{RunEvent, RunEventData};
use switchboard_core::store::RunStatus;
use switchboard_protocol::frames::{
    ConnectChallenge, ConnectParams, Features, HelloOk, Policy, ServerInfo,
};
use switchboard_protocol::{
    ErrorCode, ErrorShape, EventFrame, Frame, PROTOCOL_VERSION, RequestFrame, ResponseFrame,
};
use tokio::sync::{broadcast, mpsc};

use crate::ServerState;
use crate::methods::{self, EVENTS, METHODS};

/// How long a client has to send `connect`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes read from the socket at a time.
const READ_BUFFER: usize = 8 * 1024;
/// Outgoing frames queued per connection before request handlers wait.
const OUTGOING_QUEUE: usize = 256;

pub async fn upgrade(State(state): State<Arc<ServerState>>, ws: WebSocketUpgrade) -> Response {
    // Frames up to 4× maxPayload are read so that we can answer "too large" with a reason;
    // anything larger is cut off by the WebSocket layer itself.
    let limit = state.max_payload.saturating_mul(4).max(64 * 1024);
    // tungstenite zero-fills its whole read buffer on every read: its 128 KiB default cost a
    // quarter of the gateway's CPU under load. Frames are small; larger ones take more reads.
    ws.read_buffer_size(READ_BUFFER)
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| async move {
            state.connections.fetch_add(1, Ordering::Relaxed);
            run(state.clone(), socket).await;
            state.connections.fetch_sub(1, Ordering::Relaxed);
        })
}

/// What the connection sends: frames, or a close with a reason.
enum Outgoing {
    Frame(String),
    Close(u16, String),
}

struct Conn {
    out: mpsc::Sender<Outgoing>,
    event_seq: AtomicU64,
    /// Sessions whose run events this connection receives.
    subscriptions: std::sync::Mutex<Subscriptions>,
    /// Cancelled when the client is gone: its in-flight methods stop waiting (nothing they
    /// started is cut off; their answers go nowhere).
    gone: CancelToken,
}

/// Run events go only to the connections that want them: sessions named with
/// `sessions.subscribe`, every session with `{all: true}`, and the sessions this connection
/// starts runs in (`chat.send`, `agent`).
#[derive(Default)]
struct Subscriptions {
    all: bool,
    keys: std::collections::HashSet<String>,
}

impl Conn {
    fn subscriptions(&self) -> std::sync::MutexGuard<'_, Subscriptions> {
        self.subscriptions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wants(&self, session_key: &str) -> bool {
        let subs = self.subscriptions();
        subs.all || subs.keys.contains(session_key)
    }
}

impl Conn {
    async fn send(&self, frame: &Frame) {
        if let Ok(text) = serde_json::to_string(frame) {
            let _ = self.out.send(Outgoing::Frame(text)).await;
        }
    }

    async fn respond(&self, response: ResponseFrame) {
        self.send(&Frame::Res(response)).await;
    }

    /// Queues a response from synchronous code (an interim answer), without waiting.
    fn respond_now(&self, response: ResponseFrame) {
        let Ok(text) = serde_json::to_string(&Frame::Res(response)) else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(out)) = self.out.try_send(Outgoing::Frame(text))
        {
            let sender = self.out.clone();
            tokio::spawn(async move {
                let _ = sender.send(out).await;
            });
        }
    }

    async fn event(&self, event: &str, payload: Value, numbered: bool) {
        let seq = numbered.then(|| self.event_seq.fetch_add(1, Ordering::Relaxed) + 1);
        self.send(&Frame::Event(EventFrame {
            event: event.to_string(),
            payload,
            seq,
        }))
        .await;
    }

    async fn close(&self, code: u16, reason: impl Into<String>) {
        let _ = self.out.send(Outgoing::Close(code, reason.into())).await;
    }
}

async fn run(state: Arc<ServerState>, socket: WebSocket) {
    let conn_id = state.next_conn.fetch_add(1, Ordering::Relaxed);
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::channel::<Outgoing>(OUTGOING_QUEUE);
    let writer = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            let sent = match out {
                Outgoing::Frame(text) => sink.send(Message::Text(Utf8Bytes::from(text))).await,
                Outgoing::Close(code, reason) => {
                    let frame = CloseFrame {
                        code,
                        reason: Utf8Bytes::from(reason),
                    };
                    let _ = sink.send(Message::Close(Some(frame))).await;
                    break;
                }
            };
            if sent.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let conn = Arc::new(Conn {
        out: tx,
        event_seq: AtomicU64::new(0),
        subscriptions: Default::default(),
        gone: CancelToken::default(),
    });

    let nonce = uuid::Uuid::new_v4().to_string();
    let challenge = ConnectChallenge {
        nonce,
        ts: now_ms(),
    };
    conn.event("connect.challenge", json!(challenge), false)
        .await;

    let connected = match tokio::time::timeout(CONNECT_TIMEOUT, stream.next()).await {
        Err(_) => {
            conn.close(
                close_code::POLICY,
                "connect timeout: send a connect request first",
            )
            .await;
            false
        }
        Ok(None) | Ok(Some(Err(_))) => false,
        Ok(Some(Ok(message))) => handshake(&state, &conn, conn_id, message).await,
    };

    if connected {
        let mut tick = tokio::time::interval_at(
            tokio::time::Instant::now() + state.tick_interval,
            state.tick_interval,
        );
        let mut stopping = state.stopping.subscribe();
        let mut runs = state.engine.subscribe();
        let mut deliveries = state.engine.subscribe_deliveries();
        loop {
            tokio::select! {
                event = deliveries.recv() => match event {
                    Ok(event) => {
                        let r = &event.record;
                        let concerns = [r.session_key.as_deref(), Some(r.to.as_str())];
                        if concerns.into_iter().flatten().any(|key| conn.wants(key)) {
                            let payload = json!(crate::methods::delivery_info(r.clone()));
                            conn.event("delivery", payload, true).await;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(conn_id, missed, "a slow client missed delivery events");
                    }
                    Err(broadcast::error::RecvError::Closed) => {}
                },
                event = runs.recv() => match event {
                    Ok(event) if conn.wants(&event.session_key) => {
                        for (name, payload) in run_event_frames(&event) {
                            conn.event(name, payload, true).await;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(conn_id, missed, "a slow client missed run events");
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Closed) => {}
                },
                message = stream.next() => match message {
                    Some(Ok(message)) => {
                        if !handle(&state, &conn, message).await {
                            break;
                        }
                    }
                    None | Some(Err(_)) => break,
                },
                _ = tick.tick() => conn.event("tick", json!({"ts": now_ms()}), true).await,
                changed = stopping.changed() => {
                    let stop = changed.is_err() || *stopping.borrow();
                    if stop {
                        conn.event("shutdown", json!({"reason": "gateway stopping"}), true).await;
                        conn.close(close_code::RESTART, "gateway stopping").await;
                        break;
                    }
                }
            }
        }
    }
    conn.gone.cancel();
    drop(conn);
    let _ = writer.await;
}

/// Handles one frame of a connected client; false when the connection must end.
async fn handle(state: &Arc<ServerState>, conn: &Arc<Conn>, message: Message) -> bool {
    match message {
        Message::Text(text) => {
            if !check_size(state, conn, text.len()).await {
                return false;
            }
            match parse_request(text.as_str()) {
                Ok(req) if is_subscription(&req.method) => {
                    let response = match subscribe(state, conn, &req) {
                        Ok(payload) => ResponseFrame::ok(req.id, payload),
                        Err(error) => ResponseFrame::err(req.id, error),
                    };
                    conn.respond(response).await;
                }
                Ok(req) => {
                    follow_own_runs(state, conn, &req);
                    let (state, conn) = (state.clone(), conn.clone());
                    tokio::spawn(async move {
                        let interim_conn = conn.clone();
                        let interim_id = req.id.clone();
                        let interim = move |payload: Value| {
                            interim_conn
                                .respond_now(ResponseFrame::ok(interim_id.clone(), payload));
                        };
                        let response = match methods::dispatch(
                            &state,
                            &req.method,
                            req.params,
                            &interim,
                            &conn.gone,
                        )
                        .await
                        {
                            Ok(payload) => ResponseFrame::ok(req.id, payload),
                            Err(error) => ResponseFrame::err(req.id, error),
                        };
                        conn.respond(response).await;
                    });
                }
                Err((id, error)) => conn.respond(ResponseFrame::err(id, error)).await,
            }
            true
        }
        Message::Binary(bytes) => {
            if !check_size(state, conn, bytes.len()).await {
                return false;
            }
            conn.respond(ResponseFrame::err("", binary_error())).await;
            true
        }
        Message::Close(_) => false,
        Message::Ping(_) | Message::Pong(_) => true,
    }
}

fn is_subscription(method: &str) -> bool {
    matches!(method, "sessions.subscribe" | "sessions.unsubscribe")
}

/// `sessions.subscribe {sessionKeys?, all?}` / `sessions.unsubscribe {sessionKeys?, all?}`:
/// connection state, so answered here rather than by the method table.
fn subscribe(state: &ServerState, conn: &Conn, req: &RequestFrame) -> Result<Value, ErrorShape> {
    #[derive(serde::Deserialize, Default)]
    #[serde(rename_all = "camelCase", default)]
    struct Params {
        session_keys: Vec<String>,
        all: Option<bool>,
    }
    let p: Params = methods::parse(&req.method, req.params.clone())?;
    let mut keys = Vec::with_capacity(p.session_keys.len());
    for key in &p.session_keys {
        let key = state
            .engine
            .canonical_key(key, None)
            .map_err(|e| e.to_shape())?;
        keys.push(key.into_string());
    }
    let mut subs = conn.subscriptions();
    if req.method == "sessions.subscribe" {
        subs.all |= p.all.unwrap_or(false);
        subs.keys.extend(keys);
    } else {
        if p.all.unwrap_or(false) {
            subs.all = false;
            subs.keys.clear();
        }
        for key in &keys {
            subs.keys.remove(key);
        }
    }
    let mut listed: Vec<&String> = subs.keys.iter().collect();
    listed.sort();
    Ok(json!({"ok": true, "all": subs.all, "sessionKeys": listed}))
}

/// A client that starts a run in a session receives that session's events.
fn follow_own_runs(state: &ServerState, conn: &Conn, req: &RequestFrame) {
    if !matches!(req.method.as_str(), "chat.send" | "agent") {
        return;
    }
    let params = req.params.as_ref();
    let key = params
        .and_then(|p| p.get("sessionKey"))
        .and_then(Value::as_str);
    let agent = params
        .and_then(|p| p.get("agentId"))
        .and_then(Value::as_str);
    if let Some(Ok(key)) = key.map(|k| state.engine.canonical_key(k, agent)) {
        conn.subscriptions().keys.insert(key.into_string());
    }
}

/// Handles the first frame; true when the client is now connected.
async fn handshake(state: &ServerState, conn: &Conn, conn_id: u64, message: Message) -> bool {
    let text = match message {
        Message::Text(text) => text,
        Message::Binary(_) => {
            conn.respond(ResponseFrame::err("", binary_error())).await;
            conn.close(close_code::POLICY, "expected a connect request")
                .await;
            return false;
        }
        _ => {
            conn.close(close_code::POLICY, "expected a connect request")
                .await;
            return false;
        }
    };
    if !check_size(state, conn, text.len()).await {
        return false;
    }
    let req = match parse_request(text.as_str()) {
        Ok(req) => req,
        Err((id, error)) => {
            conn.respond(ResponseFrame::err(id, error)).await;
            conn.close(close_code::POLICY, "expected a connect request")
                .await;
            return false;
        }
    };
    if req.method != "connect" {
        let error = ErrorShape::new(
            ErrorCode::Unauthorized,
            format!(
                "{} before connect: the first request must be connect (with auth.token)",
                req.method
            ),
        );
        conn.respond(ResponseFrame::err(req.id, error)).await;
        conn.close(close_code::POLICY, "connect required").await;
        return false;
    }
    let params: ConnectParams = match methods::parse("connect", req.params) {
        Ok(p) => p,
        Err(error) => {
            conn.respond(ResponseFrame::err(req.id, error)).await;
            conn.close(close_code::POLICY, "invalid connect").await;
            return false;
        }
    };
    if params.min_protocol > PROTOCOL_VERSION || params.max_protocol < PROTOCOL_VERSION {
        let error = ErrorShape::new(
            ErrorCode::InvalidRequest,
            format!(
                "protocol range {}..{} is not supported; this gateway speaks protocol {PROTOCOL_VERSION}",
                params.min_protocol, params.max_protocol
            ),
        );
        conn.respond(ResponseFrame::err(req.id, error)).await;
        conn.close(close_code::PROTOCOL, "protocol mismatch").await;
        return false;
    }
    let token = params
        .auth
        .as_ref()
        .and_then(|a| a.token.as_deref().or(a.password.as_deref()));
    if !state.auth.check(token) {
        let what = if token.is_some() {
            "wrong token"
        } else {
            "missing token (auth.token)"
        };
        let error = ErrorShape::new(
            ErrorCode::Unauthorized,
            format!(
                "unauthorized: {what}; use the gateway token (printed where it is stored at start-up)"
            ),
        );
        conn.respond(ResponseFrame::err(req.id, error)).await;
        conn.close(close_code::POLICY, "unauthorized").await;
        return false;
    }
    let mut hello = HelloOk {
        kind: "hello-ok".into(),
        protocol: PROTOCOL_VERSION,
        server: ServerInfo {
            name: "switchboard".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            conn_id: conn_id.to_string(),
        },
        features: Features {
            methods: METHODS.iter().map(|m| m.to_string()).collect(),
            events: EVENTS.iter().map(|e| e.to_string()).collect(),
        },
        policy: Policy {
            max_payload: state.max_payload,
            max_buffered_bytes: state.max_payload.saturating_mul(4),
            tick_interval_ms: state.tick_interval.as_millis() as u64,
        },
        session_key: None,
    };
    if params.role.as_deref().map(str::trim) == Some("node") {
        match node_session(state, &params).await {
            Ok(key) => {
                conn.subscriptions().keys.insert(key.clone());
                hello.session_key = Some(key);
            }
            Err(error) => {
                conn.respond(ResponseFrame::err(req.id, error)).await;
                conn.close(close_code::POLICY, "invalid node connect").await;
                return false;
            }
        }
    }
    conn.respond(ResponseFrame::ok(req.id, json!(hello))).await;
    true
}

/// A node client's session, `node-<nodeId>` of the default agent, created on first connect
/// (SPEC §9.3); the connection follows its runs.
async fn node_session(state: &ServerState, params: &ConnectParams) -> Result<String, ErrorShape> {
    let node_id = params.node_id.as_deref().map(str::trim).unwrap_or_default();
    if node_id.is_empty() {
        return Err(ErrorShape::new(
            ErrorCode::InvalidRequest,
            "connect: role \"node\" needs nodeId (the device's id; its session is node-<nodeId>)",
        ));
    }
    let engine = &state.engine;
    let key = engine
        .canonical_key(&format!("node-{node_id}"), None)
        .map_err(|e| {
            ErrorShape::new(
                ErrorCode::InvalidRequest,
                format!("connect: nodeId {node_id:?} does not make a session key: {e}"),
            )
        })?;
    let mut new = engine.new_session(&key);
    new.display_name = params.client.display_name.clone();
    engine
        .store()
        .create(new)
        .await
        .map_err(|e| ErrorShape::new(ErrorCode::Internal, e.to_string()))?;
    Ok(key.into_string())
}

/// False (and the connection closed with a reason) when a frame exceeds `maxPayload`.
async fn check_size(state: &ServerState, conn: &Conn, len: usize) -> bool {
    if len <= state.max_payload {
        return true;
    }
    let reason = format!(
        "frame of {len} bytes exceeds maxPayload ({} bytes)",
        state.max_payload
    );
    conn.respond(ResponseFrame::err(
        "",
        ErrorShape::new(ErrorCode::InvalidRequest, reason.clone()),
    ))
    .await;
    conn.close(close_code::SIZE, truncate(&reason, 120)).await;
    false
}

/// A `req` frame, or the id (when one could be read) and an error that says what was wrong.
fn parse_request(text: &str) -> Result<RequestFrame, (String, ErrorShape)> {
    const EXPECTED: &str =
        "expected {\"type\":\"req\",\"id\":\"…\",\"method\":\"…\",\"params\":{…}}";
    let value: Value = serde_json::from_str(text).map_err(|e| {
        (
            String::new(),
            ErrorShape::new(
                ErrorCode::InvalidRequest,
                format!("frame is not JSON ({e}); {EXPECTED}"),
            ),
        )
    })?;
    let id = value
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    match serde_json::from_value::<Frame>(value) {
        Ok(Frame::Req(req)) => Ok(req),
        Ok(_) => Err((
            id,
            ErrorShape::new(
                ErrorCode::InvalidRequest,
                format!("clients send only req frames; {EXPECTED}"),
            ),
        )),
        Err(e) => Err((
            id,
            ErrorShape::new(
                ErrorCode::InvalidRequest,
                format!("invalid frame ({e}); {EXPECTED}"),
            ),
        )),
    }
}

fn binary_error() -> ErrorShape {
    ErrorShape::new(
        ErrorCode::InvalidRequest,
        "binary frames are not accepted; send JSON text frames",
    )
}

fn truncate(s: &str, max: usize) -> String {
    s.char_indices()
        .take_while(|(i, _)| *i < max)
        .map(|(_, c)| c)
        .collect()
}

/// The reference's event shapes for a run event: `agent` (lifecycle, assistant, tool streams) and
/// `chat` (the accumulated reply as it grows, then its final state).
fn run_event_frames(event: &RunEvent) -> Vec<(&'static str, Value)> {
    let (run_id, key) = (&event.run_id, &event.session_key);
    let agent = |stream: &str, data: Value| {
        (
            "agent",
            json!({"runId": run_id, "sessionKey": key, "stream": stream, "ts": now_ms(), "data": data}),
        )
    };
    let chat = |state: &str, text: Option<&str>, error: Option<&str>| {
        let mut payload = json!({"runId": run_id, "sessionKey": key, "state": state});
        if let Some(text) = text {
            payload["message"] =
                json!({"role": "assistant", "content": [{"type": "text", "text": text}]});
        }
        if let Some(error) = error {
            payload["errorMessage"] = json!(error);
        }
        ("chat", payload)
    };
    match &event.data {
        RunEventData::Queued => vec![agent("lifecycle", json!({"phase": "queued"}))],
        RunEventData::Started => vec![agent("lifecycle", json!({"phase": "start"}))],
        RunEventData::Delta { text, accumulated } => vec![
            agent("assistant", json!({"delta": text, "text": accumulated})),
            chat("delta", Some(accumulated), None),
        ],
        RunEventData::Thinking { text } => vec![agent("thinking", json!({"delta": text}))],
        RunEventData::ToolCall {
            id,
            name,
            arguments,
        } => vec![agent(
            "tool",
            json!({"phase": "call", "toolCallId": id, "name": name, "arguments": arguments}),
        )],
        RunEventData::ToolResult {
            id,
            name,
            is_error,
            text,
        } => vec![agent(
            "tool",
            json!({"phase": "result", "toolCallId": id, "name": name, "isError": is_error, "text": text}),
        )],
        RunEventData::Ended {
            status,
            result,
            error,
        } => {
            let state = match status {
                RunStatus::Ok => "final",
                RunStatus::Aborted => "aborted",
                _ => "error",
            };
            vec![
                agent(
                    "lifecycle",
                    json!({"phase": "end", "status": status.as_str(), "error": error}),
                ),
                chat(state, result.as_deref(), error.as_deref()),
            ]
        }
    }
}
