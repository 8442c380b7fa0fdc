//! Test support for switchboard: [`MockLlm`], a real HTTP server on `127.0.0.1:0` that speaks
//! both model wire formats on one port, so tests exercise the real provider code (HTTP, SSE,
//! tool-call assembly, error classification) with no network beyond loopback.
//!
//! ```no_run
//! # use switchboard_testkit::{MockLlm, MockReply, MockToolCall};
//! # async fn demo() {
//! let mock = MockLlm::start().await;
//! mock.push(MockReply::ToolCalls(vec![MockToolCall::new("call_1", "sessions_list", r#"{"limit":5}"#)]));
//! mock.push(MockReply::text("all done"));
//! // point a provider at mock.openai_base_url() (api "openai-completions")
//! // or mock.anthropic_base_url() (api "anthropic-messages"), run the code under test, then:
//! assert_eq!(mock.requests().len(), 2);
//! mock.assert_tool_results_answer_tool_calls();
//! mock.stop().await;
//! # }
//! ```
//!
//! - `POST /v1/chat/completions` answers in the OpenAI Chat Completions format, `POST /v1/messages`
//!   in the Anthropic Messages format; each streams (SSE) when the request says `"stream": true`.
//! - Replies are queued with [`MockLlm::push`] and consumed in order whatever format asked; an
//!   empty queue answers the fallback ([`MockLlm::set_fallback`], default `Text("ok")`).
//! - Every turn reports usage: 10 prompt tokens, 5 completion tokens (OpenAI streams send the
//!   usage chunk only when `stream_options.include_usage` is set). Text streams word by word;
//!   tool-call arguments stream in 2–3 partial pieces so clients must assemble them.
//! - Every request is recorded ([`MockLlm::requests`]);
//!   [`MockLlm::assert_tool_results_answer_tool_calls`] checks the conversations they carried.

pub mod a2a;
pub mod a2a_remote;
mod anthropic;
mod context;
pub mod discord;
mod fake;
pub mod fuzz;
mod keeper;
pub mod mcp_servers;
mod openai;
pub mod otlp;
mod pairing;
pub mod postgres;
pub mod prometheus;
mod reply;
pub mod signal;
pub mod slack;
pub mod synapse;
pub mod telegram;
pub mod whatsapp;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use tokio::sync::watch;

pub use a2a_remote::{FakeA2a, Finish};
pub use anthropic::THINKING_SIGNATURE;
pub use context::prompt_tokens;
pub use discord::FakeDiscord;
pub use reply::{COMPLETION_TOKENS, Gate, MockReply, MockToolCall, PROMPT_TOKENS};
pub use slack::FakeSlack;
pub use telegram::{FakeFailure, FakeTelegram};

use fake::FakeServer;
use reply::{Ending, Turn, status_of, words};

/// Which wire format a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MockApi {
    /// `POST /v1/chat/completions`.
    OpenAi,
    /// `POST /v1/messages`.
    Anthropic,
}

/// One request the mock received.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub api: MockApi,
    /// Whether the body said `"stream": true`.
    pub stream: bool,
    /// Header names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Value::String` holding the raw text if it was not JSON).
    pub body: Value,
    /// The client's end of the connection it came over: requests from one kept connection
    /// share it.
    pub peer: Option<SocketAddr>,
}

impl Recorded {
    /// Whether an OpenAI stream asked for a usage chunk (`stream_options.include_usage`).
    fn include_usage(&self) -> bool {
        self.body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true)
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body's `messages` (empty when absent).
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

/// A mock LLM server; see the crate docs.
pub struct MockLlm {
    server: FakeServer<(), MockState>,
}

/// What the routes share: the queue, the recorded requests (the change counter counts them),
/// and the stop signal hanging and slow replies watch.
type Shared = fake::Shared<(), MockState>;

/// A reply decided by the request itself (see [`MockLlm::set_rule`]).
pub type MockRule = Box<dyn Fn(&Recorded) -> Option<MockReply> + Send + Sync>;

struct MockState {
    queue: VecDeque<MockReply>,
    fallback: MockReply,
    /// Consulted first: a reply it gives takes no queued one.
    rule: Option<MockRule>,
    requests: Vec<Recorded>,
    /// Prompts over this many tokens are refused (see `context.rs`).
    context_limit: Option<u64>,
}

impl MockLlm {
    /// Binds `127.0.0.1:0` and serves until [`MockLlm::stop`] (or drop).
    ///
    /// # Panics
    /// If the loopback listener cannot be bound (a broken test environment).
    pub async fn start() -> MockLlm {
        let state = MockState {
            queue: VecDeque::new(),
            fallback: MockReply::text("ok"),
            rule: None,
            requests: Vec::new(),
            context_limit: None,
        };
        let routes = Router::new()
            .route("/v1/chat/completions", post(openai_route))
            .route("/v1/messages", post(anthropic_route));
        MockLlm {
            server: FakeServer::start("MockLlm", (), state, routes).await,
        }
    }

    /// `http://127.0.0.1:PORT/v1`: the `baseUrl` of an `openai-completions` provider.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr)
    }

    /// `http://127.0.0.1:PORT`: the `baseUrl` of an `anthropic-messages` provider.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    /// Queues a reply; replies are consumed in order, whatever the format asked.
    pub fn push(&self, reply: MockReply) {
        self.server.lock().queue.push_back(reply);
    }

    /// Refuses prompts of more than `limit` tokens ([`prompt_tokens`]) with the provider's
    /// context-length error, consuming no reply; prompts within it report their count.
    pub fn set_context_limit(&self, limit: Option<u64>) {
        self.server.lock().context_limit = limit;
    }

    /// Answers each request `rule` has a reply for with that reply, before the queue: for a
    /// client that calls the model more often than a test can predict (another gateway's
    /// title or memory calls), replies keyed on what was asked.
    pub fn set_rule(&self, rule: MockRule) {
        self.server.lock().rule = Some(rule);
    }

    /// The reply used when the queue is empty (default: `Text("ok")`).
    pub fn set_fallback(&self, reply: MockReply) {
        self.server.lock().fallback = reply;
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.server.lock().requests.clone()
    }

    /// Resolves once at least `n` requests have arrived (recorded before their replies start).
    pub async fn wait_requests(&self, n: usize) {
        let server = &self.server;
        server.wait(|| server.lock().requests.len() >= n).await;
    }

    /// The first tool-pairing problem among the recorded requests (see
    /// [`MockLlm::assert_tool_results_answer_tool_calls`]).
    pub fn check_tool_results_answer_tool_calls(&self) -> Result<(), String> {
        for (n, recorded) in self.requests().iter().enumerate() {
            pairing::check(recorded).map_err(|problem| {
                format!(
                    "MockLlm request #{n} ({:?}): {problem}\nmessages: {}",
                    recorded.api,
                    Value::Array(recorded.messages().to_vec())
                )
            })?;
        }
        Ok(())
    }

    /// Panics with a clear message unless, in every recorded request, each tool result answers
    /// a tool call of the immediately preceding assistant turn (OpenAI: `role: "tool"` with a
    /// `tool_call_id` among that turn's `tool_calls`; Anthropic: `tool_result.tool_use_id` among
    /// its `tool_use` ids), and every tool call of an assistant turn followed by more messages
    /// got exactly one result.
    pub fn assert_tool_results_answer_tool_calls(&self) {
        if let Err(problem) = self.check_tool_results_answer_tool_calls() {
            panic!("{problem}");
        }
    }

    /// Stops serving: hanging and slow replies end at once, then the server shuts down (or is
    /// aborted after 5 s: a client that never reads must not hang the test).
    pub async fn stop(self) {
        self.server.stop_within(Duration::from_secs(5)).await;
    }
}

async fn openai_route(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (recorded, model) = record(MockApi::OpenAi, peer, &headers, &body);
    answer(shared, recorded, model).await
}

async fn anthropic_route(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (recorded, model) = record(MockApi::Anthropic, peer, &headers, &body);
    answer(shared, recorded, model).await
}

/// The request as [`MockLlm::requests`] keeps it, and the model it names.
fn record(api: MockApi, peer: SocketAddr, headers: &HeaderMap, body: &Bytes) -> (Recorded, String) {
    let body: Value = serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock")
        .to_string();
    let headers = headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let recorded = Recorded {
        api,
        stream,
        headers,
        body,
        peer: Some(peer),
    };
    (recorded, model)
}

/// Records the request, takes the next reply and renders it in the request's format.
async fn answer(shared: Arc<Shared>, recorded: Recorded, model: String) -> Response {
    let (api, stream, include_usage) = (recorded.api, recorded.stream, recorded.include_usage());
    let counted = prompt_tokens(&recorded.body);
    let (mut reply, limit) = {
        let mut state = shared.lock();
        state.requests.push(recorded);
        let limit = state.context_limit;
        if limit.is_some_and(|limit| counted > limit) {
            drop(state);
            shared.bump();
            return context::refusal(api, counted, limit.unwrap_or_default());
        }
        let ruled = state
            .rule
            .as_ref()
            .and_then(|rule| rule(state.requests.last()?));
        let fallback = state.fallback.clone();
        let reply = ruled.or_else(|| state.queue.pop_front());
        (reply.unwrap_or(fallback), limit)
    };
    shared.bump();
    let mut shutdown = shared.stopped();
    let mut end = None;
    loop {
        let turn = match reply {
            MockReply::Delay(wait, inner) => {
                if !pause(wait, &mut shutdown).await {
                    return StatusCode::SERVICE_UNAVAILABLE.into_response();
                }
                reply = *inner;
                continue;
            }
            MockReply::Gated(gate, inner) => {
                tokio::select! {
                    () = gate.opened() => {}
                    _ = shutdown.wait_for(|s| *s) => {
                        return StatusCode::SERVICE_UNAVAILABLE.into_response();
                    }
                }
                reply = *inner;
                continue;
            }
            MockReply::Lingering(gate, inner) => {
                end = Some(gate);
                reply = *inner;
                continue;
            }
            MockReply::Hang => {
                let _ = shutdown.wait_for(|s| *s).await;
                return StatusCode::SERVICE_UNAVAILABLE.into_response();
            }
            MockReply::Status {
                status,
                body,
                headers,
            } => return status_reply(status, &body, &headers),
            MockReply::Text(text) => Turn::text(&text),
            MockReply::ToolCalls(calls) => Turn {
                calls,
                ..Turn::default()
            },
            MockReply::TextAndToolCalls(text, calls) => Turn {
                calls,
                ..Turn::text(&text)
            },
            MockReply::Thinking { thinking, text } => Turn {
                thinking: words(&thinking),
                ..Turn::text(&text)
            },
            MockReply::Slow { chunks, delay } => {
                if !stream && !pause(delay.saturating_mul(chunks.len() as u32), &mut shutdown).await
                {
                    return StatusCode::SERVICE_UNAVAILABLE.into_response();
                }
                Turn {
                    text: chunks,
                    chunk_delay: delay,
                    ..Turn::default()
                }
            }
            MockReply::Cut(text) => Turn {
                ending: Ending::Cut,
                ..Turn::text(&text)
            },
            MockReply::ErrorEvent { kind, message } => Turn {
                text: words("partial"),
                ending: Ending::Error { kind, message },
                ..Turn::default()
            },
        };
        let turn = Turn {
            prompt_tokens: limit.map(|_| counted),
            ..turn
        };
        return render(api, &turn, &model, (stream, include_usage), shutdown, end);
    }
}

fn render(
    api: MockApi,
    turn: &Turn,
    model: &str,
    (stream, include_usage): (bool, bool),
    shutdown: watch::Receiver<bool>,
    end: Option<Gate>,
) -> Response {
    if stream {
        let frames = match api {
            MockApi::OpenAi => openai::stream(turn, model, include_usage),
            MockApi::Anthropic => anthropic::stream(turn, model),
        };
        return sse(frames, shutdown, end);
    }
    match (&turn.ending, api) {
        (Ending::Error { kind, message }, MockApi::OpenAi) => {
            status_reply(status_of(kind), &openai::error_body(kind, message), &[])
        }
        (Ending::Error { kind, message }, MockApi::Anthropic) => {
            status_reply(status_of(kind), &anthropic::error_body(kind, message), &[])
        }
        (ending, _) => {
            let body = match api {
                MockApi::OpenAi => openai::json_reply(turn, model),
                MockApi::Anthropic => anthropic::json_reply(turn, model),
            };
            let mut text = body.to_string();
            if *ending == Ending::Cut {
                let mut half = text.len() / 2;
                while !text.is_char_boundary(half) {
                    half -= 1;
                }
                text.truncate(half);
            }
            ([(header::CONTENT_TYPE, "application/json")], text).into_response()
        }
    }
}

/// One piece of a streamed answer, sent after `delay`.
pub(crate) struct Frame {
    pub delay: Duration,
    pub bytes: String,
}

impl Frame {
    pub fn now(bytes: String) -> Self {
        Self {
            delay: Duration::ZERO,
            bytes,
        }
    }
}

/// An SSE body sending `frames` with their delays; it ends early when the mock stops, and
/// after its last frame only once `end` is open.
fn sse(frames: Vec<Frame>, shutdown: watch::Receiver<bool>, end: Option<Gate>) -> Response {
    let frames = futures_util::stream::unfold(
        (frames.into_iter(), shutdown, end),
        |(mut frames, mut shutdown, mut end)| async move {
            let Some(frame) = frames.next() else {
                let gate = end.take()?;
                tokio::select! {
                    () = gate.opened() => {}
                    _ = shutdown.wait_for(|s| *s) => {}
                }
                return None;
            };
            if !pause(frame.delay, &mut shutdown).await {
                return None;
            }
            Some((
                Ok::<_, std::convert::Infallible>(Bytes::from(frame.bytes)),
                (frames, shutdown, end),
            ))
        },
    );
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(frames),
    )
        .into_response()
}

fn status_reply(status: u16, body: &Value, headers: &[(String, String)]) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// Sleeps `wait` unless the mock stops first (then `false`).
async fn pause(wait: Duration, shutdown: &mut watch::Receiver<bool>) -> bool {
    if wait.is_zero() {
        return !*shutdown.borrow();
    }
    tokio::select! {
        () = tokio::time::sleep(wait) => true,
        _ = shutdown.wait_for(|s| *s) => false,
    }
}

/// Says that a test could not run for lack of a component (`line`: which test, what is missing,
/// what installs it), on the terminal rather than in the captured output. Under `CI=true`,
/// where `.ci/run` installs every component the tests need, a missing one fails the test
/// instead: a green CI run means every test ran.
///
/// # Panics
/// Under `CI=true`.
pub fn not_run(line: &str) {
    use std::io::Write as _;
    let line = format!("\n{}\n", line.trim());
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "{} — under CI=true every component must be installed",
            line.trim()
        );
    }
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// An HTTP client for the test servers (ring as rustls's provider, a 30 s bound per request).
///
/// # Panics
/// If no client can be built (a broken test environment).
pub(crate) fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap_or_else(|e| panic!("an HTTP client: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A bare HTTP/1.1 POST, read to the end (the mock closes after `Connection: close`).
    async fn post(mock: &MockLlm, path: &str, body: &str) -> String {
        post_to(mock.addr(), path.to_string(), body.to_string()).await
    }

    /// [`post`] to an address, for a client task that outlives the borrow of the mock; what
    /// was read before the connection broke off is the answer.
    async fn post_to(addr: SocketAddr, path: String, body: String) -> String {
        let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        let _ = socket.read_to_string(&mut out).await;
        out
    }

    #[tokio::test]
    async fn serves_both_formats_in_queue_order() {
        let mock = MockLlm::start().await;
        mock.push(MockReply::ToolCalls(vec![MockToolCall::new(
            "c1",
            "t",
            r#"{"a":1}"#,
        )]));
        mock.push(MockReply::status(429, "slow down"));
        let openai = post(
            &mock,
            "/v1/chat/completions",
            r#"{"model":"m","stream":true,"stream_options":{"include_usage":true}}"#,
        )
        .await;
        assert!(openai.contains(r#""arguments":"{\"""#), "{openai}");
        assert!(
            openai.contains(r#""prompt_tokens":10"#) && openai.contains("data: [DONE]\n\n"),
            "{openai}"
        );
        let limited = post(&mock, "/v1/messages", r#"{"model":"m"}"#).await;
        assert!(limited.starts_with("HTTP/1.1 429"), "{limited}");
        let fallback = post(&mock, "/v1/messages", r#"{"model":"m","stream":true}"#).await;
        assert!(fallback.contains("event: message_stop"), "{fallback}");
        let requests = mock.requests();
        assert_eq!(
            requests
                .iter()
                .map(|r| (r.api, r.stream))
                .collect::<Vec<_>>(),
            [
                (MockApi::OpenAi, true),
                (MockApi::Anthropic, false),
                (MockApi::Anthropic, true),
            ]
        );
        assert_eq!(requests[0].header("Content-Type"), Some("application/json"));
        mock.stop().await;
    }

    #[tokio::test]
    async fn stop_ends_a_hanging_reply() {
        let mock = MockLlm::start().await;
        mock.set_fallback(MockReply::Hang);
        let body = r#"{"stream":true}"#.to_string();
        let client = tokio::spawn(post_to(mock.addr(), "/v1/messages".into(), body));
        tokio::time::timeout(Duration::from_secs(60), mock.wait_requests(1))
            .await
            .unwrap();
        mock.stop().await;
        assert!(client.await.unwrap().starts_with("HTTP/1.1 503"));
    }

    /// Paused time: the hour passes as soon as nothing else can happen, so a reply that did not
    /// wait for its gate would be in before it.
    #[tokio::test(start_paused = true)]
    async fn a_gated_reply_waits_for_its_gate() {
        let mock = MockLlm::start().await;
        let gate = Gate::new();
        mock.push(MockReply::gated(&gate, MockReply::text("let through")));
        let body = r#"{"model":"m"}"#.to_string();
        let mut client = tokio::spawn(post_to(mock.addr(), "/v1/chat/completions".into(), body));
        mock.wait_requests(1).await;
        let early = tokio::time::timeout(Duration::from_secs(3600), &mut client).await;
        assert!(early.is_err(), "the reply did not wait for its gate");
        gate.open();
        let answer = client.await.unwrap();
        assert!(answer.contains("let through"), "{answer}");
        mock.stop().await;
    }
}
