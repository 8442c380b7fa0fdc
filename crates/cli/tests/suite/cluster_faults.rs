//! Fenced ownership under faults (SPEC §4.3, docs/scale-out.md), with real gateway processes on
//! one PostgreSQL under load: each gateway's client sends `@delay 1500` turns into its own
//! session every 0.7 s, so runs are running and queued when the fault comes.
//!
//! - The whole database paused for 20 s (every server process stopped) is evidence against no
//!   gateway: nobody's work is taken, no live run is aborted, nothing runs twice or is lost.
//! - One gateway paused for 30 s (SIGSTOP) is declared stopped by the others, which run its
//!   queued work; when it resumes, its late writes are refused, and every acknowledged run
//!   ran once.
//!
//! A machine without PostgreSQL prints NOT RUN.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::postgres::{TestDatabase, database, not_run, private_cluster};

use super::process::GatewayProcess;

/// How often each gateway's client sends a turn.
const SEND_EVERY: Duration = Duration::from_millis(700);

/// A gateway of the cluster whose log (warnings and worse) is kept.
struct Logged {
    gateway: GatewayProcess,
    log: Arc<Mutex<String>>,
}

fn start(db: &TestDatabase, home: &Path) -> Logged {
    let config = json!({"store": {"kind": "postgres", "url": db.url, "schema": db.schema}});
    std::fs::write(home.join("config.json5"), config.to_string()).unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let env = [("SWITCHBOARD_LOG", "warn,rmcp=error")];
    let (gateway, _reader) = GatewayProcess::start_logging(home, &env, log.clone());
    Logged { gateway, log }
}

/// One acknowledged turn: the gateway it was sent through, its text, reply and run.
#[derive(Debug, Clone)]
struct Sent {
    gateway: usize,
    session: String,
    text: String,
    reply: String,
    run_id: String,
}

/// Sends a turn into `session` through gateway `index` every [`SEND_EVERY`] until `end`;
/// answers the ones acknowledged (a send the fault made fail was not acknowledged).
async fn load(url: String, token: String, index: usize, end: Instant) -> Vec<Sent> {
    let mut client = GatewayClient::connect(&url, Some(&token)).await.unwrap();
    let session = format!("agent:main:load-{index}");
    let mut sent = Vec::new();
    let mut n = 0;
    while Instant::now() < end {
        n += 1;
        let reply = format!("G{index}-{n}");
        let text = format!("@delay 1500\n@reply {reply}");
        let params = json!({"sessionKey": session, "message": text, "idempotencyKey": reply});
        match client.request("chat.send", params).await {
            Ok(ack) => sent.push(Sent {
                gateway: index,
                session: session.clone(),
                text,
                reply,
                run_id: ack["runId"].as_str().unwrap().to_string(),
            }),
            Err(e) => eprintln!("send {reply} not acknowledged: {e}"),
        }
        tokio::time::sleep(SEND_EVERY).await;
    }
    sent
}

/// Starts the load on every gateway, runs `fault` after 3 s, and keeps the load on until
/// `fault_for` plus 5 s have passed; answers every acknowledged turn and what `fault` saw.
async fn under_load<T>(
    gateways: &[Logged],
    fault_for: Duration,
    fault: impl Future<Output = T>,
) -> (Vec<Sent>, T) {
    let end = Instant::now() + Duration::from_secs(3) + fault_for + Duration::from_secs(5);
    let loads: Vec<_> = gateways
        .iter()
        .enumerate()
        .map(|(i, g)| tokio::spawn(load(g.gateway.url.clone(), g.gateway.token.clone(), i, end)))
        .collect();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let seen = fault.await;
    let mut sent = Vec::new();
    for load in loads {
        sent.extend(load.await.unwrap());
    }
    (sent, seen)
}

/// Every acknowledged run's end, read through `client` (two minutes at most each: a hang).
async fn ends(client: &mut GatewayClient, sent: &[Sent]) -> HashMap<String, Value> {
    let mut ends = HashMap::new();
    for s in sent {
        let waited = client
            .request(
                "agent.wait",
                json!({"runId": s.run_id, "timeoutMs": 120_000}),
            )
            .await
            .unwrap();
        assert_ne!(
            waited["waitTimedOut"], true,
            "{} never ended: {waited}",
            s.reply
        );
        ends.insert(s.run_id.clone(), waited);
    }
    ends
}

/// How often each text stands in the sessions' transcripts.
async fn counts(client: &mut GatewayClient, sent: &[Sent]) -> HashMap<String, usize> {
    let mut sessions: Vec<&str> = sent.iter().map(|s| s.session.as_str()).collect();
    sessions.sort();
    sessions.dedup();
    let mut counts = HashMap::new();
    for session in sessions {
        let history = client
            .request(
                "chat.history",
                json!({"sessionKey": session, "limit": 1000}),
            )
            .await
            .unwrap();
        for m in history["messages"].as_array().unwrap() {
            let text = match &m["content"] {
                Value::String(text) => text.clone(),
                content => content[0]["text"].as_str().unwrap_or_default().to_string(),
            };
            *counts.entry(text).or_insert(0) += 1;
        }
    }
    counts
}

/// The status of a plain `GET` of `url` (`http://host:port/path`).
async fn http_status(url: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut socket = tokio::net::TcpStream::connect(host).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.unwrap();
    answer.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn count(counts: &HashMap<String, usize>, text: &str) -> usize {
    counts.get(text).copied().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_twenty_second_database_stall_takes_no_work_aborts_no_run_and_runs_nothing_twice() {
    let test = "a_twenty_second_database_stall_takes_no_work_aborts_no_run_and_runs_nothing_twice";
    let cluster = match private_cluster() {
        Ok(cluster) => cluster,
        Err(why) => return not_run(test, &why),
    };
    let homes = [(); 3].map(|()| tempfile::tempdir().unwrap());
    let gateways: Vec<Logged> = homes.iter().map(|h| start(&cluster.db, h.path())).collect();

    let g = &gateways[0].gateway;
    let mut probe = GatewayClient::connect(&g.url, Some(&g.token))
        .await
        .unwrap();
    let liveness = format!("{}/health", g.url.replacen("ws://", "http://", 1));
    // 14 s into the stall the store is unreachable, and says so.
    let stall = async {
        cluster.pause();
        tokio::time::sleep(Duration::from_secs(14)).await;
        let health = probe.request("health", Value::Null).await.unwrap();
        let refused = probe.request("sessions.list", json!({})).await.unwrap_err();
        let status = http_status(&liveness).await;
        tokio::time::sleep(Duration::from_secs(6)).await;
        cluster.resume();
        (health, refused.to_string(), status)
    };
    let (sent, (health, refused, status)) =
        under_load(&gateways, Duration::from_secs(20), stall).await;
    assert!(
        sent.len() >= 20,
        "too little load to mean anything: {}",
        sent.len()
    );
    assert_eq!(
        (&health["ok"], &health["store"]["state"], status),
        (&json!(false), &json!("unreachable"), 503),
        "{health}"
    );
    let detail = health["store"]["detail"].as_str().unwrap();
    assert!(detail.starts_with("PostgreSQL at 127.0.0.1:"), "{detail}");
    let expected = "UNAVAILABLE: sessions.list was not run: the store is unreachable (PostgreSQL at 127.0.0.1:";
    assert!(refused.starts_with(expected), "{refused}");

    let mut client =
        GatewayClient::connect(&gateways[0].gateway.url, Some(&gateways[0].gateway.token))
            .await
            .unwrap();
    let ends = ends(&mut client, &sent).await;
    let counts = counts(&mut client, &sent).await;
    for s in &sent {
        let end = &ends[&s.run_id];
        assert_eq!(
            (&end["status"], &end["reply"]),
            (&json!("ok"), &json!(s.reply)),
            "{} ended otherwise: {end}",
            s.reply
        );
        assert_eq!(count(&counts, &s.text), 1, "{}'s message", s.reply);
        assert_eq!(count(&counts, &s.reply), 1, "{}'s reply", s.reply);
    }
    for (i, g) in gateways.iter().enumerate() {
        let log = g.log.lock().unwrap().clone();
        assert!(
            !log.contains("declared a gateway stopped") && !log.contains("took up the work"),
            "gateway {i} took work from a live gateway:\n{log}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_paused_past_its_lease_has_its_work_done_once_and_its_late_writes_refused() {
    let test = "a_gateway_paused_past_its_lease_has_its_work_done_once_and_its_late_writes_refused";
    let db = match database() {
        Ok(db) => db,
        Err(why) => return not_run(test, &why),
    };
    let homes = [(); 3].map(|()| tempfile::tempdir().unwrap());
    let gateways: Vec<Logged> = homes.iter().map(|h| start(&db, h.path())).collect();
    let paused = gateways[0].gateway.child.id().to_string();
    let signal = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &paused])
            .status()
            .unwrap();
    };

    let pause = async {
        signal("-STOP");
        tokio::time::sleep(Duration::from_secs(30)).await;
        signal("-CONT");
    };
    let (sent, ()) = under_load(&gateways, Duration::from_secs(30), pause).await;

    let mut client =
        GatewayClient::connect(&gateways[1].gateway.url, Some(&gateways[1].gateway.token))
            .await
            .unwrap();
    let ends = ends(&mut client, &sent).await;
    let counts = counts(&mut client, &sent).await;
    let mut aborted = Vec::new();
    for s in &sent {
        let end = &ends[&s.run_id];
        assert_eq!(count(&counts, &s.text), 1, "{}'s message: {end}", s.reply);
        match end["status"].as_str() {
            Some("ok") => {
                assert_eq!(end["reply"], json!(s.reply), "{end}");
                assert_eq!(count(&counts, &s.reply), 1, "{}'s reply", s.reply);
            }
            // The run the paused gateway was running when it stopped: taken for cut off.
            Some("aborted") => {
                assert_eq!(s.gateway, 0, "a live gateway's run was aborted: {end}");
                assert_eq!(
                    count(&counts, &s.reply),
                    0,
                    "{}'s late reply was written",
                    s.reply
                );
                aborted.push(s.reply.clone());
            }
            _ => panic!("{} ended otherwise: {end}", s.reply),
        }
    }
    assert!(
        aborted.len() <= 1,
        "more than the one running run aborted: {aborted:?}"
    );
    let paused_log = gateways[0].log.lock().unwrap().clone();
    assert!(
        paused_log.contains("this gateway lost its lease"),
        "the paused gateway did not learn it lost its work:\n{paused_log}"
    );
    let took: usize = gateways[1..]
        .iter()
        .map(|g| {
            g.log
                .lock()
                .unwrap()
                .matches("declared a gateway stopped")
                .count()
        })
        .sum();
    assert_eq!(took, 1, "the paused gateway was declared stopped once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restarted_under_load_loses_nothing_acknowledged_and_runs_nothing_twice() {
    let test = "a_database_restarted_under_load_loses_nothing_acknowledged_and_runs_nothing_twice";
    let cluster = match private_cluster() {
        Ok(cluster) => cluster,
        Err(why) => return not_run(test, &why),
    };
    let homes = [(); 3].map(|()| tempfile::tempdir().unwrap());
    let gateways: Vec<Logged> = homes.iter().map(|h| start(&cluster.db, h.path())).collect();
    let restart = async {
        // pg_ctl waits for the server to come back: off the runtime's threads.
        let cluster = &cluster;
        tokio::task::block_in_place(|| cluster.restart());
    };
    let (sent, ()) = under_load(&gateways, Duration::from_secs(2), restart).await;

    let g = &gateways[1].gateway;
    let mut client = GatewayClient::connect(&g.url, Some(&g.token))
        .await
        .unwrap();
    let ends = ends(&mut client, &sent).await;
    let counts = counts(&mut client, &sent).await;
    for s in &sent {
        let end = &ends[&s.run_id];
        // Every acknowledged message is in the transcript once, whatever its run came to.
        assert_eq!(count(&counts, &s.text), 1, "{}'s message: {end}", s.reply);
        match end["status"].as_str() {
            Some("ok") => assert_eq!(count(&counts, &s.reply), 1, "{}'s reply", s.reply),
            // A run whose write the restart cut ends with the storage error; its reply may
            // have been written before the cut, never twice.
            Some("error") => assert!(count(&counts, &s.reply) <= 1, "{end}"),
            _ => panic!("{} ended otherwise: {end}", s.reply),
        }
    }
    for (i, g) in gateways.iter().enumerate() {
        let log = g.log.lock().unwrap().clone();
        assert!(
            !log.contains("declared a gateway stopped"),
            "gateway {i} took work from a live gateway:\n{log}"
        );
    }
}
