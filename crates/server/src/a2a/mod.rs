//! A2A 1.0 on the gateway (SPEC §10a): every agent is an A2A agent. Its card is at
//! `/a2a/<agentId>/.well-known/agent-card.json` (the default agent's also at
//! `/.well-known/agent-card.json`), its JSON-RPC interface at `POST /a2a/<agentId>`; streams
//! are SSE. The tasks themselves are the engine's (`switchboard_core::a2a_tasks`); this door
//! reads the request, checks it, and writes the answer.
//!
//! The card is public, as A2A discovery is (a client reads it to learn how to authenticate); it
//! names the agent, its tools and the bearer scheme, nothing about sessions. Every JSON-RPC call
//! passes the same checks as `/rpc` and `/mcp`, in this order, each refusal a JSON-RPC error
//! with the A2A code and a message that says what is accepted, and nothing stored: the gateway
//! token (401), the content type (415), the body within `gateway.maxPayloadBytes` and the body
//! timeout, JSON (-32700), a JSON-RPC 2.0 request (-32600), the `A2A-Version` header or query
//! parameter (1.x; -32009), the method (-32601), the agent in the path (404), its params and
//! what A2A requires of their values (-32602). A notification (no `id` member) is never
//! answered with a JSON-RPC response: `204 No Content` (`404` for an unknown agent).

pub(crate) mod rpc;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use switchboard_protocol::a2a::{A2aError, A2aErrorCode, AGENT_CARD_PATH, JsonRpcResponse};

use crate::ServerState;

/// The A2A routes.
pub fn routes<S: Clone + Send + Sync + 'static>(state: &Arc<ServerState>) -> Router<S> {
    Router::new()
        .route(AGENT_CARD_PATH, get(default_card))
        .route("/a2a/{agent}/.well-known/agent-card.json", get(agent_card))
        .route("/a2a/{agent}", post(rpc::call))
        .with_state(state.clone())
}

/// `GET /.well-known/agent-card.json`: the default agent's card.
async fn default_card(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    let agent = state.engine.a2a().default_agent();
    card(&state, &headers, &agent).await
}

/// `GET /a2a/<agentId>/.well-known/agent-card.json`.
async fn agent_card(
    State(state): State<Arc<ServerState>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    match state.engine.a2a().agent(&agent) {
        Ok(agent) => card(&state, &headers, &agent).await,
        Err(e) => error_response(StatusCode::NOT_FOUND, Value::Null, e),
    }
}

async fn card(state: &ServerState, headers: &HeaderMap, agent: &str) -> Response {
    let base = base_url(state, headers);
    let secured = !state.auth.is_open();
    let card = state.engine.a2a().card(agent, &base, secured).await;
    (StatusCode::OK, axum::Json(card)).into_response()
}

/// `http://<host>` as the client reached the gateway (its `Host` header), so the card's URL
/// works from where the card was read.
fn base_url(state: &ServerState, headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        })
        .map(str::to_string)
        .unwrap_or_else(|| format!("127.0.0.1:{}", state.port()));
    format!("http://{host}")
}

/// A JSON-RPC error answer.
pub(crate) fn error_response(status: StatusCode, id: Value, error: A2aError) -> Response {
    (status, axum::Json(JsonRpcResponse::error(id, error))).into_response()
}

/// A JSON-RPC error answer with the request id unknown.
pub(crate) fn refusal(status: StatusCode, code: A2aErrorCode, message: String) -> Response {
    error_response(status, Value::Null, A2aError::new(code, message))
}
