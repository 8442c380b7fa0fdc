//! `sessions.*`, `chat.history`, `chat.inject`: one-line delegations to the sessions component.

use switchboard_core::Engine;
use switchboard_protocol::chat::{ChatHistoryParams, ChatInjectParams};
use switchboard_protocol::sessions::{
    SessionKeyParams, SessionsCreateParams, SessionsListParams, SessionsPatchParams,
    SessionsResolveParams,
};

use super::{MethodResult, Payload, answer, core_err};
use switchboard_protocol::ErrorShape;

pub async fn list(engine: &Engine, p: SessionsListParams) -> Result<Payload, ErrorShape> {
    let page = engine.sessions().list_text(p).await.map_err(core_err)?;
    Payload::json_bytes(Ok(page))
}

pub async fn create(engine: &Engine, p: SessionsCreateParams) -> MethodResult {
    answer(engine.sessions().create(p).await)
}

pub async fn resolve(engine: &Engine, p: SessionsResolveParams) -> MethodResult {
    answer(engine.sessions().resolve(p).await)
}

pub async fn patch(engine: &Engine, p: SessionsPatchParams) -> MethodResult {
    answer(engine.sessions().patch(p).await)
}

pub async fn reset(engine: &Engine, p: SessionKeyParams) -> MethodResult {
    answer(engine.sessions().reset(p).await)
}

pub async fn delete(engine: &Engine, p: SessionKeyParams) -> MethodResult {
    answer(engine.sessions().delete(p).await)
}

pub async fn history(engine: &Engine, p: ChatHistoryParams) -> Result<Payload, ErrorShape> {
    let page = engine.sessions().history_text(p).await.map_err(core_err)?;
    Ok(Payload::Json(page.as_ref().clone()))
}

pub async fn inject(engine: &Engine, p: ChatInjectParams) -> MethodResult {
    answer(engine.sessions().inject(p).await)
}
