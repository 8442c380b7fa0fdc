//! The measurement seams record through the `metrics` facade: a turn counts its run's end, its
//! lane wait, its model call and its store operations, labelled by what the seams know (never
//! a session key).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use metrics::{
    Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use switchboard_core::config::Config;
use switchboard_core::measure;
use switchboard_core::store::{DeliveryRecord, DeliveryStatus, RunRecord, RunStatus, WriteOp};

use super::support::TestEngine;

/// Every counter's total and every histogram's number of samples, by name and labels.
#[derive(Default, Clone)]
struct Seen(Arc<Mutex<BTreeMap<String, f64>>>);

struct Series(Arc<Mutex<BTreeMap<String, f64>>>, String);

impl Seen {
    fn series(&self, key: &Key) -> Arc<Series> {
        let mut labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        Arc::new(Series(
            self.0.clone(),
            format!("{}{{{}}}", key.name(), labels.join(",")),
        ))
    }

    /// The series of `name` whose labels include every one of `labels`, summed.
    fn total(&self, name: &str, labels: &[&str]) -> f64 {
        let seen = self.0.lock().unwrap();
        seen.iter()
            .filter(|(series, _)| series.starts_with(&format!("{name}{{")))
            .filter(|(series, _)| labels.iter().all(|l| series.contains(l)))
            .map(|(_, value)| value)
            .sum()
    }

    fn names(&self) -> Vec<String> {
        self.0.lock().unwrap().keys().cloned().collect()
    }
}

impl Series {
    fn add(&self, value: f64) {
        *self.0.lock().unwrap().entry(self.1.clone()).or_default() += value;
    }
}

impl CounterFn for Series {
    fn increment(&self, value: u64) {
        self.add(value as f64);
    }
    fn absolute(&self, value: u64) {
        self.0.lock().unwrap().insert(self.1.clone(), value as f64);
    }
}

impl HistogramFn for Series {
    fn record(&self, _value: f64) {
        self.add(1.0);
    }
}

impl Recorder for Seen {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.series(key))
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.series(key))
    }
}

/// One turn of `message` on an engine of `config`, and what it recorded.
fn measured(config: Config, message: &str) -> (RunRecord, Seen) {
    let seen = Seen::default();
    // A local recorder sees what this thread records: the engine runs on a runtime of this
    // thread only.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ended = metrics::with_local_recorder(&seen, || {
        rt.block_on(async {
            let w = TestEngine::open(config).await;
            let record = w.turn("main", message).await;
            w.engine.close().await;
            record
        })
    });
    (ended, seen)
}

#[test]
fn a_turn_is_measured_at_every_seam_it_crosses() {
    let (ended, seen) = measured(Config::default(), "@reply measured");
    assert_eq!(ended.status, RunStatus::Ok);
    let names = seen.names();
    assert_eq!(
        seen.total(measure::RUNS, &["agent=main", "status=ok"]),
        1.0,
        "{names:?}"
    );
    assert_eq!(
        seen.total(measure::LANE_WAIT, &["lane=main"]),
        1.0,
        "{names:?}"
    );
    assert_eq!(
        seen.total(measure::MODEL_CALLS, &["outcome=ok"]),
        1.0,
        "{names:?}"
    );
    assert_eq!(seen.total(measure::MODEL_CALL_TIME, &[]), 1.0, "{names:?}");
    assert_eq!(
        seen.total(measure::TURNS, &["agent=main"]),
        1.0,
        "{names:?}"
    );
    // The scripted model counts the words: the prompt's tokens in, the reply's out.
    assert!(
        seen.total(
            measure::TOKENS,
            &["agent=main", "direction=input", "model=scripted"]
        ) >= 1.0,
        "{names:?}"
    );
    assert!(
        seen.total(measure::TOKENS, &["agent=main", "direction=output"]) >= 1.0,
        "{names:?}"
    );
    assert!(
        seen.total(measure::STORE_OPS, &["op=write", "outcome=ok"]) >= 2.0,
        "{names:?}"
    );
    assert!(
        seen.total(measure::STORE_OPS, &["op=read"]) >= 1.0,
        "{names:?}"
    );
    assert!(
        names.iter().all(|n| !n.contains("agent:main:main")),
        "no session key is a label: {names:?}"
    );
}

#[test]
fn a_failed_model_counts_its_error_kind_and_the_fallback_that_took_the_turn() {
    let mut config = Config::default();
    config.agents.defaults.model = switchboard_core::config::ModelRef {
        primary: "builtin/scripted".into(),
        fallbacks: vec!["builtin/echo".into()],
    };
    let (ended, seen) = measured(config, "@error upstream exploded");
    // The echo model took the turn: the run ends well.
    assert_eq!(ended.status, RunStatus::Ok);
    let names = seen.names();
    assert!(
        seen.total(measure::MODEL_CALLS, &["model=scripted", "outcome=server"]) >= 1.0,
        "{names:?}"
    );
    assert_eq!(
        seen.total(measure::MODEL_CALLS, &["model=echo", "outcome=ok"]),
        1.0,
        "{names:?}"
    );
    assert_eq!(
        seen.total(
            measure::MODEL_FALLBACKS,
            &["from=builtin/scripted", "to=builtin/echo"]
        ),
        1.0,
        "{names:?}"
    );
    // Every attempt after the first is counted as a retry.
    let calls = seen.total(measure::MODEL_CALLS, &["model=scripted"]);
    assert_eq!(
        seen.total(measure::MODEL_RETRIES, &["provider=builtin"]),
        calls - 1.0,
        "{names:?}"
    );
}

/// The outbox gauge is counted by the store, every pending delivery of every channel: a scrape
/// used to read the first 10,000 records and count those.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_gauge_counts_every_pending_delivery_by_channel() {
    let h = TestEngine::open(Config::default()).await;
    // Not due for a day: the outbox leaves them waiting.
    let later = h.engine.now_ms() + 86_400_000;
    let pending = |i: usize, channel: &str| DeliveryRecord {
        id: format!("{channel}-{i}"),
        idempotency_key: None,
        kind: "reply".into(),
        session_key: None,
        source_key: None,
        run_id: None,
        channel: channel.into(),
        to: "someone".into(),
        account_id: None,
        thread_id: None,
        text: "later".into(),
        status: DeliveryStatus::Pending,
        attempts: 0,
        next_attempt_at: later,
        detail: None,
        created_at: 1,
        updated_at: 1,
        delivered_at: None,
        parts_sent: 0,
        trace: None,
    };
    let mut records: Vec<WriteOp> = (0..10_005)
        .map(|i| WriteOp::Enqueue(Box::new(pending(i, "telegram"))))
        .collect();
    records.extend((0..3).map(|i| WriteOp::Enqueue(Box::new(pending(i, "webhook")))));
    h.engine.store().write_batch(records).await.unwrap();
    let counted: Vec<(String, f64)> = h
        .engine
        .mirrored_gauges()
        .await
        .into_iter()
        .filter(|r| r.name == "switchboard_outbox_pending")
        .map(|r| (r.labels[0].1.clone(), r.value))
        .collect();
    assert_eq!(
        counted,
        [
            ("telegram".to_string(), 10_005.0),
            ("webhook".to_string(), 3.0)
        ]
    );
    h.engine.close().await;
}
