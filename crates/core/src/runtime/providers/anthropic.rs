//! Anthropic Messages (`api: "anthropic-messages"`).
//!
//! `POST {baseUrl}/v1/messages` with `x-api-key` and `anthropic-version: 2023-06-01`. The system
//! prompt is the top-level `system`; the transcript becomes strictly alternating user/assistant
//! messages: assistant turns carry `text`, `thinking` (only when signed — the API rejects
//! unsigned ones) and `tool_use` blocks, and tool results travel as `tool_result` blocks of a
//! user message. Consecutive same-role messages merge into one, so a run of tool results and the
//! user text after them form a single user message, as the API requires (`anthropic_body`
//! writes the request).
//!
//! Streaming reads the named SSE events (`message_start` … `message_stop`), assembling each
//! `tool_use` input from its `input_json_delta` pieces; an `error` event mid-stream is classified
//! like an HTTP error of the same type (`overloaded_error` → server 529, …).

use serde_json::{Value, json};
use switchboard_protocol::message::{ContentBlock, StopReason, Usage};

use super::anthropic_body;
use super::anthropic_delta::Delta;
use super::http::{self, Endpoint, Sse};
use super::{
    EventSink, ModelRequest, ModelResponse, Provider, ProviderError, ProviderFuture, StreamEvent,
};
use crate::config::ProviderConfig;

/// The API version this module speaks.
const API_VERSION: &str = "2023-06-01";

pub struct Anthropic {
    endpoint: Endpoint,
    stream: bool,
}

impl Anthropic {
    pub fn new(id: &str, config: &ProviderConfig, client: reqwest::Client) -> Self {
        let mut auth: Vec<(&'static str, String)> =
            vec![("anthropic-version", API_VERSION.to_string())];
        auth.extend(config.api_key.iter().map(|key| ("x-api-key", key.clone())));
        Self {
            endpoint: Endpoint::new(id, config, "v1/messages", auth, client),
            stream: config.stream.unwrap_or(true),
        }
    }

    async fn turn(
        &self,
        request: &ModelRequest,
        events: EventSink<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let body = anthropic_body::request_bytes(request, self.stream);
        let response = self.endpoint.post_json(body).await?;
        if self.stream && !http::is_json(&response) {
            let mut turn = Turn::default();
            self.endpoint
                .sse(response, events, |name, data, sink| {
                    turn.event(name, data, sink, &self.endpoint)
                })
                .await?;
            return Ok(turn.finish());
        }
        let json = self.endpoint.json(response).await?;
        let reply = self.parse_reply(&json)?;
        http::replay(&reply.content, events);
        Ok(reply)
    }

    /// A non-streaming answer: `content`, `stop_reason`, `usage`.
    fn parse_reply(&self, json: &Value) -> Result<ModelResponse, ProviderError> {
        if let Some(error) = json.get("error").filter(|e| !e.is_null()) {
            return Err(self.endpoint.embedded_error(error));
        }
        let blocks = json
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                self.endpoint.invalid(&format!(
                    "the answer has no content: {}",
                    http::excerpt(&json.to_string())
                ))
            })?;
        let content: Vec<ContentBlock> = blocks
            .iter()
            .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => Some(ContentBlock::text(str_field(b, "text"))),
                Some("thinking") => Some(ContentBlock::Thinking {
                    thinking: str_field(b, "thinking").to_string(),
                    signature: b
                        .get("signature")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                }),
                Some("tool_use") => Some(ContentBlock::ToolCall {
                    id: str_field(b, "id").to_string(),
                    name: str_field(b, "name").to_string(),
                    arguments: match b.get("input") {
                        Some(input @ Value::Object(_)) => input.clone(),
                        Some(Value::String(raw)) => http::parse_arguments(raw),
                        Some(Value::Null) | None => json!({}),
                        Some(other) => Value::String(other.to_string()),
                    },
                }),
                _ => None,
            })
            .collect();
        let mut usage = Counts::default();
        usage.read(json.get("usage"));
        let stop_reason = stop_reason(json.get("stop_reason").and_then(Value::as_str), &content);
        Ok(ModelResponse {
            content,
            usage: usage.into_usage(),
            stop_reason,
        }
        .with_distinct_call_ids())
    }
}

impl Provider for Anthropic {
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

fn str_field<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn stop_reason(reason: Option<&str>, content: &[ContentBlock]) -> StopReason {
    match reason {
        Some("end_turn" | "stop_sequence" | "pause_turn") => StopReason::Stop,
        Some("max_tokens" | "model_context_window_exceeded") => StopReason::Length,
        Some("tool_use") => StopReason::ToolUse,
        Some("refusal") => StopReason::Error,
        _ if content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall { .. })) =>
        {
            StopReason::ToolUse
        }
        _ => StopReason::Stop,
    }
}

/// Token counts as the API reports them: `message_start` has the input side, `message_delta`
/// the final output count (and, in newer versions, the input side again).
#[derive(Default)]
struct Counts {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

impl Counts {
    fn read(&mut self, usage: Option<&Value>) {
        let Some(u) = usage.filter(|u| u.is_object()) else {
            return;
        };
        let set = |field: &mut u64, key: &str| {
            if let Some(n) = u.get(key).and_then(Value::as_u64) {
                *field = n;
            }
        };
        set(&mut self.input, "input_tokens");
        set(&mut self.output, "output_tokens");
        set(&mut self.cache_read, "cache_read_input_tokens");
        set(&mut self.cache_write, "cache_creation_input_tokens");
    }

    fn into_usage(self) -> Usage {
        Usage {
            input: self.input,
            output: self.output,
            cache_read: self.cache_read,
            cache_write: self.cache_write,
            total_tokens: self.input + self.output + self.cache_read + self.cache_write,
            cost: None,
        }
    }
}

/// A whole streamed answer in memory, read as a streaming turn reads a response (the fuzz
/// targets' door, `super::fuzzing`).
pub(super) fn read_stream(
    endpoint: &Endpoint,
    body: &[u8],
) -> Result<ModelResponse, ProviderError> {
    let mut turn = Turn::default();
    endpoint.sse_body(body, |name, data| turn.event(name, data, &|_| {}, endpoint))?;
    Ok(turn.finish())
}

/// A streamed turn being assembled.
#[derive(Default)]
struct Turn {
    /// Blocks by the stream's `index`, in arrival order.
    blocks: Vec<(u64, Block)>,
    counts: Counts,
    stop: Option<String>,
}

enum Block {
    Text(String),
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        json: String,
        input: Value,
    },
    /// A block type this module does not keep (`redacted_thinking`, server tools).
    Other,
}

impl Turn {
    /// One SSE event; the `type` inside `data` names it (the `event:` line is the fallback). A
    /// delta is read in place ([`Delta`]), any other event (or one the `event:` line names
    /// otherwise) as a `Value`.
    fn event(
        &mut self,
        name: &str,
        data: &str,
        events: EventSink<'_>,
        endpoint: &Endpoint,
    ) -> Result<Sse, ProviderError> {
        // The API names each event on its `event:` line: another event is not tried in place
        // (one without that line is named `message` by the format).
        let tried = matches!(name, "content_block_delta" | "message" | "");
        let delta = tried.then(|| Delta::read(name, data));
        match delta.flatten() {
            Some((index, delta)) => {
                self.delta(index, &delta, events);
                Ok(Sse::More)
            }
            None => self.event_value(name, data, events, endpoint),
        }
    }

    /// Any event, read as a `Value`.
    fn event_value(
        &mut self,
        name: &str,
        data: &str,
        events: EventSink<'_>,
        endpoint: &Endpoint,
    ) -> Result<Sse, ProviderError> {
        if data.trim().is_empty() {
            return Ok(Sse::More);
        }
        let event: Value = serde_json::from_str(data).map_err(|e| {
            endpoint.invalid(&format!(
                "unreadable stream event ({e}): {}",
                http::excerpt(data)
            ))
        })?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or(name);
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => self
                .counts
                .read(event.get("message").and_then(|m| m.get("usage"))),
            "content_block_start" => self.start(
                index,
                event.get("content_block").unwrap_or(&Value::Null),
                events,
            ),
            "content_block_delta" => {
                let delta = Delta::of(event.get("delta").unwrap_or(&Value::Null));
                self.delta(index, &delta, events)
            }
            "message_delta" => {
                if let Some(reason) = event
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop = Some(reason.to_string());
                }
                self.counts.read(event.get("usage"));
            }
            "message_stop" => return Ok(Sse::Done),
            "error" => return Err(endpoint.embedded_error(event.get("error").unwrap_or(&event))),
            // ping, content_block_stop, and event types added after this was written.
            _ => {}
        }
        Ok(Sse::More)
    }

    fn start(&mut self, index: u64, block: &Value, events: EventSink<'_>) {
        let started = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = str_field(block, "text");
                if !text.is_empty() {
                    events(StreamEvent::TextDelta(text.to_string()));
                }
                Block::Text(text.to_string())
            }
            Some("thinking") => Block::Thinking {
                thinking: str_field(block, "thinking").to_string(),
                signature: block
                    .get("signature")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            },
            Some("tool_use") => {
                let (id, name) = (
                    str_field(block, "id").to_string(),
                    str_field(block, "name").to_string(),
                );
                events(StreamEvent::ToolCallStarted {
                    id: id.clone(),
                    name: name.clone(),
                });
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                Block::ToolUse {
                    id,
                    name,
                    json: String::new(),
                    input,
                }
            }
            _ => Block::Other,
        };
        self.blocks.push((index, started));
    }

    fn delta(&mut self, index: u64, delta: &Delta<'_>, events: EventSink<'_>) {
        let Some((_, block)) = self.blocks.iter_mut().rev().find(|(i, _)| *i == index) else {
            return;
        };
        match (block, delta.kind.as_deref()) {
            (Block::Text(text), Some("text_delta")) => {
                let piece = Delta::str(&delta.text);
                text.push_str(piece);
                events(StreamEvent::TextDelta(piece.to_string()));
            }
            (Block::Thinking { thinking, .. }, Some("thinking_delta")) => {
                let piece = Delta::str(&delta.thinking);
                thinking.push_str(piece);
                events(StreamEvent::ThinkingDelta(piece.to_string()));
            }
            (Block::Thinking { signature, .. }, Some("signature_delta")) => {
                signature
                    .get_or_insert_with(String::new)
                    .push_str(Delta::str(&delta.signature));
            }
            (Block::ToolUse { json, .. }, Some("input_json_delta")) => {
                json.push_str(Delta::str(&delta.partial_json))
            }
            _ => {}
        }
    }

    fn finish(self) -> ModelResponse {
        let content: Vec<ContentBlock> = self
            .blocks
            .into_iter()
            .filter_map(|(_, block)| match block {
                Block::Text(text) => Some(ContentBlock::text(text)),
                Block::Thinking {
                    thinking,
                    signature,
                } => Some(ContentBlock::Thinking {
                    thinking,
                    signature,
                }),
                Block::ToolUse {
                    id,
                    name,
                    json,
                    input,
                } => {
                    let arguments = if json.trim().is_empty() && input.is_object() {
                        input
                    } else {
                        http::parse_arguments(&json)
                    };
                    Some(ContentBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    })
                }
                Block::Other => None,
            })
            .collect();
        let stop_reason = stop_reason(self.stop.as_deref(), &content);
        ModelResponse {
            content,
            usage: self.counts.into_usage(),
            stop_reason,
        }
        .with_distinct_call_ids()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fuzz::object;
    use super::*;

    /// Found by the `sse_anthropic` fuzz target: a stream that starts two tool_use blocks with
    /// one id gave two calls under that id, which no tool result could tell apart.
    #[test]
    fn a_repeated_tool_call_id_is_made_distinct() {
        let block = |index: u64| {
            let start = json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": "tu_1", "name": "t", "input": {}}});
            format!("event: content_block_start\ndata: {start}\n\n")
        };
        let stop = json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}});
        let body = format!(
            "{}{}event: message_delta\ndata: {stop}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
            block(0),
            block(1)
        );
        let reply = read_stream(super::super::fuzz::endpoint(), body.as_bytes()).unwrap();
        let ids: Vec<&str> = reply.tool_calls().map(|(id, _, _)| id).collect();
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0], "tu_1", "the first call keeps its id");
        assert_ne!(ids[1], "tu_1");
        assert!(!ids[1].is_empty());
    }

    /// What a stream read event by event through `read` gives: each event's outcome, the
    /// events reported, and the reply; generated call ids are named alike, so two readings
    /// compare.
    fn outcome(
        stream: &[(String, String)],
        read: fn(&mut Turn, &str, &str, EventSink<'_>, &Endpoint) -> Result<Sse, ProviderError>,
    ) -> String {
        let endpoint = super::super::fuzz::endpoint();
        let (mut turn, seen) = (Turn::default(), std::sync::Mutex::new(Vec::new()));
        let sink = |event: StreamEvent| seen.lock().unwrap().push(event);
        let mut steps = Vec::new();
        for (name, data) in stream {
            let step = read(&mut turn, name, data, &sink, endpoint);
            steps.push(format!("{step:?}"));
            if matches!(step, Ok(Sse::Done) | Err(_)) {
                break;
            }
        }
        let reply = turn.finish();
        let ids: Vec<&str> = reply.tool_calls().map(|(id, _, _)| id).collect();
        let mut all = format!("{steps:?} {:?} {reply:?}", seen.lock().unwrap());
        // A repeated id is replaced by a generated one, different in each reading.
        for (n, id) in ids
            .iter()
            .enumerate()
            .filter(|(_, id)| id.starts_with("toolu_"))
        {
            all = all.replace(id, &format!("generated#{n}"));
        }
        all
    }

    /// A stream's first events: a text block (0), a thinking block (1), a tool call (2).
    fn started() -> Vec<(String, String)> {
        let start = |index: u64, block: Value| {
            let event =
                json!({"type": "content_block_start", "index": index, "content_block": block});
            ("content_block_start".to_string(), event.to_string())
        };
        vec![
            start(0, json!({"type": "text", "text": ""})),
            start(1, json!({"type": "thinking", "thinking": ""})),
            start(
                2,
                json!({"type": "tool_use", "id": "t1", "name": "f", "input": {}}),
            ),
        ]
    }

    /// The events of a streamed reply as the API sends them, with escapes.
    #[test]
    fn a_delta_read_in_place_means_what_its_value_means() {
        let delta = |index: u64, delta: Value| {
            let event = json!({"type": "content_block_delta", "index": index, "delta": delta});
            ("content_block_delta".to_string(), event.to_string())
        };
        let mut stream = started();
        stream.extend([
            delta(0, json!({"type": "text_delta", "text": "Hé \"quoted\"\n"})),
            delta(1, json!({"type": "thinking_delta", "thinking": "hm"})),
            delta(1, json!({"type": "signature_delta", "signature": "sig"})),
            delta(
                2,
                json!({"type": "input_json_delta", "partial_json": "{\"a\":"}),
            ),
            delta(2, json!({"type": "input_json_delta", "partial_json": "1}"})),
            delta(0, json!({"type": "text_delta", "text": "line"})),
            (
                "message_delta".to_string(),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                       "usage": {"output_tokens": 9}})
                .to_string(),
            ),
            (
                "message_stop".to_string(),
                r#"{"type":"message_stop"}"#.to_string(),
            ),
        ]);
        let in_place = stream.iter().map(|(n, d)| Delta::read(n, d).is_some());
        assert_eq!(
            in_place.collect::<Vec<_>>(),
            [
                false, false, false, true, true, true, true, true, true, false, false
            ],
            "the deltas are read in place, the other events are not"
        );
        let read = outcome(&stream, Turn::event);
        assert!(read.contains("TextDelta(\"line\")"), "{read}");
        assert!(
            read.contains("arguments: Object {\"a\": Number(1)}"),
            "{read}"
        );
        assert_eq!(read, outcome(&stream, Turn::event_value));
    }

    /// Events of a reply's shape, mostly deltas, some with odd values or of other types.
    fn shaped() -> impl proptest::strategy::Strategy<Value = (String, String)> {
        use proptest::prelude::*;
        let odd = || {
            proptest::sample::select(vec![
                "7",
                "-1",
                "1.5",
                "[\"x\"]",
                "{\"type\":\"text_delta\"}",
            ])
            .prop_map(str::to_string)
        };
        let text = move || {
            prop_oneof![
                8 => ".{0,6}".prop_map(|s| Value::from(s).to_string()),
                1 => Just("null".to_string()),
                1 => odd(),
            ]
        };
        let kinds = |names: &'static [&'static str]| {
            prop_oneof![
                8 => proptest::sample::select(names).prop_map(|k| Value::from(k).to_string()),
                1 => Just("null".to_string()),
                1 => odd(),
            ]
        };
        let delta_fields = proptest::collection::vec(
            (
                proptest::sample::select(
                    &["text", "thinking", "signature", "partial_json", "x"][..],
                ),
                text(),
            ),
            0..3,
        );
        let delta_kind = kinds(&[
            "text_delta",
            "thinking_delta",
            "signature_delta",
            "input_json_delta",
        ]);
        let delta = (delta_kind, delta_fields).prop_map(|(kind, mut fields)| {
            fields.insert(0, ("type", kind));
            object(fields)
        });
        let index = prop_oneof![
            6 => (0u64..3).prop_map(|i| i.to_string()),
            1 => Just("null".to_string()),
            1 => odd(),
        ];
        let delta = prop_oneof![4 => delta, 1 => odd(), 1 => Just("null".to_string())];
        // A delta of the kind its block takes, its field maybe repeated.
        let fitting = (0usize..4, text(), proptest::option::of(text())).prop_map(|(k, a, b)| {
            let (kind, field, index) = [
                ("text_delta", "text", 0),
                ("thinking_delta", "thinking", 1),
                ("signature_delta", "signature", 1),
                ("input_json_delta", "partial_json", 2),
            ][k];
            let mut fields = vec![("type", Value::from(kind).to_string()), (field, a)];
            fields.extend(b.map(|b| (field, b)));
            (index.to_string(), object(fields))
        });
        let placed = prop_oneof![1 => (index, delta), 1 => fitting];
        let event_kind = kinds(&["content_block_delta", "message_delta", "ping"]);
        let name = proptest::sample::select(vec!["content_block_delta", "message", "ping", ""]);
        (name, event_kind, placed, proptest::bool::ANY).prop_map(
            |(name, kind, (index, delta), extra)| {
                let mut fields = vec![("type", kind), ("index", index), ("delta", delta)];
                if extra {
                    fields.push(("usage", "{\"output_tokens\":1}".to_string()));
                }
                (name.to_string(), object(fields))
            },
        )
    }

    proptest::proptest! {
        /// Whatever a stream holds, reading its deltas in place changes nothing: the same
        /// outcome event by event, the same events reported, the same reply.
        #[test]
        fn reading_in_place_agrees_with_the_value_reading(
            events in proptest::collection::vec(proptest::prop_oneof![
                proptest::strategy::Strategy::prop_map(super::super::fuzz::payload(), |data| ("content_block_delta".to_string(), data)),
                shaped(),
            ], 0..10)
        ) {
            let stream: Vec<_> = started().into_iter().chain(events).collect();
            proptest::prop_assert_eq!(outcome(&stream, Turn::event), outcome(&stream, Turn::event_value));
        }

        /// Any stream, however broken, ends in a reply or an error that says what was wrong;
        /// nothing panics.
        #[test]
        fn any_stream_gives_a_reply_or_a_clear_error(
            events in proptest::collection::vec(super::super::fuzz::payload(), 0..8)
        ) {
            let endpoint = super::super::fuzz::endpoint();
            let mut turn = Turn::default();
            let sink = |_: StreamEvent| {};
            for data in &events {
                match turn.event("", data, &sink, endpoint) {
                    Ok(Sse::Done) => break,
                    Ok(_) => {}
                    Err(e) => {
                        let message = e.to_string();
                        proptest::prop_assert!(!message.is_empty());
                        return Ok(());
                    }
                }
            }
            let _ = turn.finish();
        }
    }
}
