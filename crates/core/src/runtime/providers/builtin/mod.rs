//! The built-in models, which need no network: `builtin/echo` repeats the last user message and
//! `builtin/scripted` follows directives written in the conversation (docs/scripted-model.md), so
//! the embedded default config, tests and demos get an agent that can call any tool.
//!
//! Both are deterministic: the response depends on the request alone (no randomness, no clock
//! reading; `@delay`/`@slow` only sleep). Text is streamed word by word, like a real model's
//! deltas, and the deltas always concatenate to the final text.

mod echo;
mod scripted;
#[cfg(test)]
mod tests;

use std::time::Duration;

use switchboard_protocol::message::{
    ContentBlock, StopReason, TranscriptMessage, Usage, UserContent,
};

use super::{
    EventSink, ModelRequest, ModelResponse, Provider, ProviderError, ProviderFuture, StreamEvent,
};
use crate::config::{BUILTIN_MODELS, BUILTIN_PROVIDER};

/// The `builtin` provider: serves the models `echo` and `scripted`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Builtin;

impl Builtin {
    pub fn new() -> Self {
        Self
    }
}

impl Provider for Builtin {
    fn id(&self) -> &str {
        BUILTIN_PROVIDER
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: EventSink<'a>,
    ) -> ProviderFuture<'a> {
        match request.model.as_str() {
            "echo" => Box::pin(echo::complete(request, events)),
            "scripted" => Box::pin(scripted::complete(request, events)),
            other => {
                let message = format!(
                    "unknown builtin model {other:?}; available: {}",
                    BUILTIN_MODELS.join(", ")
                );
                Box::pin(async move {
                    Err(ProviderError::BadRequest {
                        status: 404,
                        message,
                    })
                })
            }
        }
    }
}

/// The text of a user message: its string, or its text blocks one per line.
fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(text) => text.clone(),
        UserContent::Blocks(blocks) => blocks_text(blocks),
    }
}

/// The text blocks of a message, one per line (lines matter to the scripted grammar).
fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The index and text of the last user-role message.
fn last_user(messages: &[TranscriptMessage]) -> Option<(usize, String)> {
    messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, message)| match message {
            TranscriptMessage::User(user) => Some((i, user_text(&user.content))),
            _ => None,
        })
}

/// Characters a model would read in these blocks: text, thinking, tool names and arguments.
fn content_chars(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.chars().count(),
            ContentBlock::Thinking { thinking, .. } => thinking.chars().count(),
            ContentBlock::ToolCall {
                name, arguments, ..
            } => name.chars().count() + arguments.to_string().chars().count(),
            ContentBlock::Image { .. } => 0,
        })
        .sum()
}

/// Tokens estimated the usual rough way: a quarter of the characters, rounded up.
fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// Usage of one turn: the system prompt and every message in, the reply out.
fn usage(request: &ModelRequest, reply: &[ContentBlock]) -> Usage {
    let message_chars: usize = request
        .messages
        .iter()
        .map(|message| match message {
            TranscriptMessage::User(user) => user_text(&user.content).chars().count(),
            TranscriptMessage::Assistant(assistant) => content_chars(&assistant.content),
            TranscriptMessage::ToolResult(result) => content_chars(&result.content),
        })
        .sum();
    let input = estimate_tokens(request.system.chars().count() + message_chars);
    let output = estimate_tokens(content_chars(reply));
    Usage {
        input,
        output,
        total_tokens: input + output,
        ..Usage::default()
    }
}

/// A final text reply (stop reason `stop`).
fn text_response(request: &ModelRequest, text: String) -> ModelResponse {
    let content = vec![ContentBlock::text(text)];
    ModelResponse {
        usage: usage(request, &content),
        content,
        stop_reason: StopReason::Stop,
    }
}

/// Splits text into words, each with the whitespace that follows it (leading whitespace stays
/// with the first word), so the pieces concatenate back to the text.
fn word_chunks(text: &str) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut seen_word = false;
    let mut after_space = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if !space && after_space && seen_word {
            chunks.push(&text[start..i]);
            start = i;
        }
        seen_word |= !space;
        after_space = space;
    }
    if start < text.len() {
        chunks.push(&text[start..]);
    }
    chunks
}

/// Streams `text` as one delta per word, waiting `pace` between words when set.
async fn stream_text(text: &str, pace: Option<Duration>, events: EventSink<'_>) {
    for (i, chunk) in word_chunks(text).into_iter().enumerate() {
        if let Some(pace) = pace.filter(|_| i > 0) {
            tokio::time::sleep(pace).await;
        }
        events(StreamEvent::TextDelta(chunk.to_string()));
    }
}
