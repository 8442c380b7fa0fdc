//! What the gateway measures, named in one place: the seams (runs, lanes, model calls, the
//! store, the outbox, connections) call these functions, which record through the `metrics`
//! facade. With no recorder installed each is a no-op; the gateway's exporter (SPEC §10b,
//! `switchboard_server::metrics`) installs one with [`BUCKETS`] and adds the gauges that mirror
//! state (`engine::gauges`: lanes, channels, outbox, cluster) when it is scraped.
//!
//! Labels are bounded: agent ids, lane and channel names, providers and models from the
//! config, outcomes from a fixed set. No session key, run id or text is ever a label.

use std::time::{Duration, Instant};

use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

/// Runs that ended, by agent and final status (`ok`, `error`, `timeout`, `aborted`).
pub const RUNS: &str = "switchboard_runs_total";
/// Model replies recorded in a run (one per step of the tool loop), by agent.
pub const TURNS: &str = "switchboard_turns_total";
/// How long a run waited for a slot in its lane, by lane.
pub const LANE_WAIT: &str = "switchboard_lane_wait_seconds";
/// Runs holding a slot of a lane now, by lane.
pub const LANE_BUSY: &str = "switchboard_lane_busy";
/// Runs waiting for a slot of a lane now, by lane.
pub const LANE_WAITING: &str = "switchboard_lane_waiting";
/// Model calls (one attempt each), by provider, model and outcome (`ok` or an error kind:
/// `auth`, `rate_limited`, `context_length`, `server`, `network`, …).
pub const MODEL_CALLS: &str = "switchboard_model_calls_total";
/// How long a model call took, by provider and model.
pub const MODEL_CALL_TIME: &str = "switchboard_model_call_seconds";
/// Model calls retried after a transient error, by provider.
pub const MODEL_RETRIES: &str = "switchboard_model_retries_total";
/// A failed model handed the turn to a fallback, by the model references it went from and to.
pub const MODEL_FALLBACKS: &str = "switchboard_model_fallbacks_total";
/// Tokens of the model replies, by agent, provider, model and direction (`input`, `output`).
pub const TOKENS: &str = "switchboard_model_tokens_total";
/// What the model replies cost in millionths of a USD (priced from
/// `models.providers.*.models[].cost`), by agent, provider and model. Counters count whole
/// numbers; a micro-dollar keeps the price of a single token of any model.
pub const COST: &str = "switchboard_model_cost_microusd_total";
/// Store operations, by backend, operation (`read`, `write`) and outcome (`ok`, `error`).
pub const STORE_OPS: &str = "switchboard_store_operations_total";
/// How long a store operation took, by backend and operation.
pub const STORE_OP_TIME: &str = "switchboard_store_operation_seconds";
/// Delivery attempts, by channel and outcome (`delivered`, `retry`, `failed`).
pub const OUTBOX_ATTEMPTS: &str = "switchboard_outbox_attempts_total";
/// From a delivery's record to its delivery, by channel.
pub const OUTBOX_DELIVERY_TIME: &str = "switchboard_outbox_delivery_seconds";
/// HTTP connections open on the gateway's port (a WebSocket's included).
pub const HTTP_CONNECTIONS: &str = "switchboard_http_connections";

/// Histogram buckets chosen for each quantity (upper bounds in seconds): model calls take
/// seconds, store operations milliseconds, a delivery from instants to the outbox's hours of
/// retries.
pub const BUCKETS: &[(&str, &[f64])] = &[
    (
        MODEL_CALL_TIME,
        &[
            0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0,
        ],
    ),
    (
        LANE_WAIT,
        &[
            0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0,
        ],
    ),
    (
        STORE_OP_TIME,
        &[
            0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
        ],
    ),
    (
        OUTBOX_DELIVERY_TIME,
        &[
            0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 21600.0,
        ],
    ),
];

/// Gives every recorded metric its help text and unit (an exporter shows them; `promtool`
/// wants them).
pub fn describe() {
    describe_counter!(RUNS, "Runs that ended, by agent and final status.");
    describe_counter!(
        TURNS,
        "Model replies recorded in runs (steps of the tool loop), by agent."
    );
    describe_histogram!(
        LANE_WAIT,
        Unit::Seconds,
        "How long a run waited for a lane slot, by lane."
    );
    describe_gauge!(LANE_BUSY, "Runs holding a slot of a lane now, by lane.");
    describe_gauge!(
        LANE_WAITING,
        "Runs waiting for a slot of a lane now, by lane."
    );
    describe_counter!(
        MODEL_CALLS,
        "Model calls (one attempt each), by provider, model and outcome."
    );
    describe_histogram!(
        MODEL_CALL_TIME,
        Unit::Seconds,
        "How long a model call took, by provider and model."
    );
    describe_counter!(
        MODEL_RETRIES,
        "Model calls retried after a transient error, by provider."
    );
    describe_counter!(
        MODEL_FALLBACKS,
        "Turns handed from a failed model to a fallback, by model reference."
    );
    describe_counter!(
        TOKENS,
        "Tokens of model replies, by agent, provider, model and direction."
    );
    describe_counter!(
        COST,
        "Cost of model replies in millionths of a USD, by agent, provider and model."
    );
    describe_counter!(
        STORE_OPS,
        "Store operations, by backend, operation and outcome."
    );
    describe_histogram!(
        STORE_OP_TIME,
        Unit::Seconds,
        "How long a store operation took, by backend and operation."
    );
    describe_counter!(
        OUTBOX_ATTEMPTS,
        "Delivery attempts, by channel and outcome."
    );
    describe_histogram!(
        OUTBOX_DELIVERY_TIME,
        Unit::Seconds,
        "From a delivery's record to its delivery, by channel."
    );
    describe_gauge!(
        HTTP_CONNECTIONS,
        "HTTP connections open on the gateway's port."
    );
}

/// A run ended with `status`.
pub fn run_ended(agent: &str, status: &'static str) {
    counter!(RUNS, "agent" => agent.to_string(), "status" => status).increment(1);
}

/// A run recorded a model reply: its tokens and what it cost (when the model is priced).
pub fn model_replied(
    agent: &str,
    provider: &str,
    model: &str,
    input: u64,
    output: u64,
    cost_usd: Option<f64>,
) {
    let (agent, provider, model) = (agent.to_string(), provider.to_string(), model.to_string());
    counter!(TURNS, "agent" => agent.clone()).increment(1);
    for (direction, tokens) in [("input", input), ("output", output)] {
        counter!(TOKENS, "agent" => agent.clone(), "provider" => provider.clone(), "model" => model.clone(), "direction" => direction)
            .increment(tokens);
    }
    if let Some(cost) = cost_usd {
        let micro = (cost * 1_000_000.0).round().max(0.0) as u64;
        counter!(COST, "agent" => agent, "provider" => provider, "model" => model).increment(micro);
    }
}

/// A run's model failed and `to` (a model reference) runs the turn instead of `from`.
pub fn fell_back(from: &str, to: &str) {
    counter!(MODEL_FALLBACKS, "from" => from.to_string(), "to" => to.to_string()).increment(1);
}

/// A run asks for a slot in `lane`: counted as waiting until [`LaneWait::granted`].
pub fn lane_asked(lane: &'static str) -> LaneWait {
    gauge!(LANE_WAITING, "lane" => lane).increment(1.0);
    LaneWait {
        lane,
        asked: Instant::now(),
    }
}

/// A slot taken at once, by a run that may yet not start with it: busy, and no wait recorded
/// (see [`started_at_once`]).
pub fn lane_taken(lane: &'static str) -> LaneSlot {
    gauge!(LANE_BUSY, "lane" => lane).increment(1.0);
    LaneSlot(lane)
}

/// A run started with a slot taken at once: it waited for none.
pub fn started_at_once(lane: &'static str) {
    histogram!(LANE_WAIT, "lane" => lane).record(0.0);
}

/// A run waiting for a lane slot (it stops counting as waiting when dropped).
pub struct LaneWait {
    lane: &'static str,
    asked: Instant,
}

impl LaneWait {
    /// The slot was granted: records the wait; the run counts as busy until the [`LaneSlot`]
    /// is dropped.
    pub fn granted(self) -> LaneSlot {
        histogram!(LANE_WAIT, "lane" => self.lane).record(self.asked.elapsed().as_secs_f64());
        gauge!(LANE_BUSY, "lane" => self.lane).increment(1.0);
        LaneSlot(self.lane)
    }
}

impl Drop for LaneWait {
    fn drop(&mut self) {
        gauge!(LANE_WAITING, "lane" => self.lane).decrement(1.0);
    }
}

/// A lane slot held by a run (counted as busy while it lives).
#[derive(Debug)]
pub struct LaneSlot(&'static str);

impl Drop for LaneSlot {
    fn drop(&mut self) {
        gauge!(LANE_BUSY, "lane" => self.0).decrement(1.0);
    }
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

/// One delivery attempt on `channel` ended with `outcome`; a delivered one `waited` since it
/// was recorded.
pub fn outbox_attempt(channel: &str, outcome: &'static str, waited: Option<Duration>) {
    counter!(OUTBOX_ATTEMPTS, "channel" => channel.to_string(), "outcome" => outcome).increment(1);
    if let Some(waited) = waited {
        histogram!(OUTBOX_DELIVERY_TIME, "channel" => channel.to_string())
            .record(waited.as_secs_f64());
    }
}

/// An HTTP connection was accepted: it counts as open until the guard is dropped.
pub fn http_connection() -> HttpConnection {
    gauge!(HTTP_CONNECTIONS).increment(1.0);
    HttpConnection(())
}

/// An open HTTP connection (see [`http_connection`]).
pub struct HttpConnection(());

impl Drop for HttpConnection {
    fn drop(&mut self) {
        gauge!(HTTP_CONNECTIONS).decrement(1.0);
    }
}
