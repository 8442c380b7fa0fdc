//! A network partition between one gateway and the database, while both keep running (SPEC
//! §4.3, docs/scale-out.md): the fault fencing exists for.
//!
//! Gateway 0 runs in a network namespace of its own with two links to the host: one carries its
//! database connections (to a TCP relay on the host's end, which forwards to the test cluster on
//! 127.0.0.1), the other its clients' connections. Under load (`cluster_load.rs`) its database
//! link drops every packet for 24 s (`tc qdisc … blackhole`, both ends), then is slowed to a
//! trickle for 10 s (`tbf`: seconds of delay per packet), then heals; its clients' link is never touched, and gateways 1 and 2 on the host
//! keep running. Every acknowledged run runs once; the cut-off gateway is declared stopped once,
//! writes nothing for the work it lost and logs that it lost its lease; while it cannot reach
//! the database, its clients are answered `UNAVAILABLE` at once rather than left waiting.
//!
//! A machine where namespaces cannot be made (not root, no iproute2) prints NOT RUN.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::postgres::{TestDatabase, database};

use super::cluster_load::{
    Logged, each_ran_once, lost_its_lease_once, outcome, start, start_in, under_load,
};

/// The database link, slowed to 8 kbit/s with up to 30 s of queue: a 1,500-byte packet takes
/// 1.5 s to leave, and each waits behind the others (this machine's kernel has no `netem`;
/// `tbf` and `blackhole` are built in).
const SLOW_LINK: [&str; 7] = ["tbf", "rate", "8kbit", "burst", "1600", "latency", "30s"];

/// A network namespace with two veth links to the host's: `db` (the database's) and `client`.
/// Made with a name of this process's, removed when dropped, however the test ends.
struct Partition {
    ns: String,
    /// The host's end and the namespace's end of each link.
    db: (String, String),
    client: (String, String),
    /// The host's address on the database link, the namespace's on the client link.
    host_db: Ipv4Addr,
    ns_client: Ipv4Addr,
}

impl Partition {
    /// Makes the namespace and its links; `Err` says why it cannot be made here.
    fn make() -> Result<Self, String> {
        let pid = std::process::id();
        let (y, z) = (100 + (pid / 256) % 100, pid % 256);
        let (y, z) = (y as u8, z as u8);
        let partition = Self {
            ns: format!("sbpart{pid}"),
            db: (format!("sbd{pid}h"), format!("sbd{pid}n")),
            client: (format!("sbc{pid}h"), format!("sbc{pid}n")),
            host_db: Ipv4Addr::new(10, y, z, 1),
            ns_client: Ipv4Addr::new(10, y, z, 6),
        };
        let ns = partition.ns.as_str();
        // A /30 of its own per link: the host's end is `first`, the namespace's the next.
        let link = |(host, inside): &(String, String), first: u8| {
            let host_ip = format!("10.{y}.{z}.{first}/30");
            let ns_ip = format!("10.{y}.{z}.{}/30", first + 1);
            run(&[
                "ip", "link", "add", host, "type", "veth", "peer", "name", inside, "netns", ns,
            ])?;
            run(&["ip", "addr", "add", &host_ip, "dev", host])?;
            run(&["ip", "link", "set", host, "up"])?;
            run(&["ip", "-n", ns, "addr", "add", &ns_ip, "dev", inside])?;
            run(&["ip", "-n", ns, "link", "set", inside, "up"])
        };
        run(&["ip", "netns", "add", ns])?;
        // From here on, dropping `partition` removes what was made.
        run(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        link(&partition.db, 1)?;
        link(&partition.client, 5)?;
        // The qdiscs the cut uses must be there before anything starts.
        run(&[
            "tc",
            "qdisc",
            "add",
            "dev",
            &partition.db.0,
            "root",
            "blackhole",
        ])?;
        run(&["tc", "qdisc", "del", "dev", &partition.db.0, "root"])?;
        Ok(partition)
    }

    /// `tc qdisc <verb> … root [qdisc …]` on both ends of the database link.
    fn qdisc(&self, verb: &str, netem: &[&str]) {
        let (host, inside) = (&self.db.0, &self.db.1);
        let host_side = [&["tc", "qdisc", verb, "dev", host, "root"], netem].concat();
        let ns_side = [
            &[
                "ip", "netns", "exec", &self.ns, "tc", "qdisc", verb, "dev", inside, "root",
            ],
            netem,
        ]
        .concat();
        for command in [host_side, ns_side] {
            run(&command).unwrap();
        }
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        // Removing the namespace removes its ends of the links, and so the links.
        for command in [
            vec!["ip", "netns", "del", &self.ns],
            vec!["ip", "link", "del", &self.db.0],
            vec!["ip", "link", "del", &self.client.0],
        ] {
            let _ = run(&command);
        }
    }
}

/// Runs `command`; `Err` names it and says what it printed.
fn run(command: &[&str]) -> Result<(), String> {
    let output = Command::new(command[0])
        .args(&command[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", command.join(" ")))?;
    match output.status.success() {
        true => Ok(()),
        false => Err(format!(
            "{}: {}",
            command.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

/// A TCP relay listening on `on` (port 0) that forwards each connection to `to`; answers where
/// it listens. It lives as long as the test's runtime.
async fn relay(on: Ipv4Addr, to: String) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind((on, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let to = to.clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(&to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    addr
}

/// `host:port` of a `postgres://user@host:port/database` URL.
fn authority(url: &str) -> &str {
    let rest = &url[url.find('@').unwrap() + 1..];
    &rest[..rest.find('/').unwrap()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_cut_off_from_the_database_past_its_lease_loses_its_work_once_and_says_so() {
    let test = "a_gateway_cut_off_from_the_database_past_its_lease_loses_its_work_once_and_says_so";
    let db = match database() {
        Ok(db) => db,
        Err(why) => return switchboard_testkit::postgres::not_run(test, &why),
    };
    let partition = match Partition::make() {
        Ok(partition) => partition,
        Err(why) => {
            return switchboard_testkit::not_run(&format!(
                "Partition test {test} NOT RUN: {why} (needs root and iproute2's ip and tc)"
            ));
        }
    };
    let server = authority(&db.url).to_string();
    let relayed = relay(partition.host_db, server.clone()).await;
    let through_link = TestDatabase {
        url: db.url.replacen(&server, &relayed.to_string(), 1),
        schema: db.schema.clone(),
    };
    let homes = [(); 3].map(|()| tempfile::tempdir().unwrap());
    let bind = partition.ns_client.to_string();
    let mut gateways: Vec<Logged> = vec![start_in(
        Some((&partition.ns, &bind)),
        &through_link,
        homes[0].path(),
    )];
    gateways.extend(homes[1..].iter().map(|h| start(&db, h.path())));

    let g = &gateways[0].gateway;
    let mut probe = GatewayClient::connect(&g.url, Some(&g.token))
        .await
        .unwrap();
    // 14 s into the cut its clients still reach it, and it says the store is unreachable: a
    // request is answered at once (a hang guard of 5 s), not left waiting for the database.
    let cut = async {
        partition.qdisc("add", &["blackhole"]);
        tokio::time::sleep(Duration::from_secs(14)).await;
        let bounded = Duration::from_secs(5);
        let health = tokio::time::timeout(bounded, probe.request("health", Value::Null)).await;
        let refused =
            tokio::time::timeout(bounded, probe.request("sessions.list", json!({}))).await;
        tokio::time::sleep(Duration::from_secs(10)).await;
        partition.qdisc("replace", &SLOW_LINK);
        tokio::time::sleep(Duration::from_secs(10)).await;
        partition.qdisc("del", &[]);
        (health, refused)
    };
    let (sent, (health, refused)) = under_load(&gateways, Duration::from_secs(34), cut).await;
    assert!(
        sent.len() >= 20,
        "too little load to mean anything: {}",
        sent.len()
    );
    let health = health
        .expect("health hung while the database was cut off")
        .unwrap();
    assert_eq!(
        (&health["ok"], &health["store"]["state"]),
        (&json!(false), &json!("unreachable")),
        "{health}"
    );
    let refused = refused
        .expect("a request hung while the database was cut off")
        .unwrap_err()
        .to_string();
    let expected = format!(
        "UNAVAILABLE: sessions.list was not run: the store is unreachable (PostgreSQL at {relayed}"
    );
    assert!(refused.starts_with(&expected), "{refused}");

    let (ends, counts) = outcome(&gateways, 1, &sent).await;
    each_ran_once(&sent, &ends, &counts, 0);
    lost_its_lease_once(&gateways, 0);
}
