//! Wire types of A2A 1.0 (the Agent2Agent protocol), JSON-RPC binding: the agent card, messages,
//! parts, tasks and their states, artifacts, the streaming events, push-notification configs,
//! the request and response of each method (`rpc.rs`: the JSON-RPC envelope, method names and
//! error codes).
//!
//! The shapes follow the protocol's JSON mapping as the official SDKs (`a2a-sdk` 1.3.0 for
//! Python, `@a2a-js/sdk` 1.3.0 for JavaScript) read and write it: camelCase fields, enums as
//! `TASK_STATE_*` / `ROLE_*` strings, a part's content as one of `text`, `raw`, `url`, `data`,
//! and a stream or push event as an object with one of `task`, `message`, `statusUpdate`,
//! `artifactUpdate`. Fields left at their default are omitted on output, as that mapping does.
//! On input, params are read through `crate::checked` like every door's (SPEC §12): an unknown
//! field is refused naming the nearest known one, where A2A 1.0 §5.7 says implementations
//! "SHOULD ignore unrecognized fields" (docs/a2a.md says so).

mod card;
mod rpc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use card::{
    AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill,
    HttpAuthSecurityScheme, SecurityRequirement, SecurityScheme, StringList,
};
pub use rpc::{A2aError, A2aErrorCode, JsonRpcRequest, JsonRpcResponse, Method};

/// The protocol version this gateway speaks.
pub const A2A_VERSION: &str = "1.0";
/// The service parameter a client names the protocol version in: a header, or a query
/// parameter of the URL (A2A 1.0 §3.6.1); absent means 0.3, the protocol says.
pub const VERSION_HEADER: &str = "A2A-Version";
/// The header a push notification carries the config's token in.
pub const NOTIFICATION_TOKEN_HEADER: &str = "X-A2A-Notification-Token";
/// The protocol binding of the JSON-RPC interface in an agent card.
pub const JSONRPC_BINDING: &str = "JSONRPC";
/// Where an agent serves its card, below its base URL.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskState {
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    /// Acknowledged and stored; not started.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// The agent waits for the client's next message in the same task.
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// Whether nothing more happens to a task in this state.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Role {
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "ROLE_USER")]
    User,
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// One piece of a message or artifact: exactly one of `text`, `raw` (base64), `url`, `data`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    pub text: Option<String>,
    /// Bytes, base64-encoded.
    pub raw: Option<String>,
    pub url: Option<String>,
    /// Structured data (any JSON value).
    pub data: Option<Value>,
    pub metadata: Option<Value>,
    pub filename: Option<String>,
    pub media_type: Option<String>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }
}

/// One message of a conversation.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The sender's id for this message (a repeat of it is the same message).
    #[serde(default)]
    pub message_id: String,
    /// The conversation it belongs to; the server makes one up when absent.
    pub context_id: Option<String>,
    /// The task it continues, if any.
    pub task_id: Option<String>,
    #[serde(default)]
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<Part>,
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// The text of the message's text parts, joined by line breaks; `None` when it has none.
    pub fn text(&self) -> Option<String> {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }
}

/// A task's state, with the message that goes with it and when it was reached.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    pub message: Option<Message>,
    /// RFC 3339, UTC.
    pub timestamp: Option<String>,
}

/// An output of a task.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    pub artifact_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub parts: Vec<Part>,
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A unit of work the agent does for a message.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    pub metadata: Option<Value>,
}

/// A task's state changed (streams and push notifications).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub status: TaskStatus,
    pub metadata: Option<Value>,
}

/// A task produced (part of) an artifact.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub artifact: Artifact,
    /// Appends to an artifact of the same id sent before.
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    /// The artifact's last piece.
    #[serde(default, skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    pub metadata: Option<Value>,
}

/// One event of a stream (`SendStreamingMessage`, `SubscribeToTask`) or a push notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// The answer of `SendMessage`: the task (or a direct message, which this gateway never sends).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

/// Credentials a push notification carries in `Authorization: <scheme> <credentials>`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    pub scheme: String,
    pub credentials: Option<String>,
}

/// Where to push a task's updates.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    pub tenant: Option<String>,
    /// The config's id within its task; the server gives one when absent.
    pub id: Option<String>,
    /// The task (empty inside `SendMessage`'s configuration: the new task's).
    #[serde(default)]
    pub task_id: String,
    /// The receiver's URL (`http` or `https`).
    pub url: String,
    /// Sent back in the `X-A2A-Notification-Token` header, for the receiver to check.
    pub token: Option<String>,
    pub authentication: Option<AuthenticationInfo>,
}

/// How `SendMessage` should answer.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// Push this task's updates there.
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// At most this many of the task's most recent history messages in the answer (not
    /// negative; 0: none; all when left out).
    pub history_length: Option<i32>,
    /// Answer once the task is stored instead of when it ends.
    #[serde(default, skip_serializing_if = "is_false")]
    pub return_immediately: bool,
}

/// `SendMessage` and `SendStreamingMessage` params.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    pub tenant: Option<String>,
    pub message: Message,
    pub configuration: Option<SendMessageConfiguration>,
    pub metadata: Option<Value>,
}

/// `GetTask` params.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    pub tenant: Option<String>,
    pub id: String,
    /// At most this many of the task's most recent history messages (not negative; 0: none;
    /// all when left out).
    pub history_length: Option<i32>,
}

/// `ListTasks` params: newest first, `pageSize` (1 to 100; 50 when left out) a page.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    pub tenant: Option<String>,
    /// Only this conversation's tasks.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub status: Option<TaskState>,
    /// 1 to 100; 50 when left out.
    pub page_size: Option<i32>,
    /// The previous page's `nextPageToken`.
    pub page_token: Option<String>,
    /// At most this many of each task's most recent history messages (not negative); none
    /// when left out.
    pub history_length: Option<i32>,
    pub status_timestamp_after: Option<String>,
    pub include_artifacts: Option<bool>,
}

/// `ListTasks` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    pub tasks: Vec<Task>,
    /// Empty on the last page.
    pub next_page_token: String,
    pub page_size: i32,
    /// Every task that matches the request's filters, on this page and the others.
    pub total_size: i32,
}

/// `CancelTask` and `SubscribeToTask` params.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdRequest {
    pub tenant: Option<String>,
    pub id: String,
    pub metadata: Option<Value>,
}

/// `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig` params.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigRequest {
    pub tenant: Option<String>,
    pub task_id: String,
    pub id: String,
}

/// `ListTaskPushNotificationConfigs` params.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPushConfigsRequest {
    pub tenant: Option<String>,
    pub task_id: String,
    pub page_size: Option<i32>,
    pub page_token: Option<String>,
}

/// `ListTaskPushNotificationConfigs` answer (all of a task's configs on one page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPushConfigsResponse {
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(default)]
    pub next_page_token: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests;
