//! The A2A client's failure cases against [`FakeA2a`]: an unknown remote, a refusal, 5xx
//! answers retried under one `messageId`, a reply that does not arrive in time, and a restart
//! while the remote works that resumes without sending again (the remote counts `messageId`s).

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::store::DeliveryStatus;
use switchboard_testkit::{FakeA2a, Finish};
use tokio_util::sync::CancellationToken;

use super::a2a_client::{config, send, texts};
use super::support::{GUARD, TestEngine, until};

const ROW: &str = "agent:main:a2a-remote:fake";

/// A fake remote and an engine whose agent `main` names it `fake`.
async fn world() -> (FakeA2a, TestEngine) {
    let fake = FakeA2a::start(None).await;
    let w = TestEngine::open(config(&[("fake", &fake.url(), None)])).await;
    (fake, w)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_the_agent_does_not_name_is_refused_and_nothing_is_stored() {
    let (fake, w) = world().await;
    let result = send(&w, json!({"sessionKey": "a2a:elsewhere", "message": "hi"})).await;
    assert_eq!(result["status"], "error", "{result}");
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("unknown A2A remote \"elsewhere\"") && error.contains("its remotes: fake"),
        "{error}"
    );
    let other = send(
        &w,
        json!({"sessionKey": "agent:ops:a2a-remote:fake", "message": "hi"}),
    )
    .await;
    assert!(
        other["error"]
            .as_str()
            .unwrap()
            .contains("agent ops's conversation"),
        "{other}"
    );
    assert_eq!(w.settled_deliveries().await, []);
    assert_eq!(fake.sends(), Vec::<serde_json::Value>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_an_error_that_says_what_the_remote_said() {
    let fake = FakeA2a::start(Some("t0k")).await;
    fake.refuse("this agent takes no messages today");
    let w = TestEngine::open(config(&[("fake", &fake.url(), Some("t0k"))])).await;
    let result = send(&w, json!({"sessionKey": "a2a:fake", "message": "hi"})).await;
    assert_eq!(result["status"], "error", "{result}");
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("this agent takes no messages today") && error.contains("-32005"),
        "{error}"
    );
    // Every call spoke A2A 1.0 with the configured token.
    let headers = fake.headers();
    assert!(!headers.is_empty());
    assert!(
        headers
            .iter()
            .all(|h| *h == (Some("1.0".into()), Some("Bearer t0k".into()))),
        "{headers:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_answers_are_retried_and_the_message_is_taken_once() {
    let (fake, w) = world().await;
    fake.unavailable(2);
    let result = send(
        &w,
        json!({"sessionKey": "a2a:fake", "message": "hi", "timeoutSeconds": 600}),
    )
    .await;
    assert_eq!(result["status"], "ok", "{result}");
    assert_eq!(result["reply"], "fake says: hi");
    // Three calls (two 503s, then taken), one message, whose id is the send's runId.
    assert_eq!(fake.headers().len(), 3);
    assert_eq!(fake.message_ids(), [result["runId"].as_str().unwrap()]);
    assert_eq!(
        texts(&w, ROW).await,
        ["user: hi", "assistant: fake says: hi"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_is_late_is_a_timeout_and_lands_in_the_conversation_later() {
    let (fake, w) = world().await;
    fake.hold(true);
    let result = send(
        &w,
        json!({"sessionKey": "a2a:fake", "message": "slow one", "timeoutSeconds": 1}),
    )
    .await;
    assert_eq!(result["status"], "timeout", "{result}");
    assert_eq!(result["run"]["state"], "running");
    assert!(
        result["error"].as_str().unwrap().contains("task task-1"),
        "{result}"
    );
    fake.hold(false);
    let landed = until("the late reply in the conversation", || async {
        let t = texts(&w, ROW).await;
        (t.len() == 2).then_some(t)
    })
    .await;
    assert_eq!(landed, ["user: slow one", "assistant: fake says: slow one"]);
    assert_eq!(fake.sends().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_stops_waiting_gets_a_timeout_and_the_send_goes_on() {
    let (fake, w) = world().await;
    fake.hold(true);
    w.create("main").await;
    // An MCP client cancelled, or the caller's connection closed: stop waiting at once.
    let stop_waiting = CancellationToken::new();
    stop_waiting.cancel();
    let call = w.engine.tools().call(
        "main",
        "sessions_send",
        json!({"sessionKey": "a2a:fake", "message": "patient", "timeoutSeconds": 600}),
        stop_waiting,
    );
    let output = tokio::time::timeout(GUARD, call)
        .await
        .expect("the call kept waiting")
        .unwrap();
    assert_eq!(output.content["status"], "timeout", "{}", output.content);
    fake.hold(false);
    let landed = until("the reply in the conversation", || async {
        let t = texts(&w, ROW).await;
        (t.len() == 2).then_some(t)
    })
    .await;
    assert_eq!(landed, ["user: patient", "assistant: fake says: patient"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_while_the_remote_works_resumes_without_a_second_send() {
    let (fake, w) = world().await;
    fake.hold(true);
    let accepted = send(
        &w,
        json!({"sessionKey": "a2a:fake", "message": "durable", "timeoutSeconds": 0}),
    )
    .await;
    assert_eq!(accepted["status"], "accepted", "{accepted}");
    let id = accepted["runId"].as_str().unwrap().to_string();
    fake.wait_polled().await;

    let w = w.restart(None).await;
    fake.hold(false);
    let record = until("the resumed send's outcome", || async {
        let record = w.engine.store().get_delivery(&id).await.unwrap().unwrap();
        (record.status != DeliveryStatus::Pending).then_some(record)
    })
    .await;
    assert_eq!(
        record.status,
        DeliveryStatus::Delivered,
        "{:?}",
        record.detail
    );
    assert_eq!(fake.message_ids(), [id]);
    assert_eq!(
        texts(&w, ROW).await,
        ["user: durable", "assistant: fake says: durable"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_context_is_sent_as_written_and_has_a_row_of_its_own() {
    let (fake, w) = world().await;
    let result = send(
        &w,
        json!({"sessionKey": "a2a:fake:Ctx-42", "message": "in context"}),
    )
    .await;
    assert_eq!(result["status"], "ok", "{result}");
    assert_eq!(result["sessionKey"], "agent:main:a2a-remote:fake:ctx-42");
    assert_eq!(fake.sends()[0]["contextId"], "Ctx-42");
    // The row key, as sessions_list shows it, sends into the same context.
    let again = send(
        &w,
        json!({"sessionKey": "agent:main:a2a-remote:fake:ctx-42", "message": "more"}),
    )
    .await;
    assert_eq!(again["status"], "ok", "{again}");
    assert_eq!(fake.sends()[1]["contextId"], "Ctx-42");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_card_the_url_is_the_endpoint_and_a_card_is_followed_only_where_it_may_be() {
    let fake = FakeA2a::start(Some("t0k")).await;
    fake.set_card(json!(null));
    let endpoint = format!("{}/rpc", fake.url());
    let elsewhere = "http://127.0.0.2:9/rpc";
    let w = TestEngine::open(config(&[
        ("direct", &endpoint, Some("t0k")),
        ("carded", &fake.url(), Some("t0k")),
    ]))
    .await;
    let direct = send(
        &w,
        json!({"sessionKey": "a2a:direct", "message": "no card"}),
    )
    .await;
    assert_eq!(direct["reply"], "fake says: no card", "{direct}");

    // A card that sends the token to another origin is refused, not followed.
    fake.set_card(
        json!({"supportedInterfaces": [{"url": elsewhere, "protocolBinding": "JSONRPC"}]}),
    );
    let moved = send(&w, json!({"sessionKey": "a2a:carded", "message": "hi"})).await;
    assert_eq!(moved["status"], "error", "{moved}");
    let error = moved["error"].as_str().unwrap();
    assert!(
        error.contains("another origin") && error.contains(elsewhere),
        "{error}"
    );

    // A card without the JSON-RPC binding says what it offers.
    fake.set_card(json!({"supportedInterfaces": [{"url": endpoint, "protocolBinding": "GRPC"}]}));
    let grpc = send(&w, json!({"sessionKey": "a2a:carded", "message": "hi"})).await;
    let error = grpc["error"].as_str().unwrap();
    assert!(
        error.contains("offers no JSONRPC interface (it offers: GRPC)"),
        "{error}"
    );
    assert_eq!(fake.sends().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_message_a_question_and_a_failed_task_each_answer_as_they_should() {
    let (fake, w) = world().await;
    fake.finish(Finish::Message);
    let direct = send(&w, json!({"sessionKey": "a2a:fake", "message": "quick"})).await;
    assert_eq!(
        (direct["status"].clone(), direct["reply"].clone()),
        (json!("ok"), json!("fake says: quick"))
    );

    // The remote's turn is over when it asks: its question is the reply.
    fake.finish(Finish::InputRequired("which city?".into()));
    let asked = send(&w, json!({"sessionKey": "a2a:fake", "message": "weather"})).await;
    assert_eq!(
        (asked["status"].clone(), asked["reply"].clone()),
        (json!("ok"), json!("which city?"))
    );

    fake.finish(Finish::Failed("the oracle is out".into()));
    let failed = send(&w, json!({"sessionKey": "a2a:fake", "message": "fate"})).await;
    assert_eq!(failed["status"], "error", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("TASK_STATE_FAILED") && error.contains("the oracle is out"),
        "{error}"
    );
    // One message each, every one continuing the conversation the first opened.
    let sends = fake.sends();
    let contexts: Vec<&str> = sends
        .iter()
        .map(|m| m["contextId"].as_str().unwrap_or("none"))
        .collect();
    assert_eq!(contexts, ["none", "ctx-1", "ctx-1"]);
}
