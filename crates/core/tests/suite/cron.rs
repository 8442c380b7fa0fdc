//! Cron jobs through the real engine: a SQLite file in a temp dir, the real runtime and the
//! scheduler task, driven by a manual clock — so hours of schedule pass without waiting, and no
//! test asserts a timing. `Engine::cron_settled(t)` is the sync point: the scheduler has fired
//! everything due at clock time `t`.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::clock::ManualClock;
use switchboard_core::config::{AgentEntry, Config, ModelRef};
use switchboard_core::keys::SessionKind;
use switchboard_core::runtime::RunRequest;
use switchboard_core::runtime::lanes::Lane;
use switchboard_core::store::{RunRecord, RunStatus};
use switchboard_core::{CoreError, Engine, RunId};
use switchboard_protocol::message::Provenance;

use super::support::{TestEngine, k};
use switchboard_protocol::ErrorCode;
use switchboard_protocol::cron::{CronAddParams, CronJob};

/// 2030-01-01T00:00:00Z.
const T0: i64 = 1_893_456_000_000;
const SEC: i64 = 1_000;
const MIN: i64 = 60 * SEC;
/// Hang guard only; nothing is expected to take long.
const GUARD: Duration = Duration::from_secs(60);

/// Agents `main` (default, the scripted model) and `echo` (replies with the user's text).
fn config() -> Config {
    let mut config = Config::default();
    config.agents.list = vec![
        AgentEntry {
            id: "main".into(),
            default: true,
            ..AgentEntry::default()
        },
        AgentEntry {
            id: "echo".into(),
            model: Some(ModelRef::new("builtin/echo")),
            ..AgentEntry::default()
        },
    ];
    config
}

/// An engine on a temp dir with a manual clock, its scheduler started (when enabled).
struct World {
    engine: Arc<Engine>,
    clock: Arc<ManualClock>,
    t: TestEngine,
}

impl World {
    async fn new(now: i64) -> Self {
        Self::with(now, config()).await
    }

    async fn with(now: i64, config: Config) -> Self {
        let t = TestEngine::builder()
            .config(config)
            .manual_clock(now)
            .open()
            .await;
        Self::started(t)
    }

    fn started(t: TestEngine) -> Self {
        t.engine.cron().start();
        Self {
            engine: t.engine.clone(),
            clock: t.clock.clone().unwrap(),
            t,
        }
    }

    /// Stops the engine and opens it again on the same home dir, the clock at `now` (a
    /// gateway restart, or one that was down until `now`).
    async fn restart(self, now: i64) -> Self {
        Self::started(self.t.restart(Some(now)).await)
    }

    async fn add(&self, params: Value) -> CronJob {
        let params: CronAddParams = serde_json::from_value(params).unwrap();
        self.engine.cron().add(params).await.unwrap()
    }

    async fn add_err(&self, params: Value) -> CoreError {
        let params: CronAddParams = serde_json::from_value(params).unwrap();
        self.engine.cron().add(params).await.unwrap_err()
    }

    /// Moves the clock to `t` and waits until the scheduler has fired what is due.
    async fn step(&self, t: i64) {
        self.clock.set(t);
        tokio::time::timeout(GUARD, self.engine.cron().settled(t))
            .await
            .expect("the scheduler did not settle");
    }

    async fn job(&self, id: &str) -> CronJob {
        let list = self.engine.cron().list(Default::default()).await.unwrap();
        list.jobs.into_iter().find(|j| j.id == id).unwrap()
    }

    /// Waits for the job's last run to end; answers (status, lane, result).
    async fn last_run(&self, id: &str) -> (RunStatus, String, Option<String>) {
        let run_id = self.job(id).await.last_run_id.expect("the job never fired");
        let r = self.ended(&run_id).await;
        (r.status, r.lane, r.result)
    }

    /// The record of the run `run_id` (as the wire gives it) once it ended.
    async fn ended(&self, run_id: &str) -> RunRecord {
        let run_id = RunId::from_string(run_id);
        let outcome = self.engine.runtime().wait(&run_id, GUARD).await.unwrap();
        assert!(!outcome.wait_timed_out, "the run did not end");
        outcome.record
    }

    /// The transcript of `key`, oldest first; empty when the session does not exist.
    async fn transcript(&self, key: &str) -> Vec<Value> {
        let store = self.engine.store();
        let Some(entry) = store.get(&k(key)).await.unwrap() else {
            return Vec::new();
        };
        let page = store.history(&entry.session_id, 1_000, None).await.unwrap();
        page.messages.into_iter().map(|m| m.message).collect()
    }

    /// The `provenance` of each user message of `key`.
    async fn firings(&self, key: &str) -> Vec<Value> {
        self.transcript(key)
            .await
            .into_iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["provenance"].clone())
            .collect()
    }

    /// The slot (`scheduledAt`) of each firing of `key`.
    async fn slots(&self, key: &str) -> Vec<Value> {
        let firings = self.firings(key).await;
        firings.iter().map(|p| p["scheduledAt"].clone()).collect()
    }

    async fn has_session(&self, key: &str) -> bool {
        self.engine.store().get(&k(key)).await.unwrap().is_some()
    }
}

fn assistant_text(message: &Value) -> String {
    assert_eq!(message["role"], "assistant", "{message}");
    message["content"][0]["text"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn an_expression_job_fires_into_its_cron_session_on_lane_cron() {
    let w = World::new(T0 + 30 * SEC).await;
    assert!(w.engine.cron().is_running());
    let added = w
        .add(json!({"id": "Tick", "schedule": "*/5 * * * *", "message": "@reply tock"}))
        .await;
    assert_eq!(added.id, "tick", "ids are lower-cased");
    assert_eq!(added.session_key, "agent:main:cron:tick");
    assert_eq!(added.next_run_at, Some(T0 + 5 * MIN));

    w.step(T0 + 4 * MIN).await;
    assert!(!w.has_session(&added.session_key).await);

    w.step(T0 + 5 * MIN).await;
    let (status, lane, result) = w.last_run("tick").await;
    assert_eq!(
        (status, lane.as_str(), result.as_deref()),
        (RunStatus::Ok, "cron", Some("tock"))
    );
    let entry = w
        .engine
        .store()
        .get(&k(&added.session_key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(entry.kind, SessionKind::Cron);
    assert_eq!(entry.channel.as_deref(), Some("internal"));
    assert_eq!(entry.agent_id, "main");

    let messages = w.transcript(&added.session_key).await;
    assert_eq!(messages.len(), 2, "{messages:#?}");
    let mut user = messages[0].clone();
    user.as_object_mut().unwrap().remove("timestamp");
    let run = messages[1]["__openclaw"]["runId"].as_str().unwrap();
    assert_eq!(
        user,
        json!({"role": "user", "content": "@reply tock", "provenance": {
            "kind": "cron", "jobId": "tick", "trigger": "schedule", "scheduledAt": T0 + 5 * MIN,
        }, "__openclaw": {"idempotencyKey": format!("{run}:user")}})
    );
    assert_eq!(assistant_text(&messages[1]), "tock");

    let listed = w.job("tick").await;
    assert_eq!(listed.last_slot, Some(T0 + 5 * MIN));
    assert_eq!(listed.next_run_at, Some(T0 + 10 * MIN));
    w.engine.close().await;
}

#[tokio::test]
async fn an_interval_job_fires_once_per_interval_and_six_field_expressions_count_seconds() {
    let w = World::new(T0).await;
    let every = w
        .add(json!({"id": "beat", "schedule": {"every": "30s"}, "message": "ping", "agentId": "echo"}))
        .await;
    assert_eq!(
        (every.schedule_text.as_str(), every.kind.as_str()),
        ("every 30s", "every")
    );
    assert_eq!(every.every_ms, Some(30 * SEC));
    assert_eq!(every.session_key, "agent:echo:cron:beat");
    let seconds = w
        .add(json!({"id": "sec", "schedule": "15 * * * * *", "message": "@reply s"}))
        .await;

    w.step(T0 + 29 * SEC).await;
    assert_eq!(w.firings(&every.session_key).await, Vec::<Value>::new());
    w.step(T0 + 30 * SEC).await;
    assert_eq!(w.last_run("beat").await.2.as_deref(), Some("ping"));
    w.step(T0 + 59 * SEC).await;
    w.step(T0 + 60 * SEC).await;
    w.last_run("beat").await;
    assert_eq!(
        w.slots(&every.session_key).await,
        vec![json!(T0 + 30 * SEC), json!(T0 + 60 * SEC)]
    );
    let messages = w.transcript(&every.session_key).await;
    assert_eq!(
        assistant_text(&messages[1]),
        "ping",
        "the echo agent answered"
    );

    // "15 * * * * *" fires at second 15 of every minute: 0:15 was due at the 0:29 step; the
    // next is 1:15.
    w.last_run("sec").await;
    assert_eq!(
        w.slots(&seconds.session_key).await,
        vec![json!(T0 + 15 * SEC)]
    );
    w.step(T0 + 75 * SEC).await;
    w.last_run("sec").await;
    assert_eq!(
        w.slots(&seconds.session_key).await,
        vec![json!(T0 + 15 * SEC), json!(T0 + 75 * SEC)]
    );
    w.engine.close().await;
}

#[tokio::test]
async fn jobs_persist_across_a_reopen() {
    let w = World::new(T0).await;
    w.add(json!({"id": "a", "schedule": "0 9 * * 1-5", "message": "standup", "deliver": true}))
        .await;
    w.add(
        json!({"id": "b", "schedule": {"everyMs": 7_200_000}, "message": "hi", "agentId": "echo"}),
    )
    .await;
    let before = w.engine.cron().list(Default::default()).await.unwrap();

    let w = w.restart(T0).await;
    let after = w.engine.cron().list(Default::default()).await.unwrap();
    assert_eq!(after, before);
    assert_eq!(
        serde_json::to_value(&after.jobs[1]).unwrap(),
        json!({
            "id": "b", "agentId": "echo", "sessionKey": "agent:echo:cron:b",
            "scheduleText": "every 2h", "kind": "every", "everyMs": 7_200_000, "tz": "UTC",
            "message": "hi", "deliver": false, "createdAt": T0, "nextRunAt": T0 + 120 * MIN,
            // The reference's shape of the same job.
            "name": "b", "enabled": true,
            "schedule": {"kind": "every", "everyMs": 7_200_000},
            "sessionTarget": "isolated", "wakeMode": "now",
            "payload": {"kind": "agentTurn", "message": "hi"},
            "delivery": {"mode": "none"},
            "state": {"nextRunAtMs": T0 + 120 * MIN},
            "createdAtMs": T0,
        })
    );
    assert!(after.jobs[0].deliver);
    assert_eq!(
        after.jobs[0].next_run_at,
        Some(T0 + 9 * 60 * MIN),
        "2030-01-01 is a Tuesday"
    );
    w.engine.close().await;
}

#[tokio::test]
async fn a_fired_slot_does_not_fire_again_after_a_restart() {
    let w = World::new(T0).await;
    let job = w
        .add(json!({"id": "j", "schedule": "every 1m", "message": "@reply x"}))
        .await;
    w.step(T0 + MIN).await;
    w.last_run("j").await;

    // Back up within the same slot: S = T0+1m is still the newest slot, and it was fired.
    let w = w.restart(T0 + MIN + 30 * SEC).await;
    w.step(T0 + MIN + 30 * SEC).await;
    assert_eq!(w.slots(&job.session_key).await, vec![json!(T0 + MIN)]);
    // The schedule goes on.
    w.step(T0 + 2 * MIN).await;
    w.last_run("j").await;
    assert_eq!(
        w.slots(&job.session_key).await,
        vec![json!(T0 + MIN), json!(T0 + 2 * MIN)]
    );
    w.engine.close().await;
}

#[tokio::test]
async fn a_slot_whose_run_was_stored_before_a_crash_is_not_run_twice() {
    let w = World::new(T0).await;
    let job = w
        .add(json!({"id": "k", "schedule": "every 1m", "message": "@reply x"}))
        .await;
    // What a stop between the two steps of a firing leaves: the slot's run is stored under its
    // idempotency key, but the job's last_slot was not raised.
    let engine = &w.engine;
    let key = engine.resolver().canonical(&job.session_key, None).unwrap();
    let provenance = Provenance {
        kind: "cron".into(),
        ..Provenance::default()
    };
    let mut request =
        RunRequest::new(key.clone(), Lane::Cron).with_message("@reply x", Some(provenance));
    request.create = Some(engine.resolver().new_session(&key));
    request.idempotency_key = Some(format!("cron:k:{}", T0 + MIN));
    let first = engine.runtime().submit(request).await.unwrap();
    engine.runtime().wait(&first.run_id, GUARD).await.unwrap();

    let w = w.restart(T0 + MIN + SEC).await;
    w.step(T0 + MIN + SEC).await;
    let listed = w.job("k").await;
    assert_eq!(listed.last_slot, Some(T0 + MIN));
    assert_eq!(listed.last_run_id.as_deref(), Some(first.run_id.as_str()));
    assert_eq!(w.firings(&job.session_key).await.len(), 1);
    w.engine.close().await;
}

#[tokio::test]
async fn missed_slots_fire_once_for_the_newest_then_follow_the_schedule() {
    let w = World::new(T0).await;
    let every = w
        .add(json!({"id": "m", "schedule": "every 1m", "message": "@reply m"}))
        .await;
    let hourly = w
        .add(json!({"id": "h", "schedule": "@hourly", "message": "@reply h"}))
        .await;

    // Down for 3h10m30s: 190 interval slots and three hourly slots were missed.
    let back = T0 + 190 * MIN + 30 * SEC;
    let w = w.restart(back).await;
    w.step(back).await;
    w.last_run("m").await;
    w.last_run("h").await;
    assert_eq!(
        w.slots(&every.session_key).await,
        vec![json!(T0 + 190 * MIN)]
    );
    assert_eq!(
        w.slots(&hourly.session_key).await,
        vec![json!(T0 + 180 * MIN)]
    );
    assert_eq!(w.job("m").await.next_run_at, Some(T0 + 191 * MIN));
    assert_eq!(w.job("h").await.next_run_at, Some(T0 + 240 * MIN));

    w.step(T0 + 191 * MIN).await;
    w.last_run("m").await;
    assert_eq!(
        w.slots(&every.session_key).await,
        vec![json!(T0 + 190 * MIN), json!(T0 + 191 * MIN)]
    );
    assert_eq!(w.firings(&hourly.session_key).await.len(), 1);
    w.engine.close().await;
}

#[tokio::test]
async fn bad_input_is_refused_with_what_is_accepted_and_nothing_is_stored() {
    let w = World::new(T0).await;
    let accepted = switchboard_core::cron::schedule::ACCEPTED;
    let cases = [
        (
            json!({"schedule": "61 * * * *", "message": "x"}),
            format!(
                "schedule: \"61 * * * *\" is not a valid cron expression: the minute field \
                 \"61\" is not valid (minute: 0-59, with , - / *); {accepted}"
            ),
        ),
        (
            json!({"schedule": "* * * *", "message": "x"}),
            format!(
                "schedule: \"* * * *\" is not a valid cron expression: it has 4 fields; {accepted}"
            ),
        ),
        (
            json!({"schedule": "0 0 32 * *", "message": "x"}),
            format!(
                "schedule: \"0 0 32 * *\" is not a valid cron expression: the day-of-month \
                 field \"32\" is not valid (day-of-month: 1-31, L, W, with , - / *); {accepted}"
            ),
        ),
        (
            json!({"schedule": "0 0 30 2 *", "message": "x"}),
            format!("schedule: \"0 0 30 2 *\" matches no date, so it would never fire; {accepted}"),
        ),
        (
            json!({"schedule": "every 500ms", "message": "x"}),
            format!("schedule: the interval 500ms is below the minimum of 1s; {accepted}"),
        ),
        (
            json!({"schedule": {"everyMs": 10}, "message": "x"}),
            format!("schedule: the interval 10ms is below the minimum of 1s; {accepted}"),
        ),
        (
            json!({"schedule": "every now and then", "message": "x"}),
            format!("schedule: \"every now and then\" is not an interval; {accepted}"),
        ),
        (
            json!({"message": "x"}),
            format!("schedule: missing; {accepted}"),
        ),
        (
            json!({"schedule": "every 1m", "message": "  "}),
            "message: empty; expected the text the agent receives at each firing".to_string(),
        ),
        (
            json!({"schedule": "every 1m", "message": "x", "agentId": "ghost"}),
            "agentId: unknown agent \"ghost\"; expected one of the configured agents: main, echo"
                .to_string(),
        ),
        (
            json!({"id": "no spaces!", "schedule": "every 1m", "message": "x"}),
            "id: \"no spaces!\" is not a valid job id; expected 1–64 characters a-z, 0-9, '-' \
             or '_', starting with a letter or digit (or no id: one is generated)"
                .to_string(),
        ),
        (
            json!({"schedule": "0 9 * * *", "message": "x", "tz": "Europe/Paris"}),
            "tz: \"Europe/Paris\" is not supported; schedules are evaluated in UTC (expected \
             \"UTC\" or no tz)"
                .to_string(),
        ),
    ];
    for (params, message) in cases {
        let e = w.add_err(params.clone()).await;
        assert_eq!(e.code(), ErrorCode::InvalidRequest, "{params}");
        assert_eq!(e.to_string(), message, "{params}");
    }
    assert_eq!(
        w.engine.cron().list(Default::default()).await.unwrap().jobs,
        Vec::new()
    );

    // A duplicate id is refused and the first job is left as it was.
    let first = w
        .add(json!({"id": "dup", "schedule": "every 1m", "message": "one"}))
        .await;
    let e = w
        .add_err(json!({"id": "DUP", "schedule": "every 5m", "message": "two"}))
        .await;
    assert_eq!(e.code(), ErrorCode::InvalidRequest);
    assert_eq!(
        e.to_string(),
        "id: a cron job with id \"dup\" already exists; pick another id, or remove it first (cron.remove)"
    );
    assert_eq!(
        w.engine.cron().list(Default::default()).await.unwrap().jobs,
        vec![first]
    );
    w.engine.close().await;
}

#[tokio::test]
async fn cron_disabled_keeps_jobs_but_never_fires_them() {
    let mut config = config();
    config.cron.enabled = false;
    let w = World::with(T0, config).await;
    assert!(!w.engine.cron().start(), "the scheduler does not start");
    assert!(!w.engine.cron().is_running());
    let job = w
        .add(json!({"id": "off", "schedule": "every 1s", "message": "@reply no"}))
        .await;
    w.step(T0 + 10 * MIN).await;
    assert!(!w.has_session(&job.session_key).await);
    let list = w.engine.cron().list(Default::default()).await.unwrap();
    assert!(!list.enabled);
    assert_eq!(list.jobs.len(), 1);
    assert_eq!(list.jobs[0].last_slot, None);

    // cron.run is an operator's explicit act: it still runs the job.
    let run = w.engine.cron().run("off").await.unwrap();
    let ended = w.ended(&run.run_id).await;
    assert_eq!((ended.status, ended.lane.as_str()), (RunStatus::Ok, "cron"));
    assert_eq!(w.firings(&job.session_key).await.len(), 1);
    w.engine.close().await;
}

#[tokio::test]
async fn run_now_fires_outside_the_schedule_and_remove_stops_a_job() {
    let w = World::new(T0).await;
    let job = w
        .add(json!({"id": "r", "schedule": "every 1h", "message": "@reply now"}))
        .await;
    let run = w.engine.cron().run("r").await.unwrap();
    assert_eq!(run.session_key, "agent:main:cron:r");
    let ended = w.ended(&run.run_id).await;
    assert_eq!(ended.result.as_deref(), Some("now"));
    assert_eq!(
        w.firings(&job.session_key).await,
        vec![json!({"kind": "cron", "jobId": "r", "trigger": "manual"})]
    );
    let listed = w.job("r").await;
    assert_eq!(listed.last_run_id.as_deref(), Some(run.run_id.as_str()));
    assert_eq!(listed.last_slot, None, "a manual run takes no slot");
    assert_eq!(listed.next_run_at, Some(T0 + 60 * MIN));

    let removed = w.engine.cron().remove("r").await.unwrap();
    assert_eq!((removed.id.as_str(), removed.removed), ("r", true));
    w.step(T0 + 5 * 60 * MIN).await;
    assert_eq!(
        w.firings(&job.session_key).await.len(),
        1,
        "no firing after remove"
    );
    assert!(
        w.engine
            .cron()
            .list(Default::default())
            .await
            .unwrap()
            .jobs
            .is_empty()
    );

    for e in [
        w.engine.cron().remove("r").await.unwrap_err(),
        w.engine.cron().run("r").await.unwrap_err(),
    ] {
        assert_eq!(e.code(), ErrorCode::NotFound);
        assert_eq!(
            e.to_string(),
            "cron job not found: r (cron.list shows the jobs)"
        );
    }
    w.engine.close().await;
}

/// What `openclaw cron add nightly --every 10m --message …` sends, exactly.
#[tokio::test]
async fn a_job_added_as_the_reference_cli_adds_it_fires_every_ten_minutes() {
    let w = World::new(T0).await;
    let job = w
        .add(json!({
            "name": "nightly", "enabled": true,
            "schedule": {"kind": "every", "everyMs": 600_000},
            "sessionTarget": "isolated", "wakeMode": "now",
            "payload": {"kind": "agentTurn", "message": "@reply nightly report"},
            "delivery": {"mode": "announce", "channel": "last"}
        }))
        .await;
    assert_eq!(
        (job.id.as_str(), job.next_run_at),
        ("nightly", Some(T0 + 10 * MIN))
    );
    w.step(T0 + 9 * MIN).await;
    assert_eq!(
        w.job("nightly").await.last_run_id,
        None,
        "not before its slot"
    );
    w.step(T0 + 10 * MIN).await;
    let (status, lane, result) = w.last_run("nightly").await;
    assert_eq!(
        (status, lane.as_str(), result.as_deref()),
        (RunStatus::Ok, "cron", Some("nightly report"))
    );
    let first = w.job("nightly").await.last_run_id;
    w.step(T0 + 20 * MIN).await;
    assert_ne!(
        w.job("nightly").await.last_run_id,
        first,
        "the next slot fires too"
    );
    w.last_run("nightly").await;
    let fired = w.transcript("agent:main:cron:nightly").await;
    assert_eq!(fired.len(), 4, "two firings, each a message and its reply");
    w.engine.close().await;
}
