//! `health` and `agents.list`.

use switchboard_core::{Engine, sessions as ops};
use switchboard_protocol::PROTOCOL_VERSION;
use switchboard_protocol::agents::HealthResult;

use super::{MethodResult, core_err, to_value};
use crate::ServerState;

pub async fn health(state: &ServerState) -> MethodResult {
    let sessions = state
        .engine
        .store()
        .count()
        .await
        .map_err(|e| core_err(e.into()))?;
    to_value(HealthResult {
        ok: true,
        version: env!("CARGO_PKG_VERSION").to_string(),
        protocol: PROTOCOL_VERSION,
        uptime_ms: state.engine.uptime_ms(),
        sessions,
        connections: state.connections(),
    })
}

pub fn agents_list(engine: &Engine) -> MethodResult {
    to_value(ops::agents_list(engine))
}
