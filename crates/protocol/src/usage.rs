//! `sessions.usage`, `sessions.usage.timeseries`, `sessions.usage.logs`, `usage.cost` (and
//! `usage.status`, in [`crate::empty`]): tokens and cost by day, agent, model, provider, channel and session, in the
//! reference's shapes (its Control UI's Usage page and `openclaw gateway usage-cost` read them).
//! They are counted from the transcripts' assistant messages, which carry each model call's
//! usage and price (docs/protocol.md, "Usage").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::checked::Ignored;

/// The window of a usage read, in the reference's words. Dates are `YYYY-MM-DD` in the
/// caller's zone: `mode: "utc"` (the default, and `gateway`: this gateway keeps time in UTC),
/// or `mode: "specific"` with `utcOffset` (`UTC+2`, `UTC-5:30`). Without dates, `range` (`7d`,
/// `30d` the default, `90d`, `1y`, `all`) or `days` ends today.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageWindow {
    pub start_date: Option<String>,
    pub end_date: Option<String>,
    pub range: Option<String>,
    #[serde(deserialize_with = "crate::lenient::opt_int")]
    pub days: Option<i64>,
    pub mode: Option<String>,
    pub utc_offset: Option<String>,
    /// The caller's zone by name; read only as `UTC` (a named zone needs `utcOffset` too).
    pub time_zone: Option<String>,
}

/// `sessions.usage`: the Usage page's read. `key` narrows it to one session; `agentId` to one
/// agent (`agentScope: "all"` is every agent, the default).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsUsageParams {
    pub key: Option<String>,
    pub agent_id: Option<String>,
    pub agent_scope: Option<String>,
    pub start_date: Option<String>,
    pub end_date: Option<String>,
    pub range: Option<String>,
    pub mode: Option<String>,
    pub utc_offset: Option<String>,
    pub time_zone: Option<String>,
    /// Sessions answered, busiest first (default 50, at most 1000).
    #[serde(deserialize_with = "crate::lenient::opt_int")]
    pub limit: Option<i64>,
    /// The reference's grouping of a session's reset instances (`instance`, `family`): each
    /// transcript is counted under its session's key either way.
    pub group_by: Option<String>,
    /// The reference's filter by who created a session: every session has the one creator
    /// `["unknown"]` here.
    pub creator_key: Option<String>,
    /// The reference's context-weight breakdown, which this gateway does not keep
    /// (`hasContextWeight` is false on every row).
    pub include_context_weight: Option<bool>,
    /// Deprecated in the reference; every transcript of the window is counted.
    #[serde(default, skip_serializing)]
    pub include_historical: Ignored,
}

impl SessionsUsageParams {
    /// The window part of the params.
    pub fn window(&self) -> UsageWindow {
        UsageWindow {
            start_date: self.start_date.clone(),
            end_date: self.end_date.clone(),
            range: self.range.clone(),
            days: None,
            mode: self.mode.clone(),
            utc_offset: self.utc_offset.clone(),
            time_zone: self.time_zone.clone(),
        }
    }
}

/// `usage.cost` (`openclaw gateway usage-cost [--days N] [--agent id | --all-agents]`).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageCostParams {
    pub agent_id: Option<String>,
    pub agent_scope: Option<String>,
    pub start_date: Option<String>,
    pub end_date: Option<String>,
    pub range: Option<String>,
    #[serde(deserialize_with = "crate::lenient::opt_int")]
    pub days: Option<i64>,
    pub mode: Option<String>,
    pub utc_offset: Option<String>,
    pub time_zone: Option<String>,
}

impl UsageCostParams {
    /// The window part of the params.
    pub fn window(&self) -> UsageWindow {
        UsageWindow {
            start_date: self.start_date.clone(),
            end_date: self.end_date.clone(),
            range: self.range.clone(),
            days: self.days,
            mode: self.mode.clone(),
            utc_offset: self.utc_offset.clone(),
            time_zone: self.time_zone.clone(),
        }
    }
}

/// `sessions.usage.timeseries` and `sessions.usage.logs`: one session's calls.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionUsageDetailParams {
    pub key: String,
    pub agent_id: Option<String>,
    /// Entries answered, newest (default 200, at most 1000).
    #[serde(deserialize_with = "crate::lenient::opt_int")]
    pub limit: Option<i64>,
    pub start_date: Option<String>,
    pub end_date: Option<String>,
    pub mode: Option<String>,
    pub utc_offset: Option<String>,
    pub time_zone: Option<String>,
}

/// Tokens and USD of some model calls. A call of a model without configured prices counts in
/// `missingCostEntries` and adds no cost.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostTotals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub total_cost: f64,
    pub input_cost: f64,
    pub output_cost: f64,
    pub cache_read_cost: f64,
    pub cache_write_cost: f64,
    pub missing_cost_entries: u64,
}

impl CostTotals {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &CostTotals) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.total_cost += other.total_cost;
        self.input_cost += other.input_cost;
        self.output_cost += other.output_cost;
        self.cache_read_cost += other.cache_read_cost;
        self.cache_write_cost += other.cache_write_cost;
        self.missing_cost_entries += other.missing_cost_entries;
    }
}

/// One day's [`CostTotals`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DailyCost {
    /// `YYYY-MM-DD` in the caller's zone.
    pub date: String,
    #[serde(flatten)]
    pub totals: CostTotals,
}

/// Messages of some transcripts by role; `errors` are the model calls that failed.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageCounts {
    pub total: u64,
    pub user: u64,
    pub assistant: u64,
    pub tool_calls: u64,
    pub tool_results: u64,
    pub errors: u64,
}

/// Tool calls the models made, by tool, most used first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUsage {
    pub total_calls: u64,
    pub unique_tools: u64,
    pub tools: Vec<ToolCount>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCount {
    pub name: String,
    pub count: u64,
}

/// The calls of one model (or, in `byProvider`, one provider).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    pub provider: String,
    pub model: Option<String>,
    pub count: u64,
    pub totals: CostTotals,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentUsage {
    pub agent_id: String,
    pub totals: CostTotals,
}

/// The calls of sessions of one channel (`webchat`: the operator's own sessions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelUsage {
    pub channel: String,
    pub totals: CostTotals,
}

/// One day at a glance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DailyUsage {
    pub date: String,
    pub tokens: u64,
    pub cost: f64,
    pub messages: u64,
    pub tool_calls: u64,
    pub errors: u64,
}

/// One model's calls on one day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelDaily {
    pub date: String,
    pub provider: String,
    pub model: String,
    pub tokens: u64,
    pub cost: f64,
    pub count: u64,
}

/// Everything of a window, summed in each of the reference's cuts. `byCreator` and
/// `dailyLatency` are empty: who created a session and each call's latency are not kept.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageAggregates {
    pub session_count: u64,
    pub messages: MessageCounts,
    pub tools: ToolUsage,
    pub by_model: Vec<ModelUsage>,
    pub by_provider: Vec<ModelUsage>,
    pub by_agent: Vec<AgentUsage>,
    pub by_channel: Vec<ChannelUsage>,
    pub by_creator: Vec<serde_json::Value>,
    pub cost_daily: Vec<DailyCost>,
    pub daily_latency: Vec<serde_json::Value>,
    pub model_daily: Vec<ModelDaily>,
    pub daily: Vec<DailyUsage>,
}

/// One session's part of a window.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionCostSummary {
    pub session_id: String,
    pub first_activity: Option<i64>,
    pub last_activity: Option<i64>,
    pub duration_ms: Option<i64>,
    pub activity_dates: Vec<String>,
    pub daily_breakdown: Vec<DailyCost>,
    pub message_counts: MessageCounts,
    pub tool_usage: ToolUsage,
    pub model_usage: Vec<ModelUsage>,
    #[serde(flatten)]
    pub totals: CostTotals,
}

/// A row of `sessions.usage`: a session with calls in the window.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionUsageRow {
    pub key: String,
    pub label: Option<String>,
    /// The session's current transcript (the newest of the window's when it was deleted).
    pub session_id: String,
    /// `instance`: one row per session key.
    pub scope: String,
    pub updated_at: i64,
    pub agent_id: String,
    pub creator_key: String,
    pub channel: Option<String>,
    pub chat_type: Option<String>,
    pub model_provider: Option<String>,
    pub model: Option<String>,
    pub usage: SessionCostSummary,
    pub has_context_weight: bool,
}

/// The reference's creator filter: one creator, `["unknown"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatorOption {
    pub key: String,
}

/// The answer of `sessions.usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsUsageResult {
    pub updated_at: i64,
    pub start_date: String,
    pub end_date: String,
    /// Busiest (most tokens) first, at most `limit`.
    pub sessions: Vec<SessionUsageRow>,
    pub totals: CostTotals,
    pub aggregates: UsageAggregates,
    pub creator_options: Vec<CreatorOption>,
}

/// The answer of `usage.cost`: every day of the window (days without calls are zero), the
/// totals, and (this gateway's) the totals per `provider/model`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageCostResult {
    pub updated_at: i64,
    pub days: u64,
    pub daily: Vec<DailyCost>,
    pub totals: CostTotals,
    pub by_model: BTreeMap<String, CostTotals>,
}

/// One model call of a session, with the running sums (`sessions.usage.timeseries`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsagePoint {
    pub timestamp: i64,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub cost: f64,
    pub cumulative_tokens: u64,
    pub cumulative_cost: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTimeseries {
    pub session_id: String,
    pub points: Vec<UsagePoint>,
}

/// One message of a session as the Usage page lists it (`sessions.usage.logs`).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageLogEntry {
    pub timestamp: i64,
    /// `user`, `assistant` or `toolResult`.
    pub role: String,
    pub content: String,
    pub tokens: Option<u64>,
    pub cost: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageLogs {
    pub logs: Vec<UsageLogEntry>,
}
