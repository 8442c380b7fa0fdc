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

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::postgres::{database, not_run, private_cluster};

use super::cluster_load::{
    Logged, count, each_ran_once, lost_its_lease_once, outcome, start, under_load,
};

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

    let (ends, counts) = outcome(&gateways, 0, &sent).await;
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

    let (ends, counts) = outcome(&gateways, 1, &sent).await;
    each_ran_once(&sent, &ends, &counts, 0);
    lost_its_lease_once(&gateways, 0);
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

    let (ends, counts) = outcome(&gateways, 1, &sent).await;
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
