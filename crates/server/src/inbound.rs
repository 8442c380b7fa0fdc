//! HTTP sources of sessions (SPEC §9.2, §9.3): `POST /channels/webhook/<accountId>`,
//! `POST /hooks/agent`, and the HTTP doors channels register (`/channels/<name>[/<rest>]`, a
//! platform's webhook: [`channel`]). Sizes, tokens, payloads, routing and runs are the engine's
//! (`switchboard_core::channels::Inbound`); this adapter has the engine check the token before
//! it reads the body (within the limits, `crate::body`), hands over the bytes and answers
//! `{ok, runId, sessionKey}` (202) or `{ok: false, error: {code, message}}` with the HTTP status
//! of the engine's error (the one mapping, next to the wire codes).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use switchboard_core::CoreError;
use switchboard_core::channel::HttpCall;
use switchboard_protocol::ErrorShape;
use switchboard_protocol::inbound::{InboundAccepted, InboundRefused};

use crate::ServerState;
use crate::admission::{self, Pending};
use crate::http::bearer;

fn refused(status: u16, error: ErrorShape) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(InboundRefused::new(error))).into_response()
}

/// The engine's answer; an accepted message authenticated its connection.
fn answer(
    result: Result<InboundAccepted, CoreError>,
    pending: Option<&Extension<Pending>>,
) -> Response {
    match result {
        Ok(run) => {
            admission::authenticated(pending);
            (StatusCode::ACCEPTED, Json(run)).into_response()
        }
        Err(e) => refused(e.http_status(), e.to_shape()),
    }
}

/// `POST /channels/webhook/<accountId>`.
pub async fn webhook(
    State(state): State<Arc<ServerState>>,
    Path(account_id): Path<String>,
    pending: Option<Extension<Pending>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let path = format!("/channels/webhook/{account_id}");
    let inbound = state.engine.inbound();
    if let Err(e) = inbound.check_webhook_token(&account_id, bearer(&headers)) {
        return refused(e.http_status(), e.to_shape());
    }
    let body = match crate::body::read(&state, &headers, body).await {
        Ok(body) => body,
        Err(e) => return e.refusal(&path),
    };
    let sessions = state.engine.sessions();
    let result = (inbound.webhook(sessions, &account_id, bearer(&headers), &body)).await;
    answer(result, pending.as_ref())
}

/// `POST /hooks/agent`: a run in `hook:<uuid>` (or the key given) with the hook token.
pub async fn hook(
    State(state): State<Arc<ServerState>>,
    pending: Option<Extension<Pending>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let inbound = state.engine.inbound();
    if let Err(e) = inbound.check_hook_token(bearer(&headers)) {
        return refused(e.http_status(), e.to_shape());
    }
    let body = match crate::body::read(&state, &headers, body).await {
        Ok(body) => body,
        Err(e) => return e.refusal("/hooks/agent"),
    };
    let result = inbound.hook(bearer(&headers), &body).await;
    answer(result, pending.as_ref())
}

/// `GET|POST /channels/<name>[/<rest>]`: the HTTP door of channel `name` (a platform calling
/// in), after the gateway's body limits. The door checks the platform's credential and answers
/// what the platform expects; a channel without an HTTP door is 404.
pub async fn channel(
    State(state): State<Arc<ServerState>>,
    Path(params): Path<Vec<(String, String)>>,
    pending: Option<Extension<Pending>>,
    request: axum::extract::Request,
) -> Response {
    let name = params
        .iter()
        .find_map(|(k, v)| (k == "channel").then_some(v.as_str()))
        .unwrap_or_default();
    let rest = params
        .iter()
        .find_map(|(k, v)| (k == "rest").then(|| format!("/{v}")))
        .unwrap_or_default();
    let path = format!("/channels/{name}{rest}");
    let Some(door) = state.engine.http_door(name) else {
        let error = ErrorShape::new(
            switchboard_protocol::ErrorCode::NotFound,
            format!("{path}: no channel here takes HTTP calls (is the channel enabled?)"),
        );
        return refused(404, error);
    };
    let (parts, body) = request.into_parts();
    let body = match crate::body::read(&state, &parts.headers, body).await {
        Ok(body) => body,
        Err(e) => return e.refusal(&path),
    };
    let call = HttpCall {
        method: parts.method.as_str().to_ascii_uppercase(),
        rest,
        query: axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
            .map(|q| q.0)
            .unwrap_or_default(),
        headers: parts
            .headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect(),
        body: body.to_vec(),
    };
    let reply = door.handle(call).await;
    if reply.authenticated {
        admission::authenticated(pending.as_ref());
    }
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, [(CONTENT_TYPE, reply.content_type)], reply.body).into_response()
}
