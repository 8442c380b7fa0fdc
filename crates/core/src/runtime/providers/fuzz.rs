//! What the stream parsers' property tests share: an endpoint to report errors through, and
//! stream payloads that are mostly the format's own shapes with arbitrary values in them (so the
//! deep paths run), plus plain noise.

use proptest::prelude::*;

use super::http::Endpoint;
use crate::config::ProviderConfig;

/// One endpoint for every case (building a client per case would be most of the test's time).
pub(super) fn endpoint() -> &'static Endpoint {
    static ENDPOINT: std::sync::OnceLock<Endpoint> = std::sync::OnceLock::new();
    ENDPOINT.get_or_init(|| {
        let client = super::http::client(std::time::Duration::from_secs(1)).expect("a client");
        Endpoint::new("p", &ProviderConfig::default(), "v1/x", Vec::new(), client)
    })
}

/// Field names of both formats' stream events.
const KEYS: &[&str] = &[
    "type",
    "index",
    "id",
    "name",
    "choices",
    "delta",
    "content",
    "tool_calls",
    "function",
    "arguments",
    "finish_reason",
    "usage",
    "message",
    "content_block",
    "text",
    "thinking",
    "partial_json",
    "input",
    "stop_reason",
    "error",
    "prompt_tokens",
    "completion_tokens",
    "input_tokens",
    "output_tokens",
    "reasoning_content",
    "role",
    "signature",
];

/// Values of the `type` fields the parsers look for.
const TYPES: &[&str] = &[
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "error",
    "ping",
    "text",
    "text_delta",
    "tool_use",
    "input_json_delta",
    "thinking",
    "thinking_delta",
    "signature_delta",
    "function",
];

/// One stream payload: format-shaped JSON most of the time, otherwise any text.
pub(super) fn payload() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => switchboard_testkit::fuzz::json(KEYS, TYPES, 4).prop_map(|v| v.to_string()),
        1 => any::<String>(),
        1 => Just("[DONE]".to_string()),
    ]
}

/// A JSON object's text from its fields, a key maybe repeated (which a `Value` cannot hold).
pub(super) fn object(fields: Vec<(&str, String)>) -> String {
    let fields: Vec<String> = fields.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
    format!("{{{}}}", fields.join(","))
}
