//! HTTP sources of sessions (SPEC §9.2, §9.3): `POST /channels/webhook/<accountId>` and
//! `POST /hooks/agent`. Sizes, tokens, payloads, routing and runs are the engine's
//! (`switchboard_core::channels::Inbound`); this adapter hands over the bytes and answers
//! `{ok, runId, sessionKey}` (202) or `{ok: false, error: {code, message}}` with the HTTP status
//! of the engine's error (the one mapping, next to the wire codes).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use switchboard_core::CoreError;
use switchboard_protocol::ErrorShape;
use switchboard_protocol::inbound::{InboundAccepted, InboundRefused};

use crate::ServerState;
use crate::http::bearer;

fn refused(status: u16, error: ErrorShape) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(InboundRefused::new(error))).into_response()
}

fn answer(result: Result<InboundAccepted, CoreError>) -> Response {
    match result {
        Ok(run) => (StatusCode::ACCEPTED, Json(run)).into_response(),
        Err(e) => refused(e.http_status(), e.to_shape()),
    }
}

/// `POST /channels/webhook/<accountId>`.
pub async fn webhook(
    State(state): State<Arc<ServerState>>,
    Path(account_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(
        state
            .engine
            .inbound()
            .webhook(&account_id, bearer(&headers), &body)
            .await,
    )
}

/// `POST /hooks/agent`: a run in `hook:<uuid>` (or the key given) with the hook token.
pub async fn hook(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(state.engine.inbound().hook(bearer(&headers), &body).await)
}
