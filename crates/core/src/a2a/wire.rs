//! The few A2A 1.0 JSON shapes the client speaks (JSON-RPC binding), checked against the
//! official Python SDK (`a2a-sdk` 1.3.0, whose types are the protocol's protobuf messages in
//! their JSON form: camelCase fields, enum names such as `TASK_STATE_COMPLETED`, a part's
//! content as one of `text` / `raw` / `url` / `data`). Private to the client, and more lenient
//! than the server's types in `switchboard_protocol::a2a` (which refuse what the gateway does
//! not take): unknown fields, task states and part kinds a remote sends are ignored, so a
//! remote may send more than is read here. The names (headers, paths, methods) are the
//! protocol crate's.

use serde::{Deserialize, Serialize};

pub use switchboard_protocol::a2a::{
    A2A_VERSION as VERSION, AGENT_CARD_PATH, JSONRPC_BINDING, VERSION_HEADER,
};

/// A JSON-RPC 2.0 request.
#[derive(Debug, Serialize)]
pub struct RpcRequest<'a, P> {
    pub jsonrpc: &'static str,
    pub id: &'a str,
    pub method: &'static str,
    pub params: P,
}

/// A JSON-RPC 2.0 response: a result or an error.
#[derive(Debug, Deserialize)]
pub struct RpcResponse<R> {
    pub result: Option<R>,
    pub error: Option<RpcError>,
}

#[derive(Debug, Deserialize)]
pub struct RpcError {
    pub code: i64,
    #[serde(default)]
    pub message: String,
}

/// `SendMessageRequest`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageParams {
    pub message: Message,
    pub configuration: SendConfiguration,
}

/// `SendMessageConfiguration`: only what the client sets.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendConfiguration {
    /// Answer with the task at once instead of holding the request until it ends: the task id
    /// is then stored before any wait, so a restart polls it instead of sending again.
    pub return_immediately: bool,
    pub accepted_output_modes: Vec<String>,
}

/// `SendMessageResponse`: a task, or a direct message.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageResult {
    pub task: Option<Task>,
    pub message: Option<Message>,
}

/// `GetTaskRequest`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskParams<'a> {
    pub id: &'a str,
}

/// `Message`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub role: String,
    #[serde(default)]
    pub parts: Vec<Part>,
}

pub const ROLE_USER: &str = "ROLE_USER";

/// `Part`: only text is read; other content kinds are skipped.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// `Task`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    #[serde(default)]
    pub context_id: Option<String>,
    pub status: TaskStatus,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
}

/// `TaskStatus`.
#[derive(Debug, Clone, Deserialize)]
pub struct TaskStatus {
    pub state: String,
    #[serde(default)]
    pub message: Option<Message>,
}

/// `Artifact`.
#[derive(Debug, Clone, Deserialize)]
pub struct Artifact {
    #[serde(default)]
    pub parts: Vec<Part>,
}

/// `AgentCard`: only where its JSON-RPC interface is.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    #[serde(default)]
    pub supported_interfaces: Vec<AgentInterface>,
}

/// `AgentInterface`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    pub url: String,
    #[serde(default)]
    pub protocol_binding: String,
}

/// Where a task stands, as far as a waiting sender cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `SUBMITTED`, `WORKING` (or a state this client does not know): poll again.
    Working,
    /// `COMPLETED`, or `INPUT_REQUIRED` / `AUTH_REQUIRED` (the remote's turn is over: its
    /// question is the reply, and the next send continues the context).
    Answered,
    /// `FAILED`, `CANCELED`, `REJECTED`.
    Refused,
}

impl Task {
    pub fn phase(&self) -> Phase {
        match self.status.state.as_str() {
            "TASK_STATE_COMPLETED" | "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED" => {
                Phase::Answered
            }
            "TASK_STATE_FAILED" | "TASK_STATE_CANCELED" | "TASK_STATE_REJECTED" => Phase::Refused,
            _ => Phase::Working,
        }
    }

    /// The reply: the artifacts' text, else the status message's.
    pub fn reply(&self) -> String {
        let artifacts: Vec<&Part> = self.artifacts.iter().flat_map(|a| &a.parts).collect();
        if let Some(text) = text_of(artifacts) {
            return text;
        }
        self.status
            .message
            .as_ref()
            .and_then(Message::text)
            .unwrap_or_default()
    }
}

impl Message {
    /// The text parts joined by newlines; `None` when there are none.
    pub fn text(&self) -> Option<String> {
        text_of(self.parts.iter())
    }
}

fn text_of<'a>(parts: impl IntoIterator<Item = &'a Part>) -> Option<String> {
    let texts: Vec<&str> = parts
        .into_iter()
        .filter_map(|p| p.text.as_deref())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}
