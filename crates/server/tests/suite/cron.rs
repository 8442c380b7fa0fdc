//! `cron.add` / `cron.list` / `cron.remove` / `cron.run` over the real WebSocket gateway, bad
//! input answered with `INVALID_REQUEST` and nothing stored, and one job fired by the scheduler
//! on the system clock (a 1s interval; the wait is a hang guard, no timing is asserted).

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_protocol::ErrorCode;

use super::harness::TestGateway;

const GUARD: Duration = Duration::from_secs(60);

/// A listed job with the fields that depend on the clock taken out.
fn without_times(mut job: Value) -> Value {
    let map = job.as_object_mut().unwrap();
    for field in [
        "createdAt",
        "nextRunAt",
        "lastFiredAt",
        "createdAtMs",
        "state",
    ] {
        map.remove(field);
    }
    job
}

#[tokio::test]
async fn add_list_run_and_remove_over_the_websocket() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    let methods: Vec<&str> = client.hello["features"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for method in ["cron.add", "cron.list", "cron.remove", "cron.run"] {
        assert!(methods.contains(&method), "hello-ok advertises {method}");
    }

    let added = client
        .request(
            "cron.add",
            json!({"id": "nightly", "schedule": "0 3 * * *", "message": "@reply done", "deliver": true}),
        )
        .await
        .unwrap();
    // The stored job itself, as the reference answers (`jq .id` is its id).
    assert_eq!(
        without_times(added.clone()),
        json!({
            "id": "nightly", "agentId": "main", "sessionKey": "agent:main:cron:nightly",
            "scheduleText": "0 3 * * *", "kind": "cron", "tz": "UTC", "message": "@reply done",
            "deliver": true, "name": "nightly", "enabled": true,
            "schedule": {"kind": "cron", "expr": "0 3 * * *", "tz": "UTC"},
            "sessionTarget": "isolated", "wakeMode": "now",
            "payload": {"kind": "agentTurn", "message": "@reply done"},
            "delivery": {"mode": "announce"},
            "deliveryPreview": {"label": "announce", "detail": "the job session's route"},
        })
    );
    assert!(added["nextRunAt"].as_i64().unwrap() > added["createdAt"].as_i64().unwrap());
    let generated = client
        .request(
            "cron.add",
            json!({"schedule": {"every": "2h"}, "message": "hi"}),
        )
        .await
        .unwrap();
    let generated_id = generated["id"].as_str().unwrap().to_string();
    assert_eq!(generated_id.len(), 36, "a UUID: {generated_id}");
    assert_eq!(generated["everyMs"], 7_200_000);

    let list = client.request("cron.list", Value::Null).await.unwrap();
    assert_eq!(list["enabled"], true);
    let mut ids: Vec<&str> = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut expected = vec!["nightly", generated_id.as_str()];
    expected.sort();
    assert_eq!(ids, expected);

    // Run now, then wait for the reply with agent.wait.
    let run = client
        .request("cron.run", json!({"id": "nightly"}))
        .await
        .unwrap();
    assert_eq!(
        (
            run["ok"].clone(),
            run["status"].clone(),
            run["sessionKey"].clone()
        ),
        (
            json!(true),
            json!("started"),
            json!("agent:main:cron:nightly")
        )
    );
    let waited = client
        .request(
            "agent.wait",
            json!({"runId": run["runId"], "timeoutMs": 60_000}),
        )
        .await
        .unwrap();
    assert_eq!(
        (waited["status"].clone(), waited["reply"].clone()),
        (json!("ok"), json!("done"))
    );
    let history = client
        .request(
            "chat.history",
            json!({"sessionKey": "agent:main:cron:nightly"}),
        )
        .await
        .unwrap();
    assert_eq!(history["messages"][0]["provenance"]["kind"], "cron");
    let rows = client
        .request("sessions.list", json!({"kinds": "cron"}))
        .await
        .unwrap();
    assert_eq!(rows["sessions"][0]["key"], "agent:main:cron:nightly");
    assert_eq!(rows["sessions"][0]["channel"], "internal");

    let removed = client
        .request("cron.remove", json!({"id": "nightly"}))
        .await
        .unwrap();
    assert_eq!(
        removed,
        json!({"ok": true, "id": "nightly", "removed": true})
    );
    let list = client.request("cron.list", json!({})).await.unwrap();
    assert_eq!(list["jobs"].as_array().unwrap().len(), 1);
    client.close().await;

    let gone = gw.call_err("cron.remove", json!({"id": "nightly"})).await;
    assert_eq!(gone.code, ErrorCode::NotFound);
    assert_eq!(
        gone.message,
        "cron job not found: nightly (cron.list shows the jobs)"
    );
    gw.stop().await;
}

#[tokio::test]
async fn bad_cron_params_are_invalid_requests_and_nothing_is_stored() {
    let gw = TestGateway::start().await;
    for (params, starts_with) in [
        (
            json!({"schedule": "*/0 * * * *", "message": "x"}),
            "schedule: \"*/0 * * * *\" is not a valid cron expression",
        ),
        (
            json!({"schedule": "every 999ms", "message": "x"}),
            "schedule: the interval 999ms is below the minimum of 1s; expected a cron expression",
        ),
        (
            json!({"schedule": "every 1m", "message": ""}),
            "message: empty; expected the text the agent receives",
        ),
        (
            json!({"schedule": "every 1m", "message": "x", "agentId": "nobody"}),
            "agentId: unknown agent \"nobody\"; expected one of the configured agents: main",
        ),
        (
            json!({"schedule": 5, "message": "x"}),
            "schedule: 5 is not a schedule; expected a cron expression",
        ),
        (
            json!({"schedule": "every 1m", "message": 5}),
            "cron.add: invalid params at message: invalid type",
        ),
        (
            json!({"schedule": "every 1m", "message": "x", "deliver": "yes"}),
            "cron.add: invalid params at deliver: invalid type",
        ),
    ] {
        let error = gw.call_err("cron.add", params.clone()).await;
        assert_eq!(error.code, ErrorCode::InvalidRequest, "{params}");
        assert!(
            error.message.starts_with(starts_with),
            "{params}: {}",
            error.message
        );
    }
    gw.call(
        "cron.add",
        json!({"id": "once", "schedule": "every 1m", "message": "x"}),
    )
    .await;
    let duplicate = gw
        .call_err(
            "cron.add",
            json!({"id": "once", "schedule": "every 1m", "message": "y"}),
        )
        .await;
    assert_eq!(duplicate.code, ErrorCode::InvalidRequest);
    assert_eq!(
        duplicate.message,
        "id: a cron job with id \"once\" already exists; pick another id, or remove it first (cron.remove)"
    );
    let missing = gw.call_err("cron.run", json!({})).await;
    assert_eq!(missing.code, ErrorCode::InvalidRequest);
    assert_eq!(
        missing.message,
        "cron.run: invalid params: missing field `id`"
    );

    let list = gw.call("cron.list", json!({})).await;
    let jobs = list["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["message"], "x");

    let unknown = gw.call_err("cron.udpate", json!({})).await;
    assert!(
        unknown
            .message
            .starts_with("unknown method: cron.udpate; did you mean cron.update?"),
        "{}",
        unknown.message
    );
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn the_scheduler_fires_a_job_on_the_system_clock() {
    let gw = TestGateway::start().await;
    assert!(gw.engine.cron().start());
    gw.call(
        "cron.add",
        json!({"id": "fast", "schedule": "every 1s", "message": "@reply beat"}),
    )
    .await;
    let run_id = tokio::time::timeout(GUARD, async {
        loop {
            let list = gw.call("cron.list", json!({})).await;
            if let Some(run_id) = list["jobs"][0]["lastRunId"].as_str() {
                return run_id.to_string();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the job never fired");
    let waited = gw
        .call("agent.wait", json!({"runId": run_id, "timeoutMs": 60_000}))
        .await;
    assert_eq!(waited["reply"], "beat");
    assert_eq!(waited["sessionKey"], "agent:main:cron:fast");
    gw.stop().await;
}

/// What OpenClaw's `openclaw cron add <name> --every <d> --message <m>` sends.
fn reference_add(name: &str, every_ms: i64, message: &str) -> Value {
    json!({
        "name": name, "enabled": true,
        "schedule": {"kind": "every", "everyMs": every_ms},
        "sessionTarget": "isolated", "wakeMode": "now",
        "payload": {"kind": "agentTurn", "message": message},
        "delivery": {"mode": "announce"}
    })
}

#[tokio::test]
async fn the_reference_clients_cron_calls_add_get_page_and_fire() {
    let gw = TestGateway::start().await;
    assert!(gw.engine.cron().start());
    let added = gw
        .call("cron.add", reference_add("nightly", 600_000, "report"))
        .await;
    let job = &added;
    assert_eq!(
        (
            job["id"].clone(),
            job["name"].clone(),
            job["schedule"].clone(),
            job["payload"].clone(),
            job["delivery"].clone(),
            job["sessionKey"].clone()
        ),
        (
            json!("nightly"),
            json!("nightly"),
            json!({"kind": "every", "everyMs": 600_000}),
            json!({"kind": "agentTurn", "message": "report"}),
            json!({"mode": "announce"}),
            json!("agent:main:cron:nightly")
        )
    );
    assert!(job["state"]["nextRunAtMs"].as_i64().unwrap() > job["createdAtMs"].as_i64().unwrap());
    // The CLI reads cron.status after an add (a disabled scheduler gets a warning) and looks
    // jobs up with cron.get; a missing one is told by "cron job not found: <id>".
    let status = gw.call("cron.status", json!({})).await;
    assert_eq!(
        (status["enabled"].clone(), status["jobs"].clone()),
        (json!(true), json!(1))
    );
    assert_eq!(
        status["nextWakeAtMs"], job["state"]["nextRunAtMs"],
        "{status}"
    );
    assert_eq!(
        gw.call("cron.get", json!({"id": "nightly"})).await["id"],
        "nightly"
    );
    let missing = gw.call_err("cron.get", json!({"id": "nope"})).await;
    assert_eq!(missing.code, ErrorCode::InvalidRequest);
    assert!(
        missing.message.starts_with("cron job not found: nope"),
        "{}",
        missing.message
    );

    // A second job by the same name gets its own id; a disabled one is listed only on request.
    let twin = gw
        .call("cron.add", reference_add("nightly", 600_000, "again"))
        .await;
    assert_eq!(twin["id"].as_str().unwrap().len(), 36);
    let mut off = reference_add("paused", 600_000, "x");
    off["enabled"] = json!(false);
    gw.call("cron.add", off).await;
    let page = gw
        .call(
            "cron.list",
            json!({"includeDisabled": false, "limit": 1, "offset": 0}),
        )
        .await;
    assert_eq!(
        (
            page["total"].clone(),
            page["jobs"].as_array().unwrap().len(),
            page["hasMore"].clone(),
            page["nextOffset"].clone()
        ),
        (json!(2), 1, json!(true), json!(1))
    );
    let last = gw
        .call(
            "cron.list",
            json!({"includeDisabled": false, "limit": 1, "offset": 1}),
        )
        .await;
    assert_eq!(
        (last["hasMore"].clone(), last["nextOffset"].clone()),
        (json!(false), Value::Null)
    );
    assert_eq!(page["snapshotRevision"], last["snapshotRevision"]);
    let all = gw.call("cron.list", json!({"includeDisabled": true})).await;
    assert_eq!(all["total"], 3);
    assert_ne!(all["snapshotRevision"], page["snapshotRevision"]);

    // A job added this way fires, and its state tells the last run's outcome.
    gw.call("cron.add", reference_add("beat", 1_000, "@reply tick"))
        .await;
    let state = tokio::time::timeout(GUARD, async {
        loop {
            let job = gw.call("cron.get", json!({"id": "beat"})).await;
            if job["state"]["lastRunStatus"].is_string() {
                return job["state"].clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the job never fired");
    assert_eq!(state["lastRunStatus"], "ok");
    assert!(state["lastRunAtMs"].as_i64().is_some(), "{state}");

    // `openclaw cron run` sends a mode and reads `enqueued`.
    let ran = gw
        .call("cron.run", json!({"id": "nightly", "mode": "force"}))
        .await;
    assert_eq!(
        (ran["ok"].clone(), ran["enqueued"].clone()),
        (json!(true), json!(true))
    );

    let refused = gw
        .call_err(
            "cron.add",
            json!({"name": "x", "schedule": {"kind": "at", "at": "2030-01-01T00:00:00Z"},
                "payload": {"kind": "agentTurn", "message": "x"}}),
        )
        .await;
    assert!(refused.message.contains("one-shot"), "{}", refused.message);
    gw.stop().await;
}

#[tokio::test]
async fn the_automations_page_reads_every_jobs_runs_filtered_and_paged() {
    let gw = TestGateway::start().await;
    for (id, message) in [
        ("daily", "@reply daily digest"),
        ("weekly", "@reply weekly report"),
    ] {
        let add = json!({"id": id, "schedule": "0 3 * * *", "message": message});
        gw.call("cron.add", add).await;
    }
    let mut runs = Vec::new();
    for id in ["daily", "weekly", "daily"] {
        let ran = gw.call("cron.run", json!({"id": id})).await;
        let wait = json!({"runId": ran["runId"], "timeoutMs": 10_000});
        assert_eq!(gw.call("agent.wait", wait).await["status"], "ok");
        runs.push(ran["runId"].as_str().unwrap().to_string());
    }
    // What the Control UI's Automations page sends: every job's runs, newest first.
    let page = json!({"scope": "all", "limit": 50, "offset": 0, "status": "all",
        "sortDir": "desc"});
    let all = gw.call("cron.runs", page).await;
    let ids: Vec<&str> = (all["entries"].as_array().unwrap().iter())
        .map(|e| e["runId"].as_str().unwrap())
        .collect();
    let newest_first: Vec<&str> = runs.iter().rev().map(String::as_str).collect();
    assert_eq!(ids, newest_first);
    let first = &all["entries"][0];
    assert_eq!(
        (
            &first["jobId"],
            &first["jobName"],
            &first["status"],
            &first["summary"]
        ),
        (
            &json!("daily"),
            &json!("daily"),
            &json!("ok"),
            &json!("daily digest")
        )
    );
    assert_eq!(first["deliveryStatus"], "not-requested");
    assert!(first["ts"].as_i64().is_some());
    assert_eq!((&all["total"], &all["hasMore"]), (&json!(3), &json!(false)));
    // One job (the CLI's `cron runs --id`), a page of one, a search, a status.
    let daily = gw.call("cron.runs", json!({"id": "daily"})).await;
    assert_eq!(daily["total"], 2);
    let paged = gw.call("cron.runs", json!({"limit": 1, "offset": 1})).await;
    assert_eq!(
        (&paged["entries"][0]["runId"], &paged["nextOffset"]),
        (&json!(runs[1]), &json!(2))
    );
    let found = gw.call("cron.runs", json!({"query": "WEEKLY"})).await;
    assert_eq!(found["total"], 1);
    let failed = gw.call("cron.runs", json!({"statuses": ["error"]})).await;
    assert_eq!(failed["total"], 0);
    let oldest = gw
        .call("cron.runs", json!({"sortDir": "asc", "limit": 1}))
        .await;
    assert_eq!(oldest["entries"][0]["runId"], json!(runs[0]));
    for (params, says) in [
        (json!({"scope": "job"}), "scope \"job\" needs id"),
        (
            json!({"status": "fine"}),
            "accepted: all, ok, error, skipped",
        ),
        (json!({"limit": 500}), "1 to 200"),
        (json!({"sortDir": "up"}), "accepted: desc, asc"),
    ] {
        let error = gw.call_err("cron.runs", params.clone()).await;
        assert!(error.message.contains(says), "{params}: {}", error.message);
    }
    gw.stop().await;
}
