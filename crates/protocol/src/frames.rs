//! Frames and the connect handshake (SPEC §5.1).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

/// Any frame on the WebSocket, told apart by its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Frame {
    Req(RequestFrame),
    Res(ResponseFrame),
    Event(EventFrame),
}

/// A client's request: `{"type":"req","id","method","params"}`. Any other field is refused
/// (SPEC §12) but the two the reference's frame schema allows besides, which are accepted and
/// not used (docs/protocol.md).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestFrame {
    pub id: String,
    pub method: String,
    /// A repeated key anywhere in it is refused (`crate::strict`).
    #[serde(deserialize_with = "crate::strict::params")]
    pub params: Option<Value>,
    /// The reference's W3C trace context of the request: a trace here starts at the door.
    #[serde(default, skip_serializing)]
    pub traceparent: crate::checked::Ignored,
    /// The reference's guard on its profile: there are no profiles here.
    #[serde(default, skip_serializing, rename = "expectedProfileId")]
    pub expected_profile_id: crate::checked::Ignored,
}

impl RequestFrame {
    pub fn new(id: impl Into<String>, method: impl Into<String>, params: Option<Value>) -> Self {
        Self {
            id: id.into(),
            method: method.into(),
            params,
            traceparent: crate::checked::Ignored,
            expected_profile_id: crate::checked::Ignored,
        }
    }
}

/// The answer to one request, carrying the request's id.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFrame {
    pub id: String,
    pub ok: bool,
    pub payload: Option<Value>,
    pub error: Option<ErrorShape>,
}

impl ResponseFrame {
    pub fn ok(id: impl Into<String>, payload: Value) -> Self {
        Self {
            id: id.into(),
            ok: true,
            payload: Some(payload),
            error: None,
        }
    }

    pub fn err(id: impl Into<String>, error: ErrorShape) -> Self {
        Self {
            id: id.into(),
            ok: false,
            payload: None,
            error: Some(error),
        }
    }
}

/// A server push. `seq` counts the events sent on one connection, so a client can see gaps.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventFrame {
    pub event: String,
    #[serde(default)]
    pub payload: Value,
    pub seq: Option<u64>,
}

/// The small set of error codes every failure is mapped onto.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The frame or its params were malformed; the message says what is accepted.
    InvalidRequest,
    /// Missing or wrong token, or a request before `connect`.
    Unauthorized,
    /// Visibility, cross-agent rules or send policy refused the operation.
    Forbidden,
    /// The named session, run or agent does not exist.
    NotFound,
    /// The gateway cannot serve this now (starting, shutting down, overloaded); retry later.
    Unavailable,
    /// A bug or an I/O failure on our side; nothing the caller did.
    Internal,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "INVALID_REQUEST",
            Self::Unauthorized => "UNAUTHORIZED",
            Self::Forbidden => "FORBIDDEN",
            Self::NotFound => "NOT_FOUND",
            Self::Unavailable => "UNAVAILABLE",
            Self::Internal => "INTERNAL",
        }
    }
}

/// `{"code","message","details"?}` in a failed response.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorShape {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<Value>,
    pub retryable: Option<bool>,
}

impl ErrorShape {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            retryable: None,
        }
    }
}

/// Params of the `connect` request, the first frame a client must send.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConnectParams {
    pub min_protocol: u32,
    pub max_protocol: u32,
    pub client: ClientInfo,
    /// `operator` (the default) or `node`.
    pub role: Option<String>,
    pub scopes: Vec<String>,
    pub auth: Option<ConnectAuth>,
    /// Set by node clients (`role: "node"`).
    pub node_id: Option<String>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientInfo {
    pub id: String,
    pub version: String,
    pub platform: String,
    pub mode: String,
    pub display_name: Option<String>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConnectAuth {
    pub token: Option<String>,
    pub password: Option<String>,
}

/// The payload of the successful `connect` response.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloOk {
    /// Always `"hello-ok"`.
    #[serde(rename = "type")]
    pub kind: String,
    pub protocol: u32,
    pub server: ServerInfo,
    pub features: Features,
    pub policy: Policy,
    /// A node connection's session (`agent:<agentId>:node-<nodeId>`); absent for operators.
    pub session_key: Option<String>,
    /// The role and scopes this connection was granted.
    pub auth: Option<HelloAuth>,
}

/// `hello-ok`'s `auth`: what the gateway granted (the reference's `{role, scopes}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelloAuth {
    /// `operator` or `node`.
    pub role: String,
    /// The operator scopes granted (`operator.read`, `operator.write`, `operator.admin`);
    /// scopes the gateway does not know are not listed. Empty for nodes.
    pub scopes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    pub conn_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Features {
    pub methods: Vec<String>,
    pub events: Vec<String>,
    /// Named features a client may require (the reference's `features.capabilities`), from
    /// [`CAPABILITIES`].
    #[serde(default)]
    pub capabilities: Vec<String>,
}

/// The reference's capabilities this gateway has: `published-model-catalog` (`models.list`
/// answers the configured models; `openclaw models list` requires it).
pub const CAPABILITIES: &[&str] = &["published-model-catalog"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// The largest frame the server accepts, in bytes.
    pub max_payload: usize,
    pub max_buffered_bytes: usize,
    pub tick_interval_ms: u64,
}

/// Payload of the `connect.challenge` event the server sends first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectChallenge {
    pub nonce: String,
    pub ts: i64,
}

/// `POST /rpc` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RpcRequest {
    pub method: String,
    /// A repeated key anywhere in it is refused (`crate::strict`).
    #[serde(default, deserialize_with = "crate::strict::params")]
    pub params: Option<Value>,
}

/// `POST /rpc` answer.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcResponse {
    pub ok: bool,
    pub payload: Option<Value>,
    pub error: Option<ErrorShape>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_round_trip_in_the_reference_shape() {
        let req: Frame = serde_json::from_value(json!({
            "type": "req", "id": "1", "method": "sessions.list", "params": {"limit": 5}
        }))
        .unwrap();
        assert_eq!(
            req,
            Frame::Req(RequestFrame::new(
                "1",
                "sessions.list",
                Some(json!({"limit": 5}))
            ))
        );
        let res = Frame::Res(ResponseFrame::err(
            "1",
            ErrorShape::new(ErrorCode::NotFound, "no"),
        ));
        assert_eq!(
            serde_json::to_value(&res).unwrap(),
            json!({"type":"res","id":"1","ok":false,"error":{"code":"NOT_FOUND","message":"no"}})
        );
    }
}
