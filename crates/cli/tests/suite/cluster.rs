//! Several `switchboard gateway` processes on one PostgreSQL (docs/scale-out.md): a run sent
//! through one is waited for, read and streamed through the others; a gateway killed with
//! SIGKILL has its work taken up by another; sub-agents spawned through three gateways are each
//! announced exactly once; a cron job fires once per slot across the cluster. The database is
//! the matrix's (`SWITCHBOARD_TEST_DATABASE_URL`) or a cluster the test kit starts; a machine
//! without PostgreSQL prints NOT RUN.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::postgres::{TestDatabase, database, not_run};

use super::process::{
    GatewayProcess, WEBHOOK_GROUP, announce_failed_once, down_webhook, first_delivered,
    spawn_from_webhook_group, until,
};

/// The database for `test`, or `None` after saying why it cannot run.
fn shared_database(test: &str) -> Option<TestDatabase> {
    match database() {
        Ok(db) => Some(db),
        Err(why) => {
            not_run(test, &why);
            None
        }
    }
}

/// A gateway of the cluster: its own state dir, the shared database.
fn gateway(db: &TestDatabase, home: &Path) -> GatewayProcess {
    gateway_with(db, home, &json!({}))
}

/// A gateway of the cluster with more settings.
fn gateway_with(db: &TestDatabase, home: &Path, settings: &Value) -> GatewayProcess {
    let mut config = settings.clone();
    config["store"] = json!({"kind": "postgres", "url": db.url, "schema": db.schema});
    std::fs::write(home.join("config.json5"), config.to_string()).unwrap();
    GatewayProcess::start(home)
}

async fn connect(gateway: &GatewayProcess) -> GatewayClient {
    GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap()
}

async fn history(client: &mut GatewayClient, key: &str) -> Vec<Value> {
    let history = client
        .request("chat.history", json!({"sessionKey": key, "limit": 1000}))
        .await
        .unwrap();
    history["messages"].as_array().unwrap().clone()
}

fn texts(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            content => content[0]["text"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_sent_through_one_gateway_is_waited_for_read_and_streamed_through_the_others() {
    let test = "a_run_sent_through_one_gateway_is_waited_for_read_and_streamed_through_the_others";
    let Some(db) = shared_database(test) else {
        return;
    };
    let homes = [(); 3].map(|()| tempfile::tempdir().unwrap());
    let gateways: Vec<GatewayProcess> = homes.iter().map(|h| gateway(&db, h.path())).collect();
    let mut a = connect(&gateways[0]).await;
    let mut b = connect(&gateways[1]).await;
    let mut c = connect(&gateways[2]).await;
    c.request("sessions.subscribe", json!({"all": true}))
        .await
        .unwrap();

    // Sent through A (A runs it: it accepted it); B waits for it and reads the reply.
    let sent = a
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": "@delay 1500\n@reply pong-1", "idempotencyKey": "one"}),
        )
        .await
        .unwrap();
    let run_id = sent["runId"].as_str().unwrap().to_string();
    let waited = b
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 60_000}))
        .await
        .unwrap();
    assert_eq!(
        (&waited["status"], &waited["reply"], &waited["waitTimedOut"]),
        (&json!("ok"), &json!("pong-1"), &Value::Null),
        "{waited}"
    );
    let seen = texts(&history(&mut b, "main").await);
    assert_eq!(
        seen[seen.len() - 2..],
        ["@delay 1500\n@reply pong-1", "pong-1"]
    );
    // C, subscribed to every session, saw the run's final chat event though A ran it.
    let last = until(async || {
        let event = tokio::time::timeout(Duration::from_secs(1), c.next_event()).await;
        let event = event.ok()?.ok()?;
        let p = &event.payload;
        (event.event == "chat" && p["runId"] == run_id.as_str() && p["state"] == "final")
            .then(|| p.clone())
    })
    .await;
    assert!(last.to_string().contains("pong-1"), "{last}");

    // The other way: sent through B, waited for through A.
    let sent = b
        .request(
            "agent",
            json!({"sessionKey": "main", "message": "@reply pong-2"}),
        )
        .await
        .unwrap();
    let run_id = sent["runId"].as_str().unwrap();
    let waited = a
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 60_000}))
        .await
        .unwrap();
    assert_eq!(waited["reply"], "pong-2", "{waited}");

    // An abort sent through C stops the run A runs.
    let sent = a
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": "@delay 60000\n@reply never"}),
        )
        .await
        .unwrap();
    let run_id = sent["runId"].as_str().unwrap().to_string();
    super::process::wait_running(&mut b, &run_id).await;
    let aborted = c
        .request("chat.abort", json!({"sessionKey": "main", "runId": run_id}))
        .await
        .unwrap();
    assert!(aborted.to_string().contains(&run_id), "{aborted}");
    let ended = b
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 60_000}))
        .await
        .unwrap();
    assert_eq!(ended["status"], "aborted", "{ended}");
    for gateway in gateways {
        gateway.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_the_gateway_running_a_turn_has_another_finish_it_with_one_answer() {
    let test = "sigterm_to_the_gateway_running_a_turn_has_another_finish_it_with_one_answer";
    let Some(db) = shared_database(test) else {
        return;
    };
    let homes = [(); 3].map(|()| tempfile::tempdir().unwrap());
    // A's grace is shorter than the turn: a deploy that does not wait for it.
    let short = json!({"gateway": {"shutdownGraceSeconds": 1}});
    let a = gateway_with(&db, homes[0].path(), &short);
    let b = gateway(&db, homes[1].path());
    let c = gateway(&db, homes[2].path());
    let mut client_a = connect(&a).await;
    let message = "@slow 1000\n@reply finished on another gateway";
    let sent = client_a
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": message}),
        )
        .await
        .unwrap();
    let run_id = sent["runId"].as_str().unwrap().to_string();
    super::process::wait_running(&mut client_a, &run_id).await;
    client_a.close().await;
    let status = a.terminate();
    assert!(status.success(), "exit status after SIGTERM: {status}");

    // B or C takes the stopped gateway's run up and resumes it: one answer, the run's own.
    let mut client_b = connect(&b).await;
    let waited = client_b
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 60_000}))
        .await
        .unwrap();
    assert_eq!(
        (&waited["status"], &waited["reply"]),
        (&json!("ok"), &json!("finished on another gateway")),
        "{waited}"
    );
    let seen = texts(&history(&mut client_b, "main").await);
    assert_eq!(seen, [message, "finished on another gateway"]);
    b.stop();
    c.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateways_running_child_is_resumed_by_another_and_announced_once() {
    let test = "a_killed_gateways_running_child_is_resumed_by_another_and_announced_once";
    let Some(db) = shared_database(test) else {
        return;
    };
    let (home_a, home_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = gateway(&db, home_a.path());
    let b = gateway(&db, home_b.path());
    let mut client_a = connect(&a).await;
    let spawned = client_a
        .request(
            "tools.invoke",
            json!({"sessionKey": "main", "tool": "sessions_spawn",
                   "args": {"task": "@slow 1000\n@reply finished on another gateway"}}),
        )
        .await
        .unwrap();
    assert_eq!(spawned["result"]["status"], "accepted", "{spawned}");
    let run_id = spawned["result"]["runId"].as_str().unwrap().to_string();
    super::process::wait_running(&mut client_a, &run_id).await;
    a.kill_9();

    // B takes it up once A's heartbeat is older than the lease: the child's run is resumed
    // there and answers (B waits for it), and main gets exactly one announce of its result.
    let mut client_b = connect(&b).await;
    let ended = client_b
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 120_000}))
        .await
        .unwrap();
    assert_eq!(ended["status"], "ok", "{ended}");
    let announces = until(async || {
        let found: Vec<Value> = history(&mut client_b, "main")
            .await
            .into_iter()
            .filter(|m| m["provenance"]["kind"] == "subagent-announce")
            .collect();
        (!found.is_empty()).then_some(found)
    })
    .await;
    assert_eq!(announces.len(), 1, "{announces:?}");
    let text = texts(&announces)[0].clone();
    assert!(text.starts_with("Status: success"), "{text}");
    assert!(text.contains("finished on another gateway"), "{text}");
    // Nothing more arrives later.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let again = history(&mut client_b, "main").await;
    let count = again
        .iter()
        .filter(|m| m["provenance"]["kind"] == "subagent-announce")
        .count();
    assert_eq!(count, 1);
    b.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_between_a_childs_end_and_its_announce_has_it_announced_once_by_another() {
    let test =
        "a_gateway_killed_between_a_childs_end_and_its_announce_has_it_announced_once_by_another";
    let Some(db) = shared_database(test) else {
        return;
    };
    // The requester is a webhook group whose receiver is down: the announce waits in the outbox.
    let (addr, webhook) = down_webhook();
    let (home_a, home_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = gateway_with(&db, home_a.path(), &webhook);
    let b = gateway_with(&db, home_b.path(), &webhook);
    let group = WEBHOOK_GROUP;
    let mut client_a = connect(&a).await;
    let spawned = spawn_from_webhook_group(&a, &mut client_a).await;
    assert_eq!(spawned["result"]["status"], "accepted", "{spawned}");
    // The child finished; its announce is in the outbox and failed at least once: A dies.
    announce_failed_once(&mut client_a).await;
    a.kill_9();

    // The receiver comes back; B delivers the announce, once.
    let posts = super::process::webhook_receiver(addr).await;
    let mut client_b = connect(&b).await;
    let delivered = first_delivered(&mut client_b).await;
    assert_eq!(delivered["kind"], "subagent-announce");
    // Once A's lease is over (10 s) B takes up A's sub-agent record too (every 3 s), and does
    // not announce it a second time: a window for a wrong second announce, not a timing.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let received = posts.lock().unwrap().clone();
    assert_eq!(received.len(), 1, "{received:?}");
    assert!(
        received[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Status: success\n")
    );
    let list = client_b
        .request("deliveries.list", json!({"sessionKey": group}))
        .await
        .unwrap();
    let announces = list["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "subagent-announce")
        .count();
    assert_eq!(announces, 1, "{list}");
    b.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawns_spread_over_three_gateways_are_each_announced_exactly_once() {
    const SPAWNS: usize = 1_000;
    let test = "spawns_spread_over_three_gateways_are_each_announced_exactly_once";
    let Some(db) = shared_database(test) else {
        return;
    };
    let homes = [(); 3].map(|()| tempfile::tempdir().unwrap());
    let gateways: Vec<GatewayProcess> = homes.iter().map(|h| gateway(&db, h.path())).collect();
    let mut clients = Vec::new();
    for gateway in &gateways {
        clients.push(connect(gateway).await);
    }
    for i in 0..SPAWNS {
        let client = &mut clients[i % 3];
        let spawned = client
            .request(
                "tools.invoke",
                json!({"sessionKey": "main", "tool": "sessions_spawn",
                       "args": {"task": format!("@reply child-{i}")}}),
            )
            .await
            .unwrap();
        assert_eq!(spawned["result"]["status"], "accepted", "{spawned}");
    }
    let announces = until(async || {
        let found: Vec<String> = texts(
            &history(&mut clients[1], "main")
                .await
                .into_iter()
                .filter(|m| m["provenance"]["kind"] == "subagent-announce")
                .collect::<Vec<_>>(),
        );
        (found.len() >= SPAWNS).then_some(found)
    })
    .await;
    let mut per_child: HashMap<String, usize> = HashMap::new();
    for text in &announces {
        let child = text
            .lines()
            .find_map(|l| l.strip_prefix("Result: "))
            .unwrap_or_default();
        *per_child.entry(child.to_string()).or_default() += 1;
    }
    assert_eq!(announces.len(), SPAWNS);
    assert_eq!(per_child.len(), SPAWNS, "every child announced");
    assert!(per_child.values().all(|n| *n == 1));
    for gateway in gateways {
        gateway.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_job_fires_once_per_slot_across_three_gateways() {
    let test = "a_cron_job_fires_once_per_slot_across_three_gateways";
    let Some(db) = shared_database(test) else {
        return;
    };
    let homes = [(); 3].map(|()| tempfile::tempdir().unwrap());
    let gateways: Vec<GatewayProcess> = homes.iter().map(|h| gateway(&db, h.path())).collect();
    let mut a = connect(&gateways[0]).await;
    let added = a
        .request(
            "cron.add",
            json!({"id": "tick", "schedule": "every 1s", "message": "@reply tick"}),
        )
        .await
        .unwrap();
    assert_eq!(added["id"], "tick", "{added}");
    let mut c = connect(&gateways[2]).await;
    // Every gateway's scheduler sees the job and fires its slots; each slot runs once.
    let fired = until(async || {
        let messages = history(&mut c, "cron:tick").await;
        let slots: Vec<i64> = messages
            .iter()
            .filter_map(|m| m["provenance"]["scheduledAt"].as_i64())
            .collect();
        (slots.len() >= 5).then_some(slots)
    })
    .await;
    let mut distinct = fired.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), fired.len(), "a slot fired twice: {fired:?}");
    a.request("cron.remove", json!({"id": "tick"}))
        .await
        .unwrap();
    for gateway in gateways {
        gateway.stop();
    }
}
