//! `agent`, `agent.wait`, `chat.send`, `chat.abort` (SPEC §5.3).

use serde::{Deserialize, Serialize};

use crate::lenient;

/// `chat.send`: an operator message into a session; starts a run.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatSendParams {
    pub session_key: String,
    /// The agent `main` and legacy keys belong to (the reference's clients send it); a key that
    /// names its agent must name this one.
    pub agent_id: Option<String>,
    pub message: String,
    /// A repeated key answers the first run and does no work twice.
    pub idempotency_key: Option<String>,
    /// Upper bound of the run in milliseconds.
    #[serde(deserialize_with = "lenient::opt_non_negative")]
    pub timeout_ms: Option<i64>,
    /// Images sent with the message, stored as image blocks of the user message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<ChatAttachment>,
}

/// One attachment of `chat.send`/`agent`, in the reference's shape. Only images are accepted
/// (`image/png`, `image/jpeg`, `image/gif`, `image/webp`, at most 5 MB decoded); anything else
/// is refused with an error that says so.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatAttachment {
    /// `image` (absent = taken from `mimeType`).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The media type; absent = recognised from the bytes.
    pub mime_type: Option<String>,
    /// The file's name, for error messages.
    pub file_name: Option<String>,
    /// The bytes in base64 (a `data:<type>;base64,` prefix is accepted).
    #[serde(default)]
    pub content: String,
}

/// `agent`: start a run; answered with `accepted`, then with the outcome under the same id.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentParams {
    /// Absent or empty: `sessionId`'s session, else the agent's main session (as the
    /// reference's `openclaw agent --agent` and `--session-id`).
    #[serde(default)]
    pub session_key: String,
    /// A session by its id (or key), when `sessionKey` is not given.
    pub session_id: Option<String>,
    pub message: String,
    pub idempotency_key: Option<String>,
    pub extra_system_prompt: Option<String>,
    /// `main` (default), `nested`, `subagent` or `cron`.
    pub lane: Option<String>,
    /// Upper bound of the run in seconds.
    #[serde(deserialize_with = "lenient::opt_non_negative")]
    pub timeout: Option<i64>,
    /// Agent of a new session whose key does not name one.
    pub agent_id: Option<String>,
    /// `provider/model` for this run.
    pub model: Option<String>,
    /// Label of a new session.
    pub label: Option<String>,
    /// Parent of a new sub-agent session.
    pub spawned_by: Option<String>,
    /// Deliver the reply through the outbox: to `channel`/`to` when given, else to the
    /// session's route (none → recorded, not sent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deliver: bool,
    pub channel: Option<String>,
    pub to: Option<String>,
    pub account_id: Option<String>,
    /// Images sent with the message (as `chat.send`'s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<ChatAttachment>,
}

#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentWaitParams {
    pub run_id: String,
    /// How long to wait: default 30000, at most 600000.
    #[serde(deserialize_with = "lenient::opt_non_negative")]
    pub timeout_ms: Option<i64>,
}

/// The outcome of `agent.wait`, and the final answer of `agent`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The run.
    pub run_id: String,
    /// `ok | error | timeout | aborted` once ended; `timeout` with `waitTimedOut` when the wait
    /// ended first (then `state` says whether the run is `queued` or `running`).
    pub status: RunStatus,
    /// The run's session (canonical key).
    pub session_key: String,
    /// `queued` or `running`: where the run stands when the wait ended first.
    pub state: Option<RunState>,
    /// True when the wait ended before the run did (the run goes on).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait_timed_out: bool,
    /// When the run started (ms); absent while queued.
    pub started_at: Option<i64>,
    /// When the run ended (ms); absent until it did.
    pub ended_at: Option<i64>,
    /// Why the run ended `error`, `timeout` or `aborted`.
    pub error: Option<String>,
    /// The run's final assistant text.
    pub reply: Option<String>,
    /// The model that answered (`provider/model`; a fallback when the primary failed).
    pub model: Option<String>,
    /// What the run's model calls cost in USD, from the configured prices.
    pub cost_usd: Option<f64>,
}

#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatAbortParams {
    pub session_key: String,
    /// The agent `main` and legacy keys belong to (the reference's clients send it); a key that
    /// names its agent must name this one.
    pub agent_id: Option<String>,
    /// Only this run (queued or running); default: the session's running run.
    pub run_id: Option<String>,
}

/// `chat.send`'s answer when it started a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatSendResult {
    /// The run; `agent.wait` follows it, `agent`/`chat` events report it.
    pub run_id: String,
    /// Always `started` ([`ChatSendResult::STATUS`]).
    pub status: String,
    /// The session's canonical key.
    pub session_key: String,
}

impl ChatSendResult {
    pub const STATUS: &'static str = "started";

    pub fn started(run_id: impl Into<String>, session_key: impl Into<String>) -> Self {
        Self {
            run_id: run_id.into(),
            status: Self::STATUS.into(),
            session_key: session_key.into(),
        }
    }
}

/// `chat.send`'s answer to a slash command (`/status`, `/send off`, …): what it did, in a
/// sentence for the person; no model was called. The reply is also told as the `chat` events of
/// a run of id `runId` (the request's `idempotencyKey`), so a client that shows replies shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendCommandResult {
    /// Always `ok` ([`SendCommandResult::STATUS`]).
    pub status: String,
    /// The command, with its `/`.
    pub command: String,
    /// The session, in display form.
    pub session_key: String,
    /// `/send` only: the override now set, `allow` or `deny`; `null` when the session inherits
    /// the configured policy again.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "::serde_with::rust::double_option"
    )]
    pub send_policy: Option<Option<String>>,
    /// A sentence (or, for `/status`, a few lines) for the person.
    pub reply: String,
    /// The id the reply's events carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

impl SendCommandResult {
    pub const STATUS: &'static str = "ok";
}

/// Everything `chat.send` answers: a started run, or a slash command's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ChatSendAnswer {
    // A command's answer has a `runId` too: it is told apart by its `command` and `reply`.
    Command(SendCommandResult),
    Started(ChatSendResult),
}

/// `agent`'s first answer: the run is stored and queued. The final answer ([`AgentResult`])
/// follows under the same request id.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentAccepted {
    /// The run.
    pub run_id: String,
    /// Always `accepted` ([`AgentAccepted::STATUS`]).
    pub status: String,
    /// When the run was accepted (ms).
    pub accepted_at: i64,
    /// The run's session, as callers know it (the reference's clients abort through it).
    pub session_key: Option<String>,
    /// The agent that runs it.
    pub agent_id: Option<String>,
}

impl AgentAccepted {
    pub const STATUS: &'static str = "accepted";

    pub fn new(run_id: impl Into<String>, accepted_at: i64) -> Self {
        Self {
            run_id: run_id.into(),
            status: Self::STATUS.into(),
            accepted_at,
            session_key: None,
            agent_id: None,
        }
    }
}

/// The reply of a run, as `agent`'s `result`: our `text`, and the reference's `payloads` (what
/// its CLI prints) and `meta`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentReplyText {
    /// The run's final assistant text.
    pub text: String,
    /// The reply as the reference's clients read it: one text payload.
    #[serde(default)]
    pub payloads: Vec<ReplyPayload>,
    /// How the run went.
    pub meta: Option<RunMeta>,
}

/// One part of a reply (the reference's `ReplyPayload`; switchboard sends text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplyPayload {
    pub text: String,
}

/// `result.meta` of `agent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunMeta {
    /// From the run's acknowledgement to its end (ms), its wait in the queue included.
    pub duration_ms: i64,
    /// Which session and model answered.
    pub agent_meta: AgentMeta,
}

/// `result.meta.agentMeta` of `agent`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMeta {
    /// The session's transcript id.
    pub session_id: Option<String>,
    /// The provider of the session's last model call.
    pub provider: Option<String>,
    /// The model of that call.
    pub model: Option<String>,
    /// The tokens of the run's model calls, summed (`openclaw agent --json` shows them).
    pub usage: Option<RunTokens>,
}

/// The tokens of a run's model calls, summed, in the reference's names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunTokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

/// `agent`'s final answer: the run's outcome, a summary line and the reply.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentResult {
    /// The outcome, as `agent.wait` answers it (its fields sit at the top level).
    #[serde(flatten)]
    pub run: RunResult,
    /// The first 200 characters of the reply, else of the error; empty when there is neither.
    pub summary: String,
    /// The reply, when the run produced one.
    pub result: Option<AgentReplyText>,
}

impl AgentResult {
    /// Longest `summary`, in characters.
    pub const SUMMARY_CHARS: usize = 200;

    /// `run` with its summary and `result` derived from its reply and error.
    pub fn new(run: RunResult) -> Self {
        let summary = run
            .reply
            .as_deref()
            .or(run.error.as_deref())
            .map(|s| s.chars().take(Self::SUMMARY_CHARS).collect())
            .unwrap_or_default();
        let result = run.reply.clone().map(|text| AgentReplyText {
            payloads: vec![ReplyPayload { text: text.clone() }],
            text,
            meta: None,
        });
        Self {
            run,
            summary,
            result,
        }
    }
}

/// The answer of `chat.abort`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatAbortResult {
    /// Always true (aborting nothing is not an error).
    pub ok: bool,
    /// True when at least one run was aborted.
    pub aborted: bool,
    /// The runs aborted (queued or running).
    pub run_ids: Vec<String>,
    /// The session's canonical key.
    pub session_key: String,
}

wire_names! {
    /// Where a run stands: `queued` and `running` while it is live, then `ok`, `error`, `timeout`
    /// or `aborted`.
    pub enum RunStatus {
        Queued = "queued",
        Running = "running",
        Ok = "ok",
        Error = "error",
        Timeout = "timeout",
        Aborted = "aborted",
    }
}

wire_names! {
    /// Where a live run stands: `queued` (it waits for its session or a lane) or `running`.
    pub enum RunState {
        Queued = "queued",
        Running = "running",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::round_trip;
    use serde_json::json;

    #[test]
    fn chat_send_answers_a_run_or_the_send_command() {
        round_trip(
            ChatSendAnswer::Started(ChatSendResult::started("r1", "agent:main:main")),
            json!({"runId": "r1", "status": "started", "sessionKey": "agent:main:main"}),
        );
        let command = |command: &str, send_policy, reply: &str| {
            ChatSendAnswer::Command(SendCommandResult {
                status: SendCommandResult::STATUS.into(),
                command: command.into(),
                session_key: "main".into(),
                send_policy,
                reply: reply.into(),
                run_id: Some("r2".into()),
            })
        };
        round_trip(
            command(
                "/send",
                Some(Some("deny".into())),
                "Send policy for main: deny.",
            ),
            json!({
                "status": "ok", "command": "/send", "sessionKey": "main", "sendPolicy": "deny",
                "reply": "Send policy for main: deny.", "runId": "r2",
            }),
        );
        round_trip(
            command("/send", Some(None), "Send policy for main: inherit."),
            json!({
                "status": "ok", "command": "/send", "sessionKey": "main", "sendPolicy": null,
                "reply": "Send policy for main: inherit.", "runId": "r2",
            }),
        );
        round_trip(
            command("/status", None, "switchboard 0.1.0"),
            json!({"status": "ok", "command": "/status", "sessionKey": "main",
                "reply": "switchboard 0.1.0", "runId": "r2"}),
        );
    }

    #[test]
    fn agent_answers_accepted_then_the_outcome() {
        round_trip(
            AgentAccepted::new("r1", 1_700_000_000_000),
            json!({"runId": "r1", "status": "accepted", "acceptedAt": 1_700_000_000_000_i64}),
        );
        let ok = RunResult {
            run_id: "r1".into(),
            status: RunStatus::Ok,
            session_key: "agent:main:main".into(),
            state: None,
            wait_timed_out: false,
            started_at: Some(10),
            ended_at: Some(20),
            error: None,
            reply: Some("pong".into()),
            model: Some("mock/m1".into()),
            cost_usd: Some(0.5),
        };
        round_trip(
            AgentResult::new(ok),
            json!({
                "runId": "r1", "status": "ok", "sessionKey": "agent:main:main",
                "startedAt": 10, "endedAt": 20, "reply": "pong",
                "model": "mock/m1", "costUsd": 0.5, "summary": "pong", "result": {"text": "pong", "payloads": [{"text": "pong"}]},
            }),
        );
        let failed = RunResult {
            run_id: "r2".into(),
            status: RunStatus::Error,
            session_key: "agent:main:main".into(),
            state: None,
            wait_timed_out: false,
            started_at: Some(10),
            ended_at: Some(20),
            error: Some("x".repeat(300)),
            reply: None,
            model: None,
            cost_usd: None,
        };
        let result = AgentResult::new(failed);
        assert_eq!(result.summary, "x".repeat(200));
        round_trip(
            result,
            json!({
                "runId": "r2", "status": "error", "sessionKey": "agent:main:main",
                "startedAt": 10, "endedAt": 20, "error": "x".repeat(300),
                "summary": "x".repeat(200),
            }),
        );
        let waiting = RunResult {
            run_id: "r3".into(),
            status: RunStatus::Timeout,
            session_key: "agent:main:main".into(),
            state: Some(RunState::Running),
            wait_timed_out: true,
            started_at: Some(10),
            ended_at: None,
            error: None,
            reply: None,
            model: None,
            cost_usd: None,
        };
        round_trip(
            AgentResult::new(waiting),
            json!({
                "runId": "r3", "status": "timeout", "sessionKey": "agent:main:main",
                "state": "running", "waitTimedOut": true, "startedAt": 10, "summary": "",
            }),
        );
    }

    #[test]
    fn chat_abort_lists_what_it_aborted() {
        round_trip(
            ChatAbortResult {
                ok: true,
                aborted: true,
                run_ids: vec!["r1".into()],
                session_key: "agent:main:main".into(),
            },
            json!({"ok": true, "aborted": true, "runIds": ["r1"], "sessionKey": "agent:main:main"}),
        );
        round_trip(
            ChatAbortResult {
                ok: true,
                aborted: false,
                run_ids: vec![],
                session_key: "agent:main:main".into(),
            },
            json!({"ok": true, "aborted": false, "runIds": [], "sessionKey": "agent:main:main"}),
        );
    }
}
