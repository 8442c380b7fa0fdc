//! What every platform's API client shares below its own calls: sending a request and reading
//! its answer ([`send`]: the status, a `Retry-After`, the body as JSON, and "no answer" in words
//! that never carry the URL — which may carry a token), the one error type ([`ApiError`]) and
//! the outbox's verdict on it ([`ApiError::verdict`]), and a WebSocket opened with the system's
//! TLS roots ([`connect`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::channel::ChannelError;

/// The longest wait a platform may ask for.
const LONGEST_WAIT: Duration = Duration::from_secs(3600);

/// Why a call to a platform's API failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    /// The HTTP status; 0 when no answer came.
    pub status: u16,
    /// The platform's own error code, when it gave one (Matrix's `errcode`, Slack's `error`,
    /// Discord's and the Graph API's `code`).
    pub code: Option<String>,
    /// What went wrong, with the call's name (never its URL).
    pub message: String,
    /// How long the platform asked to wait (a 429's).
    pub retry_after: Option<Duration>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ok = (200..300).contains(&self.status);
        match (self.status, &self.code) {
            (0, _) => write!(f, "{}", self.message),
            (_, Some(code)) if ok => write!(f, "{}: {code}", self.message),
            (status, Some(code)) => write!(f, "{status} {code}: {}", self.message),
            (status, None) => write!(f, "{status} {}", self.message),
        }
    }
}

impl ApiError {
    /// A refusal: `status`, the platform's `code`, and `message`.
    pub fn new(status: u16, code: Option<String>, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// The platform's code is `code`.
    pub fn is(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code)
    }

    /// What the outbox does after this failure: a 429 is tried again after its wait (1 s
    /// when it gave none); no answer and 5xx are tried again; anything else would fail the same
    /// way again — a 403 with `forbidden`, what it means on the platform.
    pub fn verdict(self, forbidden: &str) -> ChannelError {
        match self.status {
            429 => {
                let wait = self.retry_after.unwrap_or(Duration::from_secs(1));
                ChannelError::RetryAfter(wait, self.to_string())
            }
            0 | 500..=599 => ChannelError::Retry(self.to_string()),
            403 => ChannelError::Permanent(format!("{self} ({forbidden})")),
            _ => ChannelError::Permanent(self.to_string()),
        }
    }
}

/// A platform's answer to one request.
pub(crate) struct Answer {
    pub status: u16,
    /// The `Retry-After` header, in seconds.
    pub retry_after: Option<Duration>,
    /// The body as JSON; null when it was empty or not JSON.
    pub body: Value,
}

impl Answer {
    /// A 2xx status.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Sends `request` (the call `call` of `api`, for messages) and reads its answer.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    (api, call): (&str, &str),
) -> Result<Answer, ApiError> {
    let response = request.send().await.map_err(|e| {
        let why = crate::channels::why_no_answer(&e);
        ApiError::new(0, None, format!("{call}: no answer from {api} ({why})"))
    })?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| wait(v.trim().parse().ok()));
    let bytes = response.bytes().await.map_err(|e| {
        let why = crate::channels::why_no_answer(&e);
        ApiError::new(
            0,
            None,
            format!("{call}: the answer of {api} broke off ({why})"),
        )
    })?;
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok(Answer {
        status,
        retry_after,
        body,
    })
}

/// A wait of `seconds` a platform asked for (at most an hour), when it is one.
pub(crate) fn wait(seconds: Option<f64>) -> Option<Duration> {
    seconds
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s).min(LONGEST_WAIT))
}

/// A WebSocket to a platform's event stream.
pub(crate) type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens the WebSocket at `url` (TLS for `wss://`, with the system's roots), within 30 s.
pub(crate) async fn connect(url: &str) -> Result<Socket, String> {
    let connector = if url.starts_with("wss://") {
        let tls = crate::runtime::providers::http::tls_http1()?;
        Some(tokio_tungstenite::Connector::Rustls(Arc::new(tls)))
    } else {
        None
    };
    let connecting = tokio_tungstenite::connect_async_tls_with_config(url, None, false, connector);
    match tokio::time::timeout(Duration::from_secs(30), connecting).await {
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_retried_by_kind() {
        let limited = ApiError {
            retry_after: Some(Duration::from_millis(1500)),
            ..ApiError::new(429, Some("M_LIMIT_EXCEEDED".into()), "/send")
        };
        let later = limited.verdict("-");
        assert!(
            matches!(later, ChannelError::RetryAfter(d, _) if d == Duration::from_millis(1500))
        );
        let kind = |status| match ApiError::new(status, None, "x").verdict("not allowed") {
            ChannelError::Retry(_) => "retry".to_owned(),
            ChannelError::RetryAfter(d, _) => format!("after {}s", d.as_secs()),
            ChannelError::Permanent(why) => why,
        };
        assert_eq!(kind(0), "retry");
        assert_eq!(kind(502), "retry");
        assert_eq!(kind(429), "after 1s");
        assert_eq!(kind(403), "403 x (not allowed)");
        assert_eq!(kind(404), "404 x");
    }

    #[test]
    fn errors_read_with_their_code() {
        let matrix = ApiError::new(401, Some("M_UNKNOWN_TOKEN".into()), "/sync: no");
        assert_eq!(matrix.to_string(), "401 M_UNKNOWN_TOKEN: /sync: no");
        let slack = ApiError::new(200, Some("is_archived".into()), "chat.postMessage");
        assert_eq!(slack.to_string(), "chat.postMessage: is_archived");
        let gone = ApiError::new(0, None, "getMe: no answer from the Bot API (timed out)");
        assert_eq!(
            gone.to_string(),
            "getMe: no answer from the Bot API (timed out)"
        );
    }
}
