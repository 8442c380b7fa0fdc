//! `tools.invoke` and `tools.list` (SPEC §5.3, §10).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Run a session tool exactly as the agent of `sessionKey` would.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsInvokeParams {
    /// The acting session: a key (any accepted form) or a sessionId.
    pub session_key: String,
    /// The tool's name, e.g. `sessions_list`; OpenClaw clients send it as `name`.
    #[serde(alias = "name")]
    pub tool: String,
    /// The tool's arguments (a JSON object; absent = `{}`).
    #[serde(default, alias = "arguments")]
    pub args: Value,
}

/// `tools.list`: the tools a session may call, as its agent sees them.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsListParams {
    /// The acting session: a key (any accepted form) or a sessionId. Absent: the main session
    /// of `agentId` (or of the default agent).
    pub session_key: Option<String>,
    /// With no `sessionKey`: whose main session.
    pub agent_id: Option<String>,
}

/// One callable tool: what the model (or an MCP client) is shown.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    pub name: String,
    /// Written for the model: what the tool does and when to use it.
    pub description: String,
    /// JSON schema of the arguments (an object schema).
    pub input_schema: Value,
    /// What calling it does, for clients that ask before acting (MCP `annotations`).
    pub annotations: Option<ToolHints>,
    /// Where it comes from: its built-in group (`group:fs`, `group:sessions`, …) or its MCP
    /// server (`mcp:<server>`).
    pub group: Option<String>,
}

/// MCP's tool annotations: hints, not guarantees, about what a call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolHints {
    /// It only reads: nothing changes.
    pub read_only_hint: bool,
    /// It may delete or overwrite (meaningful when not read-only).
    pub destructive_hint: bool,
    /// A second identical call changes nothing more.
    pub idempotent_hint: bool,
    /// It may reach beyond the gateway (a chat channel).
    pub open_world_hint: bool,
}

impl ToolHints {
    /// Whether a call may be made a second time with no more effect than once: it only
    /// reads, or it is idempotent.
    pub fn repeatable(&self) -> bool {
        self.read_only_hint || self.idempotent_hint
    }

    /// A tool that only reads the gateway.
    pub const READS: Self = Self {
        read_only_hint: true,
        destructive_hint: false,
        idempotent_hint: true,
        open_world_hint: false,
    };

    /// A tool that acts: it starts runs (and what they say may reach a chat channel).
    pub const ACTS: Self = Self {
        read_only_hint: false,
        destructive_hint: false,
        idempotent_hint: false,
        open_world_hint: true,
    };
}

/// The answer of `tools.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsListResult {
    /// The acting session's canonical key.
    pub session_key: String,
    pub tools: Vec<ToolDescriptor>,
}

/// The answer of `tools.invoke`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsInvokeResult {
    /// False when the tool answered an error (its `result` then says why).
    pub ok: bool,
    /// The tool's answer, exactly as the model would read it: a result object (see
    /// `session_tools`) or an error text.
    pub result: Value,
    /// The tool's name (the reference's shape).
    pub tool_name: String,
    /// The reference's shape of the same answer: `{content: [{type: "text", text}], details}`,
    /// `text` being what the model reads and `details` the result object.
    pub output: ToolInvokeOutput,
}

/// `output` of `tools.invoke`, as the reference's clients read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInvokeOutput {
    /// One text block: the text the model reads.
    pub content: Vec<crate::message::ContentBlock>,
    /// The tool's result object.
    pub details: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn invoke_answers_ok_and_the_tool_result() {
        let failure = json!({"status": "error", "error": "sessionKey required"});
        let result = ToolsInvokeResult {
            ok: false,
            result: failure.clone(),
            tool_name: "sessions_send".into(),
            output: ToolInvokeOutput {
                content: vec![crate::message::ContentBlock::text(failure.to_string())],
                details: failure.clone(),
            },
        };
        let expected = json!({
            "ok": false,
            "result": failure,
            "toolName": "sessions_send",
            "output": {
                "content": [{"type": "text", "text": failure.to_string()}],
                "details": failure,
            },
        });
        assert_eq!(serde_json::to_value(&result).unwrap(), expected);
        assert_eq!(
            serde_json::from_value::<ToolsInvokeResult>(expected).unwrap(),
            result
        );
    }
}
