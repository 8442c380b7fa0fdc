//! The written body against the `Value` the provider built before, serialized: the same bytes
//! for every kind of message and every option.

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard_protocol::message::{ContentBlock, TranscriptMessage, UserContent};

use super::request_bytes;
use crate::config::ThinkingLevel;
use crate::runtime::providers::{ModelRequest, ToolSpec};

/// The body as one `Value`, built as the provider built it before it wrote the text itself.
fn request_body(request: &ModelRequest, stream: bool) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    messages.extend(request.messages.iter().map(message));
    let mut body = json!({"model": request.model, "stream": stream});
    body["messages"] = Value::Array(messages);
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if let Some(max) = request.max_tokens {
        body["max_tokens"] = json!(max);
    }
    if request.thinking != ThinkingLevel::Off {
        // minimal, low, medium, high: the API's own words.
        body["reasoning_effort"] = json!(request.thinking.as_str());
    }
    body
}

fn message(message: &TranscriptMessage) -> Value {
    match message {
        TranscriptMessage::User(user) => {
            let content = match &user.content {
                UserContent::Text(text) => json!(text),
                UserContent::Blocks(blocks) => user_parts(blocks),
            };
            json!({"role": "user", "content": content})
        }
        TranscriptMessage::Assistant(assistant) => {
            let text = text_of(&assistant.content);
            let calls: Vec<Value> = assistant
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    } => Some(json!({
                        "id": id, "type": "function",
                        "function": {"name": name, "arguments": arguments_text(arguments)},
                    })),
                    _ => None,
                })
                .collect();
            // Thinking is not sent back: the format has no field for it.
            let mut out = json!({"role": "assistant", "content": text});
            if !calls.is_empty() {
                if text.is_empty() {
                    out["content"] = Value::Null;
                }
                out["tool_calls"] = Value::Array(calls);
            }
            out
        }
        TranscriptMessage::ToolResult(result) => json!({
            "role": "tool", "tool_call_id": result.tool_call_id, "content": text_of(&result.content),
        }),
    }
}

/// User blocks: a plain string when they are all text (every compatible server reads that),
/// content parts when there is an image.
fn user_parts(blocks: &[ContentBlock]) -> Value {
    if !blocks
        .iter()
        .any(|b| matches!(b, ContentBlock::Image { .. }))
    {
        return json!(text_of(blocks));
    }
    let parts: Vec<Value> = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentBlock::Image { data, mime_type } => Some(json!({
                "type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")},
            })),
            _ => None,
        })
        .collect();
    Value::Array(parts)
}

/// The text blocks, joined with blank lines.
fn text_of(blocks: &[ContentBlock]) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}

/// Arguments as the JSON text the format carries; malformed ones (kept raw) go back as they came.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// The old body with its tools, as one `Value` serialized them.
fn expected(request: &ModelRequest, stream: bool) -> Vec<u8> {
    let mut whole = request_body(request, stream);
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters,
            }})
        });
        whole["tools"] = Value::Array(tools.collect());
    }
    whole.to_string().into_bytes()
}

fn tool(name: &str) -> Arc<ToolSpec> {
    Arc::new(ToolSpec::new(
        name.into(),
        format!("what {name} does"),
        json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {}}}),
    ))
}

fn parsed(value: Value) -> TranscriptMessage {
    serde_json::from_value(value).unwrap()
}

/// Every kind of message the window holds: a user's text and a user's parts with an image, an
/// assistant's text, thinking and calls (arguments as an object and kept raw), calls alone,
/// several text blocks, an empty text with a call, and tool results, with characters to escape.
fn conversation() -> Vec<TranscriptMessage> {
    let text = |t: &str| json!({"type": "text", "text": t});
    let call = |id: &str, args: Value| json!({"type": "toolCall", "id": id, "name": "look", "arguments": args});
    vec![
        parsed(json!({"role": "user", "content": "say \"hi\"\n\tthen é ✓", "timestamp": 1})),
        parsed(json!({"role": "user", "timestamp": 2, "content": [
            text("see"), {"type": "image", "data": "AAAA", "mimeType": "image/png"}, text("this")]})),
        parsed(
            json!({"role": "user", "timestamp": 3, "content": [text("a"), text("b"), text("c")]}),
        ),
        parsed(json!({"role": "assistant", "timestamp": 4, "content": [
            {"type": "thinking", "thinking": "hmm"}, text("first"), call("c1", json!({"q": "x\u{1}"})),
            call("c2", json!("{not json"))]})),
        parsed(
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "look", "timestamp": 5,
            "content": [text("found\r\n"), text("more")]}),
        ),
        parsed(
            json!({"role": "toolResult", "toolCallId": "c2", "toolName": "look", "timestamp": 6,
            "content": []}),
        ),
        parsed(json!({"role": "assistant", "timestamp": 7, "content": [call("c3", json!({}))]})),
        parsed(
            json!({"role": "assistant", "timestamp": 8, "content": [text(""), call("c4", json!({}))]}),
        ),
        parsed(
            json!({"role": "assistant", "timestamp": 9, "content": [text(""), text(""), call("c5", json!([1]))]}),
        ),
        parsed(json!({"role": "assistant", "timestamp": 10, "content": [text("done")]})),
        parsed(json!({"role": "assistant", "timestamp": 11, "content": []})),
    ]
}

#[test]
fn the_written_body_is_what_one_value_serialized_was() {
    let mut request = ModelRequest {
        model: "m\"1".into(),
        system: "be brief".into(),
        messages: conversation(),
        tools: vec![tool("one"), tool("two")],
        max_tokens: Some(64),
        thinking: ThinkingLevel::Low,
    };
    let written = request_bytes(&request, true);
    assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&expected(&request, true))
    );
    assert_eq!(
        request_bytes(&request, true),
        written,
        "from the kept tool entries"
    );
    request.tools.clear();
    request.max_tokens = None;
    request.thinking = ThinkingLevel::Off;
    request.system.clear();
    assert_eq!(
        String::from_utf8_lossy(&request_bytes(&request, false)),
        String::from_utf8_lossy(&expected(&request, false))
    );
    request.messages.clear();
    assert_eq!(request_bytes(&request, false), expected(&request, false));
}
