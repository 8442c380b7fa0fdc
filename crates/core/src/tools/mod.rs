//! The tool registry: what an agent may call, with the JSON-schema parameters the model sees,
//! argument validation that answers a bad call with an error the model can act on, and the
//! per-agent allow/deny lists. Tools never panic the gateway: every failure becomes an error
//! tool result.

pub mod invoke;
mod schema;
pub mod sessions;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::ResolvedAgent;
use crate::engine::Engine;
use crate::error::CoreResult;
use crate::runtime::WaitOutcome;
use crate::runtime::cancel::CancelToken;
use crate::runtime::lanes::LeaseHolder;
use crate::runtime::providers::ToolSpec;

pub use schema::schema_for;

/// What a tool answers: JSON (sent to the model as text) and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: Value,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: Value) -> Self {
        Self {
            content,
            is_error: false,
        }
    }

    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: Value::String(message.into()),
            is_error: true,
        }
    }

    /// The text the model reads.
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// Everything a tool call may use: the engine, who is calling, and the run's lane slot.
pub struct ToolContext {
    pub engine: Arc<Engine>,
    /// The requester session (canonical key) and its agent.
    pub session_key: String,
    pub agent_id: String,
    pub run_id: String,
    /// Session keys that led to this run, the requester's own key first (cycle guard).
    pub chain: Vec<String>,
    pub(crate) lease: LeaseHolder,
    /// Cancelled when the caller stops waiting (an MCP client's cancellation, a closed
    /// connection): waits end at once as if their timeout had passed; nothing else stops.
    pub(crate) stop_waiting: CancelToken,
}

impl ToolContext {
    /// Awaits `wait` (another run's completion) without holding this run's lane slot, so the
    /// awaited run can always be scheduled.
    pub async fn while_waiting<F: Future>(&self, wait: F) -> F::Output {
        self.lease.while_waiting(wait).await
    }

    /// Waits up to `timeout` for the run to end, without holding this run's lane slot. When the
    /// caller stops waiting first, answers as a timeout would (the run goes on).
    pub async fn wait_run(&self, run_id: &str, timeout: Duration) -> CoreResult<WaitOutcome> {
        let engine = &self.engine;
        self.while_waiting(async {
            tokio::select! {
                waited = engine.wait_run(run_id, timeout) => waited,
                () = self.stop_waiting.cancelled() => engine.wait_run(run_id, Duration::ZERO).await,
            }
        })
        .await
    }
}

/// A tool an agent can call.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// Written for the model: what it does, when to use it.
    fn description(&self) -> &str;
    /// JSON schema of the arguments (see [`schema_for`]).
    fn parameters(&self) -> Value;
    fn call<'a>(&'a self, ctx: &'a ToolContext, arguments: Value) -> ToolFuture<'a>;
}

/// Decodes arguments into `P`, or an error message that tells the model how to fix the call.
pub fn parse_args<P: DeserializeOwned>(tool: &dyn Tool, arguments: Value) -> Result<P, String> {
    let arguments = match arguments {
        Value::Null => Value::Object(Default::default()),
        Value::String(raw) => {
            return Err(format!(
                "The arguments of {} were not valid JSON: {}. Send a JSON object matching the schema: {}",
                tool.name(),
                clip(&raw, 200),
                tool.parameters()
            ));
        }
        other => other,
    };
    if !arguments.is_object() {
        return Err(format!(
            "The arguments of {} must be a JSON object, got {}. Schema: {}",
            tool.name(),
            clip(&arguments.to_string(), 200),
            tool.parameters()
        ));
    }
    serde_path_to_error::deserialize(arguments).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(" at `{path}`")
        };
        format!(
            "Invalid arguments for {}{at}: {}. Fix the call to match the schema: {}",
            tool.name(),
            e.inner(),
            tool.parameters()
        )
    })
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}…")
}

/// All tools known to the gateway, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name().to_string(), tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// The tools `agent` may call: its `tools.allow` (empty = all) minus `tools.deny`.
    pub fn for_agent(&self, agent: &ResolvedAgent) -> Vec<Arc<dyn Tool>> {
        self.tools
            .values()
            .filter(|t| allowed(t.name(), &agent.tools_allow, &agent.tools_deny))
            .cloned()
            .collect()
    }
}

/// `allow` empty = everything; `deny` wins. Patterns match exactly or with a trailing `*`.
pub fn allowed(name: &str, allow: &[String], deny: &[String]) -> bool {
    let matches = |pattern: &String| match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    };
    (allow.is_empty() || allow.iter().any(matches)) && !deny.iter().any(matches)
}

/// The spec the model sees for a tool.
pub fn spec(tool: &dyn Tool) -> ToolSpec {
    ToolSpec {
        name: tool.name().to_string(),
        description: tool.description().to_string(),
        parameters: tool.parameters(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_and_deny_lists() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(allowed("sessions_list", &[], &[]));
        assert!(allowed("sessions_list", &s(&["sessions_*"]), &[]));
        assert!(!allowed(
            "sessions_list",
            &s(&["sessions_*"]),
            &s(&["sessions_list"])
        ));
        assert!(!allowed("exec", &s(&["sessions_*"]), &[]));
    }
}
