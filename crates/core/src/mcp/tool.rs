//! One MCP server tool as a [`Tool`]: offered as `<server>__<tool>`, called over the server's
//! connection with the server's timeout, its result (text, images, structured content,
//! `isError`) turned into what the transcript stores. A server that is down, a call that times
//! out or a connection that drops mid-call is an error result that says so; the run goes on.
//! Dropping a call (the run was aborted) or timing it out sends MCP `notifications/cancelled`.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::ServiceError;
use serde_json::{Value, json};
use switchboard_protocol::message::ContentBlock;

use super::server::Server;
use crate::runtime::providers::ToolSpec;
use crate::runtime::tool::{Tool, ToolContext, ToolFuture, ToolHints, ToolOutput};

/// Longest name models accept for a tool.
const MAX_NAME: usize = 64;

/// `<server>__<tool>`, every character outside `[A-Za-z0-9_-]` made `_`, at most 64 long.
pub(super) fn offered_name(server: &str, tool: &str) -> String {
    let raw = format!("{server}__{tool}");
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME)
        .collect()
}

/// A tool of an MCP server.
pub(super) struct McpTool {
    pub server: Arc<Server>,
    /// What the server calls it.
    pub remote: String,
    /// What the model sees (the name models call it, its description and input schema), built
    /// once as the server listed it: every run's every model call offers it.
    pub spec: Arc<ToolSpec>,
    pub hints: Option<ToolHints>,
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn parameters(&self) -> Value {
        self.spec.parameters.clone()
    }

    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }

    fn hints(&self) -> Option<ToolHints> {
        self.hints
    }

    fn call<'a>(&'a self, _ctx: &'a ToolContext, arguments: Value) -> ToolFuture<'a> {
        Box::pin(self.call_remote(arguments))
    }
}

/// Counts a call the caller gave up on (the run was aborted) unless it ended.
struct Abandoned<'a> {
    server: &'a Server,
    armed: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.server.count_cancelled();
        }
    }
}

impl McpTool {
    async fn call_remote(&self, arguments: Value) -> ToolOutput {
        let server = &self.server;
        let Some((peer, generation)) = server.peer() else {
            return ToolOutput::error(format!(
                "MCP server {} is not running ({}); the call to {} was not made. It is being \
                 restarted: try again shortly, or do without this tool.",
                server.name,
                server.why_down(),
                self.spec.name
            ));
        };
        let mut params = CallToolRequestParams::new(self.remote.clone());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let timeout = Duration::from_secs(server.config.timeout_seconds);
        let mut abandoned = Abandoned {
            server,
            armed: true,
        };
        let answered = tokio::time::timeout(timeout, peer.call_tool_once(params)).await;
        abandoned.armed = false;
        match answered {
            Err(_) => {
                server.count_cancelled();
                ToolOutput::error(format!(
                    "{} timed out after {}s (mcp.servers.{}.timeoutSeconds); the call was \
                     cancelled",
                    self.spec.name,
                    timeout.as_secs(),
                    server.name
                ))
            }
            Ok(Err(e)) => ToolOutput::error(self.failure(&e, generation)),
            Ok(Ok(CallToolResponse::Complete(result))) => {
                output(serde_json::to_value(&result).unwrap_or(Value::Null))
            }
            Ok(Ok(_)) => ToolOutput::error(format!(
                "{} asked for more input or started a task; switchboard answers neither, so \
                 the call ended here",
                self.spec.name
            )),
        }
    }

    fn failure(&self, e: &ServiceError, generation: u64) -> String {
        match e {
            ServiceError::McpError(error) => {
                format!("{} failed: {}", self.spec.name, error.message)
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.server.unreachable(generation);
                format!(
                    "MCP server {} could not be reached or stopped during the call to {} ({e}); \
                     it is being reconnected",
                    self.server.name, self.spec.name
                )
            }
            other => format!("{} failed: {other}", self.spec.name),
        }
    }
}

/// A `tools/call` result (its JSON) as a tool output: the text the model reads (text blocks,
/// text resources, a line for each image, audio or link; the structured content when there is
/// no text), the images as blocks, the structured content as details.
pub(super) fn output(result: Value) -> ToolOutput {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        let field = |name: &str| block[name].as_str().unwrap_or_default().to_string();
        match block["type"].as_str().unwrap_or_default() {
            "text" => texts.push(field("text")),
            "image" => {
                texts.push(format!("[image {}]", field("mimeType")));
                images.push(ContentBlock::Image {
                    data: field("data"),
                    mime_type: field("mimeType"),
                });
            }
            "audio" => texts.push(format!("[audio {} (not shown)]", field("mimeType"))),
            "resource" => {
                let resource = &block["resource"];
                match resource["text"].as_str() {
                    Some(text) => texts.push(text.to_string()),
                    None => texts.push(format!(
                        "[resource {} ({})]",
                        resource["uri"].as_str().unwrap_or("?"),
                        resource["mimeType"].as_str().unwrap_or("binary")
                    )),
                }
            }
            "resource_link" => texts.push(format!("[link {} {}]", field("name"), field("uri"))),
            other => texts.push(format!("[{other} content (not shown)]")),
        }
    }
    let structured = result.get("structuredContent").cloned();
    let content = match (texts.is_empty(), &structured) {
        (true, Some(structured)) => structured.clone(),
        (true, None) => json!(""),
        (false, _) => Value::String(texts.join("\n")),
    };
    ToolOutput {
        content,
        is_error: result["isError"].as_bool().unwrap_or(false),
        images,
        details: structured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_sanitised() {
        assert_eq!(
            offered_name("time", "get_current_time"),
            "time__get_current_time"
        );
        assert_eq!(offered_name("fs", "read.file/v2"), "fs__read_file_v2");
        assert_eq!(offered_name("x", &"a".repeat(100)).len(), 64);
    }

    #[test]
    fn results_become_text_images_and_details() {
        let out = output(json!({
            "content": [
                {"type": "text", "text": "{\"datetime\": \"2026-11-25T08:00:00+00:00\"}"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            ],
            "structuredContent": {"ok": true},
            "isError": false,
        }));
        assert_eq!(
            out.text(),
            "{\"datetime\": \"2026-11-25T08:00:00+00:00\"}\n[image image/png]"
        );
        assert_eq!(out.images.len(), 1);
        assert_eq!(out.details, Some(json!({"ok": true})));
        let only_structured = output(json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(only_structured.content, json!({"sum": 3}));
        let failed = output(json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
        assert!(failed.is_error);
    }
}
