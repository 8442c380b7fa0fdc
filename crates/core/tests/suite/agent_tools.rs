//! `message`, `cron` and `session_status` (SPEC §6.5) through scripted runs and
//! `tools.invoke`: a message goes through the outbox under the session's send policy, an
//! agent sees and changes only its own jobs, and a session reads its own status.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{Config, SendAction};
use switchboard_core::store::RunStatus;
use switchboard_protocol::cron::CronAddParams;

use super::support::{GUARD, TestEngine, tool_results};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_reaches_its_chat_through_the_outbox_once() {
    let h = TestEngine::open(Config::default()).await;
    h.create("agent:main:inbox").await;
    let script = "@tool message {\"channel\": \"webchat\", \"to\": \"agent:main:inbox\", \"text\": \"the build is green\"}\n@reply {{result.deliveryStatus}}";
    let record = h.turn("main", script).await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    assert_eq!(record.result.as_deref(), Some("pending"));
    let delivered = tokio::time::timeout(GUARD, async {
        loop {
            let inbox = h.transcript("agent:main:inbox").await;
            if let Some(m) = inbox
                .iter()
                .find(|m| m.to_string().contains("the build is green"))
            {
                return m.clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the message reached the inbox");
    assert_eq!(delivered["role"], "assistant", "{delivered}");
    let deliveries = super::support::deliveries_of(&h.engine, "message").await;
    assert_eq!(deliveries.len(), 1, "{deliveries:?}");
    assert_eq!(
        deliveries[0].session_key.as_ref().map(|k| k.as_str()),
        Some("agent:main:main")
    );

    let unknown = h
        .invoke(
            "main",
            "message",
            json!({"channel": "fax", "to": "1", "text": "x"}),
        )
        .await;
    let error = unknown.content["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("channel \"fax\" is not connected to this gateway; expected one of:"),
        "{error}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_send_policy_denies_a_message_and_says_so() {
    let mut config = Config::default();
    config.session.send_policy.default = SendAction::Deny;
    let h = TestEngine::open(config).await;
    h.create("agent:main:inbox").await;
    let sent = h
        .invoke(
            "main",
            "message",
            json!({"channel": "webchat", "target": "agent:main:inbox", "message": "hi"}),
        )
        .await;
    assert_eq!(sent.content["deliveryStatus"], "denied", "{}", sent.content);
    assert!(
        sent.content["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("send blocked by session policy"),
        "{}",
        sent.content
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_adds_lists_runs_and_removes_only_its_own_jobs() {
    let h = TestEngine::open(Config::default()).await;
    let add = json!({"action": "add", "id": "standup", "schedule": "0 9 * * 1-5", "message": "@reply stand up"});
    let added = h.invoke("main", "cron", add).await;
    assert_eq!(added.content["job"]["agentId"], "main", "{}", added.content);
    let other = CronAddParams {
        id: Some("theirs".into()),
        schedule: json!("@daily"),
        message: "x".into(),
        agent_id: Some("other".into()),
        ..CronAddParams::default()
    };
    // Another agent's job (any id works for the cron component; the tool sees only its own).
    let _ = h.engine.cron().add(other).await;
    let listed = h.invoke("main", "cron", json!({"action": "list"})).await;
    let ids: Vec<&str> = listed.content["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["standup"]);
    let ran = h
        .invoke("main", "cron", json!({"action": "run", "id": "standup"}))
        .await;
    let run_id = ran.content["runId"].as_str().unwrap().to_string();
    let run_id = switchboard_core::RunId::from_string(run_id);
    let waited = h.engine.runtime().wait(&run_id, GUARD).await.unwrap();
    assert_eq!(waited.record.result.as_deref(), Some("stand up"));
    let theirs = h
        .invoke("main", "cron", json!({"action": "remove", "id": "theirs"}))
        .await;
    assert_eq!(
        theirs.content["error"],
        "no job theirs of yours; action list shows them"
    );
    let removed = h
        .invoke(
            "main",
            "cron",
            json!({"action": "remove", "jobId": "standup"}),
        )
        .await;
    assert_eq!(
        removed.content,
        json!({"id": "standup", "status": "removed"})
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_reads_its_own_status() {
    let h = TestEngine::open(Config::default()).await;
    h.turn("main", "hello").await;
    let record = h
        .turn(
            "main",
            "@tool session_status {}\n@reply {{result.sessionKey}}",
        )
        .await;
    assert_eq!(record.result.as_deref(), Some("agent:main:main"));
    let results = tool_results(&h, "main").await;
    let status: Value = serde_json::from_str(&results[0].1).unwrap();
    assert_eq!(
        (&status["agentId"], &status["sandboxed"]),
        (&json!("main"), &json!(false))
    );
    assert!(status["messages"].as_i64().unwrap() >= 3, "{status}");
    assert!(
        status["workspace"]
            .as_str()
            .unwrap()
            .ends_with("workspace/main"),
        "{status}"
    );
    assert!(status["time"].as_str().unwrap().ends_with('Z'), "{status}");
    h.engine.close().await;
}
