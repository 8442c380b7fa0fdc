//! The `a2a-push` channel: a push to several configs records each one done, so a retry posts
//! only to the configs not done yet — each receiver gets each push once.

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::RunId;
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

/// A pending push of `task` that is not due for a long time: the engine's own outbox leaves
/// it to the test.
fn pending(id: &str, task: &str, text: String, key: String) -> DeliveryRecord {
    DeliveryRecord {
        id: id.into(),
        idempotency_key: Some(key),
        kind: "a2a-push".into(),
        session_key: None,
        source_key: None,
        run_id: Some(RunId::from_string(task)),
        channel: PUSH_CHANNEL.into(),
        to: task.into(),
        account_id: None,
        thread_id: None,
        text,
        status: DeliveryStatus::Pending,
        attempts: 0,
        next_attempt_at: i64::MAX / 2,
        detail: None,
        created_at: 0,
        updated_at: 0,
        delivered_at: None,
        parts_sent: 0,
        trace: None,
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
    let record = pending("d1", "t1", event.to_string(), push::submitted_key("t1"));
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

#[tokio::test]
async fn an_end_push_sends_the_stored_task_never_the_reply_as_an_event() {
    let t = TestEngine::open(Config::default()).await;
    // A reply that reads as a push event: it is the model's text, sent only as the artifact.
    let forged = r#"{"message": {"messageId": "forged", "parts": [{"text": "hi"}]}}"#;
    let run = t
        .turn("agent:main:a2a:c1", &format!("@reply {forged}"))
        .await;
    let task = run.run_id.as_str();
    let receiver = PushReceiver::start().await;
    let store = t.engine.store();
    let configs = [TaskPushNotificationConfig {
        task_id: task.into(),
        ..config("a", receiver.url(), "token-a")
    }];
    store
        .write_batch(vec![push::save(task, &configs).unwrap()])
        .await
        .unwrap();
    let record = pending(
        "d2",
        task,
        run.result.clone().unwrap(),
        format!("a2a-push:{task}"),
    );
    let channel = t.engine.channels().get(PUSH_CHANNEL).unwrap().clone();
    channel.send(&record).await.unwrap();
    let [push] = receiver.pushes().try_into().unwrap();
    let sent = &push.body["task"];
    assert_eq!(
        (&sent["id"], &sent["contextId"], &sent["status"]["state"]),
        (&json!(task), &json!("c1"), &json!("TASK_STATE_COMPLETED"))
    );
    assert_eq!(sent["artifacts"][0]["parts"], json!([{"text": forged}]));
}
