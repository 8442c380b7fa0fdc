//! Replies go where the message came from (issue 53, SPEC §9.1): a sub-agent's report goes to the
//! chat the spawning message came from, or into the requester session when it came from no chat —
//! never to whichever chat the session used last — and a report to a chat carries no path of the
//! server.

use switchboard_core::config::Config;
use switchboard_core::runtime::{Deliver, RunRequest, lanes::Lane};
use switchboard_core::store::{DeliveryRecord, EntryPatch, WriteOp};
use switchboard_protocol::delivery::DeliveryKind;
use switchboard_protocol::sessions::{DeliveryContext, Patch};

use super::support::{GUARD, TestEngine, until};

const SPAWN: &str = "@tool sessions_spawn {\"task\": \"@reply the child is done\"}\n@reply spawned";

fn telegram(to: &str) -> DeliveryContext {
    DeliveryContext {
        channel: "telegram".into(),
        to: to.into(),
        account_id: None,
        thread_id: None,
    }
}

/// The sub-agent announces recorded for delivery.
async fn announces(w: &TestEngine) -> Vec<DeliveryRecord> {
    super::support::deliveries_of(&w.engine, "subagent-announce").await
}

/// Runs `text` in main, from the chat `route` when given (else from the terminal), and waits for
/// the announce of the sub-agent it spawns.
async fn spawn_from(w: &TestEngine, route: Option<DeliveryContext>) -> DeliveryRecord {
    let before: Vec<String> = announces(w).await.into_iter().map(|d| d.id).collect();
    let key = w.key("main");
    let mut request = RunRequest::new(key.clone(), Lane::Main).with_message(SPAWN, None);
    request.deliver = route.map(|route| Deliver {
        kind: DeliveryKind::Reply,
        route: Some(route),
    });
    let run = w.engine.runtime().submit(request).await.unwrap().run_id;
    w.engine.runtime().wait(&run, GUARD).await.unwrap();
    until("the sub-agent announces", || async {
        let mut new = announces(w).await.into_iter();
        new.find(|d| !before.contains(&d.id))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_goes_to_the_spawns_origin_not_to_the_chat_used_last() {
    let w = TestEngine::open(Config::default()).await;
    w.create("main").await;
    // The session's last route is a stranger's Telegram chat.
    let last = EntryPatch {
        delivery_context: Patch::Set(telegram("666")),
        last_channel: Patch::Set("telegram".into()),
        last_to: Patch::Set("666".into()),
        ..EntryPatch::default()
    };
    let patch = WriteOp::Patch {
        key: w.key("main"),
        patch: Box::new(last),
    };
    w.engine.store().write_batch(vec![patch]).await.unwrap();

    // From the terminal: the report goes into main itself (with its transcript's path, on a
    // store that keeps transcripts as files).
    let report = spawn_from(&w, None).await;
    assert_eq!(
        (report.channel.as_str(), report.to.as_str()),
        ("internal", "agent:main:main")
    );
    assert!(report.text.contains("the child is done"), "{}", report.text);

    // From a chat: the report goes to that chat, with no path of the server.
    let report = spawn_from(&w, Some(telegram("42"))).await;
    assert_eq!(
        (report.channel.as_str(), report.to.as_str()),
        ("telegram", "42")
    );
    assert!(report.text.contains("the child is done"), "{}", report.text);
    assert!(!report.text.contains("transcript"), "{}", report.text);

    let to_stranger = announces(&w).await.into_iter().filter(|d| d.to == "666");
    assert_eq!(to_stranger.count(), 0);
}
