//! Store errors at the moments that decide what becomes of a message: a read that failed is not
//! taken for an answer. A run's reply is routed by its session (SPEC §9.1); when the read of the
//! session fails as the run ends, the reply is still sent to the session's chat — it is not
//! recorded as a reply with no route. And a claim of the outbox that takes time does not let a
//! delivery be attempted without one.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::RunId;
use switchboard_core::clock::Clock;
use switchboard_core::config::DmPolicy;
use switchboard_core::runtime::lanes::Lane;
use switchboard_core::runtime::tool::{Tool, ToolContext, ToolFuture, ToolOutput};
use switchboard_core::runtime::{Deliver, RunRequest};
use switchboard_core::store::{DeliveryQuery, DeliveryRecord, DeliveryStatus, RunStatus};
use switchboard_testkit::FakeTelegram;

use super::support::failing::{Call, Faults};
use super::support::{GUARD, TestEngine};
use super::telegram::{TOKEN, config, delivery, sent, text};

const GROUP: &str = "agent:main:telegram:group:-1009";

/// Arms the faults from inside the run: the next `times` reads of [`GROUP`]'s entry fail — the
/// run read it when it started, so the next read is the one that routes its reply.
struct FailReads {
    faults: Faults,
    times: u32,
}

impl Tool for FailReads {
    fn name(&self) -> &str {
        "fail_reads"
    }
    fn description(&self) -> &str {
        "Makes the next reads of the session fail."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn call<'a>(&'a self, _: &'a ToolContext, _: Value) -> ToolFuture<'a> {
        self.faults.fail(Call::Get, GROUP, self.times);
        Box::pin(async { ToolOutput::ok(json!("armed")) })
    }
}

/// Runs "@tool fail_reads, then reply" in [`GROUP`] with its reply delivered to the session's
/// route, with `times` reads of the session failing as it ends; answers the reply's delivery
/// once it settled in `status`, and how many reads failed.
async fn reply_through_failed_reads(times: u32, status: DeliveryStatus) -> (DeliveryRecord, u32) {
    let fake = FakeTelegram::start(TOKEN).await;
    let faults = Faults::default();
    let tool = FailReads {
        faults: faults.clone(),
        times,
    };
    let h = TestEngine::builder()
        .config(config(&fake, DmPolicy::Open))
        .faults(&faults)
        .tool(Arc::new(tool))
        .open()
        .await;
    let key = h.key(GROUP);
    let mut request = RunRequest::new(key.clone(), Lane::Main)
        .with_message("@tool fail_reads {}\n@reply the answer", None);
    request.create = Some(h.engine.resolver().new_session(&key));
    request.deliver = Some(Deliver {
        kind: switchboard_protocol::delivery::DeliveryKind::Reply,
        route: None,
    });
    let run_id = h.engine.runtime().submit(request).await.unwrap().run_id;
    let ended = h.engine.runtime().wait(&run_id, GUARD).await.unwrap();
    assert_eq!(ended.record.status, RunStatus::Ok);
    let record = settled(&h, &run_id).await;
    assert_eq!(record.status, status, "{record:?}");
    if status == DeliveryStatus::Delivered {
        let sent = sent(&fake, 1).await;
        assert_eq!(text(&sent[0]), "the answer");
    }
    let failed = faults.failed(Call::Get, key.as_str());
    h.engine.close().await;
    (record, failed)
}

/// The delivery of `run`'s reply once it left `pending`.
async fn settled(h: &TestEngine, run: &RunId) -> DeliveryRecord {
    tokio::time::timeout(GUARD, async {
        loop {
            let query = DeliveryQuery {
                session_key: None,
                status: None,
                limit: 100,
            };
            let found = h.engine.store().list_deliveries(query).await.unwrap();
            let record = found.into_iter().find(|r| r.run_id.as_ref() == Some(run));
            match record {
                Some(record) if record.status != DeliveryStatus::Pending => return record,
                _ => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        }
    })
    .await
    .expect("the reply's delivery settled")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_is_sent_to_its_route_when_reading_its_session_failed_at_the_end() {
    let (record, failed) = reply_through_failed_reads(2, DeliveryStatus::Delivered).await;
    assert_eq!(failed, 2);
    assert_eq!(
        (
            record.channel.as_str(),
            record.to.as_str(),
            record.text.as_str()
        ),
        ("telegram", "-1009", "the answer")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_whose_session_cannot_be_read_is_failed_with_the_reason_not_recorded() {
    let (record, failed) = reply_through_failed_reads(u32::MAX, DeliveryStatus::Failed).await;
    // Read again a few times first (a store that hiccups answers the next read).
    assert!(failed > 1, "{failed}");
    let detail = record.detail.unwrap_or_default();
    assert!(
        detail.starts_with("the session could not be read to route the reply: ")
            && detail.contains("injected failure of Get"),
        "{detail}"
    );
    assert_eq!(record.text, "the answer");
}

/// A pass of the outbox attempts only what its claim answered as due. A record that fell due
/// while the claim was made came back unclaimed (not yet due, when the claim began): attempted
/// in that pass, it could be attempted by another gateway that claimed it meanwhile. It waits
/// for this gateway's next claim, which follows at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_that_falls_due_while_a_claim_is_made_waits_for_the_next_claim() {
    let fake = FakeTelegram::start(TOKEN).await;
    let faults = Faults::default();
    let h = TestEngine::builder()
        .config(config(&fake, DmPolicy::Open))
        .faults(&faults)
        .manual_clock_now()
        .open()
        .await;
    let clock = h.clock.clone().unwrap();
    faults.slow_claims(clock.clone(), 50);
    let now = clock.now_ms();
    let record = DeliveryRecord {
        id: "falls-due".into(),
        idempotency_key: None,
        kind: "reply".into(),
        session_key: None,
        source_key: None,
        run_id: None,
        channel: "telegram".into(),
        to: "-1009".into(),
        account_id: None,
        thread_id: None,
        text: "on time".into(),
        status: DeliveryStatus::Pending,
        attempts: 0,
        next_attempt_at: now + 10,
        detail: None,
        created_at: now,
        updated_at: now,
        delivered_at: None,
        parts_sent: 0,
        trace: None,
    };
    h.engine.store().enqueue_delivery(record).await.unwrap();
    h.engine.outbox().wake();
    let sent = sent(&fake, 1).await;
    assert_eq!(text(&sent[0]), "on time");
    let stored = delivery(&h, DeliveryStatus::Delivered, |r| r.id == "falls-due").await;
    assert_eq!(stored.attempts, 1, "{stored:?}");
    assert_eq!(faults.unclaimed(), Vec::<String>::new());
    h.engine.close().await;
}
