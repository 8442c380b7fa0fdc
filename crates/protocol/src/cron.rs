//! `cron.add`, `cron.list`, `cron.remove`, `cron.run` (SPEC §5.3, §9.3): scheduled agent turns.
//! The schedule grammar is documented in `docs/cron.md`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `cron.add`: store a job that runs an agent turn on a schedule.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronAddParams {
    /// The job's id: 1–64 characters `a-z`, `0-9`, `-`, `_`, starting with a letter or digit
    /// (upper case is lower-cased). Absent = a generated UUID. It names the job's session,
    /// `agent:<agentId>:cron:<id>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// When the job fires, in UTC. A string: a cron expression of 5 fields (`minute hour
    /// day-of-month month day-of-week`), 6 fields (seconds first) or a nickname (`@hourly`,
    /// `@daily`, `@weekly`, `@monthly`, `@yearly`); or a fixed interval `"every 30s"` (units
    /// `s`, `m`, `h`, `d`; at least 1s). An object: `{"cron": "<expression>"}`,
    /// `{"every": "30s"}` or `{"everyMs": 30000}`.
    #[serde(default)]
    pub schedule: Value,
    /// The text the agent receives as a user message at each firing (non-empty).
    #[serde(default)]
    pub message: String,
    /// The agent that runs the job; absent = the default agent. Must be a configured agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Whether the agent's reply is delivered to a channel (stored; delivery goes through the
    /// outbox). Default false: the reply stays in the job's transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliver: Option<bool>,
    /// The time zone of a cron expression. Only `"UTC"` is accepted (the default): schedules
    /// are evaluated in UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
}

/// `cron.remove` and `cron.run`: the job to act on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJobIdParams {
    /// The job's id, as `cron.add` answered it.
    pub id: String,
}

/// A stored cron job, as `cron.add` and `cron.list` answer it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJob {
    /// The job's id.
    pub id: String,
    /// The agent that runs the job.
    pub agent_id: String,
    /// The session every firing runs in: `agent:<agentId>:cron:<id>`.
    pub session_key: String,
    /// The schedule in its canonical text form (`"*/5 * * * *"`, `"every 30s"`); `cron.add`
    /// accepts it as it is.
    pub schedule: String,
    /// `cron` (an expression) or `every` (a fixed interval).
    pub kind: String,
    /// The interval in milliseconds (`every` jobs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<i64>,
    /// The time zone the schedule is evaluated in (always `UTC`).
    pub tz: String,
    /// The text the agent receives at each firing.
    pub message: String,
    /// Whether replies are to be delivered to a channel.
    pub deliver: bool,
    /// When the job was added (ms); interval slots are counted from here.
    pub created_at: i64,
    /// The next slot the scheduler will fire (ms), or a slot that is due now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<i64>,
    /// The last slot fired by the schedule (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_slot: Option<i64>,
    /// The run of the last firing (scheduled or `cron.run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_id: Option<String>,
    /// When the last firing was submitted (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fired_at: Option<i64>,
}

/// The answer of `cron.add`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronAddResult {
    pub ok: bool,
    /// The stored job.
    pub job: CronJob,
}

/// The answer of `cron.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronListResult {
    /// `cron.enabled`: false = jobs are kept but the scheduler does not fire them.
    pub enabled: bool,
    /// Every job, by id.
    pub jobs: Vec<CronJob>,
}

/// The answer of `cron.remove`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronRemoveResult {
    pub ok: bool,
    /// The removed job's id.
    pub id: String,
    /// Always true (an unknown id is a `NOT_FOUND` error).
    pub removed: bool,
}

/// The answer of `cron.run`: the run is stored and queued on lane `cron`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronRunResult {
    pub ok: bool,
    /// The job's id.
    pub id: String,
    /// The run; `agent.wait` follows it.
    pub run_id: String,
    /// The job's session.
    pub session_key: String,
    /// `started`.
    pub status: String,
}
