//! An Anthropic Messages request's body, written as JSON text straight from the request, as
//! the Chat Completions one is (`openai_body`): every model call sends the whole window again,
//! and building each message as `Value`s cost more than the rest of the call. The text is byte
//! for byte what one `Value` of the body serialized to (the tests keep that builder and compare):
//! each object's keys in sorted order, strings as serde_json writes them (`list_json::string`).
//!
//! The transcript becomes strictly alternating user/assistant messages: consecutive messages of
//! one role are written as one, a message with no block the API accepts is left out, and a
//! transcript ending with the assistant gets a user turn asking for a reply.

use serde_json::Value;
use switchboard_protocol::list_json::string;
use switchboard_protocol::message::{ContentBlock, TranscriptMessage, UserContent};

use super::{ModelRequest, ToolSpec, write_joined, write_text_block as text_block, write_tools};
use crate::config::ThinkingLevel;

/// `max_tokens` is required by the API; this is sent when the model entry sets none.
const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The user turn after a transcript that ends with the assistant. A run without a message of
/// its own (an announce step after the session's own reply, a step run again after a stop)
/// would end on an assistant turn, which the API takes as a prefill to continue; the step's
/// instructions are in the system prompt, and the transcript does not carry this turn.
const CONTINUE: &str = "(Your turn: answer as the system prompt asks.)";

/// Extended thinking's token budget for a level (the API's least is 1,024); `None` for off.
fn thinking_budget(level: ThinkingLevel) -> Option<u64> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(1024),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(24_576),
    }
}

/// The request's body: `max_tokens`, `messages`, `model`, `stream`, `system`, `thinking` and
/// `tools`, in that (sorted) order.
pub(super) fn request_bytes(request: &ModelRequest, stream: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(4096 + request.messages.len() * 256);
    let budget = thinking_budget(request.thinking);
    let mut max = request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if let Some(budget) = budget {
        // The budget counts inside max_tokens, which must leave room for the answer.
        max = max.max(budget + 1024);
    }
    out.extend_from_slice(b"{\"max_tokens\":");
    out.extend_from_slice(max.to_string().as_bytes());
    out.extend_from_slice(b",\"messages\":");
    write_messages(&mut out, &request.messages);
    out.extend_from_slice(b",\"model\":");
    string(&mut out, &request.model);
    out.extend_from_slice(match stream {
        true => b",\"stream\":true",
        false => b",\"stream\":false",
    });
    if !request.system.is_empty() {
        out.extend_from_slice(b",\"system\":");
        string(&mut out, &request.system);
    }
    if let Some(budget) = budget {
        out.extend_from_slice(b",\"thinking\":{\"budget_tokens\":");
        out.extend_from_slice(budget.to_string().as_bytes());
        out.extend_from_slice(b",\"type\":\"enabled\"}");
    }
    write_tools(&mut out, &request.tools, tool_entry);
    out.push(b'}');
    out
}

/// `{name, description, input_schema}`, serialized once per spec and kept with it.
fn tool_entry(tool: &ToolSpec) -> &str {
    tool.anthropic.get_or_init(|| {
        let schema = match tool.parameters.is_object() {
            true => tool.parameters.clone(),
            false => serde_json::json!({"type": "object", "properties": {}}),
        };
        serde_json::json!({"name": tool.name, "description": tool.description, "input_schema": schema})
            .to_string()
    })
}

/// The transcript as alternating user/assistant messages.
fn write_messages(out: &mut Vec<u8>, transcript: &[TranscriptMessage]) {
    out.push(b'[');
    let mut open: Option<&'static str> = None;
    for message in transcript {
        let role = match message {
            TranscriptMessage::Assistant(_) => "assistant",
            TranscriptMessage::User(_) | TranscriptMessage::ToolResult(_) => "user",
        };
        // An empty message (an aborted turn with no output) is rejected by the API.
        if !has_blocks(message) {
            continue;
        }
        match open {
            Some(last) if last == role => out.push(b','),
            Some(last) => {
                close(out, last);
                out.extend_from_slice(b",{\"content\":[");
            }
            None => out.extend_from_slice(b"{\"content\":["),
        }
        open = Some(role);
        write_blocks(out, message);
    }
    if open == Some("assistant") {
        close(out, "assistant");
        out.extend_from_slice(b",{\"content\":[");
        text_block(out, CONTINUE);
        open = Some("user");
    }
    if let Some(last) = open {
        close(out, last);
    }
    out.push(b']');
}

/// Ends a message's content list with its role.
fn close(out: &mut Vec<u8>, role: &str) {
    out.extend_from_slice(b"],\"role\":\"");
    out.extend_from_slice(role.as_bytes());
    out.extend_from_slice(b"\"}");
}

/// Whether [`write_blocks`] writes at least one block for `message`.
fn has_blocks(message: &TranscriptMessage) -> bool {
    match message {
        TranscriptMessage::User(user) => match &user.content {
            UserContent::Text(text) => !text.is_empty(),
            UserContent::Blocks(list) => list.iter().any(sent_as_block),
        },
        TranscriptMessage::Assistant(assistant) => assistant.content.iter().any(sent_by_assistant),
        TranscriptMessage::ToolResult(_) => true,
    }
}

/// A block a user message or a tool result carries: text that is not empty, or an image (the
/// API rejects empty text blocks).
fn sent_as_block(block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Text { text } => !text.is_empty(),
        ContentBlock::Image { .. } => true,
        _ => false,
    }
}

/// A block an assistant message carries: text that is not empty, signed thinking (the API
/// rejects unsigned) or a tool call; not an image.
fn sent_by_assistant(block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Text { text } => !text.is_empty(),
        ContentBlock::Thinking { signature, .. } => signature.is_some(),
        ContentBlock::ToolCall { .. } => true,
        _ => false,
    }
}

/// The message's blocks, separated by commas: a user's text and images; an assistant's text,
/// signed thinking (the API rejects unsigned) and tool calls (not images); a tool's result.
fn write_blocks(out: &mut Vec<u8>, message: &TranscriptMessage) {
    match message {
        TranscriptMessage::User(user) => match &user.content {
            UserContent::Text(text) => text_block(out, text),
            UserContent::Blocks(list) => content_blocks(out, list),
        },
        TranscriptMessage::Assistant(assistant) => {
            let mut first = true;
            for block in assistant.content.iter().filter(|b| sent_by_assistant(b)) {
                separate(out, &mut first);
                match block {
                    ContentBlock::Thinking {
                        thinking,
                        signature: Some(signature),
                    } => {
                        out.extend_from_slice(b"{\"signature\":");
                        string(out, signature);
                        out.extend_from_slice(b",\"thinking\":");
                        string(out, thinking);
                        out.extend_from_slice(b",\"type\":\"thinking\"}");
                    }
                    ContentBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    } => tool_use(out, id, name, arguments),
                    ContentBlock::Text { text } => text_block(out, text),
                    _ => {}
                }
            }
        }
        TranscriptMessage::ToolResult(result) => {
            out.push(b'{');
            result_content(out, &result.content);
            out.extend_from_slice(match result.is_error {
                true => b"\"is_error\":true,\"tool_use_id\":",
                false => b"\"is_error\":false,\"tool_use_id\":",
            });
            write_tool_id(out, &result.tool_call_id);
            out.extend_from_slice(b",\"type\":\"tool_result\"}");
        }
    }
}

fn separate(out: &mut Vec<u8>, first: &mut bool) {
    if !std::mem::take(first) {
        out.push(b',');
    }
}

fn tool_use(out: &mut Vec<u8>, id: &str, name: &str, arguments: &Value) {
    out.extend_from_slice(b"{\"id\":");
    write_tool_id(out, id);
    out.extend_from_slice(b",\"input\":");
    // Malformed arguments (kept raw) cannot be sent as `input`, which must be an object; the
    // tool result that follows already tells the model what was wrong.
    match arguments {
        // Writing to a `Vec` cannot fail, and a `Value`'s keys are strings.
        Value::Object(_) => {
            let _ = serde_json::to_writer(&mut *out, arguments);
        }
        _ => out.extend_from_slice(b"{}"),
    }
    out.extend_from_slice(b",\"name\":");
    string(out, name);
    out.extend_from_slice(b",\"type\":\"tool_use\"}");
}

/// A tool result's `content` key and its comma: its texts joined by blank lines when it holds
/// only text, its blocks otherwise; nothing when there is nothing to send.
fn result_content(out: &mut Vec<u8>, content: &[ContentBlock]) {
    if !content.iter().any(sent_as_block) {
        return;
    }
    out.extend_from_slice(b"\"content\":");
    if content
        .iter()
        .all(|b| matches!(b, ContentBlock::Text { .. }))
    {
        let texts = content.iter().filter_map(|b| match b {
            ContentBlock::Text { text } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        });
        write_joined(out, texts);
    } else {
        out.push(b'[');
        content_blocks(out, content);
        out.push(b']');
    }
    out.push(b',');
}

/// The text and image blocks of `list`, separated by commas.
fn content_blocks(out: &mut Vec<u8>, list: &[ContentBlock]) {
    let mut first = true;
    for block in list.iter().filter(|b| sent_as_block(b)) {
        separate(out, &mut first);
        content_block(out, block);
    }
}

/// A text block, or an image's base64 source.
fn content_block(out: &mut Vec<u8>, block: &ContentBlock) {
    match block {
        ContentBlock::Text { text } => text_block(out, text),
        ContentBlock::Image { data, mime_type } => {
            out.extend_from_slice(b"{\"source\":{\"data\":");
            string(out, data);
            out.extend_from_slice(b",\"media_type\":");
            string(out, mime_type);
            out.extend_from_slice(b",\"type\":\"base64\"},\"type\":\"image\"}");
        }
        _ => {}
    }
}

/// The API accepts tool ids matching `[A-Za-z0-9_-]+`; ids minted by another provider may not,
/// so both the call and its result are mapped the same way: every other character becomes `_`,
/// and an empty id `tool`. None of those characters needs escaping, so the id is written as it
/// is, without a copy.
fn write_tool_id(out: &mut Vec<u8>, id: &str) {
    let clean = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    out.push(b'"');
    match id.is_empty() {
        true => out.extend_from_slice(b"tool"),
        false if id.chars().all(clean) => out.extend_from_slice(id.as_bytes()),
        false => out.extend(id.chars().map(|c| if clean(c) { c as u8 } else { b'_' })),
    }
    out.push(b'"');
}

#[cfg(test)]
#[path = "anthropic_body_tests.rs"]
mod tests;
