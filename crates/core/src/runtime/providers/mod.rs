//! Model providers: one trait, the two wire formats (OpenAI Chat Completions, Anthropic
//! Messages) written by hand over reqwest, and the built-in `echo` and `scripted` models.
//!
//! A provider turns a [`ModelRequest`] into one assistant turn ([`ModelResponse`]), reporting
//! streamed deltas through a callback as they arrive. Errors are classified ([`ProviderError`])
//! so retries are decided by kind, never by string; [`complete_with_retries`] applies the policy.
//! API keys never appear in errors or logs: every message built from a response goes through
//! [`redact`].

mod anthropic;
mod anthropic_body;
mod anthropic_delta;
mod builtin;
#[cfg(test)]
mod fuzz;
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod http;
mod in_place;
mod merged;
mod openai;
mod openai_body;
mod openai_chunk;
mod registry;
mod retry;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_protocol::list_json::string;
use switchboard_protocol::message::{ContentBlock, StopReason, TranscriptMessage, Usage};

pub use http::{client_builder, read_roots_ahead};
pub use registry::{ModelTarget, Providers};
pub use retry::{RetryPolicy, complete_with_retries};

/// A tool the model may call: name, description for the model, JSON-schema parameters, and
/// what they cost a request in estimated tokens (uncalibrated), worked out once.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub tokens: f64,
    /// Its entry of an OpenAI request's `tools`, serialized at its first request: a spec
    /// lives as long as its tool (or its run), and every model call offers it again.
    openai: std::sync::OnceLock<String>,
    /// Its entry of an Anthropic request's `tools`, likewise.
    anthropic: std::sync::OnceLock<String>,
}

impl ToolSpec {
    pub fn new(name: String, description: String, parameters: Value) -> Self {
        let tokens = super::window::spec_tokens(&name, &description, &parameters);
        Self {
            name,
            description,
            parameters,
            tokens,
            openai: std::sync::OnceLock::new(),
            anthropic: std::sync::OnceLock::new(),
        }
    }
}

/// `,"tools":[…]` of a request's body, each tool's entry as its format serialized it (once per
/// spec, kept with it); nothing when the request offers no tool.
fn write_tools(out: &mut Vec<u8>, tools: &[Arc<ToolSpec>], entry: fn(&ToolSpec) -> &str) {
    for (i, tool) in tools.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b",\"tools\":[" } else { b"," });
        out.extend_from_slice(entry(tool).as_bytes());
    }
    if !tools.is_empty() {
        out.push(b']');
    }
}

/// `texts` joined by blank lines, as one JSON string (one text is written without a copy).
fn write_joined<'t>(out: &mut Vec<u8>, mut texts: impl Iterator<Item = &'t str>) {
    match (texts.next(), texts.next()) {
        (None, _) => string(out, ""),
        (Some(only), None) => string(out, only),
        (Some(first), Some(second)) => {
            let mut joined = format!("{first}\n\n{second}");
            for text in texts {
                joined.push_str("\n\n");
                joined.push_str(text);
            }
            string(out, &joined);
        }
    }
}

/// `{"text": …, "type": "text"}`: a text block in both formats.
fn write_text_block(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(b"{\"text\":");
    string(out, text);
    out.extend_from_slice(b",\"type\":\"text\"}");
}

impl PartialEq for ToolSpec {
    /// The spec itself; whether its request entry was serialized yet does not matter.
    fn eq(&self, other: &Self) -> bool {
        (&self.name, &self.description, &self.parameters, self.tokens)
            == (
                &other.name,
                &other.description,
                &other.parameters,
                other.tokens,
            )
    }
}

/// One call to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The model id at the provider (without the `provider/` prefix).
    pub model: String,
    pub system: String,
    /// The conversation so far, oldest first, in transcript shapes.
    pub messages: Vec<TranscriptMessage>,
    pub tools: Vec<Arc<ToolSpec>>,
    /// Largest completion, when the model entry sets one.
    pub max_tokens: Option<u64>,
    /// How much the model should think first (`off`: as it does by default).
    pub thinking: crate::config::ThinkingLevel,
}

/// What a provider reports while a reply streams in.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of assistant text.
    TextDelta(String),
    /// A piece of thinking text.
    ThinkingDelta(String),
    /// The model started a tool call (arguments follow when complete, in the response).
    ToolCallStarted { id: String, name: String },
}

/// Where a provider reports stream events (called in order, from the provider's task).
pub type EventSink<'a> = &'a (dyn Fn(StreamEvent) + Send + Sync);

/// One assistant turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// Text, thinking and tool calls in the order the model produced them. A tool call whose
    /// arguments were not valid JSON carries them as `Value::String(raw)`: the run loop answers
    /// it with an error tool result instead of executing it.
    pub content: Vec<ContentBlock>,
    pub usage: Usage,
    pub stop_reason: StopReason,
}

impl ModelResponse {
    /// The concatenated text blocks.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments)),
            _ => None,
        })
    }

    /// The same turn with an id of its own on every tool call: an empty id, or one an earlier
    /// call of the turn already has, becomes a fresh one. A provider may send either (a
    /// compatible server without ids, a stream that repeats a block); tool results answer calls
    /// by id, so two calls under one id could not both be answered, and the next request
    /// would carry the clash back to the provider.
    pub fn with_distinct_call_ids(mut self) -> Self {
        let mut seen = std::collections::HashSet::new();
        for block in &mut self.content {
            if let ContentBlock::ToolCall { id, .. } = block
                && (id.is_empty() || !seen.insert(id.clone()))
            {
                *id = http::fresh_call_id();
                seen.insert(id.clone());
            }
        }
        self
    }
}

/// A provider failure, classified so retries are decided by kind.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// 401/403: the key is missing or wrong. Not retried; the message says which provider.
    #[error("authentication failed ({status}): {message}")]
    Auth { status: u16, message: String },
    /// 429: retried after `retry_after` (from the response) or a backoff.
    #[error("rate limited{}: {message}", retry_after.map(|d| format!(" (retry after {}s)", d.as_secs_f64())).unwrap_or_default())]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// The conversation does not fit the model's context window. Not retried.
    #[error("context length exceeded: {message}")]
    ContextLength { message: String },
    /// 5xx (and 529 overloaded): retried.
    #[error("server error ({status}): {message}")]
    Server { status: u16, message: String },
    /// Connection refused, reset, DNS, or the request timed out: retried.
    #[error("network error: {message}")]
    Network { message: String },
    /// Any other 4xx: our request was wrong. Not retried.
    #[error("request rejected ({status}): {message}")]
    BadRequest { status: u16, message: String },
    /// The provider answered something we cannot read. Not retried.
    #[error("invalid response: {message}")]
    InvalidResponse { message: String },
}

impl ProviderError {
    /// Whether trying again may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. } | Self::Server { .. } | Self::Network { .. }
        )
    }

    /// The kind, as a label (`auth`, `rate_limited`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Auth { .. } => "auth",
            Self::RateLimited { .. } => "rate_limited",
            Self::ContextLength { .. } => "context_length",
            Self::Server { .. } => "server",
            Self::Network { .. } => "network",
            Self::BadRequest { .. } => "bad_request",
            Self::InvalidResponse { .. } => "invalid_response",
        }
    }

    /// How long the provider asked us to wait, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

pub type ProviderFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ModelResponse, ProviderError>> + Send + 'a>>;

/// A model backend. Implementations are cheap to share (`Arc<dyn Provider>`).
pub trait Provider: Send + Sync {
    /// The provider id (`openai`, `builtin`, …) recorded on assistant messages.
    fn id(&self) -> &str;

    /// One assistant turn. Stream deltas go to `events` as they arrive; the returned response
    /// holds the whole turn.
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: EventSink<'a>,
    ) -> ProviderFuture<'a>;
}

/// Replaces every occurrence of `secret` in `text` (API keys in error bodies and URLs).
pub fn redact(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if s.len() >= 4 => text.replace(s, "[redacted]"),
        _ => text.to_string(),
    }
}
