//! Three gateways on one PostgreSQL under load, for the fault tests (`cluster_faults.rs`,
//! `cluster_partition.rs`): each gateway's client sends `@delay 1500` turns into its own session
//! every 0.7 s, so runs are running and queued when the fault comes; then every acknowledged
//! run's end and how often each text stands in the transcripts.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::postgres::TestDatabase;

use super::process::GatewayProcess;

/// How often each gateway's client sends a turn.
const SEND_EVERY: Duration = Duration::from_millis(700);

/// A gateway of the cluster whose log (warnings and worse) is kept.
pub struct Logged {
    pub gateway: GatewayProcess,
    pub log: Arc<Mutex<String>>,
}

pub fn start(db: &TestDatabase, home: &Path) -> Logged {
    start_in(None, db, home)
}

/// A gateway of the cluster in network namespace `netns` (`ns`) listening on `bind`, or on the
/// host's loopback.
pub fn start_in(netns: Option<(&str, &str)>, db: &TestDatabase, home: &Path) -> Logged {
    let mut config = json!({"store": {"kind": "postgres", "url": db.url, "schema": db.schema}});
    if let Some((_, bind)) = netns {
        config["gateway"] = json!({"bind": bind});
    }
    std::fs::write(home.join("config.json5"), config.to_string()).unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let env = [("SWITCHBOARD_LOG", "warn,rmcp=error")];
    let ns = netns.map(|(ns, _)| ns);
    let (gateway, _reader) = GatewayProcess::start_logging_in(ns, home, &env, log.clone());
    Logged { gateway, log }
}

/// One acknowledged turn: the gateway it was sent through, its text, reply and run.
#[derive(Debug, Clone)]
pub struct Sent {
    pub gateway: usize,
    pub session: String,
    pub text: String,
    pub reply: String,
    pub run_id: String,
}

/// Sends a turn into `session` through gateway `index` every [`SEND_EVERY`] until `end`;
/// answers the ones acknowledged (a send the fault made fail was not acknowledged).
pub async fn load(url: String, token: String, index: usize, end: Instant) -> Vec<Sent> {
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
pub async fn under_load<T>(
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
pub async fn ends(client: &mut GatewayClient, sent: &[Sent]) -> HashMap<String, Value> {
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

/// Every acknowledged run's end ([`ends`]) and how often each text stands in the transcripts
/// ([`counts`]), read through the gateway `reader`.
pub async fn outcome(
    gateways: &[Logged],
    reader: usize,
    sent: &[Sent],
) -> (HashMap<String, Value>, HashMap<String, usize>) {
    let g = &gateways[reader].gateway;
    let mut client = GatewayClient::connect(&g.url, Some(&g.token))
        .await
        .unwrap();
    let ends = ends(&mut client, sent).await;
    (ends, counts(&mut client, sent).await)
}

/// How often each text stands in the sessions' transcripts.
pub async fn counts(client: &mut GatewayClient, sent: &[Sent]) -> HashMap<String, usize> {
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

pub fn count(counts: &HashMap<String, usize>, text: &str) -> usize {
    counts.get(text).copied().unwrap_or(0)
}

/// Every acknowledged turn ran once: its message stands once in the transcript, and its run
/// ended `ok` with its reply once — also the one gateway `cut_off` was running when it lost its
/// work: another gateway took it up and resumed it (SPEC §6.3), and the cut-off gateway's late
/// writes of it were refused.
pub fn each_ran_once(
    sent: &[Sent],
    ends: &HashMap<String, Value>,
    counts: &HashMap<String, usize>,
    cut_off: usize,
) {
    for s in sent {
        let end = &ends[&s.run_id];
        assert_eq!(count(counts, &s.text), 1, "{}'s message: {end}", s.reply);
        let on = match s.gateway == cut_off {
            true => " (sent through the cut-off gateway)",
            false => "",
        };
        assert_eq!(
            end["status"], "ok",
            "{}{on} ended otherwise: {end}",
            s.reply
        );
        assert_eq!(end["reply"], json!(s.reply), "{end}");
        assert_eq!(count(counts, &s.reply), 1, "{}'s reply", s.reply);
    }
}

/// The gateway `cut_off` logged that it lost its lease, and the others declared it stopped
/// once between them.
pub fn lost_its_lease_once(gateways: &[Logged], cut_off: usize) {
    let log = gateways[cut_off].log.lock().unwrap().clone();
    assert!(
        log.contains("this gateway lost its lease"),
        "the cut-off gateway did not learn it lost its work:\n{log}"
    );
    let took: usize = (gateways.iter().enumerate())
        .filter(|(i, _)| *i != cut_off)
        .map(|(_, g)| {
            g.log
                .lock()
                .unwrap()
                .matches("declared a gateway stopped")
                .count()
        })
        .sum();
    assert_eq!(took, 1, "the cut-off gateway was declared stopped once");
}
