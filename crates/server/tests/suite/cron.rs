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
    for field in ["createdAt", "nextRunAt", "lastFiredAt"] {
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
    assert_eq!(added["ok"], true);
    assert_eq!(
        without_times(added["job"].clone()),
        json!({
            "id": "nightly", "agentId": "main", "sessionKey": "agent:main:cron:nightly",
            "schedule": "0 3 * * *", "kind": "cron", "tz": "UTC", "message": "@reply done",
            "deliver": true,
        })
    );
    assert!(
        added["job"]["nextRunAt"].as_i64().unwrap() > added["job"]["createdAt"].as_i64().unwrap()
    );
    let generated = client
        .request(
            "cron.add",
            json!({"schedule": {"every": "2h"}, "message": "hi"}),
        )
        .await
        .unwrap();
    let generated_id = generated["job"]["id"].as_str().unwrap().to_string();
    assert_eq!(generated_id.len(), 36, "a UUID: {generated_id}");
    assert_eq!(generated["job"]["everyMs"], 7_200_000);

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

    let unknown = gw.call_err("cron.frobnicate", json!({})).await;
    assert!(
        unknown
            .message
            .contains("cron.add, cron.list, cron.remove, cron.run"),
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
