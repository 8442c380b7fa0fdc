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
        let result = provider.complete(request, &sink).await;
        let outcome = result.as_ref().map_or_else(ProviderError::kind, |_| "ok");
        crate::measure::model_called(provider.id(), &request.model, outcome, started.elapsed());
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
