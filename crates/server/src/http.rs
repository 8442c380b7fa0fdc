//! HTTP on the gateway's port: `POST /rpc` (bearer token) and `GET /health` (`/mcp` is in
//! `mcp/http.rs`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use switchboard_core::error::http_status;
use switchboard_core::store::StoreState;
use switchboard_protocol::agents::LivenessResult;
use switchboard_protocol::frames::{RpcRequest, RpcResponse};
use switchboard_protocol::{ErrorCode, ErrorShape};

use crate::ServerState;
use crate::access::Grant;
use crate::admission::{self, Pending};
use crate::methods;

fn reply(status: StatusCode, body: RpcResponse) -> Response {
    (status, Json(body)).into_response()
}

/// A refusal in the gateway's error shape: `{ok: false, error: {code, message}}`.
pub(crate) fn failure(status: StatusCode, code: ErrorCode, message: String) -> Response {
    reply(
        status,
        RpcResponse {
            ok: false,
            payload: None,
            error: Some(ErrorShape::new(code, message)),
        },
    )
}

/// The token of an `Authorization: Bearer <token>` header.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    // The scheme is read in any case (`bearer`), as HTTP says (RFC 7235 §2.1).
    let value = headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim_start();
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Whether the body is declared JSON (`application/json`, parameters such as a charset allowed):
/// a browser page can send `text/plain` without asking first, never `application/json`.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Why a body is not taken as JSON (its declared type is another), or `None` when it is.
pub(crate) fn not_json(headers: &HeaderMap) -> Option<String> {
    if is_json(headers) {
        return None;
    }
    let got = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none");
    Some(format!("Content-Type must be application/json (got {got})"))
}

/// `POST /rpc`. The token is checked before a byte of the body is read, then the content type
/// and the declared length; the body is read within the limits (`crate::body`).
pub async fn rpc(
    State(state): State<Arc<ServerState>>,
    pending: Option<Extension<Pending>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if !state.auth.check(bearer(&headers)) {
        return failure(
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthorized,
            "missing or wrong token: send Authorization: Bearer <gateway token>".into(),
        );
    }
    if let Some(message) = not_json(&headers) {
        return failure(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::InvalidRequest,
            message,
        );
    }
    admission::authenticated(pending.as_ref());
    let body = match crate::body::read(&state, &headers, body).await {
        Ok(body) => body,
        Err(e) => return e.refusal("/rpc"),
    };
    let request = match parse_body(&body) {
        Ok(r) => r,
        Err(message) => {
            return failure(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, message);
        }
    };
    // A disconnected HTTP client drops this future; nothing else tells the method it left. A
    // stopping gateway tells it to stop waiting, so the HTTP drain never waits on a long run.
    let gone = state.stop.child_token();
    // The bearer token is the operator's own: a caller that has it gets every scope.
    let grant = Grant::full();
    let params = request.params;
    match methods::dispatch(&state, &grant, &request.method, params, &|_| {}, &gone).await {
        Ok(payload) => match payload.rpc_body() {
            Ok(body) => (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response(),
            Err(e) => failure(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::Internal,
                format!("could not encode the result: {e}"),
            ),
        },
        Err(error) => {
            let status = StatusCode::from_u16(http_status(error.code))
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            reply(
                status,
                RpcResponse {
                    ok: false,
                    payload: None,
                    error: Some(error),
                },
            )
        }
    }
}

/// A `POST /rpc` body as a request, or what is wrong with it and what is expected.
pub(crate) fn parse_body(body: &[u8]) -> Result<RpcRequest, String> {
    // serde would read a struct from an array of its fields in order: a body is an object. A
    // key written twice (`method`, or one in `params`) is refused, not the last one taken.
    let text = std::str::from_utf8(body).map_err(|e| {
        format!("body is not a request (not UTF-8: {e}); expected {{\"method\": \"…\", \"params\": {{…}}}}")
    })?;
    let expected = "expected {\"method\": \"…\", \"params\": {…}}";
    let value = switchboard_protocol::strict::value(text)
        .map_err(|e| format!("body is not a request ({e}); {expected}"))?;
    if !value.is_object() {
        let kind = switchboard_protocol::decode::kind_of(&value);
        return Err(format!(
            "body is not a request (a JSON object, not {kind}); {expected}"
        ));
    }
    // A field beside `method` and `params` is refused, as in params (SPEC §12).
    switchboard_protocol::checked::from_value::<RpcRequest>(&value).map_err(|refusal| {
        format!(
            "body is not a request ({}{}); {expected}",
            refusal.message,
            refusal.at()
        )
    })
}

/// Liveness without authentication: no counts, nothing about sessions.
/// 503 while the store is unreachable: a load balancer sends clients elsewhere.
pub async fn health(State(state): State<Arc<ServerState>>) -> Response {
    let store = state.engine.store_health().state;
    let ok = store != StoreState::Unreachable;
    let status = match ok {
        true => StatusCode::OK,
        false => StatusCode::SERVICE_UNAVAILABLE,
    };
    let body = Json(LivenessResult {
        ok,
        version: env!("CARGO_PKG_VERSION").to_string(),
        uptime_ms: state.engine.uptime_ms(),
        store: Some(store.as_str().to_string()),
    });
    (status, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::parse_body;

    #[test]
    fn a_key_written_twice_is_refused_not_the_last_one_taken() {
        for body in [
            &br#"{"method":"health","method":"sessions.reset"}"#[..],
            br#"{"method":"sessions.patch","params":{"key":"main","label":"a","label":"b"}}"#,
        ] {
            let message = parse_body(body).unwrap_err();
            assert!(message.contains("written twice"), "{message}");
        }
    }

    /// Found by the `rpc_body` fuzz target: a whole number too long for 64 bits was read
    /// inexactly, so the request written back read as another number.
    #[test]
    fn a_body_written_back_reads_the_same() {
        let body = br#"{"method": "chat.send", "params": {"n": 33333333133333333333333333333}}"#;
        let request = parse_body(body).unwrap();
        let again = serde_json::to_vec(&request).unwrap();
        assert_eq!(parse_body(&again).unwrap(), request);
    }

    #[test]
    fn a_body_that_is_not_an_object_says_what_is_expected() {
        let message = parse_body(b"[\"health\"]").unwrap_err();
        assert!(message.contains("a JSON object, not an array"), "{message}");
        assert!(
            message.ends_with(r#"expected {"method": "…", "params": {…}}"#),
            "{message}"
        );
    }
}
