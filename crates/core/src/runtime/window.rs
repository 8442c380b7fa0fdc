//! What of a conversation a model is sent: it must fit the model's `contextWindow` once its
//! output budget, the system prompt and the tool schemas are set aside. Sizes are estimated
//! from characters (three a token, a little per message), then scaled by what the provider
//! reported: each answer's input tokens against the estimate of what was sent. Older messages
//! leave first, whole turns at a time: the window always starts at a user message, so a tool
//! call never goes without its result nor a result without its call.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use switchboard_protocol::message::{ContentBlock, TranscriptMessage, UserContent};

use super::lock;
use super::providers::{
    EventSink, ModelRequest, ModelResponse, ModelTarget, ProviderError, complete_with_retries,
};

/// Characters a token, before calibration: on the safe side for English text and JSON.
const CHARS_PER_TOKEN: f64 = 3.0;
/// What a message costs beyond its text (role, separators).
const PER_MESSAGE: f64 = 8.0;
/// An image, as providers count a small one.
const PER_IMAGE: f64 = 800.0;
/// The share of the window left unused: estimates are estimates.
const MARGIN: f64 = 0.05;

/// Estimated tokens of `text`, uncalibrated.
fn text_tokens(text: &str) -> f64 {
    text.chars().count() as f64 / CHARS_PER_TOKEN
}

fn block_tokens(block: &ContentBlock) -> f64 {
    match block {
        ContentBlock::Text { text } => text_tokens(text),
        ContentBlock::Thinking { thinking, .. } => text_tokens(thinking),
        ContentBlock::ToolCall {
            name, arguments, ..
        } => text_tokens(name) + text_tokens(&arguments.to_string()),
        ContentBlock::Image { .. } => PER_IMAGE,
    }
}

/// Estimated tokens of one message, uncalibrated.
pub fn message_tokens(message: &TranscriptMessage) -> f64 {
    PER_MESSAGE
        + match message {
            TranscriptMessage::User(user) => match &user.content {
                UserContent::Text(text) => text_tokens(text),
                UserContent::Blocks(blocks) => blocks.iter().map(block_tokens).sum(),
            },
            TranscriptMessage::Assistant(a) => a.content.iter().map(block_tokens).sum(),
            TranscriptMessage::ToolResult(r) => r.content.iter().map(block_tokens).sum(),
        }
}

/// Estimated tokens of what a request sends besides its messages.
pub fn fixed_tokens(request: &ModelRequest) -> f64 {
    let tools: f64 = request.tools.iter().map(|t| t.tokens).sum();
    text_tokens(&request.system) + tools
}

/// Estimated tokens of one tool's spec (`ToolSpec::new` keeps it).
pub fn spec_tokens(name: &str, description: &str, parameters: &Value) -> f64 {
    text_tokens(name) + text_tokens(description) + text_tokens(&parameters.to_string())
}

/// Estimated tokens of a whole request, uncalibrated.
pub fn request_tokens(request: &ModelRequest) -> f64 {
    fixed_tokens(request) + request.messages.iter().map(message_tokens).sum::<f64>()
}

/// How far each model's real counts are from the estimates (reported ÷ estimated), learnt from
/// the usage of its answers.
#[derive(Default)]
pub struct Calibration {
    factors: Mutex<HashMap<String, f64>>,
}

impl Calibration {
    /// The factor of `model` (`provider/model`); 1 before its first answer.
    pub fn factor(&self, model: &str) -> f64 {
        lock(&self.factors).get(model).copied().unwrap_or(1.0)
    }

    /// Learns from an answer: `reported` input tokens for a request estimated at `estimated`.
    /// Tiny requests say little and are skipped; one odd answer moves the factor half way.
    pub fn learn(&self, model: &str, estimated: f64, reported: u64) {
        if estimated < 200.0 || reported == 0 {
            return;
        }
        let seen = (reported as f64 / estimated).clamp(0.25, 4.0);
        let mut factors = lock(&self.factors);
        let factor = factors.entry(model.to_string()).or_insert(seen);
        *factor = (*factor + seen) / 2.0;
    }
}

/// The tokens the messages may take: the window less the output budget (the model's
/// `maxTokens`, else a quarter of the window), the system prompt and the tools, scaled by the
/// model's factor and `squeeze` (above 1 after the provider said it did not fit).
pub fn budget(
    window: u64,
    max_tokens: Option<u64>,
    request: &ModelRequest,
    factor: f64,
    squeeze: f64,
) -> f64 {
    let window = window as f64;
    let output = max_tokens
        .map_or(window / 4.0, |m| m as f64)
        .min(window / 2.0);
    let usable = window * (1.0 - MARGIN) - output;
    usable / (factor * squeeze) - fixed_tokens(request)
}

/// Drops the oldest messages until the rest fits `budget` (estimated, uncalibrated tokens);
/// the rest starts at a user message that is not a tool result. The newest user message and
/// what follows it always stay (if even they do not fit, the provider says so). Answers how
/// many were dropped.
/// A compaction summary at the front stays in front: it stands for what left before.
pub fn fit(messages: &mut Vec<TranscriptMessage>, budget: f64) -> usize {
    let pin = pinned(messages);
    let cut = leaving(messages, budget);
    messages.drain(pin..pin + cut);
    cut
}

/// How many messages [`fit`] would drop (a leading summary never).
pub fn leaving(messages: &[TranscriptMessage], budget: f64) -> usize {
    let pin = pinned(messages);
    let pinned_tokens: f64 = messages[..pin].iter().map(message_tokens).sum();
    cut_point(&messages[pin..], budget - pinned_tokens)
}

/// 1 when the first message is a compaction summary, else 0.
fn pinned(messages: &[TranscriptMessage]) -> usize {
    usize::from(
        messages
            .first()
            .is_some_and(super::conversation::is_summary),
    )
}

/// Where the part of `messages` that fits `budget` starts (0: all of it fits), as [`fit`]
/// would cut.
pub fn cut_point(messages: &[TranscriptMessage], budget: f64) -> usize {
    let mut total: f64 = messages.iter().map(message_tokens).sum();
    if total <= budget {
        return 0;
    }
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, TranscriptMessage::User(_)))
        .map(|(i, _)| i)
        .collect();
    let Some(&newest) = starts.last() else {
        return 0;
    };
    let mut cut = 0;
    let mut next_start = starts.iter().copied().peekable();
    while total > budget && cut < newest {
        // Drop up to the next turn start after `cut`.
        let Some(start) = next_start.find(|&s| s > cut) else {
            break;
        };
        total -= messages[cut..start].iter().map(message_tokens).sum::<f64>();
        cut = start;
    }
    if cut == 0 {
        // The oldest kept message must start a turn.
        cut = starts.first().copied().unwrap_or(0);
    }
    cut
}

/// One model call of a run: the request's messages cut to the model's window first (older
/// turns leave the run's request for good), the estimate calibrated by the answer's usage (and
/// by the counts a context-length refusal states). A refusal goes back to the caller (who
/// compacts), or with `cut_on_refusal` cuts harder and tries once more; a second one fails the
/// call, saying the newest turn alone does not fit.
pub async fn complete(
    calibration: &Calibration,
    target: &ModelTarget,
    request: &mut ModelRequest,
    events: EventSink<'_>,
    cut_on_refusal: bool,
) -> Result<ModelResponse, ProviderError> {
    let factor = calibration.factor(&target.reference);
    let mut squeeze = 1.0;
    let mut refused_once = false;
    loop {
        if let Some(window) = target.context_window {
            let room = budget(window, target.max_tokens, request, factor, squeeze);
            let dropped = fit(&mut request.messages, room);
            if dropped > 0 {
                tracing::debug!(model = %target.reference, dropped, "older messages left the model's window");
            }
        }
        let provider = target.provider.as_ref();
        match complete_with_retries(provider, request, events, &target.retry).await {
            Ok(response) => {
                // Estimated only when there is a count to learn from (the request is as sent):
                // the estimate reads every message and encodes every tool's schema.
                if response.usage.input > 0 {
                    let estimated = request_tokens(request);
                    calibration.learn(&target.reference, estimated, response.usage.input);
                }
                return Ok(response);
            }
            Err(ProviderError::ContextLength { message }) => {
                // The refusal usually says both counts: what was sent and what fits.
                let counted = counts(&message);
                let estimated = request_tokens(request);
                if let Some((sent, _)) = counted {
                    calibration.learn(&target.reference, estimated, sent);
                }
                if !cut_on_refusal {
                    return Err(ProviderError::ContextLength { message });
                }
                if refused_once {
                    return Err(ProviderError::ContextLength {
                        message: format!(
                            "{message} (refused again after the older messages were left out: \
                             the newest turn alone is too long for {}; set its contextWindow, or \
                             send less)",
                            target.reference
                        ),
                    });
                }
                refused_once = true;
                tracing::warn!(model = %target.reference, %message, "the model refused the context; cutting older messages and trying once more");
                let (sent, fits) = counted.unwrap_or((2, 1));
                let share = (fits as f64 / sent as f64).min(1.0) * (1.0 - 2.0 * MARGIN);
                let room = estimated * share - fixed_tokens(request);
                fit(&mut request.messages, room);
                squeeze = squeeze * sent as f64 / fits as f64;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The two token counts of a context-length refusal, larger (sent) first: OpenAI's "maximum
/// context length is 3000 tokens. However, your messages resulted in 9477 tokens", Anthropic's
/// "prompt is too long: 9477 tokens > 3000 maximum".
pub fn counts(message: &str) -> Option<(u64, u64)> {
    let numbers: Vec<u64> = message
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .collect();
    match numbers.as_slice() {
        [a, b, ..] if a != b => Some(((*a).max(*b), (*a).min(*b))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(v: serde_json::Value) -> TranscriptMessage {
        serde_json::from_value(v).unwrap()
    }

    fn user(text: &str) -> TranscriptMessage {
        msg(json!({"role": "user", "content": text, "timestamp": 0}))
    }

    fn conversation() -> Vec<TranscriptMessage> {
        let call = msg(
            json!({"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "t", "arguments": {}}],
            "provider": "p", "model": "m", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
            "stopReason": "toolUse", "timestamp": 0}),
        );
        let result = msg(
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "t",
            "content": [{"type": "text", "text": "x".repeat(300)}], "isError": false, "timestamp": 0}),
        );
        let reply = msg(
            json!({"role": "assistant", "content": [{"type": "text", "text": "done"}],
            "provider": "p", "model": "m", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
            "stopReason": "stop", "timestamp": 0}),
        );
        vec![
            user(&"a".repeat(300)),
            call,
            result,
            reply,
            user(&"b".repeat(300)),
            user("newest"),
        ]
    }

    #[test]
    fn whole_turns_leave_oldest_first_and_a_call_keeps_its_result() {
        let mut all = conversation();
        assert_eq!(fit(&mut all, 10_000.0), 0, "it fits");
        let mut some = conversation();
        // Room for the last two turns only: the first turn (with its call and result) goes.
        let dropped = fit(&mut some, 150.0);
        assert_eq!(dropped, 4);
        assert!(matches!(some[0], TranscriptMessage::User(_)));
        let mut least = conversation();
        assert_eq!(
            fit(&mut least, 1.0),
            5,
            "the newest user message always stays"
        );
        assert_eq!(least.len(), 1);
    }

    #[test]
    fn refusals_say_what_was_sent_and_what_fits() {
        let openai = "This model's maximum context length is 3000 tokens. However, your messages resulted in 9477 tokens.";
        assert_eq!(counts(openai), Some((9477, 3000)));
        assert_eq!(
            counts("prompt is too long: 9477 tokens > 3000 maximum"),
            Some((9477, 3000))
        );
        assert_eq!(counts("too long"), None);
    }

    #[test]
    fn calibration_moves_towards_what_the_provider_counts() {
        let c = Calibration::default();
        assert_eq!(c.factor("p/m"), 1.0);
        c.learn("p/m", 1000.0, 1500);
        assert_eq!(c.factor("p/m"), 1.5);
        c.learn("p/m", 1000.0, 500);
        assert_eq!(c.factor("p/m"), 1.0);
        c.learn("p/m", 10.0, 5000);
        assert_eq!(c.factor("p/m"), 1.0, "tiny requests are not learnt from");
    }
}
