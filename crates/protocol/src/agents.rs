//! `agents.list` and `health` results.

use serde::{Deserialize, Serialize};

#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSummary {
    pub id: String,
    pub name: Option<String>,
    pub default: bool,
    /// The agent's model in the reference's shape, `{primary, fallbacks}`. **Changed meaning:**
    /// it was the `provider/model` string.
    pub model: AgentModel,
    /// The agent's main session key.
    pub main_key: String,
    /// The agents it may spawn sub-agents as besides itself (`subagents.allowAgents`; `*` is
    /// any).
    #[serde(default)]
    pub allow_agents: Vec<String>,
    /// The tools it may call in its main session (session tools and MCP servers' tools, after
    /// its `tools.allow/deny`).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Its settings as they apply: its own where it has them, `agents.defaults` elsewhere.
    pub settings: Option<AgentSettings>,
}

/// An agent's resolved settings, for operators (the web page's Agents screen). Nothing secret
/// is among them; its system prompt is given by its length only.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSettings {
    /// Whether it is in `agents.list` (an unconfigured id runs on the defaults).
    pub configured: bool,
    pub thinking_level: String,
    pub sandbox_mode: String,
    pub sandbox_network: bool,
    pub session_tools_visibility: String,
    /// `tools.profile` (its own, else the global one); absent: every tool.
    pub tools_profile: Option<String>,
    pub tools_allow: Vec<String>,
    pub tools_deny: Vec<String>,
    /// `workspace` as written, if set (else `<state>/workspace/<agentId>`).
    pub workspace: Option<String>,
    /// The model of its sub-agents, if not its own.
    pub subagent_model: Option<String>,
    /// Characters of its own system prompt (0: none).
    pub system_prompt_chars: usize,
}

/// An agent's model: the one tried first and the ones tried after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentModel {
    /// `provider/model`.
    pub primary: String,
    pub fallbacks: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsListResult {
    pub default_id: String,
    pub agents: Vec<AgentSummary>,
}

/// `health`: ours (`version`, `protocol`, `uptimeMs`, `sessionCount`, `connections`) and the
/// reference's (`ts`, `durationMs`, channels, agents, `sessions: {path, count, recent}`), which
/// its `openclaw health` prints.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthResult {
    pub ok: bool,
    pub version: String,
    pub protocol: u32,
    pub uptime_ms: u64,
    /// Every stored session.
    pub session_count: u64,
    /// Open client connections.
    pub connections: u64,
    /// When the answer was made (ms).
    pub ts: i64,
    /// How long making it took.
    pub duration_ms: i64,
    /// Per channel: `{configured, enabled, accounts: {<id>: {accountId, configured, enabled}}}`.
    pub channels: serde_json::Map<String, serde_json::Value>,
    /// The channels in display order.
    pub channel_order: Vec<String>,
    /// Display names by channel id.
    pub channel_labels: std::collections::BTreeMap<String, String>,
    /// Always 0: this gateway runs no heartbeat turns.
    pub heartbeat_seconds: u64,
    pub default_agent_id: String,
    /// Every configured agent, the default first.
    pub agents: Vec<HealthAgent>,
    /// Each MCP server (`mcp.servers.<name>`): its state and the tools it offers.
    #[serde(default)]
    pub mcp: std::collections::BTreeMap<String, McpServerHealth>,
    /// The store: whether it answers now. While it is `unreachable`, `ok` is false and the
    /// session counts and lists are empty (they could not be read).
    pub store: Option<StoreHealthInfo>,
    /// Runs now: sessions running one and runs queued behind them (ours; `switchboard status`).
    pub queue: Option<QueueHealth>,
    /// All sessions: **changed meaning** — a number before, now the reference's object (the
    /// number is `sessionCount`).
    pub sessions: HealthSessions,
}

/// One MCP server in `health`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerHealth {
    /// `stdio` or `http`.
    pub transport: String,
    /// `starting`, `running`, `restarting` or `stopped`.
    pub state: McpServerState,
    /// The tools it offers, as models call them (`<server>__<tool>`).
    pub tools: Vec<String>,
    /// The process of a stdio server while it runs.
    pub pid: Option<u32>,
    /// Why it last failed or went away.
    pub last_error: Option<String>,
    /// Reconnections since the gateway started.
    pub restarts: u64,
    /// Calls cancelled (timed out, or their run aborted): each sent `notifications/cancelled`.
    pub cancelled: u64,
}

/// One agent in `health`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthAgent {
    pub agent_id: String,
    pub name: Option<String>,
    pub is_default: bool,
    /// `{enabled: false, everyMs: null}`: no heartbeat turns.
    pub heartbeat: serde_json::Value,
    pub sessions: HealthSessions,
}

/// Sessions in `health`: where they are kept, how many, the most recently updated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthSessions {
    /// The session index file (`agents/<id>/sessions/sessions.json`), or the database for all.
    pub path: String,
    pub count: u64,
    pub recent: Vec<RecentSession>,
}

/// A recently updated session in `health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentSession {
    pub key: String,
    pub updated_at: Option<i64>,
    /// Milliseconds since its last update.
    pub age: Option<i64>,
}

wire_names! {
    /// Where an MCP server stands.
    pub enum McpServerState {
        Starting = "starting",
        Running = "running",
        /// Gone; reconnecting after a wait.
        Restarting = "restarting",
        Stopped = "stopped",
    }
}

wire_names! {
    /// How the store answers now.
    pub enum StoreState {
        Ok = "ok",
        /// It has not answered for a few seconds: calls are slow.
        Degraded = "degraded",
        /// Not for longer than a lease: calls that need it are refused with `UNAVAILABLE`.
        Unreachable = "unreachable",
    }
}

/// The run queue in `health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueHealth {
    /// Sessions with a run active (executing or waiting for a lane slot).
    pub active_sessions: u64,
    /// Runs queued behind their session's active run.
    pub queued_runs: u64,
}

/// The store in `health`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreHealthInfo {
    /// `sqlite` or `postgres`.
    pub kind: String,
    /// `ok`; `degraded` (it has not answered for a few seconds: calls are slow); `unreachable`
    /// (not for longer than a lease: calls that need it are refused with `UNAVAILABLE`).
    pub state: StoreState,
    /// Where it is, how long it has been quiet and its last error (never a password).
    pub detail: Option<String>,
}

/// `GET /health`: liveness without authentication (no counts, nothing about sessions).
/// Answered 503 while the store is unreachable.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LivenessResult {
    /// True while the gateway can serve: false while its store is unreachable.
    pub ok: bool,
    /// The gateway's version.
    pub version: String,
    /// Milliseconds since the gateway started.
    pub uptime_ms: u64,
    /// The store's state: `ok`, `degraded` or `unreachable` (no detail: this door asks no
    /// token).
    pub store: Option<String>,
}

/// The answer of `channels.status` (`openclaw channels status`), in the reference's shape: each
/// channel as `health` shows it, and its accounts as a list per channel, which the CLI prints
/// one line each (`Telegram default: enabled, configured, running`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelsStatusResult {
    pub ts: i64,
    /// The channels in display order.
    pub channel_order: Vec<String>,
    /// Display names by channel id.
    pub channel_labels: std::collections::BTreeMap<String, String>,
    /// Per channel: `{configured, enabled, accounts: {<id>: {…}}}`, as `health` has it.
    pub channels: serde_json::Map<String, serde_json::Value>,
    /// Per channel: its accounts, `{accountId, configured, enabled, running?, state?,
    /// lastError?}`.
    pub channel_accounts: std::collections::BTreeMap<String, Vec<serde_json::Value>>,
    /// Per channel: the account used when none is named.
    pub channel_default_account_id: std::collections::BTreeMap<String, String>,
    /// Problems to show under "Warnings:" (none: a failed account says so in `lastError`).
    pub status_issues: Vec<serde_json::Value>,
}
