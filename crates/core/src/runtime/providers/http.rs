//! Shared HTTP plumbing of the wire-format providers: the request target ([`Endpoint`]), sending
//! a JSON body, reading a JSON or SSE answer, and turning every failure into a classified
//! [`ProviderError`].
//!
//! Invariants kept here so the format modules need not think about them:
//! - every error message goes through [`redact`] with the provider's API key, and no error or log
//!   line ever contains a request header (the key travels in one);
//! - HTTP statuses are classified in one place ([`classify_status`]) so OpenAI, Anthropic and the
//!   many OpenAI-compatible servers retry on the same kinds;
//! - a streamed answer that ends before the format's terminal event is a [`ProviderError::Network`]
//!   (the connection dropped), never a silently shortened reply.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use futures_util::{FutureExt, Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use switchboard_protocol::message::ContentBlock;

use super::merged::Merged;
use super::{EventSink, ProviderError, StreamEvent, redact};
use crate::config::ProviderConfig;
use crate::sse;

/// A reqwest client with the ring TLS provider and a per-request timeout.
///
/// The timeout covers the whole exchange, streamed body included, so a stream that stalls ends
/// as a network error instead of hanging the run.
pub fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    client_builder()
        .timeout(timeout)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// How every HTTP client of the gateway starts: rustls with the ring provider and the TLS
/// settings all of them share ([`TLS`]), no Nagle delay.
pub fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = reqwest::Client::builder().tcp_nodelay(true);
    match &*TLS {
        Ok(tls) => builder.tls_backend_preconfigured(tls.clone()),
        // reqwest reads the roots itself, and its `build` says why that fails.
        Err(_) => builder,
    }
}

/// The TLS settings of every HTTP client of the gateway, as reqwest would make them (TLS 1.2
/// and 1.3 on ring, the system's root certificates through the platform's verifier, HTTP/2 or
/// 1.1 offered), made once a process: reqwest read and parsed the system's roots again for
/// each client it built (docs/decisions.md, "The HTTP clients share one TLS setting", says
/// where and what it cost). Roots added to the system are seen from the next start.
static TLS: LazyLock<Result<rustls::ClientConfig, String>> = LazyLock::new(|| {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(|e| format!("cannot read the system's root certificates: {e}"))?;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tls)
});

/// Reads the system's root certificates on a thread of its own, so that start-up goes on
/// meanwhile; the first client built waits for them.
pub fn read_roots_ahead() {
    let _ = std::thread::Builder::new()
        .name("tls-roots".into())
        .spawn(|| LazyLock::force(&TLS));
}

/// The shared TLS settings for a connection that speaks HTTP/1.1 only (a platform's WebSocket):
/// no protocol offered, so a server cannot choose HTTP/2.
pub(crate) fn tls_http1() -> Result<rustls::ClientConfig, String> {
    let mut tls = TLS.as_ref().map_err(Clone::clone)?.clone();
    tls.alpn_protocols.clear();
    Ok(tls)
}

/// `base` + `/` + `path` with exactly one slash between them.
pub fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// Longest excerpt of a provider's error body quoted in a message.
const MAX_QUOTED: usize = 300;

/// Where one provider's requests go and how they authenticate.
pub struct Endpoint {
    /// The provider id, first word of every error message.
    provider: String,
    url: String,
    headers: HeaderMap,
    /// The API key and long configured header values (which often carry credentials too):
    /// removed from every message.
    secrets: Vec<String>,
    client: reqwest::Client,
    /// A configured header or key that cannot be sent (reported by every request, since the
    /// constructors cannot fail).
    unusable: Option<String>,
}

impl Endpoint {
    /// `auth` are the format's own headers (the key header, a version), added after the
    /// configured `headers` so a configured header cannot silently replace the key.
    pub fn new(
        provider: &str,
        config: &ProviderConfig,
        path: &str,
        auth: Vec<(&'static str, String)>,
        client: reqwest::Client,
    ) -> Self {
        let base = config
            .base_url
            .as_deref()
            .unwrap_or(config.api.default_base_url());
        let mut headers = HeaderMap::new();
        let mut unusable = None;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let configured = config.headers.iter().map(|(n, v)| (n.as_str(), v.clone()));
        for (name, value) in configured.chain(auth) {
            match (HeaderName::try_from(name), HeaderValue::try_from(value)) {
                (Ok(name), Ok(mut value)) => {
                    value.set_sensitive(true);
                    headers.insert(name, value);
                }
                // Neither the value nor the parse error is quoted: either may hold the key.
                _ => {
                    unusable.get_or_insert_with(|| {
                        format!("{provider}: the value of header {name:?} cannot be sent in HTTP")
                    });
                }
            }
        }
        Self {
            provider: provider.to_string(),
            url: join_url(base, path),
            headers,
            secrets: config
                .api_key
                .iter()
                .chain(config.headers.values().filter(|v| v.len() >= 8))
                .cloned()
                .collect(),
            client,
            unusable,
        }
    }

    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// `text` prefixed with the provider id, without the API key or a configured header value.
    pub fn message(&self, text: &str) -> String {
        let text = format!("{}: {text}", self.provider);
        self.secrets
            .iter()
            .fold(text, |text, secret| redact(&text, Some(secret)))
    }

    pub fn invalid(&self, text: &str) -> ProviderError {
        ProviderError::InvalidResponse {
            message: self.message(text),
        }
    }

    /// POSTs `body`, JSON already serialized; a non-2xx answer becomes its classified error.
    pub async fn post_json(&self, body: Vec<u8>) -> Result<reqwest::Response, ProviderError> {
        if let Some(problem) = &self.unusable {
            return Err(ProviderError::BadRequest {
                status: 0,
                message: problem.clone(),
            });
        }
        tracing::debug!(provider = %self.provider, url = %self.url, "model request");
        let response = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send()
            .await
            .map_err(|e| self.network(e))?;
        let status = response.status().as_u16();
        if response.status().is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        // A body we cannot read still leaves the status to classify by.
        let text = response.text().await.unwrap_or_default();
        Err(self.status_error(status, retry_after, &text))
    }

    /// The whole body as JSON.
    pub async fn json(&self, response: reqwest::Response) -> Result<Value, ProviderError> {
        let text = response.text().await.map_err(|e| self.network(e))?;
        serde_json::from_str(&text)
            .map_err(|e| self.invalid(&format!("the answer is not JSON ({e}): {}", excerpt(&text))))
    }

    /// Feeds each SSE event (`event` name, `data`) to `on_event` until it returns
    /// [`Sse::Done`]. A stream that ends first is a network error unless `on_event` said the
    /// reply was already complete ([`Sse::Complete`]). `on_event` tells its pieces to the sink
    /// it is given, which joins the pieces received together into one event for `events`
    /// ([`Merged`]).
    pub async fn sse(
        &self,
        response: reqwest::Response,
        events: EventSink<'_>,
        mut on_event: impl FnMut(&str, &str, EventSink<'_>) -> Result<Sse, ProviderError> + Send,
    ) -> Result<(), ProviderError> {
        let mut body = Box::pin(response.bytes_stream());
        let merged = Merged::new(events);
        let sink = |event| merged.push(event);
        let end = self
            .read_sse(
                body.as_mut(),
                |e| self.network(e),
                |name, data| on_event(name, data, &sink),
                || merged.flush(),
                || merged.holds(),
            )
            .await;
        merged.flush();
        let end = end?;
        if end == End::Terminal {
            // What follows the terminal event (a chunked body's last chunk, already on its
            // way) is read off the turn's path: hyper closes an HTTP/1.1 connection whose body
            // is dropped unread, so without this every model call paid a new connection.
            tokio::spawn(drain(body));
        }
        Ok(())
    }

    /// [`Endpoint::sse`] on a body already in memory (the fuzz targets' door: the same framing
    /// and the same end-of-stream rule, without a connection).
    pub fn sse_body(
        &self,
        body: &[u8],
        on_event: impl FnMut(&str, &str) -> Result<Sse, ProviderError> + Send,
    ) -> Result<(), ProviderError> {
        let bytes = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(body)]);
        // An in-memory stream is always ready: the future ends at its first poll.
        self.read_sse(
            std::pin::pin!(bytes),
            |never| match never {},
            on_event,
            || {},
            || false,
        )
        .now_or_never()
        .unwrap_or_else(|| Err(self.invalid("an in-memory stream was not ready")))
        .map(drop)
    }

    /// Feeds the events framed from `bytes` to `on_event` until the terminal event or the
    /// body's end; says which came. `read_all` is called once the events of every chunk
    /// received so far are fed, before the next chunk is waited for; `holds` says whether a
    /// piece is held back meanwhile ([`Merged`](super::merged::Merged)).
    async fn read_sse<B: AsRef<[u8]>, E>(
        &self,
        mut bytes: std::pin::Pin<&mut (impl Stream<Item = Result<B, E>> + Send)>,
        transport: impl Fn(E) -> ProviderError + Send,
        mut on_event: impl FnMut(&str, &str) -> Result<Sse, ProviderError> + Send,
        read_all: impl Fn() + Send,
        holds: impl Fn() -> bool + Send,
    ) -> Result<End, ProviderError> {
        let (mut events, mut complete) = (sse::Decoder::default(), false);
        loop {
            while let Some(event) = events.next_event().map_err(|sse::NotUtf8| {
                self.invalid("unreadable event stream: a line is not UTF-8")
            })? {
                match on_event(&event.event, &event.data)? {
                    Sse::Done => return Ok(End::Terminal),
                    Sse::Complete => complete = true,
                    Sse::More => {}
                }
            }
            // A chunk already received is fed at once; only before a wait is what the chunks
            // told so far let go (`read_all`). The connection's task hands the body over a
            // chunk at a time: while a piece is held back (`holds`), that task is let run once
            // first, for a chunk it holds already, to join the piece. With nothing held, the
            // wait is the same either way, and a yield would cost a poll of the driver.
            let mut chunk = bytes.next().now_or_never();
            if chunk.is_none() && holds() {
                tokio::task::yield_now().await;
                chunk = bytes.next().now_or_never();
            }
            let chunk = match chunk {
                Some(chunk) => chunk,
                None => {
                    read_all();
                    bytes.next().await
                }
            };
            match chunk {
                Some(chunk) => events.feed(chunk.map_err(&transport)?.as_ref()),
                None => break,
            }
        }
        if complete {
            Ok(End::Stream)
        } else {
            Err(ProviderError::Network {
                message: self.message("the stream ended before the reply was complete"),
            })
        }
    }

    /// A transport failure (connect, timeout, reset) as a network error.
    pub fn network(&self, error: reqwest::Error) -> ProviderError {
        let what = if error.is_timeout() {
            "the request timed out"
        } else if error.is_connect() {
            "cannot connect"
        } else if error.is_body() || error.is_decode() {
            "the connection failed while reading the answer"
        } else {
            "the request failed"
        };
        // The chain's innermost causes say why (connection refused, reset, …); the URL is
        // named once, without query, and the whole text is redacted.
        let mut causes = Vec::new();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        causes.dedup();
        let detail = causes.last().map(|c| format!(": {c}")).unwrap_or_default();
        ProviderError::Network {
            message: self.message(&format!("{what} ({}){detail}", self.url)),
        }
    }

    /// Classifies an HTTP error status with its body.
    pub fn status_error(
        &self,
        status: u16,
        retry_after: Option<Duration>,
        body: &str,
    ) -> ProviderError {
        let message = self.message(&error_text(body));
        // The code (`context_length_exceeded`) may be in the body but not in its message.
        if matches!(status, 400 | 413 | 422) && mentions_context_length(body) {
            return ProviderError::ContextLength { message };
        }
        classify_status(status, retry_after, &message)
    }

    /// Classifies an error object sent inside a 200 answer or a stream (`{"error": {...}}`,
    /// Anthropic `{"type":"error","error":{"type":…}}`).
    pub fn embedded_error(&self, error: &Value) -> ProviderError {
        let kind = error
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let code = error.get("code");
        let status = code
            .and_then(Value::as_u64)
            .or_else(|| code.and_then(Value::as_str).and_then(|c| c.parse().ok()))
            .filter(|s| (400..600).contains(s))
            .map(|s| s as u16)
            .unwrap_or_else(|| status_of_error_type(kind, code.and_then(Value::as_str)));
        let text = error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| excerpt(&error.to_string()));
        let text = if kind.is_empty() {
            text
        } else {
            format!("{text} ({kind})")
        };
        classify_status(status, None, &self.message(&text))
    }
}

/// Where a streamed reply stopped being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// At the format's terminal event: the body may hold more (at least its last chunk).
    Terminal,
    /// At the body's end.
    Stream,
}

/// The most of a body read after its terminal event, in bytes and in time, before the
/// connection is given up (the body dropped, and the connection closed, as before).
const DRAIN_BYTES: usize = 64 * 1024;
const DRAIN_TIME: Duration = Duration::from_secs(2);

/// Reads a streamed body to its end after the terminal event, so that hyper hands its HTTP/1.1
/// connection back to the pool (an HTTP/2 stream is cheap to drop either way); what it reads is
/// dropped, and a body that goes on past [`DRAIN_BYTES`] or [`DRAIN_TIME`] is given up.
async fn drain<B: AsRef<[u8]>, E>(mut body: std::pin::Pin<Box<impl Stream<Item = Result<B, E>>>>) {
    let rest = async {
        let mut read = 0;
        while let Some(Ok(chunk)) = body.next().await {
            read += chunk.as_ref().len();
            if read >= DRAIN_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, rest).await;
}

/// What an SSE handler wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sse {
    /// Keep reading.
    More,
    /// The reply is complete; a clean end of stream from here on is fine.
    Complete,
    /// The terminal event: stop reading.
    Done,
}

/// The HTTP status an error type stands for (Anthropic's `error.type`, OpenAI's `type`/`code`).
fn status_of_error_type(kind: &str, code: Option<&str>) -> u16 {
    match (kind, code.unwrap_or_default()) {
        (_, "context_length_exceeded") => 400,
        ("authentication_error", _) | (_, "invalid_api_key") => 401,
        ("permission_error", _) => 403,
        ("not_found_error", _) => 404,
        ("request_too_large", _) => 413,
        ("rate_limit_error" | "rate_limit_exceeded", _) | (_, "rate_limit_exceeded") => 429,
        ("overloaded_error", _) => 529,
        ("invalid_request_error", _) => 400,
        _ => 500,
    }
}

/// The error class of an HTTP status. `message` is already prefixed and redacted.
pub fn classify_status(status: u16, retry_after: Option<Duration>, message: &str) -> ProviderError {
    let message = message.to_string();
    match status {
        401 | 403 => ProviderError::Auth { status, message },
        429 => ProviderError::RateLimited {
            retry_after,
            message,
        },
        400 | 413 | 422 if mentions_context_length(&message) => {
            ProviderError::ContextLength { message }
        }
        // 408: the server gave up waiting for us, which is as transient as a dropped connection.
        408 => ProviderError::Network { message },
        400..=499 => ProviderError::BadRequest { status, message },
        _ => ProviderError::Server { status, message },
    }
}

fn mentions_context_length(text: &str) -> bool {
    let text = text.to_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "context length",
        "context window",
        "prompt is too long",
        "too many tokens",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

/// `retry-after-ms` (milliseconds) or `retry-after` (seconds); an HTTP date is ignored.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

/// The readable part of an error body: `error.message` (OpenAI, Anthropic), `error` as a
/// string (Ollama), `message`, else an excerpt of the body.
fn error_text(body: &str) -> String {
    let Ok(json) = serde_json::from_str::<Value>(body) else {
        return if body.trim().is_empty() {
            "(no body)".into()
        } else {
            excerpt(body)
        };
    };
    let error = json.get("error");
    error
        .and_then(|e| e.get("message"))
        .or(error.filter(|e| e.is_string()))
        .or(json.get("message"))
        .or(Some(&json))
        .and_then(Value::as_str)
        .map(excerpt)
        .unwrap_or_else(|| excerpt(body))
}

/// At most [`MAX_QUOTED`] characters of `text`, on one line.
pub fn excerpt(text: &str) -> String {
    let flat: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= MAX_QUOTED {
        return flat;
    }
    let cut: String = flat.chars().take(MAX_QUOTED).collect();
    format!("{cut}…")
}

/// Token counts arrive as JSON numbers; anything else counts as zero.
pub fn tokens(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Parses a tool call's assembled argument text: empty means no arguments (`{}`); anything that
/// is not a JSON object is kept as `Value::String(raw)` for the run loop to reject.
pub fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::String(raw.to_string()),
    }
}

/// Reports a whole turn read in one piece (non-streaming mode) as the events a stream would
/// have produced, so consumers see the same sequence either way.
pub fn replay(content: &[ContentBlock], events: EventSink<'_>) {
    for block in content {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => {
                events(StreamEvent::TextDelta(text.clone()))
            }
            ContentBlock::Thinking { thinking, .. } if !thinking.is_empty() => {
                events(StreamEvent::ThinkingDelta(thinking.clone()))
            }
            ContentBlock::ToolCall { id, name, .. } => events(StreamEvent::ToolCallStarted {
                id: id.clone(),
                name: name.clone(),
            }),
            _ => {}
        }
    }
}

/// Whether the answer is a JSON document rather than the event stream that was asked for
/// (some OpenAI-compatible servers ignore `stream: true`).
pub fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// A tool-call id nobody sent (some OpenAI-compatible servers omit ids).
pub fn fresh_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use serde_json::json;

    /// A server that keeps sending after its terminal event is read no further than the bound in
    /// bytes; one that sends nothing more, no longer than the bound in time (the clock paused:
    /// each chunk of the endless body takes a millisecond of it).
    #[tokio::test(start_paused = true)]
    async fn a_drain_stops_at_its_bounds() {
        let sent = Arc::new(AtomicUsize::new(0));
        let counted = sent.clone();
        let endless = futures_util::stream::unfold((), move |()| {
            let counted = counted.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                counted.fetch_add(1024, Ordering::Relaxed);
                Some((Ok::<_, std::convert::Infallible>(vec![b'x'; 1024]), ()))
            }
        });
        let started = tokio::time::Instant::now();
        drain(Box::pin(endless)).await;
        assert_eq!(sent.load(Ordering::Relaxed), DRAIN_BYTES);
        assert!(started.elapsed() < DRAIN_TIME, "the byte bound ended it");
        let silent = futures_util::stream::pending::<Result<Vec<u8>, std::convert::Infallible>>();
        let started = tokio::time::Instant::now();
        drain(Box::pin(silent)).await;
        assert!(started.elapsed() >= DRAIN_TIME, "the time bound ended it");
    }

    /// An SSE answer whose body arrives in two reads: `first`, then `then` only once the
    /// reader told something (`told`), as a provider's next chunk comes while the gateway waits.
    fn answer(
        first: &'static str,
        then: Result<&'static str, std::io::Error>,
        told: tokio::sync::oneshot::Receiver<()>,
    ) -> reqwest::Response {
        let first = futures_util::stream::once(async move { Ok(first) });
        let then = futures_util::stream::once(async move {
            let _ = told.await;
            then
        });
        let body = reqwest::Body::wrap_stream(first.chain(then));
        reqwest::Response::from(::http::Response::new(body))
    }

    /// What `sse` tells of `first` and `then` when each event's data is a text piece and
    /// `[DONE]` ends the stream; and how it ended.
    async fn pieces(
        first: &'static str,
        then: Result<&'static str, std::io::Error>,
    ) -> (Vec<StreamEvent>, Result<(), ProviderError>) {
        let endpoint = super::super::fuzz::endpoint();
        let (tell, told) = tokio::sync::oneshot::channel();
        let tell = std::sync::Mutex::new(Some(tell));
        let seen = std::sync::Mutex::new(Vec::new());
        let events = |e| {
            seen.lock().unwrap().push(e);
            if let Some(tell) = tell.lock().unwrap().take() {
                let _ = tell.send(());
            }
        };
        let read = endpoint.sse(answer(first, then, told), &events, |_, data, sink| {
            if data == "[DONE]" {
                return Ok(Sse::Done);
            }
            sink(StreamEvent::TextDelta(data.to_string()));
            Ok(Sse::More)
        });
        // A reader that held the first read's pieces while it waited would wait forever.
        let ended = tokio::time::timeout(Duration::from_secs(30), read)
            .await
            .expect("the first read's pieces were told before the reader waited");
        (seen.into_inner().unwrap(), ended)
    }

    #[tokio::test]
    async fn the_pieces_received_together_are_one_event() {
        let text = |t: &str| StreamEvent::TextDelta(t.into());
        let (told, ended) =
            pieces("data: a\n\ndata: b\n\n", Ok("data: c\n\ndata: [DONE]\n\n")).await;
        ended.unwrap();
        assert_eq!(told, [text("ab"), text("c")]);
        // A stream cut after a read: what came is told before the error.
        let cut = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let (told, ended) = pieces("data: a\n\ndata: b\n\n", Err(cut)).await;
        assert!(
            matches!(ended, Err(ProviderError::Network { .. })),
            "{ended:?}"
        );
        assert_eq!(told, [text("ab")]);
    }

    #[test]
    fn urls_join_with_one_slash() {
        assert_eq!(
            join_url("http://h/v1", "chat/completions"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            join_url("http://h/v1/", "/chat/completions"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(join_url("http://h", "/v1/messages"), "http://h/v1/messages");
    }

    #[test]
    fn statuses_are_classified() {
        let m = "p: x";
        assert!(matches!(
            classify_status(401, None, m),
            ProviderError::Auth { status: 401, .. }
        ));
        assert!(matches!(
            classify_status(403, None, m),
            ProviderError::Auth { status: 403, .. }
        ));
        assert!(matches!(
            classify_status(429, None, m),
            ProviderError::RateLimited { .. }
        ));
        assert!(matches!(
            classify_status(404, None, m),
            ProviderError::BadRequest { status: 404, .. }
        ));
        assert!(matches!(
            classify_status(529, None, m),
            ProviderError::Server { status: 529, .. }
        ));
        assert!(matches!(
            classify_status(503, None, m),
            ProviderError::Server { status: 503, .. }
        ));
        assert!(matches!(
            classify_status(
                400,
                None,
                "p: This model's maximum context length is 8192 tokens"
            ),
            ProviderError::ContextLength { .. }
        ));
        assert!(matches!(
            classify_status(400, None, "p: unknown field"),
            ProviderError::BadRequest { status: 400, .. }
        ));
    }

    #[test]
    fn retry_after_prefers_milliseconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("50"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(50)));
        let mut d = HeaderMap::new();
        d.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&d), None);
    }

    #[test]
    fn error_text_reads_the_usual_shapes() {
        assert_eq!(error_text(r#"{"error":{"message":"bad key"}}"#), "bad key");
        assert_eq!(
            error_text(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(
            error_text("upstream connect error"),
            "upstream connect error"
        );
        assert_eq!(error_text(""), "(no body)");
        assert_eq!(excerpt(&"x".repeat(400)).chars().count(), MAX_QUOTED + 1);
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(parse_arguments(""), json!({}));
        assert_eq!(parse_arguments(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(parse_arguments(r#"{"a":"#), json!(r#"{"a":"#));
        assert_eq!(parse_arguments(r#""text""#), json!(r#""text""#));
    }
}

#[cfg(test)]
#[path = "http_tls_tests.rs"]
mod tls_tests;
