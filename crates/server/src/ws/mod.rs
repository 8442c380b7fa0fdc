//! One WebSocket connection speaking the reference's protocol v4 (SPEC §5.1).
//!
//! Life of a connection: the server sends `connect.challenge`; the first frame must be a
//! `connect` request with an acceptable protocol range and the token, answered by `hello-ok`
//! (`handshake.rs`). After that every `req` is handled on its own task (a slow method never
//! blocks the others) and answered through one outgoing queue, which a single writer task drains
//! into the socket, so frames never interleave. Bad frames get an error that says what was wrong;
//! the connection is closed (with a reason) only where going on makes no sense: before a
//! successful `connect`, and for a frame over `maxPayload`.
//!
//! Concurrency: the writer and the request tasks are tracked by the server's `TaskTracker`;
//! `gone` is cancelled when the connection ends, so its in-flight methods stop waiting (nothing
//! they started is cut off; their answers go nowhere).

mod events;
mod handshake;
mod held;
mod rendered;
mod subscriptions;

pub(crate) use rendered::Rendered;

use subscriptions::{Subscriptions, follow_own_runs, is_subscription, subscribe};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::response::Response;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use switchboard_core::RunId;
use switchboard_core::delivery::{DeliveryEvent, info};
use switchboard_core::runtime::RunEvent;
use switchboard_protocol::events::{ServerEvent, ShutdownEvent, TickEvent, close_frame};
use switchboard_protocol::{ErrorCode, ErrorShape, Frame, RequestFrame, ResponseFrame};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::ServerState;
use crate::access::Grant;
use crate::admission::Pending;
use crate::methods;

/// Bytes read from the socket at a time.
const READ_BUFFER: usize = 8 * 1024;
/// Outgoing frames queued per connection before request handlers wait.
const OUTGOING_QUEUE: usize = 256;
/// A client that does not take a frame within this long is gone: its connection is dropped (a
/// stalled reader must not hold the server, its shutdown included).
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the goodbye (`shutdown` event and close) may wait for room in the queue.
const GOODBYE_TIMEOUT: Duration = Duration::from_secs(2);

pub async fn upgrade(
    State(state): State<Arc<ServerState>>,
    pending: Option<Extension<Pending>>,
    ws: WebSocketUpgrade,
) -> Response {
    // A frame or message over maxPayload is refused by tungstenite as soon as its header says
    // so, before its payload is buffered; `read_error` turns that into a close 1009 that says
    // why.
    let limit = state.max_payload;
    // tungstenite zero-fills its whole read buffer on every read: its 128 KiB default cost a
    // quarter of the gateway's CPU under load. Frames are small; larger ones take more reads.
    ws.read_buffer_size(READ_BUFFER)
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| async move {
            state.connections.fetch_add(1, Ordering::Relaxed);
            run(state.clone(), socket, pending.map(|Extension(p)| p)).await;
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
    /// Runs of this connection's unanswered `chat.send`s: their events wait for the answer.
    held: held::Held,
    /// Cancelled when the client is gone: its in-flight methods stop waiting (nothing they
    /// started is cut off; their answers go nowhere).
    gone: CancellationToken,
    /// The server's tracker, for the rare send that must wait for room in the queue.
    tasks: TaskTracker,
    /// What `connect` granted; unset (nothing granted) until then.
    grant: std::sync::OnceLock<Grant>,
    /// The client's `client.id` from `connect`.
    client_id: std::sync::OnceLock<String>,
}

/// The grant of a connection that has not connected: nothing.
static NOTHING: Grant = Grant::Operator(Vec::new());

impl Conn {
    fn subscriptions(&self) -> std::sync::MutexGuard<'_, Subscriptions> {
        self.subscriptions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn grant(&self) -> &Grant {
        self.grant.get().unwrap_or(&NOTHING)
    }

    fn wants(&self, session_key: &str) -> bool {
        let subs = self.subscriptions();
        subs.all || subs.keys.contains(session_key)
    }

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
            self.tasks.spawn(async move {
                let _ = sender.send(out).await;
            });
        }
    }

    /// Sends an event; `numbered` ones carry the connection's next `seq`.
    async fn event(&self, event: ServerEvent, numbered: bool) {
        let seq = numbered.then(|| self.next_seq());
        match event.to_text(seq) {
            Ok(text) => {
                let _ = self.out.send(Outgoing::Frame(text)).await;
            }
            Err(e) => tracing::warn!(error = %e, "an event could not be encoded"),
        }
    }

    /// Sends an event written once for every connection (`rendered`), with this one's `seq`.
    async fn shared_event(&self, head: &str) {
        let text = close_frame(head, Some(self.next_seq()));
        let _ = self.out.send(Outgoing::Frame(text)).await;
    }

    fn next_seq(&self) -> u64 {
        self.event_seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    async fn close(&self, code: u16, reason: impl Into<String>) {
        let _ = self.out.send(Outgoing::Close(code, reason.into())).await;
    }
}

async fn run(state: Arc<ServerState>, socket: WebSocket, pending: Option<Pending>) {
    let conn_id = state.next_conn.fetch_add(1, Ordering::Relaxed);
    let (sink, mut stream) = socket.split();
    let (tx, rx) = mpsc::channel::<Outgoing>(OUTGOING_QUEUE);
    let writer = state.tasks.spawn(write_out(sink, rx));
    let conn = Arc::new(Conn {
        out: tx,
        event_seq: AtomicU64::new(0),
        subscriptions: Default::default(),
        held: Default::default(),
        gone: CancellationToken::new(),
        tasks: state.tasks.clone(),
        grant: std::sync::OnceLock::new(),
        client_id: std::sync::OnceLock::new(),
    });
    if handshake::connect(&state, &conn, conn_id, &mut stream, pending).await {
        serve(&state, &conn, conn_id, &mut stream).await;
    }
    conn.gone.cancel();
    drop(conn);
    let _ = writer.await;
}

/// The connection's writer, until a close frame or the client stops reading. The frames queued
/// together are written with one flush: the events a turn emits at once (a run's start, its
/// reply, the `agent.wait` answer) leave in one `sendto` instead of one each.
async fn write_out(mut sink: SplitSink<WebSocket, Message>, mut rx: mpsc::Receiver<Outgoing>) {
    while let Some(first) = rx.recv().await {
        // The work that queued these frames may have woken a run that waits on this worker:
        // it goes first (its model call or commit on the way), the frames leave after it,
        // with what it queued meanwhile.
        tokio::task::yield_now().await;
        let mut next = Some(first);
        let mut closing = false;
        while let Some(out) = next.take() {
            let message = match out {
                Outgoing::Frame(text) => Message::Text(Utf8Bytes::from(text)),
                Outgoing::Close(code, reason) => {
                    closing = true;
                    let reason = Utf8Bytes::from(reason);
                    Message::Close(Some(CloseFrame { code, reason }))
                }
            };
            match tokio::time::timeout(WRITE_TIMEOUT, sink.feed(message)).await {
                Ok(Ok(())) if !closing => next = rx.try_recv().ok(),
                Ok(Ok(())) => {}
                Ok(Err(_)) => closing = true,
                Err(_) => return stopped_reading(),
            }
        }
        match tokio::time::timeout(WRITE_TIMEOUT, sink.flush()).await {
            Ok(Ok(())) if !closing => {}
            Ok(_) => break,
            Err(_) => return stopped_reading(),
        }
    }
    let _ = tokio::time::timeout(WRITE_TIMEOUT, sink.close()).await;
}

fn stopped_reading() {
    tracing::info!("a client stopped reading; dropping its connection");
}

/// A connected client: its requests, its events, ticks, until it leaves or the gateway stops.
async fn serve(
    state: &Arc<ServerState>,
    conn: &Arc<Conn>,
    conn_id: u64,
    stream: &mut SplitStream<WebSocket>,
) {
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + state.tick_interval,
        state.tick_interval,
    );
    let mut stopping = state.stopping.subscribe();
    let mut runs = state.engine.runtime().subscribe();
    let mut deliveries = state.engine.outbox().subscribe();
    let mut changes = state.engine.sessions().subscribe_changes();
    loop {
        tokio::select! {
            change = changes.recv() => {
                let wanted = conn.subscriptions().changes;
                if let (true, Ok(change)) = (wanted, change) {
                    conn.event(ServerEvent::SessionsChanged((*change).clone()), true).await;
                }
            }
            event = deliveries.recv() => on_delivery(conn, conn_id, event).await,
            event = runs.recv() => on_run(state, conn, conn_id, event).await,
            message = stream.next() => match message {
                Some(Ok(message)) => {
                    if !handle(state, conn, message).await {
                        break;
                    }
                }
                Some(Err(e)) => {
                    read_error(conn, e).await;
                    break;
                }
                None => break,
            },
            _ = tick.tick() => {
                let ts = state.engine.now_ms();
                conn.event(ServerEvent::Tick(TickEvent { ts }), true).await;
            }
            changed = stopping.changed() => {
                if changed.is_err() || *stopping.borrow() {
                    let reason = "gateway stopping".to_string();
                    let goodbye = async {
                        conn.event(ServerEvent::Shutdown(ShutdownEvent { reason }), true).await;
                        conn.close(close_code::RESTART, "gateway stopping").await;
                    };
                    let _ = tokio::time::timeout(GOODBYE_TIMEOUT, goodbye).await;
                    break;
                }
            }
        }
    }
}

async fn on_delivery(
    conn: &Conn,
    conn_id: u64,
    event: Result<Arc<DeliveryEvent>, broadcast::error::RecvError>,
) {
    match event {
        Ok(event) => {
            let r = &event.record;
            let concerns = [
                r.session_key.as_ref().map(|k| k.as_str()),
                Some(r.to.as_str()),
            ];
            // A session list (`sessions.subscribe {}`) shows pending and failed deliveries.
            let listing = conn.subscriptions().changes;
            if listing || concerns.into_iter().flatten().any(|key| conn.wants(key)) {
                conn.event(ServerEvent::Delivery(info(r.clone())), true)
                    .await;
            }
        }
        Err(broadcast::error::RecvError::Lagged(missed)) => {
            tracing::warn!(conn_id, missed, "a slow client missed delivery events");
        }
        Err(broadcast::error::RecvError::Closed) => {}
    }
}

async fn on_run(
    state: &ServerState,
    conn: &Conn,
    conn_id: u64,
    event: Result<Arc<RunEvent>, broadcast::error::RecvError>,
) {
    match event {
        Ok(event) => {
            if let Some(event) = conn.held.keep(event).await {
                send_run(state, conn, &event).await;
            }
        }
        Err(broadcast::error::RecvError::Lagged(missed)) => {
            tracing::warn!(conn_id, missed, "a slow client missed run events");
        }
        Err(broadcast::error::RecvError::Closed) => {}
    }
}

/// The frames one run event makes for this connection: the run's `agent`/`chat` events when
/// it follows the session, `sessions.changed` when it subscribed to changes. Their text is
/// written once for all connections (`rendered`).
async fn send_run(state: &ServerState, conn: &Conn, event: &Arc<RunEvent>) {
    let follows = conn.wants(event.session_key.as_str());
    let changes = conn.subscriptions().changes;
    if !follows && !changes {
        return;
    }
    let frames = state.rendered.frames(event, state.engine.now_ms());
    if follows {
        for head in &frames.run {
            conn.shared_event(head).await;
        }
    }
    if let (true, Some(head)) = (changes, &frames.change) {
        conn.shared_event(head).await;
    }
}

/// Handles one frame of a connected client; false when the connection must end.
async fn handle(state: &Arc<ServerState>, conn: &Arc<Conn>, message: Message) -> bool {
    match message {
        Message::Text(text) => {
            match parse_request(text.as_str()) {
                Ok(req) if is_subscription(&req.method) => {
                    let response = match subscribe(state, conn, &req) {
                        Ok(payload) => ResponseFrame::ok(req.id, payload),
                        Err(error) => ResponseFrame::err(req.id, error),
                    };
                    conn.respond(response).await;
                }
                Ok(mut req) => {
                    held::own_run_id(conn.client_id.get(), &mut req);
                    follow_own_runs(state, conn, &req);
                    let held = conn.held.hold(&req).await;
                    let (state, conn) = (state.clone(), conn.clone());
                    // Boxed: the answer's future is 6 KB, which tokio would copy as it
                    // spawns and ends it (docs/decisions.md, "Small futures where tasks start").
                    state
                        .tasks
                        .clone()
                        .spawn(Box::pin(answer(state, conn, req, held)));
                }
                Err((id, error)) => conn.respond(ResponseFrame::err(id, error)).await,
            }
            true
        }
        Message::Binary(_) => {
            conn.respond(ResponseFrame::err("", binary_error())).await;
            true
        }
        Message::Close(_) => false,
        Message::Ping(_) | Message::Pong(_) => true,
    }
}

/// Runs one method and answers it (an interim answer first where the method has one), then
/// sends the events of the run it started that waited for the answer (`held`).
async fn answer(state: Arc<ServerState>, conn: Arc<Conn>, req: RequestFrame, held: Option<RunId>) {
    let interim_conn = conn.clone();
    let interim_id = req.id.clone();
    let interim = move |payload: Value| {
        interim_conn.respond_now(ResponseFrame::ok(interim_id.clone(), payload));
    };
    let grant = conn.grant();
    // A span per request that may start work (SPEC §10b): the runs it starts are its children.
    let span = match methods::is_traced(&req.method) {
        true => {
            tracing::info_span!("ws_request", otel.name = %format_args!("ws {}", req.method), otel.kind = "server")
        }
        false => tracing::Span::none(),
    };
    let dispatched =
        methods::dispatch(&state, grant, &req.method, req.params, &interim, &conn.gone);
    let text = match tracing::Instrument::instrument(dispatched, span).await {
        Ok(payload) => payload.response_frame(&req.id),
        Err(error) => serde_json::to_string(&Frame::Res(ResponseFrame::err(req.id, error))),
    };
    if let Ok(text) = text {
        let _ = conn.out.send(Outgoing::Frame(text)).await;
    }
    if let Some(run_id) = held {
        let (events, _newer_wait) = conn.held.release(&run_id).await;
        for event in events {
            send_run(&state, &conn, &event).await;
        }
    }
}

/// A frame the WebSocket layer refused: the client is told why with the close code RFC 6455
/// gives it — 1009 for a frame or message over `maxPayload` (with an `INVALID_REQUEST` first,
/// as for any bad frame), 1007 for text that is not UTF-8, 1002 for any other protocol error
/// (a reserved opcode, an unmasked frame, …). An I/O error means the client is gone.
async fn read_error(conn: &Conn, error: axum::Error) {
    use tokio_tungstenite::tungstenite::Error as WsError;
    use tokio_tungstenite::tungstenite::error::CapacityError;
    let inner = error.into_inner();
    let Some(error) = inner.downcast_ref::<WsError>() else {
        return;
    };
    let (code, reason) = match error {
        WsError::Capacity(CapacityError::MessageTooLong { size, max_size }) => {
            let reason = format!("frame of {size} bytes exceeds maxPayload ({max_size} bytes)");
            let shape = ErrorShape::new(ErrorCode::InvalidRequest, reason.clone());
            conn.respond(ResponseFrame::err("", shape)).await;
            (close_code::SIZE, reason)
        }
        WsError::Capacity(e) => (close_code::SIZE, e.to_string()),
        WsError::Utf8(_) => (
            close_code::INVALID,
            "text frame is not valid UTF-8".to_string(),
        ),
        WsError::Protocol(e) => (close_code::PROTOCOL, format!("protocol error: {e}")),
        _ => return,
    };
    conn.close(code, truncate(&reason, 120)).await;
}

/// A `req` frame, or the id (when one could be read) and an error that says what was wrong.
pub(crate) fn parse_request(text: &str) -> Result<RequestFrame, (String, ErrorShape)> {
    const EXPECTED: &str =
        "expected {\"type\":\"req\",\"id\":\"…\",\"method\":\"…\",\"params\":{…}}";
    // A well-formed request reads straight into its frame, with no `Value` in between; any
    // other text takes the way below, which says what is wrong. Only an object: serde would
    // read a frame from an array of its fields too.
    if text.trim_start().starts_with('{')
        && let Ok(Frame::Req(req)) = serde_json::from_str::<Frame>(text)
    {
        return Ok(req);
    }
    // Read strictly: a key written twice is refused here too, not the last one taken; the
    // answer still carries the request's id when the text is JSON at all.
    let value: Value = switchboard_protocol::strict::value(text).map_err(|e| {
        let loose = serde_json::from_str::<Value>(text).ok();
        let id = loose.as_ref().and_then(|v| v.get("id")?.as_str());
        let message = match loose.is_some() {
            true => format!("invalid frame ({e}); {EXPECTED}"),
            false => format!("frame is not JSON ({e}); {EXPECTED}"),
        };
        (
            id.unwrap_or_default().to_owned(),
            ErrorShape::new(ErrorCode::InvalidRequest, message),
        )
    })?;
    // serde would read a struct from an array of its fields in order: a frame is an object.
    if !value.is_object() {
        let message = format!(
            "a frame is a JSON object, not {}; {EXPECTED}",
            switchboard_protocol::decode::kind_of(&value)
        );
        return Err((
            String::new(),
            ErrorShape::new(ErrorCode::InvalidRequest, message),
        ));
    }
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::parse_request;
    use switchboard_protocol::ErrorCode;

    const KEYS: &[&str] = &[
        "type", "id", "method", "params", "event", "payload", "ok", "seq",
    ];
    const WORDS: &[&str] = &["req", "res", "event", "connect", "health", "chat.send", ""];

    fn value() -> impl Strategy<Value = Value> {
        switchboard_testkit::fuzz::json(KEYS, WORDS, 3)
    }

    #[test]
    fn a_key_written_twice_is_refused_not_the_last_one_taken() {
        for text in [
            r#"{"type":"req","id":"1","method":"health","method":"sessions.reset"}"#,
            r#"{"type":"req","id":"2","method":"sessions.patch","params":{"key":"main","label":"a","label":"b"}}"#,
        ] {
            let (id, e) = parse_request(text).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidRequest, "{text}");
            assert!(e.message.contains("written twice"), "{text}: {}", e.message);
            assert!(
                ["1", "2"].contains(&id.as_str()),
                "the answer names the request: {id:?}"
            );
        }
    }

    #[test]
    fn a_field_a_frame_does_not_have_is_refused_and_the_references_two_are_taken() {
        let text = r#"{"type":"req","id":"3","method":"health","colour":1}"#;
        let (id, e) = parse_request(text).unwrap_err();
        assert_eq!((id.as_str(), e.code), ("3", ErrorCode::InvalidRequest));
        assert!(
            e.message.contains("unknown field `colour`"),
            "{}",
            e.message
        );
        let text = r#"{"type":"req","id":"4","method":"health","traceparent":"00-x","expectedProfileId":"p"}"#;
        assert_eq!(parse_request(text).unwrap().method, "health");
    }

    #[test]
    fn an_array_of_a_frames_fields_is_not_a_frame() {
        let (_, e) = parse_request(r#"["req","1","health"]"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        assert!(
            e.message
                .starts_with("a frame is a JSON object, not an array;"),
            "{}",
            e.message
        );
    }

    proptest! {
        /// Any text frame is a request or an INVALID_REQUEST that says what a frame must look
        /// like; nothing panics.
        #[test]
        fn any_frame_is_a_request_or_says_what_is_expected(
            text in prop_oneof![
                3 => value().prop_map(|v| v.to_string()),
                1 => any::<String>(),
                // A well-formed request with any params: the decoder accepts it as is.
                1 => value().prop_map(|params| {
                    serde_json::json!({"type": "req", "id": "1", "method": "health", "params": params})
                        .to_string()
                }),
            ]
        ) {
            match parse_request(&text) {
                Ok(req) => {
                    let json: Value = serde_json::from_str(&text).unwrap();
                    prop_assert_eq!(&json["type"], "req");
                    prop_assert_eq!(json["method"].as_str(), Some(req.method.as_str()));
                }
                Err((_, e)) => {
                    prop_assert_eq!(e.code, ErrorCode::InvalidRequest);
                    prop_assert!(e.message.contains(r#"expected {"type":"req""#), "{}", e.message);
                }
            }
        }
    }
}
