//! The methods the reference's CLI, TUI and Control UI call on start and on every screen
//! (`status`, `system-presence`, `config.get`, `models.list`, `agent.identity.get`,
//! `sessions.describe`, `usage.cost`), the reference's empty state for the features this
//! gateway does not have (`switchboard_protocol::empty`), and a clear `UNAVAILABLE` for the
//! rest of those it has no counterpart of, so no client retries them in a loop.

use switchboard_core::Engine;
use switchboard_protocol::empty::EmptyState;
use switchboard_protocol::overview::{
    AgentIdentityParams, ConfigGetResult, PresenceEntry, SessionsDescribeParams,
};
use switchboard_protocol::{ErrorCode, ErrorShape};

use super::{MethodResult, answer, to_value};

/// Methods of the reference this gateway knows and does not offer, and why.
pub const UNAVAILABLE: &[(&str, &str)] = &[
    ("config.set", "edit the config file and restart the gateway"),
    (
        "config.patch",
        "edit the config file and restart the gateway",
    ),
    (
        "config.apply",
        "edit the config file and restart the gateway",
    ),
];

/// The `UNAVAILABLE` answer of `method`, when it is one of [`UNAVAILABLE`].
pub fn unavailable(method: &str) -> Option<ErrorShape> {
    UNAVAILABLE
        .iter()
        .find(|(name, _)| *name == method)
        .map(|(name, why)| {
            ErrorShape::new(
                ErrorCode::Unavailable,
                format!("{name} is not available on this gateway: {why}"),
            )
        })
}

/// A method of `switchboard_protocol::empty::METHODS`: the reference's empty state.
pub fn empty_state(engine: &Engine, method: &str) -> MethodResult {
    let models = engine.sessions().models().models;
    match EmptyState::of(method, engine.now_ms(), models) {
        Some(answer) => to_value(answer),
        None => Err(ErrorShape::new(
            ErrorCode::Internal,
            format!("{method} has no empty answer"),
        )),
    }
}

pub async fn status(engine: &Engine) -> MethodResult {
    let channels = engine.channels().statuses();
    answer(engine.sessions().status(&channels).await)
}

pub fn presence(engine: &Engine) -> MethodResult {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    let version = env!("CARGO_PKG_VERSION").to_string();
    to_value(vec![PresenceEntry {
        text: format!("Gateway: {host} · switchboard {version}"),
        host,
        version,
        platform: std::env::consts::OS.to_string(),
        mode: "gateway".into(),
        reason: "self".into(),
        ts: engine.now_ms(),
        instance_id: None,
    }])
}

pub fn config_get(engine: &Engine) -> MethodResult {
    let config = serde_json::to_value(engine.config().redacted()).map_err(|e| {
        ErrorShape::new(
            ErrorCode::Internal,
            format!("could not encode the config: {e}"),
        )
    })?;
    let hash = {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        config.to_string().hash(&mut hasher);
        format!("{:016x}", hasher.finish())
    };
    to_value(ConfigGetResult {
        config,
        valid: true,
        hash,
    })
}

pub async fn identity(engine: &Engine, p: AgentIdentityParams) -> MethodResult {
    answer(engine.sessions().identity(p).await)
}

pub async fn describe(engine: &Engine, p: SessionsDescribeParams) -> MethodResult {
    answer(engine.sessions().describe(p).await)
}

pub fn logs_tail(p: crate::logs::LogsTailParams) -> MethodResult {
    to_value(crate::logs::LOGS.tail(&p))
}
