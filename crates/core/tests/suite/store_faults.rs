//! Store errors at the moments that decide what becomes of a message: a read that failed is not
//! taken for an answer. A run's reply is routed by its session (SPEC §9.1); when the read of the
//! session fails as the run ends, the reply is still sent to the session's chat — it is not
//! recorded as a reply with no route.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::RunId;
use switchboard_core::config::DmPolicy;
use switchboard_core::runtime::lanes::Lane;
use switchboard_core::runtime::tool::{Tool, ToolContext, ToolFuture, ToolOutput};
use switchboard_core::runtime::{Deliver, RunRequest};
use switchboard_core::store::{DeliveryQuery, DeliveryRecord, DeliveryStatus, RunStatus};
use switchboard_testkit::FakeTelegram;

use super::support::failing::{Call, Faults};
use super::support::{GUARD, TestEngine};
use super::telegram::{TOKEN, config, sent, text};

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
