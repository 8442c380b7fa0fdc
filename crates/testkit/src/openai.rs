//! The OpenAI Chat Completions side of the mock: a [`Turn`] as a JSON answer or SSE chunks.

use std::time::Duration;

use serde_json::{Value, json};

use crate::Frame;
use crate::reply::{COMPLETION_TOKENS, Ending, Turn, pieces};

fn usage(turn: &Turn) -> Value {
    let prompt = turn.prompt();
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": prompt + COMPLETION_TOKENS,
        "prompt_tokens_details": {"cached_tokens": 0},
    })
}

fn finish_reason(turn: &Turn) -> &'static str {
    if turn.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

/// `POST /v1/chat/completions` without `stream`.
pub(crate) fn json_reply(turn: &Turn, model: &str) -> Value {
    let mut message = json!({"role": "assistant", "content": Value::Null});
    let text = turn.joined_text();
    if !text.is_empty() || turn.calls.is_empty() {
        message["content"] = json!(text);
    }
    if !turn.thinking.is_empty() {
        message["reasoning_content"] = json!(turn.joined_thinking());
    }
    if !turn.calls.is_empty() {
        let calls: Vec<Value> = turn
            .calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(turn)}],
        "usage": usage(turn),
    })
}

/// `POST /v1/chat/completions` with `stream: true`: data-only SSE chunks ending in `[DONE]`.
pub(crate) fn stream(turn: &Turn, model: &str, include_usage: bool) -> Vec<Frame> {
    let chunk = |delta: Value, finish: Value| {
        let body = json!({
            "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        Frame::now(format!("data: {body}\n\n"))
    };
    let mut frames = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in &turn.thinking {
        frames.push(chunk(json!({"reasoning_content": piece}), Value::Null));
    }
    for (i, piece) in turn.text.iter().enumerate() {
        let delay = if i == 0 {
            Duration::ZERO
        } else {
            turn.chunk_delay
        };
        frames.push(Frame {
            delay,
            ..chunk(json!({"content": piece}), Value::Null)
        });
    }
    for (index, call) in turn.calls.iter().enumerate() {
        frames.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                   "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in pieces(&call.arguments) {
            frames.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    match &turn.ending {
        Ending::Finish => {
            frames.push(chunk(json!({}), json!(finish_reason(turn))));
            if include_usage {
                let body = json!({
                    "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
                    "choices": [], "usage": usage(turn),
                });
                frames.push(Frame::now(format!("data: {body}\n\n")));
            }
            frames.push(Frame::now("data: [DONE]\n\n".to_string()));
        }
        Ending::Cut => {}
        Ending::Error { kind, message } => {
            let body = json!({"error": {"message": message, "type": kind, "code": Value::Null}});
            frames.push(Frame::now(format!("data: {body}\n\n")));
        }
    }
    frames
}

/// The error body of a non-streaming error reply.
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "code": Value::Null}})
}
