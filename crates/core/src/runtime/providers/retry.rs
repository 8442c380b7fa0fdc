//! Bounded retries of transient provider failures (rate limits, server errors, network).
//!
//! A failure is retried only when nothing was streamed yet: a retry after partial output would
//! show the user the same text twice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{EventSink, ModelRequest, ModelResponse, Provider, ProviderError, StreamEvent};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Backoff before retry n (0-based) is `base_delay * 2^n`, capped at `max_delay`.
    pub base_delay: Duration,
    /// Longest wait, also for a provider's `retry-after`.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    fn delay(&self, error: &ProviderError, retry: u32) -> Duration {
        let backoff = self.base_delay.saturating_mul(1u32 << retry.min(16));
        error.retry_after().unwrap_or(backoff).min(self.max_delay)
    }
}

/// `provider.complete` with the policy's retries.
pub async fn complete_with_retries(
    provider: &dyn Provider,
    request: &ModelRequest,
    events: EventSink<'_>,
    policy: &RetryPolicy,
) -> Result<ModelResponse, ProviderError> {
    let streamed = AtomicBool::new(false);
    let sink = |event: StreamEvent| {
        streamed.store(true, Ordering::Relaxed);
        events(event);
    };
    let mut retry = 0;
    loop {
        let started = std::time::Instant::now();
        let span = call_span(provider.id(), &request.model);
        let result =
            tracing::Instrument::instrument(provider.complete(request, &sink), span.clone()).await;
        let outcome = result.as_ref().map_or_else(ProviderError::kind, |_| "ok");
        crate::measure::model_called(provider.id(), &request.model, outcome, started.elapsed());
        match &result {
            Ok(response) => {
                // As i64: tracing-opentelemetry exports a u64 as text, and OpenTelemetry's
                // GenAI conventions type the token counts `int`.
                span.record(
                    "gen_ai.usage.input_tokens",
                    token_count(response.usage.input),
                );
                span.record(
                    "gen_ai.usage.output_tokens",
                    token_count(response.usage.output),
                );
            }
            Err(_) => {
                span.record("error.type", outcome);
                span.record("otel.status_code", "error");
            }
        }
        match result {
            Ok(response) => return Ok(response),
            Err(error)
                if error.is_transient()
                    && retry < policy.max_retries
                    && !streamed.load(Ordering::Relaxed) =>
            {
                let wait = policy.delay(&error, retry);
                tracing::warn!(provider = provider.id(), %error, retry = retry + 1, ?wait, "retrying the model call");
                crate::measure::model_retried(provider.id());
                tokio::time::sleep(wait).await;
                retry += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

/// A token count as a span records it: an `i64` (an OTLP int), the largest for a count beyond.
fn token_count(tokens: u64) -> i64 {
    i64::try_from(tokens).unwrap_or(i64::MAX)
}

/// One model call's span, with OpenTelemetry's GenAI attributes (`chat <model>`); the token
/// counts and the error kind are recorded when it answers.
fn call_span(provider: &str, model: &str) -> tracing::Span {
    tracing::info_span!(
        "model_call",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}
