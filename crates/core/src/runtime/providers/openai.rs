//! OpenAI Chat Completions (`api: "openai-completions"`): OpenAI itself and the many servers that
//! copy its wire format (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, Groq, …).
//!
//! `POST {baseUrl}/chat/completions`, `Authorization: Bearer <apiKey>` when a key is set. The
//! transcript maps onto `messages` (system first; assistant tool calls as `tool_calls`; each tool
//! result as a `role: "tool"` message). Streaming reads SSE chunks until `data: [DONE]`,
//! assembling tool calls by `index` from partial `function.arguments` strings.
//!
//! Compatible servers differ in small ways, all tolerated here: reasoning text as
//! `reasoning_content` or `reasoning`, missing tool-call ids (generated), `finish_reason: "stop"`
//! on a turn with tool calls (read as `toolUse`), arguments sent as an object instead of a
//! string, a JSON answer to a streaming request, errors sent inside a 200 answer or a chunk.

use std::borrow::Cow;

use serde_json::{Value, json};
use switchboard_protocol::message::{ContentBlock, StopReason, Usage};

use super::http::{self, Endpoint, Sse};
use super::openai_body::request_bytes;
use super::openai_chunk::Piece;
use super::{
    EventSink, ModelRequest, ModelResponse, Provider, ProviderError, ProviderFuture, StreamEvent,
};
use crate::config::ProviderConfig;

pub struct OpenAi {
    endpoint: Endpoint,
    stream: bool,
}

impl OpenAi {
    pub fn new(id: &str, config: &ProviderConfig, client: reqwest::Client) -> Self {
        let auth = config
            .api_key
            .iter()
            .map(|key| ("authorization", format!("Bearer {key}")))
            .collect();
        Self {
            endpoint: Endpoint::new(id, config, "chat/completions", auth, client),
            stream: config.stream.unwrap_or(true),
        }
    }

    async fn turn(
        &self,
        request: &ModelRequest,
        events: EventSink<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let body = request_bytes(request, self.stream);
        let response = self.endpoint.post_json(body).await?;
        if self.stream && !http::is_json(&response) {
            let mut turn = Turn::default();
            self.endpoint
                .sse(response, events, |_, data, sink| {
                    turn.chunk(data, sink, &self.endpoint)
                })
                .await?;
            return Ok(turn.finish());
        }
        let json = self.endpoint.json(response).await?;
        let reply = self.parse_reply(&json)?;
        http::replay(&reply.content, events);
        Ok(reply)
    }

    /// A non-streaming answer: `choices[0].message`, `finish_reason`, `usage`.
    fn parse_reply(&self, json: &Value) -> Result<ModelResponse, ProviderError> {
        if let Some(error) = json.get("error").filter(|e| !e.is_null()) {
            return Err(self.endpoint.embedded_error(error));
        }
        let choice = json.get("choices").and_then(|c| c.get(0)).ok_or_else(|| {
            self.endpoint.invalid(&format!(
                "the answer has no choices: {}",
                http::excerpt(&json.to_string())
            ))
        })?;
        let message = choice.get("message").unwrap_or(&Value::Null);
        let mut content = Vec::new();
        if let Some(thinking) = reasoning(message) {
            content.push(ContentBlock::Thinking {
                thinking: thinking.to_string(),
                signature: None,
            });
        }
        if let Some(text) = message
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            content.push(ContentBlock::text(text));
        }
        for call in message
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let function = call.get("function").unwrap_or(&Value::Null);
            let arguments = match function.get("arguments") {
                Some(Value::String(raw)) => http::parse_arguments(raw),
                Some(object @ Value::Object(_)) => object.clone(),
                Some(Value::Null) | None => json!({}),
                Some(other) => Value::String(other.to_string()),
            };
            content.push(ContentBlock::ToolCall {
                id: str_field(call, "id")
                    .map(str::to_string)
                    .unwrap_or_else(http::fresh_call_id),
                name: str_field(function, "name").unwrap_or_default().to_string(),
                arguments,
            });
        }
        let stop_reason = stop_reason(
            choice.get("finish_reason").and_then(Value::as_str),
            &content,
        );
        Ok(ModelResponse {
            content,
            usage: usage(json.get("usage")),
            stop_reason,
        }
        .with_distinct_call_ids())
    }
}

impl Provider for OpenAi {
    fn id(&self) -> &str {
        self.endpoint.provider()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: EventSink<'a>,
    ) -> ProviderFuture<'a> {
        Box::pin(self.turn(request, events))
    }
}

fn str_field<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Reasoning text, under either name compatible servers use.
fn reasoning(value: &Value) -> Option<&str> {
    str_field(value, "reasoning_content").or_else(|| str_field(value, "reasoning"))
}

fn usage(usage: Option<&Value>) -> Usage {
    let Some(u) = usage.filter(|u| u.is_object()) else {
        return Usage::default();
    };
    let prompt = http::tokens(u, "prompt_tokens");
    let completion = http::tokens(u, "completion_tokens");
    let cached = u
        .get("prompt_tokens_details")
        .map(|d| http::tokens(d, "cached_tokens"))
        .unwrap_or(0);
    // `input` counts uncached prompt tokens, as Anthropic's `input_tokens` does, so the two
    // formats price alike: input + cacheRead = the prompt.
    Usage {
        input: prompt.saturating_sub(cached),
        output: completion,
        cache_read: cached,
        cache_write: 0,
        total_tokens: u
            .get("total_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(prompt + completion),
        cost: None,
    }
}

fn stop_reason(finish: Option<&str>, content: &[ContentBlock]) -> StopReason {
    let has_calls = content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall { .. }));
    match finish {
        Some("length") => StopReason::Length,
        Some("content_filter") => StopReason::Error,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        // Some servers (Ollama) say `stop` on a turn that called tools.
        _ if has_calls => StopReason::ToolUse,
        _ => StopReason::Stop,
    }
}

/// A whole streamed answer in memory, read as a streaming turn reads a response (the fuzz
/// targets' door, `super::fuzzing`).
pub(super) fn read_stream(
    endpoint: &Endpoint,
    body: &[u8],
) -> Result<ModelResponse, ProviderError> {
    let mut turn = Turn::default();
    endpoint.sse_body(body, |_, data| turn.chunk(data, &|_| {}, endpoint))?;
    Ok(turn.finish())
}

/// A streamed turn being assembled.
#[derive(Default)]
struct Turn {
    /// Text, thinking and tool calls in arrival order.
    parts: Vec<Part>,
    calls: Vec<PartialCall>,
    usage: Option<Value>,
    finish: Option<String>,
}

enum Part {
    Text(String),
    Thinking(String),
    /// Index into `calls`.
    Call(usize),
}

struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

impl Turn {
    /// One `data:` payload: a plain chunk read in place ([`Piece`]), any other as a `Value`.
    fn chunk(
        &mut self,
        data: &str,
        events: EventSink<'_>,
        endpoint: &Endpoint,
    ) -> Result<Sse, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Sse::Done);
        }
        if data.is_empty() {
            return Ok(Sse::More);
        }
        match Piece::read(data) {
            Some(piece) => {
                self.piece(piece, events);
                Ok(self.progress())
            }
            None => self.chunk_value(data, events, endpoint),
        }
    }

    /// A plain chunk's text, thinking and finish reason, as [`Turn::chunk_value`] takes them.
    fn piece(&mut self, piece: Piece<'_>, events: EventSink<'_>) {
        fn given<'a>(field: &'a Option<Cow<'_, str>>) -> Option<&'a str> {
            field.as_deref().filter(|s| !s.is_empty())
        }
        if let Some(thinking) = given(&piece.reasoning_content).or(given(&piece.reasoning)) {
            self.thinking(thinking, events);
        }
        if let Some(text) = given(&piece.content) {
            self.text(text, events);
        }
        if let Some(finish) = given(&piece.finish_reason) {
            self.finish = Some(finish.to_string());
        }
    }

    /// Any other chunk, read as a `Value`.
    fn chunk_value(
        &mut self,
        data: &str,
        events: EventSink<'_>,
        endpoint: &Endpoint,
    ) -> Result<Sse, ProviderError> {
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            endpoint.invalid(&format!(
                "unreadable stream chunk ({e}): {}",
                http::excerpt(data)
            ))
        })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(endpoint.embedded_error(error));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(self.progress());
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(thinking) = reasoning(delta) {
            self.thinking(thinking, events);
        }
        if let Some(text) = str_field(delta, "content") {
            self.text(text, events);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.tool_call(call, events);
        }
        if let Some(finish) = str_field(choice, "finish_reason") {
            self.finish = Some(finish.to_string());
        }
        Ok(self.progress())
    }

    /// After a `finish_reason` the reply is whole; only usage and `[DONE]` may follow.
    fn progress(&self) -> Sse {
        if self.finish.is_some() {
            Sse::Complete
        } else {
            Sse::More
        }
    }

    fn text(&mut self, text: &str, events: EventSink<'_>) {
        match self.parts.last_mut() {
            Some(Part::Text(t)) => t.push_str(text),
            _ => self.parts.push(Part::Text(text.to_string())),
        }
        events(StreamEvent::TextDelta(text.to_string()));
    }

    fn thinking(&mut self, text: &str, events: EventSink<'_>) {
        match self.parts.last_mut() {
            Some(Part::Thinking(t)) => t.push_str(text),
            _ => self.parts.push(Part::Thinking(text.to_string())),
        }
        events(StreamEvent::ThinkingDelta(text.to_string()));
    }

    /// A piece of a tool call: the first piece of an index carries its id and name, the rest
    /// carry slices of the arguments text.
    fn tool_call(&mut self, delta: &Value, events: EventSink<'_>) {
        let index = delta.get("index").and_then(Value::as_u64).unwrap_or(0);
        let id = str_field(delta, "id");
        let function = delta.get("function").unwrap_or(&Value::Null);
        // Some servers send every call whole under index 0: a new id means a new call.
        let existing = self
            .calls
            .iter()
            .rposition(|c| c.index == index)
            .filter(|&at| {
                id.is_none_or(|id| self.calls[at].id.is_empty() || self.calls[at].id == id)
            });
        let at = match existing {
            Some(at) => at,
            None => {
                self.calls.push(PartialCall {
                    index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    announced: false,
                });
                self.parts.push(Part::Call(self.calls.len() - 1));
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[at];
        if let Some(id) = id {
            call.id = id.to_string();
        }
        if let Some(name) = str_field(function, "name") {
            call.name.push_str(name);
        }
        match function.get("arguments") {
            Some(Value::String(piece)) => call.arguments.push_str(piece),
            Some(object @ Value::Object(_)) => call.arguments = object.to_string(),
            _ => {}
        }
        if !call.announced && !call.name.is_empty() {
            if call.id.is_empty() {
                call.id = http::fresh_call_id();
            }
            call.announced = true;
            events(StreamEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
    }

    fn finish(self) -> ModelResponse {
        let mut calls: Vec<Option<PartialCall>> = self.calls.into_iter().map(Some).collect();
        let content: Vec<ContentBlock> = self
            .parts
            .into_iter()
            .filter_map(|part| match part {
                Part::Text(text) => Some(ContentBlock::text(text)),
                Part::Thinking(thinking) => Some(ContentBlock::Thinking {
                    thinking,
                    signature: None,
                }),
                Part::Call(at) => {
                    calls
                        .get_mut(at)
                        .and_then(Option::take)
                        .map(|c| ContentBlock::ToolCall {
                            id: if c.id.is_empty() {
                                http::fresh_call_id()
                            } else {
                                c.id
                            },
                            name: c.name,
                            arguments: http::parse_arguments(&c.arguments),
                        })
                }
            })
            .collect();
        let stop_reason = stop_reason(self.finish.as_deref(), &content);
        ModelResponse {
            content,
            usage: usage(self.usage.as_ref()),
            stop_reason,
        }
        .with_distinct_call_ids()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fuzz::object;
    use super::*;

    #[test]
    fn cached_prompt_tokens_are_read_separately() {
        let u = usage(Some(&json!({
            "prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107,
            "prompt_tokens_details": {"cached_tokens": 60},
        })));
        assert_eq!(
            (u.input, u.cache_read, u.output, u.total_tokens),
            (40, 60, 7, 107)
        );
    }

    #[test]
    fn calls_without_index_or_id_are_kept_apart() {
        let mut turn = Turn::default();
        let sink = |_: StreamEvent| {};
        for call in [
            json!({"index": 0, "id": "a", "function": {"name": "x", "arguments": "{}"}}),
            json!({"index": 0, "id": "b", "function": {"name": "y", "arguments": "{\"k\":"}}),
            json!({"index": 0, "function": {"arguments": "1}"}}),
            json!({"index": 1, "function": {"name": "z"}}),
        ] {
            turn.tool_call(&call, &sink);
        }
        let reply = turn.finish();
        let calls: Vec<_> = reply
            .tool_calls()
            .map(|(id, n, a)| (id.len(), n.to_string(), a.clone()))
            .collect();
        assert_eq!(calls[0], (1, "x".into(), json!({})));
        assert_eq!(calls[1], (1, "y".into(), json!({"k": 1})));
        assert_eq!((calls[2].1.as_str(), &calls[2].2), ("z", &json!({})));
        assert!(calls[2].0 > 5, "a missing id is generated");
        assert_eq!(reply.stop_reason, StopReason::ToolUse);
    }

    /// Two calls under one id (at two indexes) leave the stream with ids of their own, as
    /// `sse_anthropic`'s finding does for Anthropic.
    #[test]
    fn a_repeated_tool_call_id_is_made_distinct() {
        let call = |index: u64| {
            json!({"choices": [{"delta": {"tool_calls": [{"index": index, "id": "c1",
                "function": {"name": "t", "arguments": "{}"}}]}}]})
        };
        let body = format!(
            "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
            call(0),
            call(1),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
        );
        let reply = read_stream(super::super::fuzz::endpoint(), body.as_bytes()).unwrap();
        let ids: Vec<&str> = reply.tool_calls().map(|(id, _, _)| id).collect();
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0], "c1", "the first call keeps its id");
        assert_ne!(ids[1], "c1");
    }

    /// What a stream read chunk by chunk through `read` gives: each chunk's outcome, the events,
    /// and the reply; generated call ids are named alike, so two readings compare.
    fn outcome(
        chunks: &[String],
        read: fn(&mut Turn, &str, EventSink<'_>, &Endpoint) -> Result<Sse, ProviderError>,
    ) -> String {
        let endpoint = super::super::fuzz::endpoint();
        let (mut turn, seen) = (Turn::default(), std::sync::Mutex::new(Vec::new()));
        let sink = |event: StreamEvent| seen.lock().unwrap().push(event);
        let mut steps = Vec::new();
        for chunk in chunks {
            let step = read(&mut turn, chunk, &sink, endpoint);
            steps.push(format!("{step:?}"));
            if matches!(step, Ok(Sse::Done) | Err(_)) {
                break;
            }
        }
        let all = format!("{steps:?} {:?} {:?}", seen.lock().unwrap(), turn.finish());
        let mut parts = all.split("call_");
        let mut named = parts.next().unwrap_or_default().to_string();
        for part in parts {
            let generated = part
                .get(..32)
                .is_some_and(|head| head.bytes().all(|b| b.is_ascii_hexdigit()));
            named.push_str(if generated { "call_*" } else { "call_" });
            named.push_str(if generated { &part[32..] } else { part });
        }
        named
    }

    fn by_value(
        turn: &mut Turn,
        data: &str,
        events: EventSink<'_>,
        endpoint: &Endpoint,
    ) -> Result<Sse, ProviderError> {
        match data.trim() {
            "[DONE]" => Ok(Sse::Done),
            "" => Ok(Sse::More),
            data => turn.chunk_value(data, events, endpoint),
        }
    }

    /// The chunks of a streamed reply as servers send them, with escapes, thinking and usage.
    #[test]
    fn a_plain_chunk_read_in_place_means_what_its_value_means() {
        let chunk = |choice: Value| {
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                   "model": "m", "system_fingerprint": "fp", "choices": [choice]})
            .to_string()
        };
        let chunks = [
            chunk(
                json!({"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}),
            ),
            chunk(json!({"index": 0, "delta": {"reasoning_content": "hm\n"}})),
            chunk(json!({"index": 0, "delta": {"content": "Hé \"quoted\"\n"}, "logprobs": null})),
            chunk(json!({"index": 0, "delta": {"content": "line"}})),
            chunk(json!({"index": 0, "delta": {}, "finish_reason": "stop"})),
            json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
                .to_string(),
            "[DONE]".to_string(),
        ];
        let in_place = chunks.iter().map(|c| Piece::read(c).is_some());
        assert_eq!(
            in_place.collect::<Vec<_>>(),
            [true, true, true, true, true, false, false],
            "the text chunks are read in place, the usage and [DONE] are not"
        );
        let read = outcome(&chunks, Turn::chunk);
        assert!(read.contains("TextDelta(\"line\")"), "{read}");
        assert_eq!(read, outcome(&chunks, by_value));
    }

    /// Chunks of a reply's shape, mostly plain, some with odd values, usage or an error.
    fn shaped() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let odd = || {
            proptest::sample::select(vec![
                "7",
                "[\"x\"]",
                "{\"index\":0}",
                "{\"prompt_tokens\":3,\"completion_tokens\":2}",
                "{\"message\":\"overloaded\"}",
            ])
            .prop_map(str::to_string)
        };
        let value = move || {
            prop_oneof![
                8 => ".{0,6}".prop_map(|s| Value::from(s).to_string()),
                1 => Just("null".to_string()),
                1 => Just("\"\"".to_string()),
                1 => odd(),
            ]
        };
        let keys = move |names: &'static [&'static str]| {
            proptest::collection::vec((proptest::sample::select(names), value()), 0..4)
        };
        let delta = keys(&[
            "content",
            "reasoning_content",
            "reasoning",
            "role",
            "tool_calls",
        ]);
        let choice = (delta, keys(&["finish_reason", "index"])).prop_map(|(d, mut c)| {
            c.push(("delta", object(d)));
            object(c)
        });
        let choices = prop_oneof![
            4 => choice.clone().prop_map(|c| format!("[{c}]")),
            1 => choice.prop_map(|c| format!("[{c},7]")),
            1 => Just("[]".to_string()),
            1 => value(),
        ];
        let other = proptest::option::weighted(
            0.2,
            (proptest::sample::select(vec!["usage", "error"]), odd()),
        );
        (choices, keys(&["id", "model"]), other).prop_map(|(choices, mut chunk, other)| {
            chunk.push(("choices", choices));
            chunk.extend(other);
            object(chunk)
        })
    }

    proptest::proptest! {
        /// Whatever a stream holds, reading its plain chunks in place changes nothing: the
        /// same outcome chunk by chunk, the same events, the same reply.
        #[test]
        fn reading_in_place_agrees_with_the_value_reading(
            chunks in proptest::collection::vec(
                proptest::prop_oneof![super::super::fuzz::payload(), shaped()], 0..8)
        ) {
            proptest::prop_assert_eq!(outcome(&chunks, Turn::chunk), outcome(&chunks, by_value));
        }

        /// Any stream, however broken, ends in a reply or an error that says what was wrong;
        /// nothing panics.
        #[test]
        fn any_stream_gives_a_reply_or_a_clear_error(
            chunks in proptest::collection::vec(super::super::fuzz::payload(), 0..8)
        ) {
            let endpoint = super::super::fuzz::endpoint();
            let mut turn = Turn::default();
            let sink = |_: StreamEvent| {};
            for chunk in &chunks {
                match turn.chunk(chunk, &sink, endpoint) {
                    Ok(Sse::Done) => break,
                    Ok(_) => {}
                    Err(e) => {
                        let message = e.to_string();
                        proptest::prop_assert!(message.contains("unreadable stream chunk") || message.contains("p:"), "{message}");
                        return Ok(());
                    }
                }
            }
            let _ = turn.finish();
        }
    }
}
