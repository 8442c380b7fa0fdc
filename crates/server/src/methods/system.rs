//! `health`: ours and the reference's fields in one answer (see `HealthResult`).

use std::time::Instant;

use switchboard_core::Engine;
use switchboard_core::sessions::channel_health;
use switchboard_protocol::PROTOCOL_VERSION;
use switchboard_protocol::agents::{HealthResult, McpServerHealth};

use super::{MethodResult, core_err, to_value};
use crate::ServerState;

pub async fn health(state: &ServerState) -> MethodResult {
    let started = Instant::now();
    let engine = &state.engine;
    let parts = engine.sessions().health().await.map_err(core_err)?;
    let (channels, channel_order, channel_labels) =
        channel_health(engine.config(), engine.telegram());
    to_value(HealthResult {
        ok: true,
        version: env!("CARGO_PKG_VERSION").to_string(),
        protocol: PROTOCOL_VERSION,
        uptime_ms: engine.uptime_ms(),
        session_count: parts.session_count,
        connections: state.connections(),
        ts: engine.now_ms(),
        duration_ms: started.elapsed().as_millis() as i64,
        channels,
        channel_order,
        channel_labels,
        heartbeat_seconds: 0,
        default_agent_id: parts.default_agent_id,
        agents: parts.agents,
        sessions: parts.sessions,
        mcp: mcp_health(engine),
    })
}

/// Each MCP server's state, by name.
fn mcp_health(engine: &Engine) -> std::collections::BTreeMap<String, McpServerHealth> {
    engine
        .mcp()
        .statuses()
        .into_iter()
        .map(|s| {
            let health = McpServerHealth {
                transport: s.transport.to_string(),
                state: s.state.as_str().to_string(),
                tools: s.tools,
                pid: s.pid,
                last_error: s.last_error,
                restarts: s.restarts,
                cancelled: s.cancelled,
            };
            (s.name, health)
        })
        .collect()
}
