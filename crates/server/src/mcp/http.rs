//! `/mcp` on the gateway: MCP's streamable HTTP transport (rmcp's `StreamableHttpService`)
//! behind the gateway token, acting as the session the connection names.
//!
//! Every request needs `Authorization: Bearer <gateway token>` (as `POST /rpc` does) and names
//! its acting session with `?session=KEY` on the URL or the `X-Switchboard-Session` header
//! (the same value on every request of a connection, since a client keeps its URL and headers).
//! A request without either is refused before it reaches MCP, with a JSON-RPC error body that
//! says what to send; MCP clients show its message.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use switchboard_protocol::ErrorCode;

use super::{Acting, LocalInvoker, McpServer};
use crate::ServerState;
use crate::admission::{self, Pending};

/// The header that may name the acting session instead of `?session=`.
pub const SESSION_HEADER: &str = "x-switchboard-session";

/// The error of a request that names no acting session.
pub const NO_SESSION: &str = "no acting session: connect to /mcp?session=<session key> (e.g. \
     /mcp?session=agent:main:main) or send the header X-Switchboard-Session: <session key>";

/// The acting session of a `/mcp` request, as the guard found it.
#[derive(Debug, Clone, PartialEq)]
pub struct ActingSession(pub String);

/// The span of the `/mcp` request (`crate::traced`): rmcp runs a tool call on its session's
/// own task, so the call is put under it by hand.
#[derive(Debug, Clone)]
pub struct RequestSpan(pub tracing::Span);

/// The `/mcp` route: the token and acting-session guard in front of rmcp's service.
pub fn routes<S: Clone + Send + Sync + 'static>(state: &Arc<ServerState>) -> Router<S> {
    // The gateway's own browser check (`crate::guard`) runs first on every door, `/mcp`
    // included: Origin always, and the Host (DNS rebinding) when there is no token. rmcp's
    // Host check would refuse a LAN gateway's own names, in plain text.
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(state.stop.clone())
        .with_max_request_body_bytes(state.max_payload)
        .disable_allowed_hosts();
    let invoker = Arc::new(LocalInvoker::new(state.engine.clone()));
    let service = StreamableHttpService::new(
        move || Ok(McpServer::new(invoker.clone(), Acting::PerConnection)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route_service("/mcp", service)
        .route_layer(middleware::from_fn_with_state(state.clone(), guard))
}

/// Checks the token and finds the acting session, then reads the body within the limits
/// (`crate::body`) before rmcp sees it; refusals are JSON-RPC error bodies, rmcp's own included.
async fn guard(
    State(state): State<Arc<ServerState>>,
    pending: Option<Extension<Pending>>,
    request: Request,
    next: Next,
) -> Response {
    if !state.auth.check(crate::http::bearer(request.headers())) {
        let mut response = refusal(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token: send Authorization: Bearer <gateway token>",
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"switchboard\""),
        );
        return response;
    }
    let query = Query::<HashMap<String, String>>::try_from_uri(request.uri())
        .map(|Query(q)| q)
        .unwrap_or_default();
    admission::authenticated(pending.as_ref());
    let session = match acting_session(query.get("session").map(String::as_str), request.headers())
    {
        Ok(session) => session,
        Err(message) => return refusal(StatusCode::BAD_REQUEST, &message),
    };
    if let Err(refused) = super::checks::acting_session(&state, &session).await {
        return refused.into_response();
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match crate::body::read(&state, &parts.headers, body).await {
        Ok(bytes) => bytes,
        Err(e) => return e.refusal("/mcp"),
    };
    // A body of another type is rmcp's to refuse (415, naming the type it takes).
    if parts.method == Method::POST
        && crate::http::is_json(&parts.headers)
        && let Err(refused) = super::checks::json_rpc_body(&bytes)
    {
        return refused.into_response();
    }
    let body = Body::from(bytes);
    parts.extensions.insert(ActingSession(session));
    parts
        .extensions
        .insert(RequestSpan(tracing::Span::current()));
    as_json_rpc(next.run(Request::from_parts(parts, body)).await).await
}

/// rmcp answers transport errors (a wrong `Accept`, an unknown session id, …) in plain text;
/// MCP clients read only JSON-RPC, so such an answer becomes a JSON-RPC error with its text.
async fn as_json_rpc(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") || t.starts_with("text/event-stream"));
    if status.is_success() || is_json {
        return response;
    }
    let text = match axum::body::to_bytes(response.into_body(), 64 * 1024).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_string(),
        Err(_) => String::new(),
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text
    };
    // rmcp answers a body it cannot read 415, as if the content type were wrong: it is the
    // body (`checks` catches most such bodies first, with what is wrong; this is the rest).
    if status == StatusCode::UNSUPPORTED_MEDIA_TYPE && message.starts_with("fail to deserialize") {
        let message = format!("{message}; expected one JSON-RPC 2.0 message that MCP defines");
        return refusal(StatusCode::BAD_REQUEST, &message);
    }
    refusal(status, &message)
}

/// The session named by `?session=` and/or the header (blank counts as absent).
fn acting_session(query: Option<&str>, headers: &HeaderMap) -> Result<String, String> {
    let from_query = query.map(str::trim).filter(|s| !s.is_empty());
    let from_header = match headers.get(SESSION_HEADER).map(|v| v.to_str()) {
        None => None,
        Some(Ok(value)) => Some(value.trim()).filter(|s| !s.is_empty()),
        Some(Err(_)) => {
            return Err("the X-Switchboard-Session header is not valid text".to_string());
        }
    };
    match (from_query, from_header) {
        (Some(q), Some(h)) if q != h => Err(format!(
            "?session={q} and the X-Switchboard-Session header ({h}) name different sessions: \
             give one"
        )),
        (Some(session), _) | (None, Some(session)) => Ok(session.to_string()),
        (None, None) => Err(NO_SESSION.to_string()),
    }
}

/// A refusal before MCP: a JSON-RPC error (id null) that MCP clients surface as the message.
fn refusal(status: StatusCode, message: &str) -> Response {
    let code = match status {
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        StatusCode::SERVICE_UNAVAILABLE => ErrorCode::Unavailable,
        s if s.is_server_error() => ErrorCode::Internal,
        _ => ErrorCode::InvalidRequest,
    };
    crate::guard::refusal("/mcp", status, code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(session: Option<&str>) -> HeaderMap {
        let mut map = HeaderMap::new();
        if let Some(s) = session {
            map.insert(SESSION_HEADER, HeaderValue::from_str(s).unwrap());
        }
        map
    }

    #[test]
    fn the_acting_session_comes_from_the_query_or_the_header() {
        assert_eq!(
            acting_session(Some("agent:main:main"), &headers(None)),
            Ok("agent:main:main".to_string())
        );
        assert_eq!(
            acting_session(None, &headers(Some(" main "))),
            Ok("main".to_string())
        );
        assert_eq!(
            acting_session(Some("main"), &headers(Some("main"))),
            Ok("main".to_string())
        );
        assert_eq!(
            acting_session(Some(" "), &headers(Some(""))),
            Err(NO_SESSION.to_string())
        );
        let both = acting_session(Some("a"), &headers(Some("b"))).unwrap_err();
        assert!(both.contains("different sessions"), "{both}");
    }
}
