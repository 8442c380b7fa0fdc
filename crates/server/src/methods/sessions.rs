//! `sessions.*`, `chat.history`, `chat.inject`.

use switchboard_core::{Engine, sessions as ops};
use switchboard_protocol::chat::{ChatHistoryParams, ChatInjectParams};
use switchboard_protocol::sessions::{
    SessionKeyParams, SessionsCreateParams, SessionsListParams, SessionsPatchParams,
    SessionsResolveParams,
};

use super::{MethodResult, core_err, to_value};

pub async fn list(engine: &Engine, p: SessionsListParams) -> MethodResult {
    to_value(ops::list(engine, p).await.map_err(core_err)?)
}

pub async fn create(engine: &Engine, p: SessionsCreateParams) -> MethodResult {
    ops::create(engine, p).await.map_err(core_err)
}

pub async fn resolve(engine: &Engine, p: SessionsResolveParams) -> MethodResult {
    ops::resolve(engine, p).await.map_err(core_err)
}

pub async fn patch(engine: &Engine, p: SessionsPatchParams) -> MethodResult {
    ops::patch(engine, p).await.map_err(core_err)
}

pub async fn reset(engine: &Engine, p: SessionKeyParams) -> MethodResult {
    ops::reset(engine, p).await.map_err(core_err)
}

pub async fn delete(engine: &Engine, p: SessionKeyParams) -> MethodResult {
    ops::delete(engine, p).await.map_err(core_err)
}

pub async fn history(engine: &Engine, p: ChatHistoryParams) -> MethodResult {
    to_value(ops::history(engine, p).await.map_err(core_err)?)
}

pub async fn inject(engine: &Engine, p: ChatInjectParams) -> MethodResult {
    to_value(ops::inject(engine, p).await.map_err(core_err)?)
}
