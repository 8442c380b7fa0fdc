//! `cron.add`, `cron.get`, `cron.list`, `cron.status`, `cron.remove`, `cron.run` (SPEC §5.3,
//! §9.3): scheduled agent turns. The schedule grammar is documented in `docs/cron.md`. Jobs are
//! answered in the reference's shape as well (`name`, `enabled`, `schedule: {kind, …}`,
//! `payload`, `delivery`, `state`), so its `cron` commands work.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::runs::RunStatus;

/// `cron.add`: store a job that runs an agent turn on a schedule.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronAddParams {
    /// The job's id: 1–64 characters `a-z`, `0-9`, `-`, `_`, starting with a letter or digit
    /// (upper case is lower-cased). Absent = a generated UUID. It names the job's session,
    /// `agent:<agentId>:cron:<id>`.
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
    pub agent_id: Option<String>,
    /// Whether the agent's reply is delivered to a channel (stored; delivery goes through the
    /// outbox). Default false: the reply stays in the job's transcript.
    pub deliver: Option<bool>,
    /// The time zone of a cron expression. Only `"UTC"` is accepted (the default): schedules
    /// are evaluated in UTC.
    pub tz: Option<String>,
    /// The job's name (the reference's); absent = its id. Without an `id`, a name that is a
    /// valid id becomes the id.
    pub name: Option<String>,
    /// False = stored but never fired by the schedule (`cron.run` still fires it).
    pub enabled: Option<bool>,
    /// The reference's session target: only `isolated` (a session of the job's own).
    pub session_target: Option<String>,
    /// The reference's wake mode (`now` or `next-heartbeat`); an isolated job runs at its slot
    /// either way.
    pub wake_mode: Option<String>,
    /// The reference's payload: `{kind: "agentTurn", message}` (instead of `message`).
    pub payload: Option<Value>,
    /// The reference's delivery: `{mode: "announce" | "none"}` (instead of `deliver`).
    pub delivery: Option<Value>,
}

/// `cron.list`: which jobs, and a page of them.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronListParams {
    /// Include disabled jobs (default false, as the reference).
    pub include_disabled: Option<bool>,
    /// Only this agent's jobs.
    pub agent_id: Option<String>,
    /// Page size; absent = every job.
    #[serde(deserialize_with = "crate::lenient::opt_int")]
    pub limit: Option<i64>,
    /// Jobs to skip (in id order).
    #[serde(deserialize_with = "crate::lenient::opt_int")]
    pub offset: Option<i64>,
}

/// The answer of `cron.status`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronStatusResult {
    /// `cron.enabled`: whether the scheduler fires jobs.
    pub enabled: bool,
    /// Stored jobs.
    pub jobs: usize,
    /// The earliest next slot of an enabled job (ms).
    pub next_wake_at_ms: Option<i64>,
}

wire_names! {
    /// How a job's schedule is given: `cron` (an expression) or `every` (a fixed interval).
    pub enum ScheduleKind {
        Cron = "cron",
        Every = "every",
    }
}

/// What a job does at each firing, in the reference's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum CronPayload {
    /// An agent turn with this message (the reference's only kind we run).
    #[serde(rename = "agentTurn")]
    AgentTurn { message: String },
}

/// Where a job's replies go, in the reference's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CronDelivery {
    pub mode: CronDeliveryMode,
}

wire_names! {
    /// `announce` (replies are delivered to the session's route) or `none`.
    pub enum CronDeliveryMode {
        Announce = "announce",
        None = "none",
    }
}

/// A job's schedule in the reference's shape.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    /// `cron` or `every`.
    pub kind: ScheduleKind,
    /// The cron expression (`cron`).
    pub expr: Option<String>,
    /// Always `UTC` (`cron`).
    pub tz: Option<String>,
    /// The interval (`every`).
    pub every_ms: Option<i64>,
}

/// A job's run state in the reference's shape.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJobState {
    pub next_run_at_ms: Option<i64>,
    pub last_run_at_ms: Option<i64>,
    /// The last firing's run status once it ended (`ok`, `error`, `timeout`, `aborted`).
    pub last_run_status: Option<RunStatus>,
    /// When the last firing's run started, while it runs.
    pub running_at_ms: Option<i64>,
}

/// `cron.get`, `cron.remove` and `cron.run`: the job to act on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJobIdParams {
    /// The job's id, as `cron.add` answered it (`jobId` is accepted too).
    #[serde(alias = "jobId")]
    pub id: String,
}

/// A stored cron job, as `cron.add` and `cron.list` answer it.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJob {
    /// The job's id.
    pub id: String,
    /// The agent that runs the job.
    pub agent_id: String,
    /// The session every firing runs in: `agent:<agentId>:cron:<id>`.
    pub session_key: String,
    /// The job's name (its id unless named).
    pub name: String,
    /// False = the schedule does not fire it.
    pub enabled: bool,
    /// The schedule, in the reference's shape: `{kind: "cron", expr, tz}` or `{kind: "every",
    /// everyMs}`.
    pub schedule: ScheduleView,
    /// The schedule in its canonical text form (`"*/5 * * * *"`, `"every 30s"`); `cron.add`
    /// accepts it as it is.
    pub schedule_text: String,
    /// Always `isolated`: the job runs in a session of its own.
    pub session_target: String,
    /// Always `now`.
    pub wake_mode: String,
    /// `{kind: "agentTurn", message}`.
    pub payload: CronPayload,
    /// `{mode: "announce"}` when replies are delivered, else `{mode: "none"}`.
    pub delivery: CronDelivery,
    /// Next and last runs, the reference's way.
    pub state: CronJobState,
    /// `createdAt` again, under the reference's name.
    pub created_at_ms: i64,
    /// `cron` (an expression) or `every` (a fixed interval).
    pub kind: ScheduleKind,
    /// The interval in milliseconds (`every` jobs only).
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
    pub next_run_at: Option<i64>,
    /// The last slot fired by the schedule (ms).
    pub last_slot: Option<i64>,
    /// The run of the last firing (scheduled or `cron.run`).
    pub last_run_id: Option<String>,
    /// When the last firing was submitted (ms).
    pub last_fired_at: Option<i64>,
}

/// The answer of `cron.add`, as the reference's: the stored job itself (`openclaw cron add …
/// | jq .id` is its id), and where its replies go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronAddResult {
    #[serde(flatten)]
    pub job: CronJob,
    pub delivery_preview: DeliveryPreview,
}

/// The answer of `cron.list`: a page of jobs with the reference's paging fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronListResult {
    /// `cron.enabled`: false = jobs are kept but the scheduler does not fire them.
    pub enabled: bool,
    /// The page's jobs, by id.
    pub jobs: Vec<CronJob>,
    /// Jobs matching the filters, over all pages.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
    pub has_more: bool,
    /// The offset of the next page; `null` on the last.
    pub next_offset: Option<usize>,
    /// Changes whenever a job is added or removed (pages of one revision fit together).
    pub snapshot_revision: String,
    /// Where each job of the page delivers its replies, by job id (`openclaw cron list`'s
    /// Delivery column).
    pub delivery_previews: std::collections::BTreeMap<String, DeliveryPreview>,
}

/// Where a job's replies go, for people: `announce` (detail: the job session's route) or `not
/// requested`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryPreview {
    pub label: String,
    pub detail: String,
}

impl DeliveryPreview {
    /// The preview of a job that does (`deliver`) or does not deliver its replies.
    pub fn of(deliver: bool) -> Self {
        let (label, detail) = match deliver {
            true => ("announce", "the job session's route"),
            false => ("not requested", "not requested"),
        };
        Self {
            label: label.into(),
            detail: detail.into(),
        }
    }
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
    /// Always true: the run is queued (the reference's field; its CLI reads it).
    pub enqueued: bool,
}

/// `cron.runs`: the runs of one job (`id`) or of every job (`scope: "all"`, the default without
/// an id), newest first, as the reference's CLI and Control UI (Automations) ask.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronRunsParams {
    /// The job's id (`jobId` is accepted too).
    #[serde(alias = "jobId")]
    pub id: Option<String>,
    /// `job` (needs `id`) or `all`.
    pub scope: Option<String>,
    /// With `scope: "all"`: only this agent's jobs.
    pub agent_id: Option<String>,
    /// Only this run.
    pub run_id: Option<String>,
    /// 1–200, default 50.
    #[serde(deserialize_with = "crate::lenient::opt_int")]
    pub limit: Option<i64>,
    #[serde(deserialize_with = "crate::lenient::opt_int")]
    pub offset: Option<i64>,
    /// `all`, `ok`, `error` or `skipped` (and `statuses`, several).
    pub status: Option<String>,
    pub statuses: Option<Vec<String>>,
    /// `delivered`, `not-delivered`, `unknown`, `not-requested` (and `deliveryStatuses`).
    pub delivery_status: Option<String>,
    pub delivery_statuses: Option<Vec<String>>,
    /// Words in the job's name or id, the run's summary or error (any case).
    pub query: Option<String>,
    /// `desc` (newest first, the default) or `asc`.
    pub sort_dir: Option<String>,
}

/// The answer of `cron.runs`, with the reference's paging fields. A job's last firing is the
/// run this gateway keeps for it (`lastRunId`): there is one entry at most.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronRunsResult {
    pub entries: Vec<CronRunEntry>,
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
    pub has_more: bool,
    pub next_offset: Option<usize>,
}

/// One run of a job.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronRunEntry {
    /// When the run ended, else when it was fired (ms).
    pub ts: i64,
    pub job_id: String,
    /// The job's name (its id when it has none).
    pub job_name: String,
    /// `finished` once the run ended, else `started`.
    pub action: String,
    /// `ok` or `error` once it ended (a timeout and an abort are errors); `running` before.
    pub status: String,
    pub run_id: String,
    /// When it was fired (ms).
    pub run_at_ms: i64,
    /// From its start to its end (ms), once it ended.
    pub duration_ms: Option<i64>,
    pub session_key: String,
    /// Why it failed.
    pub error: Option<String>,
    /// The start of the run's reply.
    pub summary: Option<String>,
    /// `not-requested` for a job that does not deliver; `unknown` for one that does (the
    /// delivery is the outbox's: `deliveries.list` has it).
    pub delivery_status: String,
    /// The model that answered.
    pub model: Option<String>,
}

/// `cron.update` (`openclaw cron enable|disable|edit`): what changes in a job, in either shape
/// `cron.add` takes (`enabled`, `name`, `schedule`, `message` or `payload`, `deliver` or
/// `delivery`); absent fields stay as they are.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronUpdateParams {
    /// The job's id (`jobId` is accepted too).
    #[serde(alias = "jobId")]
    pub id: String,
    /// The fields to change.
    #[serde(default)]
    pub patch: CronAddParams,
}
