//! `agents.list` and `health` results.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSummary {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub default: bool,
    pub model: String,
    /// The agent's main session key.
    pub main_key: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsListResult {
    pub default_id: String,
    pub agents: Vec<AgentSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthResult {
    pub ok: bool,
    pub version: String,
    pub protocol: u32,
    pub uptime_ms: u64,
    pub sessions: u64,
    pub connections: u64,
}

/// `GET /health`: liveness without authentication (no counts, nothing about sessions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LivenessResult {
    /// Always true: the gateway answers.
    pub ok: bool,
    /// The gateway's version.
    pub version: String,
    /// Milliseconds since the gateway started.
    pub uptime_ms: u64,
}
