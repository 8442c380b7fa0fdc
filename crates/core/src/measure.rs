//! What the gateway measures, named in one place: the seams (runs, lanes, model calls, the
//! store, the outbox) call these functions, which record through the `metrics` facade. With no
//! recorder installed each is a no-op; an exporter (SPEC §10b) installs one and adds nothing
//! here but names.
//!
//! Labels are bounded: agent ids, lane and channel names, providers and models from the
//! config, outcomes from a fixed set. No session key, run id or text is ever a label.

use std::time::{Duration, Instant};

use metrics::{counter, histogram};

/// Runs that ended, by agent and final status (`ok`, `error`, `timeout`, `aborted`).
pub const RUNS: &str = "switchboard_runs_total";
/// How long a run waited for a slot in its lane, by lane.
pub const LANE_WAIT: &str = "switchboard_lane_wait_seconds";
/// Model calls (one attempt each), by provider, model and outcome (`ok` or an error kind).
pub const MODEL_CALLS: &str = "switchboard_model_calls_total";
/// How long a model call took, by provider and model.
pub const MODEL_CALL_TIME: &str = "switchboard_model_call_seconds";
/// Model calls retried after a transient error, by provider.
pub const MODEL_RETRIES: &str = "switchboard_model_retries_total";
/// Store operations, by backend, operation (`read`, `write`) and outcome (`ok`, `error`).
pub const STORE_OPS: &str = "switchboard_store_operations_total";
/// How long a store operation took, by backend and operation.
pub const STORE_OP_TIME: &str = "switchboard_store_operation_seconds";
/// Delivery attempts, by channel and outcome (`delivered`, `retry`, `failed`).
pub const OUTBOX_ATTEMPTS: &str = "switchboard_outbox_attempts_total";

/// A run ended with `status`.
pub fn run_ended(agent: &str, status: &'static str) {
    counter!(RUNS, "agent" => agent.to_string(), "status" => status).increment(1);
}

/// A run got a slot in `lane` after `waited`.
pub fn lane_waited(lane: &'static str, waited: Duration) {
    histogram!(LANE_WAIT, "lane" => lane).record(waited.as_secs_f64());
}

/// One model call to `provider`/`model` ended with `outcome` after `took`.
pub fn model_called(provider: &str, model: &str, outcome: &'static str, took: Duration) {
    let (provider, model) = (provider.to_string(), model.to_string());
    counter!(MODEL_CALLS, "provider" => provider.clone(), "model" => model.clone(), "outcome" => outcome)
        .increment(1);
    histogram!(MODEL_CALL_TIME, "provider" => provider, "model" => model)
        .record(took.as_secs_f64());
}

/// A model call to `provider` is tried again.
pub fn model_retried(provider: &str) {
    counter!(MODEL_RETRIES, "provider" => provider.to_string()).increment(1);
}

/// Awaits the store operation `op` on `backend` (`sqlite`, `postgres`), measuring it.
pub async fn store_op<T, E>(
    backend: &'static str,
    op: &'static str,
    operation: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let started = Instant::now();
    let result = operation.await;
    let outcome = if result.is_ok() { "ok" } else { "error" };
    let took = started.elapsed();
    counter!(STORE_OPS, "backend" => backend, "op" => op, "outcome" => outcome).increment(1);
    histogram!(STORE_OP_TIME, "backend" => backend, "op" => op).record(took.as_secs_f64());
    result
}

/// One delivery attempt on `channel` ended with `outcome`.
pub fn outbox_attempt(channel: &str, outcome: &'static str) {
    counter!(OUTBOX_ATTEMPTS, "channel" => channel.to_string(), "outcome" => outcome).increment(1);
}
