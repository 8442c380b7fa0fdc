//! `health`.

use switchboard_protocol::PROTOCOL_VERSION;
use switchboard_protocol::agents::HealthResult;

use super::{MethodResult, answer};
use crate::ServerState;

pub async fn health(state: &ServerState) -> MethodResult {
    let engine = &state.engine;
    answer(
        engine
            .sessions()
            .count()
            .await
            .map(|sessions| HealthResult {
                ok: true,
                version: env!("CARGO_PKG_VERSION").to_string(),
                protocol: PROTOCOL_VERSION,
                uptime_ms: engine.uptime_ms(),
                sessions,
                connections: state.connections(),
            }),
    )
}
