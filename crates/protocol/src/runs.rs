//! `agent`, `agent.wait`, `chat.send`, `chat.abort` (SPEC §5.3).

use serde::{Deserialize, Serialize};

use crate::lenient;

/// `chat.send`: an operator message into a session; starts a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatSendParams {
    pub session_key: String,
    pub message: String,
    /// A repeated key answers the first run and does no work twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Upper bound of the run in milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout_ms: Option<i64>,
}

/// `agent`: start a run; answered with `accepted`, then with the outcome under the same id.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentParams {
    pub session_key: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_system_prompt: Option<String>,
    /// `main` (default), `nested`, `subagent` or `cron`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    /// Upper bound of the run in seconds.
    #[serde(
        default,
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<i64>,
    /// Agent of a new session whose key does not name one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// `provider/model` for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Label of a new session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Parent of a new sub-agent session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned_by: Option<String>,
    /// Deliver the reply through the outbox: to `channel`/`to` when given, else to the
    /// session's route (none → recorded, not sent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deliver: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentWaitParams {
    pub run_id: String,
    /// How long to wait: default 30000, at most 600000.
    #[serde(
        default,
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout_ms: Option<i64>,
}

/// The outcome of `agent.wait`, and the final answer of `agent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub run_id: String,
    /// `ok | error | timeout | aborted` once ended; `timeout` with `waitTimedOut` when the wait
    /// ended first (then `state` says whether the run is `queued` or `running`).
    pub status: String,
    pub session_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait_timed_out: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run's final assistant text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatAbortParams {
    pub session_key: String,
    /// Only this run (queued or running); default: the session's running run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}
