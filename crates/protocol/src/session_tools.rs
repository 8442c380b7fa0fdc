//! The session tools the model calls (SPEC §7): `sessions_list`, `sessions_history`,
//! `sessions_send`, `sessions_spawn`, `agents_list` — their params, as the model sees them in the
//! JSON schema, and their results, as the model reads them back.
//!
//! The params' doc comments are the schema's descriptions: they are written for the model, and
//! [`tool_schema`] turns them into exactly the schema `tools.list` shows. Params are decoded
//! leniently (numbers as strings, `"true"` for true, snake_case aliases), because models are not
//! exact; what they decode to is clamped by the tools, not here.
//!
//! Every result carries `status` when it can fail: `error` (the call was wrong or failed; the
//! message says how to fix it) and `forbidden` (access rules refused the target) are the failures
//! of every tool ([`ToolFailure`]); `sessions_send` and `sessions_spawn` add their own successes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use serde_with::skip_serializing_none;

use crate::lenient;
use crate::reading::ReadMessage;
use crate::sessions::SessionsListResult;

// ---------------------------------------------------------------------------------------------
// Params
// ---------------------------------------------------------------------------------------------

/// Arguments of `sessions_list`.
// The model's schema carries no top-level description for this tool: the tool's description
// says it all (hence the empty `schemars(description)`).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "")]
pub struct ListParams {
    /// Only these kinds: any of "main", "group", "cron", "hook", "node", "other" (an array, or
    /// one string). Omit for every kind.
    #[serde(default)]
    #[schemars(
        with = "Option<Vec<String>>",
        extend("items" = {"type": "string", "enum": ["main", "group", "cron", "hook", "node", "other"]})
    )]
    pub kinds: Option<Value>,
    /// How many sessions to return (default 50, at most 200).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub limit: Option<i64>,
    /// Only sessions updated in the last N minutes (N ≥ 1). Omit for any age.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub active_minutes: Option<i64>,
    /// Also return the last N messages of each session (0–20, default 0), tool results left out.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub message_limit: Option<i64>,
    /// Only sessions whose key, label or display name contains this text (case-insensitive).
    pub search: Option<String>,
    /// The nextCursor of a previous sessions_list result, to get the next page.
    pub cursor: Option<String>,
}

/// Arguments of `sessions_history`.
// No top-level description in the model's schema (see `ListParams`).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    description = "",
    extend("oneOf" = [{"required": ["sessionKey"]}, {"required": ["label"]}])
)]
pub struct HistoryParams {
    /// The session to read: its key from sessions_list (e.g. "agent:main:discord:group:dev"),
    /// its sessionId, or "main" for your own main session. Give this or `label`, not both.
    #[serde(alias = "session_key", alias = "key", alias = "sessionId")]
    pub session_key: Option<String>,
    /// Alternative to sessionKey: the session's label (as shown by sessions_list).
    pub label: Option<String>,
    /// With label: the agent whose sessions the label is looked up in (default: yours).
    #[serde(alias = "agent_id")]
    pub agent_id: Option<String>,
    /// How many messages to return, newest last (default 50, at most 200).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub limit: Option<i64>,
    /// Include tool results (role "toolResult"). Default false.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub include_tools: Option<bool>,
    /// Page backwards: only messages with a seq below this. Pass the nextBefore of a previous
    /// result.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub before: Option<i64>,
}

/// Arguments of `sessions_send`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(extend(
    "required" = ["message"],
    "oneOf" = [{"required": ["sessionKey"]}, {"required": ["label"]}]
))]
pub struct SendParams {
    /// The target session: its key from sessions_list (e.g. "agent:main:discord:group:dev"),
    /// "main" for your agent's main session, or its sessionId. Give this or `label`, not both.
    pub session_key: Option<String>,
    /// The target session's label, instead of sessionKey.
    pub label: Option<String>,
    /// With `label`: the agent whose session carries the label (default: yours).
    pub agent_id: Option<String>,
    /// The message to send: the text the target's agent receives as its user message.
    pub message: Option<String>,
    /// Seconds to wait for the reply (default 30, at most 600). 0 sends without waiting.
    #[serde(deserialize_with = "lenient::opt_int")]
    #[schemars(with = "Option<f64>")]
    pub timeout_seconds: Option<i64>,
}

/// Arguments of `sessions_spawn`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(extend("required" = ["task"]))]
pub struct SpawnParams {
    /// What the sub-agent should do, written as a complete instruction: it is all the
    /// sub-agent is told.
    pub task: Option<String>,
    /// A short name for the sub-agent's session (unique per agent, at most 64 characters).
    pub label: Option<String>,
    /// The agent to run the sub-agent as (default: yours). agents_list shows which ids work.
    pub agent_id: Option<String>,
    /// `provider/model` for the sub-agent (default: the agent's sub-agent model, else its model).
    pub model: Option<String>,
    /// Stop the sub-agent after this many seconds (0 or absent: the agent's own timeout).
    #[serde(deserialize_with = "lenient::opt_int")]
    #[schemars(with = "Option<f64>")]
    pub run_timeout_seconds: Option<i64>,
    /// "keep" (default) archives the sub-agent's session later; "delete" removes it once its
    /// result was announced.
    #[schemars(extend("enum" = ["keep", "delete"]))]
    pub cleanup: Option<String>,
}

/// Arguments of `agents_list`: none. Extra fields are ignored; only a non-object is an error.
// No top-level description in the model's schema (see `ListParams`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "")]
pub struct AgentsListParams {}

// ---------------------------------------------------------------------------------------------
// The schema the model sees
// ---------------------------------------------------------------------------------------------

/// The parameters schema of `P`, shaped for models and strict clients: integers are `number`
/// (models send `5.0` and `"5"`), no `$schema`/`title`/`format`/top-level description noise,
/// optional fields typed as what they are (omitted, never `null`: no `[X, "null"]`, no
/// `"default": null`), and each property's description on one line (doc comments wrap). Always
/// an object schema with `properties`.
pub fn tool_schema<P: JsonSchema>() -> Value {
    // Every subschema inline: a model (and a strict validator) reads each field whole, an
    // enum's values included, with no `$ref` to follow.
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let root = generator.into_root_schema_for::<P>();
    let mut schema = serde_json::to_value(root).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
        map.remove("description");
        map.entry("type").or_insert(Value::from("object"));
        map.entry("properties").or_insert(Value::Object(Map::new()));
    }
    simplify(&mut schema);
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(map) = property {
                if map.get("default") == Some(&Value::Null) {
                    map.remove("default");
                }
                if let Some(Value::Array(kinds)) = map.get_mut("type") {
                    kinds.retain(|kind| kind != "null");
                    if let [only] = kinds.as_slice() {
                        let only = only.clone();
                        map.insert("type".into(), only);
                    }
                }
                if let Some(Value::String(text)) = map.get_mut("description") {
                    *text = text.replace('\n', " ");
                }
            }
        }
    }
    schema
}

/// Drops `format` and turns `integer` into `number`, at every depth.
fn simplify(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("format");
            if let Some(kind) = map.get_mut("type") {
                match kind {
                    Value::String(s) if s == "integer" => *s = "number".into(),
                    Value::Array(kinds) => {
                        for k in kinds.iter_mut() {
                            if k == "integer" {
                                *k = Value::from("number");
                            }
                        }
                    }
                    _ => {}
                }
            }
            for v in map.values_mut() {
                simplify(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(simplify),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

/// A failed call of any session tool: `{"status": "error" | "forbidden", "error": "…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ToolFailure {
    /// The call was wrong or failed; the message says how to fix it.
    Error {
        /// What went wrong and what is accepted instead.
        error: String,
    },
    /// Access rules (visibility, sandbox, cross-agent rules, send policy) refused the target.
    Forbidden {
        /// Which rule refused, naming the target only as the caller gave it.
        error: String,
    },
}

impl ToolFailure {
    pub fn error(message: impl Into<String>) -> Self {
        Self::Error {
            error: message.into(),
        }
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::Forbidden {
            error: message.into(),
        }
    }

    /// The message, whichever the status.
    pub fn message(&self) -> &str {
        match self {
            Self::Error { error } | Self::Forbidden { error } => error,
        }
    }
}

/// The answer of `sessions_list`: the same page as `sessions.list` answers.
pub type ListResult = SessionsListResult<ReadMessage>;

/// The answer of `sessions_history`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryResult {
    /// The session read, in display form (`main` for the global bucket).
    pub session_key: String,
    /// Transcript messages, oldest first, each with its `seq`; heavy fields removed, long texts
    /// cut with a visible marker, a message too large even alone replaced by a placeholder.
    pub messages: Vec<ReadMessage>,
    /// True when anything was cut or dropped: older messages (`droppedMessages` > 0), a long
    /// text (`contentTruncated`), or a heavy field (usage, cost, details, signatures, image data).
    pub truncated: bool,
    /// How many of the oldest messages of this page were dropped; `nextBefore` reaches them.
    pub dropped_messages: usize,
    /// True when some text was cut or a message replaced by a placeholder.
    pub content_truncated: bool,
    /// Size of the serialized `messages` array in bytes.
    pub bytes: usize,
    /// Pass as `before` to read further back; absent when the transcript's start was reached.
    pub next_before: Option<i64>,
}

/// Where a run stands when a wait for it ended first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PendingState {
    /// Waiting for its session or its lane.
    Queued,
    /// The model is working on it.
    Running,
}

/// `run` of a `sessions_send` that timed out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingRun {
    /// `queued` or `running`: the run goes on either way.
    pub state: PendingState,
}

/// The answer of `sessions_send`, told apart by `status`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "status",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum SendResult {
    /// `timeoutSeconds` was 0: the message is queued and nobody waits for the reply.
    Accepted {
        /// The target's run; its reply lands in the target's transcript.
        run_id: String,
        /// The target session, in display form.
        session_key: String,
    },
    /// The target's agent replied in time.
    Ok {
        /// The target's run.
        run_id: String,
        /// The target agent's final reply.
        reply: String,
        /// The target session, in display form.
        session_key: String,
    },
    /// The reply did not arrive in time; the run goes on.
    Timeout {
        /// The target's run; read its reply later with sessions_history.
        run_id: String,
        /// The target session, in display form.
        session_key: String,
        /// Where the run stands.
        run: PendingRun,
        /// What happened and what to do next.
        error: String,
    },
    /// The call was wrong, or the target's run ended without a reply.
    Error {
        /// What went wrong and what is accepted instead.
        error: String,
        /// The target's run, when one was started and ended badly.
        run_id: Option<String>,
        /// The target session, when one was resolved.
        session_key: Option<String>,
    },
    /// Access rules or the target's send policy refused the message.
    Forbidden {
        /// Which rule refused.
        error: String,
        /// The target session, when the send policy refused it.
        session_key: Option<String>,
    },
}

impl SendResult {
    /// `error` and `forbidden` are errors; `accepted`, `ok` and `timeout` are not.
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Error { .. } | Self::Forbidden { .. })
    }
}

impl From<ToolFailure> for SendResult {
    fn from(failure: ToolFailure) -> Self {
        match failure {
            ToolFailure::Error { error } => Self::Error {
                error,
                run_id: None,
                session_key: None,
            },
            ToolFailure::Forbidden { error } => Self::Forbidden {
                error,
                session_key: None,
            },
        }
    }
}

/// The answer of `sessions_spawn`, told apart by `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "status",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum SpawnResult {
    /// The child session exists and its task run is queued; its result is announced back.
    Accepted {
        /// The sub-agent's task run.
        run_id: String,
        /// The sub-agent's session (`agent:<agentId>:subagent:<uuid>`).
        child_session_key: String,
    },
    /// The call was wrong or could not be carried out; nothing was created.
    Error {
        /// What went wrong and what is accepted instead.
        error: String,
    },
    /// The caller may not spawn (a sub-agent itself), or not this agent.
    Forbidden {
        /// Which rule refused, with the allowed agent ids where they apply.
        error: String,
    },
}

impl SpawnResult {
    /// `error` and `forbidden` are errors; `accepted` is not.
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Error { .. } | Self::Forbidden { .. })
    }
}

impl From<ToolFailure> for SpawnResult {
    fn from(failure: ToolFailure) -> Self {
        match failure {
            ToolFailure::Error { error } => Self::Error { error },
            ToolFailure::Forbidden { error } => Self::Forbidden { error },
        }
    }
}

/// One agent id `sessions_spawn` accepts from the caller.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentChoice {
    /// Pass it as `agentId` to sessions_spawn.
    pub id: String,
    /// The agent's display name, when configured.
    pub name: Option<String>,
    /// False for an allowed id with no configuration (it would run on the defaults).
    pub configured: bool,
    /// The tools a sub-agent spawned as this agent may call (its agent's tools minus the
    /// session tools, narrowed by `tools.subagents.tools`): what it can do for you.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

/// The answer of `agents_list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsListResult {
    /// The calling agent's id (also the first of `agents` when there are any).
    pub requester: String,
    /// True when the caller may spawn any configured agent (`allowAgents` holds `"*"`).
    pub allow_any: bool,
    /// The caller first, then the agents it may spawn; empty when this session may not spawn
    /// at all (a node session, a sub-agent).
    pub agents: Vec<AgentChoice>,
}

#[cfg(test)]
mod tests;
