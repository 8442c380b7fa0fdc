//! The written body against the `Value` the provider built before, serialized: the same bytes
//! for every kind of message and every option; and what the API requires of the messages.

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard_protocol::message::{
    ContentBlock, ToolResultMessage, TranscriptMessage, UserContent,
};

use super::{CONTINUE, DEFAULT_MAX_TOKENS, request_bytes, thinking_budget};
use crate::config::ThinkingLevel;
use crate::runtime::providers::{ModelRequest, ToolSpec};

/// The body as one `Value`, built as the provider built it before it wrote the text itself.
fn request_body(request: &ModelRequest, stream: bool) -> Value {
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "stream": stream,
    });
    body["messages"] = Value::Array(messages(&request.messages));
    if !request.system.is_empty() {
        body["system"] = json!(request.system);
    }
    if let Some(budget) = thinking_budget(request.thinking) {
        // The budget counts inside max_tokens, which must leave room for the answer.
        let max = request
            .max_tokens
            .unwrap_or(DEFAULT_MAX_TOKENS)
            .max(budget + 1024);
        body["max_tokens"] = json!(max);
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                let schema = if t.parameters.is_object() {
                    t.parameters.clone()
                } else {
                    json!({"type": "object", "properties": {}})
                };
                json!({"name": t.name, "description": t.description, "input_schema": schema})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

/// The transcript as alternating user/assistant messages.
fn messages(transcript: &[TranscriptMessage]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in transcript {
        let (role, blocks) = match message {
            TranscriptMessage::User(user) => ("user", user_blocks(&user.content)),
            TranscriptMessage::Assistant(assistant) => {
                ("assistant", assistant_blocks(&assistant.content))
            }
            TranscriptMessage::ToolResult(result) => {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": tool_id(&result.tool_call_id),
                    "is_error": result.is_error,
                });
                let content = blocks(&result.content);
                let only_text = result
                    .content
                    .iter()
                    .all(|b| matches!(b, ContentBlock::Text { .. }));
                if only_text {
                    let text: Vec<&str> =
                        content.iter().filter_map(|b| b["text"].as_str()).collect();
                    if !text.is_empty() {
                        block["content"] = json!(text.join("\n\n"));
                    }
                } else if !content.is_empty() {
                    block["content"] = Value::Array(content);
                }
                ("user", vec![block])
            }
        };
        // An empty message (an aborted turn with no output) is rejected by the API.
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    if turns.last().is_some_and(|(role, _)| *role == "assistant") {
        turns.push(("user", vec![json!({"type": "text", "text": CONTINUE})]));
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn user_blocks(content: &UserContent) -> Vec<Value> {
    match content {
        UserContent::Text(text) if text.is_empty() => Vec::new(),
        UserContent::Text(text) => vec![json!({"type": "text", "text": text})],
        UserContent::Blocks(list) => blocks(list),
    }
}

/// Text and image blocks; the API rejects empty text blocks, so they are left out.
fn blocks(list: &[ContentBlock]) -> Vec<Value> {
    list.iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
            ContentBlock::Image { data, mime_type } => Some(json!({
                "type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data},
            })),
            _ => None,
        })
        .collect()
}

fn assistant_blocks(content: &[ContentBlock]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } if !text.is_empty() => {
                Some(json!({"type": "text", "text": text}))
            }
            ContentBlock::Thinking {
                thinking,
                signature: Some(signature),
            } => Some(json!({"type": "thinking", "thinking": thinking, "signature": signature})),
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => Some(json!({
                "type": "tool_use",
                "id": tool_id(id),
                "name": name,
                // Malformed arguments (kept raw) cannot be sent as `input`, which must be an
                // object; the tool result that follows already tells the model what was wrong.
                "input": if arguments.is_object() { arguments.clone() } else { json!({}) },
            })),
            _ => None,
        })
        .collect()
}

/// Tool ids as the provider cleaned them before it wrote them itself.
fn tool_id(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "tool".to_string()
    } else {
        clean
    }
}

fn request(messages: Vec<TranscriptMessage>) -> ModelRequest {
    ModelRequest {
        model: "m\"1".into(),
        system: "be brief".into(),
        messages,
        tools: Vec::new(),
        max_tokens: None,
        thinking: ThinkingLevel::Off,
    }
}

/// The messages of the written body.
fn written_messages(transcript: Vec<TranscriptMessage>) -> Vec<Value> {
    let body: Value = serde_json::from_slice(&request_bytes(&request(transcript), true)).unwrap();
    match body {
        Value::Object(mut body) => match body.remove("messages") {
            Some(Value::Array(messages)) => messages,
            other => panic!("messages is not a list: {other:?}"),
        },
        other => panic!("the body is not an object: {other}"),
    }
}

fn parsed(value: Value) -> TranscriptMessage {
    serde_json::from_value(value).unwrap()
}

fn user(text: &str) -> TranscriptMessage {
    parsed(json!({"role": "user", "content": text, "timestamp": 0}))
}

fn assistant(content: Vec<ContentBlock>) -> TranscriptMessage {
    parsed(json!({"role": "assistant", "content": content, "timestamp": 0}))
}

fn tool(name: &str) -> Arc<ToolSpec> {
    Arc::new(ToolSpec::new(
        name.into(),
        format!("what {name} does"),
        json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {}}}),
    ))
}

/// Every kind of message the window holds, with runs of one role to merge, messages with
/// nothing to send, ids to clean and characters to escape.
fn conversation() -> Vec<TranscriptMessage> {
    let text = |t: &str| json!({"type": "text", "text": t});
    let image = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
    let call = |id: &str, args: Value| json!({"type": "toolCall", "id": id, "name": "look", "arguments": args});
    let result = |id: &str, content: Value, error: bool| {
        parsed(
            json!({"role": "toolResult", "toolCallId": id, "toolName": "look", "timestamp": 5,
            "content": content, "isError": error}),
        )
    };
    let nothing = parsed(json!({"role": "assistant", "timestamp": 0, "content": [text("")]}));
    vec![
        // Left out first, and between two user messages, which are then one.
        nothing.clone(),
        parsed(json!({"role": "user", "content": "say \"hi\"\n\tthen é ✓", "timestamp": 1})),
        nothing,
        parsed(json!({"role": "user", "content": "", "timestamp": 1})),
        parsed(json!({"role": "user", "timestamp": 2, "content": [
            text("see"), image.clone(), text(""), text("this")]})),
        parsed(json!({"role": "user", "timestamp": 2, "content": [text("")]})),
        parsed(json!({"role": "assistant", "timestamp": 4, "content": [
            {"type": "thinking", "thinking": "hmm"}, text("first"), image.clone(),
            {"type": "thinking", "thinking": "signed", "thinkingSignature": "s\"ig"},
            call("c:1", json!({"q": "x\u{1}", "a": [1, 2]})), call("", json!("{not json")), text("")]})),
        result(
            "c:1",
            json!([text("found\r\n"), text(""), text("more")]),
            false,
        ),
        result("", json!([]), true),
        result("c3", json!([text("only")]), false),
        result("c4 é✓", json!([text("with"), image.clone()]), false),
        result("c5", json!([{"type": "thinking", "thinking": "x"}]), false),
        parsed(json!({"role": "user", "content": "next", "timestamp": 6})),
        parsed(json!({"role": "assistant", "timestamp": 7, "content": [call("c6", json!({}))]})),
        parsed(json!({"role": "assistant", "timestamp": 8, "content": []})),
        parsed(
            json!({"role": "assistant", "timestamp": 9, "content": [{"type": "thinking", "thinking": "u"}]}),
        ),
        parsed(json!({"role": "assistant", "timestamp": 10, "content": [text("done")]})),
    ]
}

#[test]
fn the_written_body_is_what_one_value_serialized_was() {
    let expected = |request: &ModelRequest, stream| request_body(request, stream).to_string();
    let written =
        |request: &ModelRequest, stream| String::from_utf8(request_bytes(request, stream)).unwrap();
    let mut request = request(conversation());
    request.tools = vec![
        tool("one"),
        tool("two"),
        Arc::new(ToolSpec::new("bare".into(), String::new(), Value::Null)),
    ];
    // Below the budget, above it and unset; the first pass serializes the tools' entries, the
    // others write the kept ones.
    for (max, thinking) in [
        (Some(64), ThinkingLevel::Low),
        (Some(100_000), ThinkingLevel::Medium),
        (None, ThinkingLevel::Minimal),
        (Some(64), ThinkingLevel::Off),
    ] {
        request.max_tokens = max;
        request.thinking = thinking;
        assert_eq!(
            written(&request, true),
            expected(&request, true),
            "{max:?} {thinking:?}"
        );
    }
    request.tools.clear();
    request.max_tokens = None;
    request.system.clear();
    assert_eq!(written(&request, false), expected(&request, false));
    // Ending on a user turn: no turn added.
    request.messages.truncate(13);
    assert_eq!(written(&request, false), expected(&request, false));
    request.messages.clear();
    assert_eq!(written(&request, false), expected(&request, false));
}

#[test]
fn messages_alternate_and_ids_are_cleaned() {
    let call = |id: &str| ContentBlock::ToolCall {
        id: id.into(),
        name: "t".into(),
        arguments: json!("{bad"),
    };
    let result = |id: &str| {
        TranscriptMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "t".into(),
            content: vec![ContentBlock::text("")],
            is_error: true,
            details: None,
            timestamp: 0,
        })
    };
    let out = written_messages(vec![
        user("a"),
        user("b"),
        assistant(vec![
            ContentBlock::Thinking {
                thinking: "unsigned".into(),
                signature: None,
            },
            call("x:1"),
        ]),
        result("x:1"),
        assistant(vec![]),
        user("c"),
    ]);
    assert_eq!(
        out,
        vec![
            json!({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "x_1", "name": "t", "input": {}}]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "x_1", "is_error": true},
                {"type": "text", "text": "c"},
            ]}),
        ]
    );
}

#[test]
fn a_transcript_ending_with_the_assistant_gets_a_user_turn_asking_for_a_reply() {
    let out = written_messages(vec![user("a"), assistant(vec![ContentBlock::text("done")])]);
    assert_eq!(out.len(), 3);
    assert_eq!(out[1]["role"], "assistant");
    assert_eq!(
        out[2],
        json!({"role": "user", "content": [{"type": "text", "text": CONTINUE}]})
    );
    assert_eq!(
        written_messages(vec![user("a")]).len(),
        1,
        "no extra turn after a user one"
    );
}
