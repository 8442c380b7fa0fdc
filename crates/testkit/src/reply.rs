//! What the mock answers: [`MockReply`] (queued by tests) and the format-neutral [`Turn`] the two
//! wire formats render.

use std::time::Duration;

use serde_json::{Value, json};

/// One scripted answer. Replies are consumed in order, whatever format the request used.
#[derive(Debug, Clone, PartialEq)]
pub enum MockReply {
    /// A text turn, streamed as several chunks (split on spaces).
    Text(String),
    /// One turn with these tool calls.
    ToolCalls(Vec<MockToolCall>),
    /// Text first, then these tool calls, in one turn.
    TextAndToolCalls(String, Vec<MockToolCall>),
    /// A turn with reasoning (OpenAI `reasoning_content`, a signed Anthropic `thinking` block)
    /// before its text.
    Thinking { thinking: String, text: String },
    /// Any HTTP status with this JSON body and headers (429 + `retry-after`, 401, 500, …).
    Status {
        status: u16,
        body: Value,
        headers: Vec<(String, String)>,
    },
    /// Streams `chunks` as text with `delay` before each one after the first (for timeouts and
    /// aborts); non-streaming: waits `chunks.len() * delay`, then answers the joined text.
    Slow {
        chunks: Vec<String>,
        delay: Duration,
    },
    /// Waits, then answers.
    Delay(Duration, Box<MockReply>),
    /// Waits until the test opens the gate, then answers: holds a model call for exactly as
    /// long as the test needs, without a timing.
    Gated(Gate, Box<MockReply>),
    /// Streams the reply, then holds its body open until the gate opens before ending it (its
    /// last chunk): a server that ends its response a while after the format's terminal event.
    /// Non-streaming: the reply.
    Lingering(Gate, Box<MockReply>),
    /// Never answers (until the client gives up or the mock stops).
    Hang,
    /// Streams this text, then ends the response without the format's terminal event — what a
    /// dropped connection looks like to the client. Non-streaming: the first half of the JSON.
    Cut(String),
    /// Streams the start of a turn, then the format's error event (Anthropic `event: error`,
    /// OpenAI a chunk `{"error": …}`) of this type (`overloaded_error`, `rate_limit_error`,
    /// `api_error`, …). Non-streaming: the HTTP status of that type with the format's error body.
    ErrorEvent { kind: String, message: String },
}

impl MockReply {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// `reply` once `gate` is open.
    pub fn gated(gate: &Gate, reply: MockReply) -> Self {
        Self::Gated(gate.clone(), Box::new(reply))
    }

    /// A status with an `{"error": {"message": …}}` body and no headers.
    pub fn status(status: u16, message: &str) -> Self {
        Self::Status {
            status,
            body: json!({"error": {"message": message}}),
            headers: Vec::new(),
        }
    }
}

/// A gate a [`MockReply::Gated`] reply waits at until the test opens it.
#[derive(Debug, Clone)]
pub struct Gate(tokio::sync::watch::Sender<bool>);

impl Gate {
    pub fn new() -> Self {
        Self(tokio::sync::watch::channel(false).0)
    }

    /// Lets every reply waiting at this gate go on.
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    /// Resolves once the gate is open.
    pub(crate) async fn opened(&self) {
        let mut open = self.0.subscribe();
        let _ = open.wait_for(|open| *open).await;
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

/// Gates are the same gate when they share their state.
impl PartialEq for Gate {
    fn eq(&self, other: &Self) -> bool {
        self.0.same_channel(&other.0)
    }
}

/// A tool call the mock model makes.
#[derive(Debug, Clone, PartialEq)]
pub struct MockToolCall {
    pub id: String,
    pub name: String,
    /// Raw JSON text — may be malformed on purpose. Streamed in 2–3 partial pieces.
    pub arguments: String,
}

impl MockToolCall {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// Usage the mock reports on every turn.
pub const PROMPT_TOKENS: u64 = 10;
pub const COMPLETION_TOKENS: u64 = 5;

/// A turn, independent of the format it is rendered in.
#[derive(Debug, Clone, Default)]
pub(crate) struct Turn {
    pub thinking: Vec<String>,
    pub text: Vec<String>,
    pub calls: Vec<MockToolCall>,
    /// Before each text chunk after the first.
    pub chunk_delay: Duration,
    pub ending: Ending,
    /// The prompt tokens reported in its usage (counted with a context limit set), else
    /// [`PROMPT_TOKENS`].
    pub prompt_tokens: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Ending {
    /// Finish reason, usage and the terminal event.
    #[default]
    Finish,
    /// Nothing after the content.
    Cut,
    /// The format's error event.
    Error { kind: String, message: String },
}

impl Turn {
    pub fn text(text: &str) -> Self {
        Self {
            text: words(text),
            ..Self::default()
        }
    }

    /// The prompt tokens its usage reports.
    pub fn prompt(&self) -> u64 {
        self.prompt_tokens.unwrap_or(PROMPT_TOKENS)
    }

    pub fn joined_text(&self) -> String {
        self.text.concat()
    }

    pub fn joined_thinking(&self) -> String {
        self.thinking.concat()
    }
}

/// `"a b c"` → `["a", " b", " c"]`: chunks that concatenate back to the text.
pub(crate) fn words(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    text.split(' ')
        .enumerate()
        .map(|(i, w)| {
            if i == 0 {
                w.to_string()
            } else {
                format!(" {w}")
            }
        })
        .collect()
}

/// The raw text in 2–3 pieces (on character boundaries) so clients must assemble it.
pub(crate) fn pieces(raw: &str) -> Vec<String> {
    let chars: Vec<char> = raw.chars().collect();
    let n = chars.len();
    if n < 2 {
        return if raw.is_empty() {
            Vec::new()
        } else {
            vec![raw.to_string()]
        };
    }
    let cuts = if n >= 3 {
        vec![0, n / 3, 2 * n / 3, n]
    } else {
        vec![0, 1, n]
    };
    cuts.windows(2)
        .map(|w| chars[w[0]..w[1]].iter().collect())
        .collect()
}

/// The HTTP status an error type stands for.
pub(crate) fn status_of(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_concatenate_back() {
        assert_eq!(words("hello big world"), ["hello", " big", " world"]);
        assert!(words("").is_empty());
        for raw in ["", "x", "{}", r#"{"a":1,"b":"é"}"#] {
            let p = pieces(raw);
            assert_eq!(p.concat(), raw);
            assert!(p.len() <= 3);
            if raw.chars().count() >= 2 {
                assert!(p.len() >= 2, "{raw:?} split into {p:?}");
            }
        }
    }
}
