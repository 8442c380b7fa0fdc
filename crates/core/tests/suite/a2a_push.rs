//! The `a2a-push` channel: a push to several configs records each one done, so a retry posts
//! only to the configs not done yet — each receiver gets each push once.

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::a2a_tasks::push::{self, PUSH_CHANNEL};
use switchboard_core::channel::ChannelError;
use switchboard_core::config::Config;
use switchboard_core::store::{DeliveryRecord, DeliveryStatus, WriteOp};
use switchboard_protocol::a2a::TaskPushNotificationConfig;
use switchboard_testkit::a2a::PushReceiver;

use super::support::TestEngine;

fn config(id: &str, url: String, token: &str) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        id: Some(id.into()),
        task_id: "t1".into(),
        url,
        token: Some(token.into()),
        ..TaskPushNotificationConfig::default()
    }
}

#[tokio::test]
async fn a_retry_posts_only_to_the_configs_not_yet_done() {
    let t = TestEngine::open(Config::default()).await;
    let store = t.engine.store();
    let up = PushReceiver::start().await;
    // The second receiver is down: a free loopback port nobody listens on yet.
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    drop(socket);
    let configs = [
        config("a", up.url(), "token-a"),
        config("b", format!("http://{addr}/push"), "token-b"),
    ];
    store
        .write_batch(vec![push::save("t1", &configs).unwrap()])
        .await
        .unwrap();
    let event = json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_SUBMITTED"}}});
    // Not due for a long time: the engine's own outbox leaves it to this test.
    let record = DeliveryRecord {
        id: "d1".into(),
        idempotency_key: None,
        kind: "a2a-push".into(),
        session_key: None,
        source_key: None,
        run_id: None,
        channel: PUSH_CHANNEL.into(),
        to: "t1".into(),
        account_id: None,
        thread_id: None,
        text: event.to_string(),
        status: DeliveryStatus::Pending,
        attempts: 0,
        next_attempt_at: i64::MAX / 2,
        detail: None,
        created_at: 0,
        updated_at: 0,
        delivered_at: None,
        parts_sent: 0,
    };
    store
        .write_batch(vec![WriteOp::Enqueue(Box::new(record.clone()))])
        .await
        .unwrap();
    let channel = t.engine.channels().get(PUSH_CHANNEL).unwrap().clone();

    let first = channel.send(&record).await;
    assert!(matches!(first, Err(ChannelError::Retry(_))), "{first:?}");
    let stored = store.get_delivery("d1").await.unwrap().unwrap();
    assert_eq!((up.pushes().len(), stored.parts_sent), (1, 1));

    let down = PushReceiver::start_on(addr).await;
    channel.send(&stored).await.unwrap();
    let got: Vec<_> = [up.pushes(), down.pushes()]
        .iter()
        .flatten()
        .map(|p| (p.token.clone(), p.idempotency_key.clone(), p.body.clone()))
        .collect();
    let sent = |token: &str| {
        (
            Some(token.to_string()),
            Some("d1".to_string()),
            event.clone(),
        )
    };
    assert_eq!(got, [sent("token-a"), sent("token-b")]);
}
