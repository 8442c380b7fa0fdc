//! A Chat Completions request's body, written as JSON text straight from the request: every
//! message of the window goes out at every model call, and building each one as a `Value` (a
//! map a message, a string copied a field) cost more than the rest of the call. The text is
//! byte for byte what one `Value` of the body serialized to (the tests compare the two): the
//! keys of each object in sorted order, strings written as serde_json writes them
//! (`list_json::string`).

use serde_json::Value;
use switchboard_protocol::list_json::string;
use switchboard_protocol::message::{ContentBlock, TranscriptMessage, UserContent};

use super::{ModelRequest, ToolSpec, write_joined, write_text_block, write_tools};
use crate::config::ThinkingLevel;

/// The request's body: `max_tokens`, `messages` (the system prompt first), `model`,
/// `reasoning_effort`, `stream`, `stream_options` and `tools`, in that (sorted) order.
pub(super) fn request_bytes(request: &ModelRequest, stream: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(4096 + request.messages.len() * 256);
    out.push(b'{');
    if let Some(max) = request.max_tokens {
        out.extend_from_slice(b"\"max_tokens\":");
        out.extend_from_slice(max.to_string().as_bytes());
        out.push(b',');
    }
    out.extend_from_slice(b"\"messages\":[");
    if !request.system.is_empty() {
        out.extend_from_slice(b"{\"content\":");
        string(&mut out, &request.system);
        out.extend_from_slice(b",\"role\":\"system\"}");
    }
    for (i, message) in request.messages.iter().enumerate() {
        if i > 0 || !request.system.is_empty() {
            out.push(b',');
        }
        write_message(&mut out, message);
    }
    out.extend_from_slice(b"],\"model\":");
    string(&mut out, &request.model);
    if request.thinking != ThinkingLevel::Off {
        // minimal, low, medium, high: the API's own words.
        out.extend_from_slice(b",\"reasoning_effort\":");
        string(&mut out, request.thinking.as_str());
    }
    out.extend_from_slice(match stream {
        true => b",\"stream\":true,\"stream_options\":{\"include_usage\":true}",
        false => b",\"stream\":false",
    });
    write_tools(&mut out, &request.tools, tool_entry);
    out.push(b'}');
    out
}

/// `{"type": "function", "function": {name, description, parameters}}`, serialized once per
/// spec and kept with it.
fn tool_entry(tool: &ToolSpec) -> &str {
    tool.openai.get_or_init(|| {
        serde_json::json!({"type": "function", "function": {
            "name": tool.name, "description": tool.description, "parameters": tool.parameters,
        }})
        .to_string()
    })
}

/// One message: a user's text (or its parts, with an image), an assistant's text and tool calls
/// (its thinking is not sent back: the format has no field for it), a tool's result.
fn write_message(out: &mut Vec<u8>, message: &TranscriptMessage) {
    match message {
        TranscriptMessage::User(user) => {
            out.extend_from_slice(b"{\"content\":");
            match &user.content {
                UserContent::Text(text) => string(out, text),
                UserContent::Blocks(blocks) => user_parts(out, blocks),
            }
            out.extend_from_slice(b",\"role\":\"user\"}");
        }
        TranscriptMessage::Assistant(assistant) => {
            let calls = || assistant.content.iter().filter_map(tool_call);
            let has_calls = calls().next().is_some();
            out.extend_from_slice(b"{\"content\":");
            match has_calls && joins_empty(&assistant.content) {
                true => out.extend_from_slice(b"null"),
                false => text_of(out, &assistant.content),
            }
            out.extend_from_slice(b",\"role\":\"assistant\"");
            for (i, (id, name, arguments)) in calls().enumerate() {
                out.extend_from_slice(match i {
                    0 => b",\"tool_calls\":[{\"function\":{\"arguments\":".as_slice(),
                    _ => b",{\"function\":{\"arguments\":",
                });
                match arguments {
                    Value::String(raw) => string(out, raw),
                    other => string(out, &other.to_string()),
                }
                out.extend_from_slice(b",\"name\":");
                string(out, name);
                out.extend_from_slice(b"},\"id\":");
                string(out, id);
                out.extend_from_slice(b",\"type\":\"function\"}");
            }
            if has_calls {
                out.push(b']');
            }
            out.push(b'}');
        }
        TranscriptMessage::ToolResult(result) => {
            out.extend_from_slice(b"{\"content\":");
            text_of(out, &result.content);
            out.extend_from_slice(b",\"role\":\"tool\",\"tool_call_id\":");
            string(out, &result.tool_call_id);
            out.push(b'}');
        }
    }
}

fn tool_call(block: &ContentBlock) -> Option<(&str, &str, &Value)> {
    match block {
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
        } => Some((id, name, arguments)),
        _ => None,
    }
}

/// User blocks: a plain string when they are all text (every compatible server reads that),
/// content parts when there is an image.
fn user_parts(out: &mut Vec<u8>, blocks: &[ContentBlock]) {
    if !blocks
        .iter()
        .any(|b| matches!(b, ContentBlock::Image { .. }))
    {
        return text_of(out, blocks);
    }
    out.push(b'[');
    let parts = blocks
        .iter()
        .filter(|b| matches!(b, ContentBlock::Text { .. } | ContentBlock::Image { .. }));
    for (i, block) in parts.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match block {
            ContentBlock::Text { text } => write_text_block(out, text),
            ContentBlock::Image { data, mime_type } => {
                out.extend_from_slice(b"{\"image_url\":{\"url\":");
                string(out, &format!("data:{mime_type};base64,{data}"));
                out.extend_from_slice(b"},\"type\":\"image_url\"}");
            }
            _ => {}
        }
    }
    out.push(b']');
}

/// The texts of the text blocks, in order.
fn texts(blocks: &[ContentBlock]) -> impl Iterator<Item = &str> {
    blocks.iter().filter_map(|b| match b {
        ContentBlock::Text { text } => Some(text.as_str()),
        _ => None,
    })
}

/// Whether the text blocks joined ([`text_of`]) are the empty string: none, or one that is empty
/// (two or more are joined by a blank line).
fn joins_empty(blocks: &[ContentBlock]) -> bool {
    let mut texts = texts(blocks);
    match (texts.next(), texts.next()) {
        (None, _) => true,
        (Some(only), None) => only.is_empty(),
        (Some(_), Some(_)) => false,
    }
}

/// The text blocks, joined with blank lines, as one JSON string.
fn text_of(out: &mut Vec<u8>, blocks: &[ContentBlock]) {
    write_joined(out, texts(blocks));
}

#[cfg(test)]
#[path = "openai_body_tests.rs"]
mod tests;
