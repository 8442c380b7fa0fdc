//! `health`: ours and the reference's fields in one answer (see `HealthResult`), and
//! `channels.status`, the channels' part of it in the reference's `channels.status` shape.

use std::time::Instant;

use switchboard_core::Engine;
use switchboard_core::sessions::{channel_health, channels_status};
use switchboard_core::store::StoreState;
use switchboard_protocol::PROTOCOL_VERSION;
use switchboard_protocol::agents::{HealthResult, McpServerHealth, QueueHealth, StoreHealthInfo};

use super::{MethodResult, core_err, to_value};
use crate::ServerState;

pub async fn health(state: &ServerState) -> MethodResult {
    let started = Instant::now();
    let engine = &state.engine;
    let store = engine.store_health();
    // An unreachable store is not read (the answer would wait for it): counts stay empty.
    let reachable = store.state != StoreState::Unreachable;
    let parts = match reachable {
        true => engine.sessions().health().await.map_err(core_err)?,
        false => engine.sessions().health_unread(),
    };
    let (channels, channel_order, channel_labels) = channel_health(&engine.channels().statuses());
    let (active, queued) = engine.runtime().queue_depth();
    to_value(HealthResult {
        ok: reachable,
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
        store: Some(StoreHealthInfo {
            kind: store.kind.to_string(),
            state: store.state.into(),
            detail: store.detail,
        }),
        queue: Some(QueueHealth {
            active_sessions: active as u64,
            queued_runs: queued as u64,
        }),
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
                state: (&s.state).into(),
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

/// `channels.status`: each channel and its accounts (`openclaw channels status`).
pub fn channels(engine: &Engine) -> MethodResult {
    to_value(channels_status(
        &engine.channels().statuses(),
        engine.now_ms(),
    ))
}
