//! A channel's HTTP door: where a platform calls the gateway (a webhook that delivers messages,
//! the verification handshake before it). The server routes `/channels/<name>` and
//! `/channels/<name>/<rest>` to the door the channel registered, after its usual limits (body
//! size, connection admission); the door checks the platform's own credential (a signature, a
//! verify token) and answers the platform's expected status and body. The server knows no
//! channel by name.

use futures_util::future::BoxFuture;
use switchboard_protocol::inbound::InboundRefused;
use switchboard_protocol::{ErrorCode, ErrorShape};

/// One request from a platform.
#[derive(Debug, Clone, Default)]
pub struct HttpCall {
    /// `GET` or `POST` (upper-case).
    pub method: String,
    /// The path after `/channels/<name>`, with its leading `/` (empty for none).
    pub rest: String,
    /// The query's pairs, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    /// The headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpCall {
    /// The first value of query parameter `name`.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find_map(|(k, v)| (k == name).then_some(v.as_str()))
    }

    /// The first value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find_map(|(k, v)| (k == name).then_some(v.as_str()))
    }
}

/// The door's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpReply {
    pub status: u16,
    /// `text/plain` or `application/json`.
    pub content_type: &'static str,
    pub body: String,
    /// The caller proved who it is (a valid signature): its connection counts as
    /// authenticated for the gateway's limits on unauthenticated connections.
    pub authenticated: bool,
}

impl HttpReply {
    /// A plain-text answer.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
            authenticated: false,
        }
    }

    /// A JSON answer `{ok: false, error: {code, message}}`, as the gateway's other HTTP doors
    /// refuse (`InboundRefused`).
    pub fn refused(status: u16, code: ErrorCode, message: impl Into<String>) -> Self {
        let refusal = InboundRefused::new(ErrorShape::new(code, message));
        Self {
            status,
            content_type: "application/json",
            body: serde_json::to_string(&refusal).unwrap_or_default(),
            authenticated: false,
        }
    }

    /// Marks the caller as having proved who it is.
    pub fn authenticated(mut self) -> Self {
        self.authenticated = true;
        self
    }
}

/// A channel's HTTP door.
pub trait HttpDoor: Send + Sync {
    /// Answers one request; never panics on what the caller sent.
    fn handle(&self, call: HttpCall) -> BoxFuture<'_, HttpReply>;
}
