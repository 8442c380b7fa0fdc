//! The bus between two PostgreSQL stores (two gateways): typed messages go across whole, two
//! equal ones sent together both arrive, and a payload that is not a message is skipped without
//! stopping the listener. Runs on the matrix's database, else on a cluster the test kit starts;
//! says NOT RUN when there is neither.

use std::sync::Arc;
use std::time::Duration;

use switchboard_core::RunId;
use switchboard_core::clock::SystemClock;
use switchboard_core::store::bus::{BusMessage, Envelope, RunRef};
use switchboard_core::store::{ClusterStore, PgOptions, PgStore};
use switchboard_testkit::postgres::{TestDatabase, database, not_run};
use tokio::sync::broadcast;

use super::support::k;

/// Waits for the next message from `from` (other tests share the database's channel).
async fn next_from(rx: &mut broadcast::Receiver<Arc<Envelope>>, from: &str) -> Envelope {
    loop {
        let envelope = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a message within 10 s")
            .expect("the bus is open");
        if envelope.from == from {
            return (*envelope).clone();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_messages_cross_whole_and_a_payload_that_is_not_one_is_skipped() {
    let test = "typed_messages_cross_whole_and_a_payload_that_is_not_one_is_skipped";
    let TestDatabase { url, schema } = match database() {
        Ok(db) => db,
        Err(why) => return not_run(test, &why),
    };
    let options = PgOptions {
        url: url.clone(),
        schema,
        gateway_id: "g-a".into(),
        timeout: switchboard_core::store::bound::DEFAULT_LIMIT,
    };
    let a = PgStore::open(&options, Arc::new(SystemClock))
        .await
        .unwrap();
    let b = PgStore::open(
        &PgOptions {
            gateway_id: "g-b".into(),
            ..options
        },
        Arc::new(SystemClock),
    )
    .await
    .unwrap();
    let (to_a, to_b) = (a.bus().unwrap(), b.bus().unwrap());
    let mut received = to_b.subscribe();
    let from = format!("a-{}", RunId::new());
    let run = RunRef {
        run_id: RunId::new(),
        session_key: k("agent:main:main"),
    };
    let send = |message: BusMessage| {
        to_a.publish(Envelope {
            from: from.clone(),
            message,
        })
    };
    // The listener may not be listening yet: send until one arrives.
    loop {
        send(BusMessage::Queued(run.clone()));
        let first = tokio::time::timeout(Duration::from_millis(500), async {
            next_from(&mut received, &from).await
        });
        if first.await.is_ok() {
            break;
        }
    }
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            "NOTIFY switchboard, 'not a message'; NOTIFY switchboard, '{\"t\":\"gossip\"}'",
        )
        .await
        .unwrap();
    let delta = BusMessage::Delta {
        run: run.clone(),
        text: "ha".into(),
        seq: 1,
        fresh: true,
    };
    send(delta.clone());
    send(delta.clone());
    send(BusMessage::Abort {
        session_key: run.session_key.clone(),
        run_id: Some(run.run_id.clone()),
    });
    // Late answers to the first probes are left aside.
    let mut got = Vec::new();
    while got.len() < 3 {
        match next_from(&mut received, &from).await.message {
            BusMessage::Queued(_) => {}
            message => got.push(message),
        }
    }
    assert_eq!(
        got,
        vec![
            delta.clone(),
            delta,
            BusMessage::Abort {
                session_key: run.session_key.clone(),
                run_id: Some(run.run_id.clone()),
            },
        ]
    );
    a.close().await;
    b.close().await;
}

/// The `switchboard_cluster_members` gauge's count: each gateway on the schema is a member
/// until it closes (its row goes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_members_are_the_gateways_sharing_the_store() {
    let test = "the_members_are_the_gateways_sharing_the_store";
    let TestDatabase { url, schema } = match database() {
        Ok(db) => db,
        Err(why) => return not_run(test, &why),
    };
    let open = |gateway_id: &str| {
        let options = PgOptions {
            url: url.clone(),
            schema: schema.clone(),
            gateway_id: gateway_id.into(),
            timeout: switchboard_core::store::bound::DEFAULT_LIMIT,
        };
        async move {
            PgStore::open(&options, Arc::new(SystemClock))
                .await
                .unwrap()
        }
    };
    let a = open("g-a").await;
    assert_eq!(a.members().await.unwrap(), 1);
    let b = open("g-b").await;
    assert_eq!(
        (a.members().await.unwrap(), b.members().await.unwrap()),
        (2, 2)
    );
    switchboard_core::store::Store::close(&b).await;
    assert_eq!(a.members().await.unwrap(), 1);
}
