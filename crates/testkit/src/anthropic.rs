//! The Anthropic Messages side of the mock: a [`Turn`] as a JSON answer or named SSE events.

use std::time::Duration;

use serde_json::{Value, json};

use crate::Frame;
use crate::reply::{COMPLETION_TOKENS, Ending, MockToolCall, Turn, pieces};

/// The signature the mock puts on thinking blocks.
pub const THINKING_SIGNATURE: &str = "sig-mock";

fn stop_reason(turn: &Turn) -> &'static str {
    if turn.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

/// `POST /v1/messages` without `stream`. Arguments that are not JSON are sent as a string
/// `input` (the real API cannot do that; clients must cope anyway).
pub(crate) fn json_reply(turn: &Turn, model: &str) -> Value {
    let mut content = Vec::new();
    if !turn.thinking.is_empty() {
        content.push(json!({"type": "thinking", "thinking": turn.joined_thinking(), "signature": THINKING_SIGNATURE}));
    }
    let text = turn.joined_text();
    if !text.is_empty() || (turn.calls.is_empty() && turn.thinking.is_empty()) {
        content.push(json!({"type": "text", "text": text}));
    }
    for call in &turn.calls {
        let input = serde_json::from_str::<Value>(&call.arguments)
            .unwrap_or_else(|_| json!(call.arguments));
        content.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    json!({
        "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason(turn), "stop_sequence": Value::Null,
        "usage": {
            "input_tokens": turn.prompt(), "output_tokens": COMPLETION_TOKENS,
            "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
        },
    })
}

fn event(name: &str, data: Value) -> Frame {
    Frame::now(format!("event: {name}\ndata: {data}\n\n"))
}

/// `POST /v1/messages` with `stream: true`: `message_start` … `message_stop`.
pub(crate) fn stream(turn: &Turn, model: &str) -> Vec<Frame> {
    let mut frames = vec![
        message_start(model, turn.prompt()),
        event("ping", json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !turn.thinking.is_empty() {
        frames.extend(thinking_block(index, turn));
        index += 1;
    }
    if !turn.text.is_empty() {
        if turn.ending == Ending::Cut {
            // A dropped connection: the text arrives, its block never closes.
            frames.extend(cut_text_block(index, turn));
            return frames;
        }
        frames.extend(text_block(index, turn));
        index += 1;
    }
    for call in &turn.calls {
        frames.extend(tool_use_block(index, call));
        index += 1;
    }
    frames.extend(ending(turn));
    frames
}

/// The first event: the message with no content yet.
fn message_start(model: &str, prompt: u64) -> Frame {
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": Value::Null, "stop_sequence": Value::Null,
            "usage": {"input_tokens": prompt, "output_tokens": 1,
                      "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
        }}),
    )
}

fn block_start(index: usize, start: Value) -> Frame {
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": start}),
    )
}

fn block_delta(index: usize, delta: Value) -> Frame {
    event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

/// Content block `index`: its start, each delta after its delay, its stop.
fn block(index: usize, start: Value, deltas: Vec<(Duration, Value)>) -> Vec<Frame> {
    let mut frames = vec![block_start(index, start)];
    for (delay, delta) in deltas {
        frames.push(Frame {
            delay,
            ..block_delta(index, delta)
        });
    }
    frames.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    ));
    frames
}

/// The thinking chunks, then the signature.
fn thinking_block(index: usize, turn: &Turn) -> Vec<Frame> {
    let mut deltas: Vec<(Duration, Value)> = turn
        .thinking
        .iter()
        .map(|t| {
            (
                Duration::ZERO,
                json!({"type": "thinking_delta", "thinking": t}),
            )
        })
        .collect();
    deltas.push((
        Duration::ZERO,
        json!({"type": "signature_delta", "signature": THINKING_SIGNATURE}),
    ));
    block(
        index,
        json!({"type": "thinking", "thinking": "", "signature": ""}),
        deltas,
    )
}

/// The text chunks, each after the first one `chunk_delay` later.
fn text_deltas(turn: &Turn) -> Vec<(Duration, Value)> {
    turn.text
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let delay = if i == 0 {
                Duration::ZERO
            } else {
                turn.chunk_delay
            };
            (delay, json!({"type": "text_delta", "text": t}))
        })
        .collect()
}

fn text_block(index: usize, turn: &Turn) -> Vec<Frame> {
    block(
        index,
        json!({"type": "text", "text": ""}),
        text_deltas(turn),
    )
}

/// A text block that starts and never stops; its chunks come at once.
fn cut_text_block(index: usize, turn: &Turn) -> Vec<Frame> {
    let mut frames = vec![block_start(index, json!({"type": "text", "text": ""}))];
    for (_, delta) in text_deltas(turn) {
        frames.push(block_delta(index, delta));
    }
    frames
}

/// The call's arguments in partial pieces.
fn tool_use_block(index: usize, call: &MockToolCall) -> Vec<Frame> {
    let deltas = pieces(&call.arguments)
        .into_iter()
        .map(|p| {
            (
                Duration::ZERO,
                json!({"type": "input_json_delta", "partial_json": p}),
            )
        })
        .collect();
    block(
        index,
        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}),
        deltas,
    )
}

/// After the content: stop reason, usage and `message_stop`, nothing, or an `error` event.
fn ending(turn: &Turn) -> Vec<Frame> {
    match &turn.ending {
        Ending::Finish => vec![
            event(
                "message_delta",
                json!({"type": "message_delta",
                       "delta": {"stop_reason": stop_reason(turn), "stop_sequence": Value::Null},
                       "usage": {"output_tokens": COMPLETION_TOKENS}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ],
        Ending::Cut => Vec::new(),
        Ending::Error { kind, message } => vec![event("error", error_body(kind, message))],
    }
}

/// The format's error body (HTTP errors and the `error` event).
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
