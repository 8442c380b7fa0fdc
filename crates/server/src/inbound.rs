//! HTTP sources of sessions (SPEC §9.2, §9.3): `POST /channels/webhook/<accountId>` and
//! `POST /hooks/agent`. Routing and runs are the engine's; this adapter checks size, token and
//! shape, and answers `{ok, runId, sessionKey}` or `{ok: false, error: {code, message}}` with a
//! 4xx that says what was wrong. Nothing is stored unless the request passed every check.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use switchboard_core::channels::webhook;
use switchboard_core::keys::{self, SessionKey};
use switchboard_core::runtime::lanes::Lane;
use switchboard_core::runtime::{RunRequest, user_message};
use switchboard_core::{CoreError, access};

use crate::ServerState;

fn failure(status: u16, message: impl Into<String>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let code = match status {
        StatusCode::UNAUTHORIZED => "UNAUTHORIZED",
        StatusCode::FORBIDDEN => "FORBIDDEN",
        StatusCode::NOT_FOUND => "NOT_FOUND",
        s if s.is_server_error() => "INTERNAL",
        _ => "INVALID_REQUEST",
    };
    let body = json!({"ok": false, "error": {"code": code, "message": message.into()}});
    (status, Json(body)).into_response()
}

fn accepted(run_id: String, session_key: String) -> Response {
    let body = json!({"ok": true, "runId": run_id, "sessionKey": session_key});
    (StatusCode::ACCEPTED, Json(body)).into_response()
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

fn too_large(state: &ServerState, body: &Bytes) -> Option<Response> {
    (body.len() > state.max_payload).then(|| {
        failure(
            413,
            format!(
                "body of {} bytes exceeds maxPayload ({} bytes)",
                body.len(),
                state.max_payload
            ),
        )
    })
}

/// `POST /channels/webhook/<accountId>`.
pub async fn webhook(
    State(state): State<Arc<ServerState>>,
    Path(account_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = too_large(&state, &body) {
        return refused;
    }
    match webhook::receive(&state.engine, &account_id, bearer(&headers), &body).await {
        Ok(run) => accepted(run.run_id, run.session_key),
        Err(e) => failure(e.status, e.message),
    }
}

/// `POST /hooks/agent` body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HookPayload {
    message: String,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
}

const HOOK_EXPECTED: &str =
    "expected a JSON object {\"message\": string, \"sessionKey\"?: string, \"agentId\"?: string}";

/// `POST /hooks/agent`: a run in `hook:<uuid>` (or the key given) with the hook token.
pub async fn hook(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let engine = &state.engine;
    let hooks = &engine.config().hooks;
    if !hooks.enabled {
        return failure(404, "hooks are off (set hooks.enabled to true)");
    }
    let expected = hooks.token.as_deref().unwrap_or_default();
    match bearer(&headers) {
        None => {
            return failure(
                401,
                "missing token: send Authorization: Bearer <hooks.token>",
            );
        }
        Some(given) if !access::token_matches(expected, given) => {
            return failure(401, "wrong hook token");
        }
        Some(_) => {}
    }
    if let Some(refused) = too_large(&state, &body) {
        return refused;
    }
    let payload: HookPayload = match webhook::parse_body(&body, HOOK_EXPECTED) {
        Ok(p) => p,
        Err(e) => return failure(e.status, e.message),
    };
    if payload.message.trim().is_empty() {
        return failure(
            400,
            "message: must not be empty (the text the agent runs on)",
        );
    }
    let agent_id = payload.agent_id.as_deref().map(keys::normalize_agent_id);
    let configured = engine.config().agent_ids();
    // With no agents configured, any id runs on the defaults.
    if let Some(id) = &agent_id
        && !engine.config().agents.list.is_empty()
        && !configured.contains(id)
    {
        return failure(
            400,
            format!(
                "agentId: {id:?} is not a configured agent (configured: {})",
                configured.join(", ")
            ),
        );
    }
    let agent = agent_id.as_deref().unwrap_or(engine.default_agent_id());
    let key = match payload.session_key.as_deref().map(str::trim) {
        Some(given) if !given.is_empty() => match engine.canonical_key(given, Some(agent)) {
            Ok(key) => key,
            Err(e) => return failure(400, format!("sessionKey: {e}")),
        },
        _ => SessionKey::from_canonical(format!("agent:{agent}:hook:{}", uuid::Uuid::new_v4())),
    };
    if let Err(e) = access::check_send(engine, key.as_str()).await {
        return failure(403, e.to_string());
    }
    let mut request = RunRequest::new(key.as_str(), Lane::Main);
    request.create = Some(engine.new_session(&key));
    request.message = Some(user_message(
        &payload.message,
        Some(json!({"kind": "hook"})),
    ));
    match engine.submit_run(request).await {
        Ok(run) => accepted(run.run_id, run.session_key),
        Err(e @ CoreError::Invalid(_)) => failure(400, e.to_string()),
        Err(e) => failure(500, e.to_string()),
    }
}
