//! The arguments and results of `message` (`group:messaging`), `cron` (`group:automation`)
//! and `session_status` (SPEC §6.5), with the reference's names where it has them (`target`
//! for `to`, `message` for `text`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

use crate::cron::CronJob;

/// Arguments of `message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "")]
pub struct MessageParams {
    /// Only "send" (the default).
    #[serde(default)]
    pub action: Option<String>,
    /// The channel: telegram, discord, slack, whatsapp, signal, matrix, webhook, …
    pub channel: String,
    /// The chat on that channel (a chat id, a channel id, a phone number, a room id).
    #[serde(alias = "target")]
    pub to: String,
    /// The text to send.
    #[serde(alias = "message")]
    pub text: String,
    /// The channel's account (bot) to send as, when it has several.
    #[serde(default)]
    pub account_id: Option<String>,
    /// A thread of that chat.
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// What `message` did: the message is in the outbox (`deliveryStatus`: `pending`, or `denied`
/// by the send policy with the reason in `detail`).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueued {
    /// `"ok"`.
    pub status: String,
    pub delivery_id: String,
    pub delivery_status: String,
    pub detail: Option<String>,
}

/// `cron`'s actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CronAction {
    // Your jobs.
    List,
    // A new job: `schedule` and `message` (and `name`, `enabled`).
    Add,
    // Remove job `id`.
    Remove,
    // Fire job `id` now.
    Run,
}

/// Arguments of `cron`: the calling agent's own jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "")]
pub struct CronToolParams {
    /// list (your jobs), add, remove (id) or run (id: fire it now).
    pub action: CronAction,
    /// The job (remove, run; add: its id, else one is made).
    #[serde(default, alias = "jobId")]
    pub id: Option<String>,
    /// add: when it fires, in UTC: a cron expression ("0 9 * * 1-5"), a nickname ("@daily") or
    /// "every 30m".
    #[serde(default)]
    pub schedule: Option<String>,
    /// add: what you are told at each firing.
    #[serde(default)]
    pub message: Option<String>,
    /// add: a name for it.
    #[serde(default)]
    pub name: Option<String>,
    /// add: false stores it without firing it.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// What `cron` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CronToolAnswer {
    /// list.
    Jobs { jobs: Vec<CronJob> },
    /// add.
    Job { job: Box<CronJob> },
    /// remove, run.
    #[serde(rename_all = "camelCase")]
    Done {
        id: String,
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
    },
}

/// Arguments of `session_status`: none.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(description = "")]
pub struct SessionStatusParams {}

/// The calling session, as `session_status` shows it.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    pub session_key: String,
    pub session_id: String,
    pub agent_id: String,
    /// The model its next turn uses.
    pub model: String,
    pub thinking_level: Option<String>,
    /// Whether its commands run in the sandbox.
    pub sandboxed: bool,
    /// Its agent's workspace.
    pub workspace: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// The tokens of the last model call's prompt, and the model's window.
    pub context_tokens: Option<u64>,
    pub context_window: Option<u64>,
    /// Messages in the current transcript.
    pub messages: i64,
    pub cost_usd: f64,
    /// Where its replies go (`channel`, `to`), if anywhere.
    pub channel: Option<String>,
    pub to: Option<String>,
    /// Now, in UTC (RFC 3339).
    pub time: String,
}
