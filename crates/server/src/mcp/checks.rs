//! What `/mcp` checks before rmcp sees a request: that the acting session exists (so a client
//! learns at `initialize`, not at its first tool call, that `?session=` names nothing), and that
//! a POSTed body is one JSON-RPC 2.0 message. rmcp would answer a malformed body 415, as if the
//! content type were wrong; here it is a 400 with a JSON-RPC error that says what is wrong and
//! what is accepted (`-32700` for a body that is not JSON, `-32600` for one that is not a
//! message, `-32602` for params that are not an object).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};
use switchboard_core::CoreError;
use switchboard_protocol::ErrorCode;
use switchboard_protocol::decode::kind_of;

use crate::ServerState;

/// JSON-RPC's codes for a body that is not JSON, not a message, or has bad params.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// What one message looks like, for the errors.
const EXPECTED: &str = "expected one JSON-RPC 2.0 message, e.g. {\"jsonrpc\":\"2.0\",\"id\":1,\
     \"method\":\"tools/list\",\"params\":{}}";

/// `Ok` when `session` names an existing session; otherwise the refusal to answer: 404 for an
/// unknown one, 400 for a reference that is not a session key, the store's trouble as such.
pub(super) async fn acting_session(state: &ServerState, session: &str) -> Result<(), Rejection> {
    match state.engine.resolver().find(session, None).await {
        Ok(_) => Ok(()),
        Err(CoreError::NotFound(message)) => Err(Rejection::new(
            StatusCode::NOT_FOUND,
            INVALID_PARAMS,
            ErrorCode::NotFound,
            super::unknown_session(
                &message,
                session,
                "/mcp?session=KEY or the X-Switchboard-Session header",
            ),
        )),
        Err(e) => {
            let status =
                StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let code = if status.is_client_error() {
                INVALID_PARAMS
            } else {
                -32603
            };
            Err(Rejection::new(
                status,
                code,
                e.code(),
                format!("the acting session (?session= or X-Switchboard-Session): {e}"),
            ))
        }
    }
}

/// `Ok` when `body` is one JSON-RPC 2.0 message (a request, a notification or a response);
/// otherwise the 400 to answer, saying what is wrong.
pub(crate) fn json_rpc_body(body: &[u8]) -> Result<(), Rejection> {
    let bad = |code: i64, message: String| {
        Rejection::new(
            StatusCode::BAD_REQUEST,
            code,
            ErrorCode::InvalidRequest,
            message,
        )
    };
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        bad(
            PARSE_ERROR,
            format!("parse error: the body is not JSON ({e}); {EXPECTED}"),
        )
    })?;
    let initialize = is_initialize_request(&value);
    let verdict = shape(value, initialize);
    if verdict.is_err()
        && !initialize
        && serde_json::from_slice::<ClientJsonRpcMessage>(body).is_ok()
    {
        // What MCP itself reads is never refused here, e.g. `"params": null` on a method rmcp
        // takes as a custom request.
        return Ok(());
    }
    verdict.map_err(|(code, message)| bad(code, message))
}

/// Whether `value` has the shape of one JSON-RPC 2.0 message; if not, the code and what is wrong.
fn shape(value: Value, initialize: bool) -> Result<(), (i64, String)> {
    let bad = |code: i64, message: String| (code, message);
    let message = match value {
        Value::Object(map) => map,
        Value::Array(_) => {
            return Err(bad(
                INVALID_REQUEST,
                format!(
                    "a batch (a JSON array) is not accepted; send one message per request: {EXPECTED}"
                ),
            ));
        }
        other => {
            return Err(bad(
                INVALID_REQUEST,
                format!("the body is {}; {EXPECTED}", kind_of(&other)),
            ));
        }
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let got = message
            .get("jsonrpc")
            .map_or("nothing".into(), Value::to_string);
        return Err(bad(
            INVALID_REQUEST,
            format!("jsonrpc: expected \"2.0\", got {got}; {EXPECTED}"),
        ));
    }
    match (message.get("method"), message.get("params")) {
        (Some(Value::String(_)), params) if initialize => {
            initialize_params(params).map_err(|why| bad(INVALID_PARAMS, why))
        }
        (Some(Value::String(_)), None | Some(Value::Object(_))) => Ok(()),
        (Some(Value::String(method)), Some(other)) => Err(bad(
            INVALID_PARAMS,
            format!(
                "params of {method}: expected an object, got {}",
                kind_of(other)
            ),
        )),
        (Some(other), _) => Err(bad(
            INVALID_REQUEST,
            format!(
                "method: expected the method's name as a string (e.g. \"tools/list\"), got {}",
                kind_of(other)
            ),
        )),
        (None, _)
            if message.contains_key("id")
                && (message.contains_key("result") || message.contains_key("error")) =>
        {
            Ok(())
        }
        (None, _) => Err(bad(
            INVALID_REQUEST,
            format!(
                "method: missing; a request or notification names its method, a response \
                 carries an id and a result or an error; {EXPECTED}"
            ),
        )),
    }
}

/// Whether `message` is an initialize request: one with an id (a notification of that name is
/// MCP's to read).
fn is_initialize_request(message: &Value) -> bool {
    message.get("method").and_then(Value::as_str) == Some("initialize")
        && matches!(message.get("id"), Some(Value::String(_) | Value::Number(_)))
}

/// `initialize`'s params hold what MCP requires of them, read as rmcp reads an initialize
/// (left to rmcp, one it cannot read is taken for a request of another kind, answered "Session
/// ID is required").
fn initialize_params(params: Option<&Value>) -> Result<(), String> {
    const SHAPE: &str = "{\"protocolVersion\": \"2025-06-18\", \"capabilities\": {}, \
                         \"clientInfo\": {\"name\": \"…\", \"version\": \"…\"}}";
    let Some(params) = params else {
        return Err(format!("params of initialize: missing; expected {SHAPE}"));
    };
    match serde_json::from_value::<rmcp::model::InitializeRequestParams>(params.clone()) {
        Ok(_) => Ok(()),
        Err(_) if !params.is_object() => Err(format!(
            "params of initialize: expected an object, got {}; expected {SHAPE}",
            kind_of(params)
        )),
        Err(e) => Err(format!(
            "params of initialize: {}; expected {SHAPE}",
            switchboard_protocol::decode::explain(&e.to_string())
        )),
    }
}

/// A refusal before MCP, answered as a JSON-RPC error (id null) with the gateway's code in
/// `data.code`.
pub(crate) struct Rejection {
    status: StatusCode,
    pub(crate) code: i64,
    gateway: ErrorCode,
    pub(crate) message: String,
}

impl Rejection {
    fn new(status: StatusCode, code: i64, gateway: ErrorCode, message: String) -> Self {
        Self {
            status,
            code,
            gateway,
            message,
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {
                "code": self.code,
                "message": self.message,
                "data": {"code": self.gateway.as_str()},
            },
        });
        (self.status, axum::Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn refused(body: &str) -> (u16, Value) {
        let response = json_rpc_body(body.as_bytes()).unwrap_err().into_response();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn messages_pass_and_anything_else_says_what_is_wrong() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":{}}"#,
            // rmcp reads a method it does not know, with null params, as a custom request.
            r#"{"jsonrpc": "2.0", "id": 1, "method": "initializ1e999e", "params":null}"#,
        ] {
            assert!(json_rpc_body(ok.as_bytes()).is_ok(), "{ok}");
        }
        let cases = [
            ("{not json", -32700, "parse error: the body is not JSON"),
            ("[1,2]", -32600, "a batch (a JSON array) is not accepted"),
            ("5", -32600, "the body is a number"),
            (
                r#"{"jsonrpc":"1.0","method":"x"}"#,
                -32600,
                "jsonrpc: expected \"2.0\", got \"1.0\"",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
                -32600,
                "method: expected the method's name",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":5}"#,
                -32602,
                "params of initialize: expected an object, got a number",
            ),
            (r#"{"jsonrpc":"2.0","id":1}"#, -32600, "method: missing"),
        ];
        for (body, code, text) in cases {
            let (status, answer) = refused(body).await;
            assert_eq!(status, 400, "{body}");
            assert_eq!(answer["error"]["code"], code, "{body}");
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.starts_with(text), "{body}: {message}");
        }
    }
}
