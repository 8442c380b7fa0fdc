//! `tools.invoke` (SPEC §5.3).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Run a session tool exactly as the agent of `sessionKey` would.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsInvokeParams {
    /// The acting session: a key (any accepted form) or a sessionId.
    pub session_key: String,
    /// The tool's name, e.g. `sessions_list`.
    pub tool: String,
    /// The tool's arguments (a JSON object; absent = `{}`).
    #[serde(default, alias = "arguments")]
    pub args: Value,
}
