//! The methods the reference's CLI, TUI and Control UI call on start and on every screen, in its
//! shapes: `status`, `system-presence`, `config.get`, `models.list`, `agent.identity.get`,
//! `sessions.describe`, `usage.cost`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agents::{HealthSessions, RecentSession};
use crate::sessions::SessionRow;

/// The model a session uses when it names none: `sessions.list`'s and `sessions.describe`'s
/// `defaults`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDefaults {
    /// The default agent's model id (without the provider).
    pub model: String,
    pub model_provider: String,
    /// Its configured context window.
    pub context_tokens: Option<u64>,
}

/// `sessions.describe`: one session's row.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsDescribeParams {
    /// Any accepted reference (`sessionKey` is accepted too).
    #[serde(alias = "sessionKey")]
    pub key: String,
    pub agent_id: Option<String>,
}

/// The answer of `sessions.describe`: `session` is `null` for a session that does not exist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsDescribeResult {
    pub session: Option<SessionRow>,
    pub defaults: SessionDefaults,
}

/// The answer of `status` (what the reference's `openclaw status` and the TUI's `/status` read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusResult {
    pub ok: bool,
    pub runtime_version: String,
    /// One line per channel (`Webhook: configured (1 account)`).
    pub channel_summary: Vec<String>,
    /// `{defaultAgentId, agents: [{agentId, enabled: false, everyMs: null}]}`: no heartbeats.
    pub heartbeat: Value,
    pub sessions: StatusSessions,
    /// Always empty: this gateway queues no system events.
    pub queued_system_events: Vec<String>,
}

/// `status.sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusSessions {
    /// The agents' session index files.
    pub paths: Vec<String>,
    pub count: u64,
    pub defaults: SessionDefaults,
    pub recent: Vec<RecentSession>,
    /// Each agent's sessions (`openclaw status` lists the agents from it).
    pub by_agent: Vec<AgentSessions>,
}

/// One agent's part of `status.sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSessions {
    pub agent_id: String,
    /// Where its sessions are, how many, the most recent first.
    #[serde(flatten)]
    pub sessions: HealthSessions,
}

/// One entry of `system-presence` (the answer is an array of them).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PresenceEntry {
    pub host: String,
    pub version: String,
    pub platform: String,
    /// `gateway` for the gateway itself.
    pub mode: String,
    pub reason: String,
    pub text: String,
    pub ts: i64,
    pub instance_id: Option<String>,
}

/// The answer of `config.get`: the running config with every secret redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigGetResult {
    /// The config as loaded (defaults filled in), secrets replaced by `[redacted]`.
    pub config: Value,
    /// Always true: a gateway runs only on a valid config.
    pub valid: bool,
    /// A digest of the redacted config (changes when the config does).
    pub hash: String,
}

/// One model of `models.list`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// The model id the provider knows.
    pub id: String,
    pub name: String,
    pub provider: String,
    pub context_window: Option<u64>,
    /// `["text"]` or `["text", "image"]`.
    pub input: Vec<String>,
}

/// The answer of `models.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelsListResult {
    pub models: Vec<ModelInfo>,
}

/// `agent.identity.get`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentIdentityParams {
    pub agent_id: Option<String>,
    /// The agent of this session when `agentId` is absent.
    pub session_key: Option<String>,
}

/// The answer of `agent.identity.get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentIdentity {
    pub agent_id: String,
    /// The configured name, else the id.
    pub name: String,
}
