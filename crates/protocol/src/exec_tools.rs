//! The command tools' arguments and results (SPEC §6.5, `group:runtime`): `exec` runs a shell
//! command in the agent's workspace; a command still running after `yieldMs` (or started with
//! `background: true`) goes on as a background process that `process` lists, polls, writes to
//! and kills. The reference's names (`command`, `workdir`, `yieldMs`, `background`, `timeout`;
//! `action`, and `sessionId` for a process) are kept.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// Arguments of `exec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "")]
pub struct ExecParams {
    /// The shell command (`sh -c`), run in your workspace.
    #[serde(alias = "cmd")]
    pub command: String,
    /// A folder of the workspace to run it in (default: the workspace).
    #[serde(default)]
    pub workdir: Option<String>,
    /// Variables to set for it (PATH, HOME and LANG are set already).
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Wait this long (ms) before the command goes on in the background (default 10000).
    #[serde(default)]
    pub yield_ms: Option<u64>,
    /// Start it in the background at once and answer its processId.
    #[serde(default)]
    pub background: Option<bool>,
    /// Stop it after this many seconds (default 1800).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub timeout: Option<u64>,
}

/// `process`'s actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProcessAction {
    // Your processes, newest first.
    List,
    // A process's state and the output since the last poll.
    Poll,
    // A process's whole kept output.
    Log,
    // Send `data` to its standard input.
    Write,
    // Stop it (and everything it started).
    Kill,
    // Forget a process that has ended.
    Remove,
}

/// Arguments of `process`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "")]
pub struct ProcessParams {
    /// list (your processes), poll (state and new output), log (all kept output), write
    /// (data to its input), kill, or remove (forget an ended one).
    pub action: ProcessAction,
    /// The process (`processId` from exec); not for `list`.
    #[serde(default, alias = "sessionId")]
    pub process_id: Option<String>,
    /// For `write`: the text to send (add "\n" to end a line).
    #[serde(default)]
    pub data: Option<String>,
}

/// A command's state: `running`, `exited` (with its `exitCode`), `killed` (by `process kill`,
/// its run's abort or the gateway's stop), `timeout`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandState {
    /// The process, for `process` (a command that ended in the foreground has none).
    pub process_id: Option<String>,
    pub status: String,
    pub exit_code: Option<i32>,
    /// The output (stdout and stderr as they came): its head and its tail when it is long.
    pub output: String,
    /// Whether output was left out between head and tail.
    pub truncated: bool,
    pub duration_ms: u64,
}

/// One process in `process list`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRow {
    pub process_id: String,
    pub command: String,
    pub status: String,
    pub exit_code: Option<i32>,
    /// When it started (ms since the epoch).
    pub started_at: i64,
    pub duration_ms: u64,
}

/// What `process` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProcessAnswer {
    /// `list`.
    List { processes: Vec<ProcessRow> },
    /// `poll`, `log`, `kill`.
    State(CommandState),
    /// `write`: bytes sent.
    #[serde(rename_all = "camelCase")]
    Written { process_id: String, written: u64 },
    /// `remove`.
    #[serde(rename_all = "camelCase")]
    Removed { process_id: String, removed: bool },
}

/// A command waiting for an operator's approval (`tools.exec.ask`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// What `exec.approvals.approve` / `deny` name it by.
    pub id: String,
    pub agent_id: String,
    pub session_key: String,
    pub command: String,
    /// The folder it would run in.
    pub cwd: String,
    /// When it was asked for, and when it is refused unless approved (ms since the epoch).
    pub requested_at: i64,
    pub expires_at: i64,
}

/// The answer of `exec.approvals.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalsListResult {
    /// Oldest first.
    pub approvals: Vec<PendingApproval>,
}

/// `exec.approvals.approve` and `exec.approvals.deny`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalDecideParams {
    pub id: String,
    /// approve: also add the program to the agent's allowlist (`exec-approvals.json`).
    #[serde(default)]
    pub allow_always: bool,
}

/// What became of an approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecided {
    pub id: String,
    /// `approved` or `denied`.
    pub decision: String,
    pub command: String,
}
