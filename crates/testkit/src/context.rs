//! A context window for the mock: with [`MockLlm::set_context_limit`](crate::MockLlm), a request
//! whose prompt counts more tokens than the limit is refused with the provider's own
//! context-length error (OpenAI `context_length_exceeded`, Anthropic "prompt is too long"), and a
//! request within it reports its counted prompt tokens in its usage.
//!
//! The count is [`prompt_tokens`]: the JSON of the system prompt, the messages and the tools, at
//! four characters a token. It is not the gateway's estimate (which counts text, not JSON), so
//! the gateway must calibrate from the usage it is told, as with a real model.

use axum::response::Response;
use serde_json::{Value, json};

use crate::MockApi;

/// The prompt tokens of a request body, as the mock counts them.
pub fn prompt_tokens(body: &Value) -> u64 {
    let chars: usize = ["system", "messages", "tools"]
        .iter()
        .filter_map(|field| body.get(*field))
        .map(|v| v.to_string().chars().count())
        .sum();
    chars.div_ceil(4) as u64
}

/// The provider's answer to a prompt of `tokens` over `limit`.
pub(crate) fn refusal(api: MockApi, tokens: u64, limit: u64) -> Response {
    let body = match api {
        MockApi::OpenAi => json!({"error": {
            "message": format!("This model's maximum context length is {limit} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
        }}),
        MockApi::Anthropic => json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": format!("prompt is too long: {tokens} tokens > {limit} maximum"),
        }}),
    };
    crate::status_reply(400, &body, &[])
}
