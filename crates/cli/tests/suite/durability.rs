//! `kill -9` during a burst of `chat.inject`: every acknowledged message survives, and the JSONL
//! mirror matches the database after the restart.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;

use super::process::GatewayProcess;

const WRITERS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_burst_loses_nothing_acknowledged() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let acked: Arc<Mutex<Vec<(String, i64, String)>>> = Arc::default();

    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (url, token, acked) = (gateway.url.clone(), gateway.token.clone(), acked.clone());
        writers.push(tokio::spawn(async move {
            let mut client = GatewayClient::connect(&url, Some(&token)).await.unwrap();
            for i in 0.. {
                let key = format!("burst-{}", (w + i) % 5);
                let text = format!("w{w}-{i}");
                let params = json!({"sessionKey": key, "message": text, "role": "user"});
                match client.request("chat.inject", params).await {
                    Ok(ack) => acked.lock().unwrap().push((
                        ack["sessionKey"].as_str().unwrap().to_string(),
                        ack["seq"].as_i64().unwrap(),
                        text,
                    )),
                    Err(_) => return, // the gateway died under us
                }
            }
        }));
    }
    // Kill it mid-burst, once plenty has been acknowledged (a minute without is a hang).
    let plenty = async {
        while acked.lock().unwrap().len() < 400 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), plenty)
        .await
        .expect("the writers stalled before 400 acknowledgements");
    gateway.kill_9();
    for writer in writers {
        writer.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();

    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let list = client
        .request("sessions.list", json!({"limit": 100}))
        .await
        .unwrap();
    let mut stored: BTreeMap<(String, i64), String> = BTreeMap::new();
    for row in list["sessions"].as_array().unwrap() {
        let key = row["key"].as_str().unwrap().to_string();
        let messages = full_history(&mut client, &key).await;
        // The mirror holds the same messages, in the same order, as the database.
        let mirror = mirror_messages(row["transcriptPath"].as_str().unwrap());
        let from_db: Vec<Value> = messages
            .iter()
            .map(|m| {
                // A page adds each message's place (`seq`, and `id`/`seq` in `__openclaw`);
                // the mirror holds the message as stored.
                let mut m = m.clone();
                let fields = m.as_object_mut().unwrap();
                fields.remove("seq");
                if let Some(Value::Object(origin)) = fields.get_mut("__openclaw") {
                    origin.remove("id");
                    origin.remove("seq");
                    if origin.is_empty() {
                        fields.remove("__openclaw");
                    }
                }
                m
            })
            .collect();
        assert_eq!(mirror, from_db, "mirror of {key}");
        for m in messages {
            stored.insert(
                (key.clone(), m["seq"].as_i64().unwrap()),
                m["content"].as_str().unwrap().to_string(),
            );
        }
    }
    for (key, seq, text) in &acked {
        assert_eq!(
            stored.get(&(key.clone(), *seq)),
            Some(text),
            "acknowledged {key}#{seq} lost"
        );
    }
    assert!(stored.len() >= acked.len());
    client.close().await;
    gateway.stop();
}

async fn full_history(client: &mut GatewayClient, key: &str) -> Vec<Value> {
    let mut all = Vec::new();
    let mut before = Value::Null;
    loop {
        let page = client
            .request(
                "chat.history",
                json!({"sessionKey": key, "limit": 1000, "before": before}),
            )
            .await
            .unwrap();
        let mut messages = page["messages"].as_array().unwrap().clone();
        messages.extend(all);
        all = messages;
        before = page["nextBefore"].clone();
        if before.is_null() {
            return all;
        }
    }
}

/// The `message` objects of a JSONL transcript, after checking its header and line chain.
fn mirror_messages(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let header = lines.next().unwrap();
    assert_eq!(
        (header["type"].clone(), header["version"].clone()),
        (json!("session"), json!(3))
    );
    let mut parent = Value::Null;
    lines
        .map(|line| {
            assert_eq!(line["type"], "message");
            assert_eq!(line["parentId"], parent);
            parent = line["id"].clone();
            line["message"].clone()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_run_resumes_it_and_the_queued_one_runs_after_it() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let started = client
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": "@slow 400\n@reply resumed after the kill"}),
        )
        .await
        .unwrap();
    let run_id = started["runId"].as_str().unwrap().to_string();
    // Make sure the run is running, not just queued, when the process dies.
    super::process::wait_running(&mut client, &run_id).await;
    // Acknowledged behind it: queued when the process dies.
    let kept = client
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": "PLEASE-KEEP-ME\n@reply kept"}),
        )
        .await
        .unwrap();
    assert_eq!(kept["status"], "started");
    gateway.kill_9();

    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    // The run is resumed from its transcript: the model is asked again, and it answers once.
    let waited = client
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 30_000}))
        .await
        .unwrap();
    assert_eq!(
        (waited["status"].as_str(), waited["reply"].as_str()),
        (Some("ok"), Some("resumed after the kill"))
    );
    // The queued run starts after the restart, in its place, its message kept.
    let wait = json!({"runId": kept["runId"], "timeoutMs": 30_000});
    let kept = client.request("agent.wait", wait).await.unwrap();
    assert_eq!(
        (kept["status"].as_str(), kept["reply"].as_str()),
        (Some("ok"), Some("kept"))
    );
    let history = full_history(&mut client, "main").await;
    let texts: Vec<&Value> = history.iter().map(|m| &m["content"]).collect();
    assert_eq!(texts[0], "@slow 400\n@reply resumed after the kill");
    assert_eq!(history[1]["stopReason"], "stop");
    assert_eq!(texts[2], "PLEASE-KEEP-ME\n@reply kept");
    assert_eq!(history[3]["content"][0]["text"], "kept");
    // The session works again after the restart.
    let outcome = client
        .request(
            "agent",
            json!({"sessionKey": "main", "message": "@reply back"}),
        )
        .await
        .unwrap();
    assert_eq!(outcome["reply"], "back");
    client.close().await;
    gateway.stop();
}

/// The graceful shutdown (docs/architecture.md): on SIGTERM the gateway lets running runs finish
/// within `gateway.shutdownGraceSeconds`, leaves the rest `running` to be resumed (SPEC §6.3),
/// keeps runs that never started queued, flushes the store and exits 0; the restart resumes the
/// cut-off run, which answers once, and runs the queued ones after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_runs_finish_and_the_restart_resumes_the_rest_with_nothing_lost() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.json5"),
        "{ gateway: { shutdownGraceSeconds: 2 } }",
    )
    .unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let send = async |client: &mut GatewayClient, key: &str, message: &str| {
        let started = client
            .request("chat.send", json!({"sessionKey": key, "message": message}))
            .await
            .unwrap();
        started["runId"].as_str().unwrap().to_string()
    };
    let quick = send(
        &mut client,
        "quick",
        "@delay 300\n@reply finished in the grace period",
    )
    .await;
    // Longer than the grace: streamed for five seconds.
    let slow_answer = "@slow 1000\n@reply longer than the grace";
    let slow = send(&mut client, "main", slow_answer).await;
    super::process::wait_running(&mut client, &quick).await;
    super::process::wait_running(&mut client, &slow).await;
    // Acknowledged behind the slow run: it must survive the stop and run after it.
    let kept = send(&mut client, "main", "PLEASE-KEEP-ME\n@reply kept").await;
    client.close().await;
    let status = gateway.terminate();
    assert!(status.success(), "exit status after SIGTERM: {status}");

    let gateway = GatewayProcess::start(home.path());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let wait = json!({"runId": quick, "timeoutMs": 0});
    let quick = client.request("agent.wait", wait).await.unwrap();
    assert_eq!(
        (quick["status"].clone(), quick["reply"].clone()),
        (json!("ok"), json!("finished in the grace period"))
    );
    let wait = json!({"runId": slow, "timeoutMs": 30_000});
    let slow = client.request("agent.wait", wait).await.unwrap();
    assert_eq!(
        (slow["status"].as_str(), slow["reply"].as_str()),
        (Some("ok"), Some("longer than the grace")),
        "{slow}"
    );
    let wait = json!({"runId": kept, "timeoutMs": 30_000});
    let kept = client.request("agent.wait", wait).await.unwrap();
    assert_eq!(
        (kept["status"].as_str(), kept["reply"].as_str()),
        (Some("ok"), Some("kept"))
    );
    // Every acknowledged message is in its transcript, the resumed run's one answer first.
    let quick = full_history(&mut client, "quick").await;
    assert_eq!(
        quick[0]["content"],
        "@delay 300\n@reply finished in the grace period"
    );
    let main = full_history(&mut client, "main").await;
    let shape: Vec<(&str, &str)> = main
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["stopReason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("user", ""),
            ("assistant", "stop"),
            ("user", ""),
            ("assistant", "stop")
        ]
    );
    assert_eq!(main[0]["content"], slow_answer);
    assert_eq!(main[2]["content"], "PLEASE-KEEP-ME\n@reply kept");
    client.close().await;
    gateway.stop();
}
