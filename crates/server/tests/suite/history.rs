//! `chat.history` paging over a 100,000-message session, through the gateway.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::harness::TestGateway;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_pages_backwards_through_a_100k_message_session() {
    let gw = TestGateway::start().await;
    let key = gw.engine.resolver().canonical("big", None).unwrap();
    for start in (0..100_000).step_by(2000) {
        let batch = (start..start + 2000)
            .map(|i| {
                serde_json::from_value(
                    json!({"role": "user", "content": format!("m{}", i + 1), "timestamp": 1}),
                )
                .unwrap()
            })
            .collect();
        gw.engine
            .store()
            .append(&key, Some(gw.engine.resolver().new_session(&key)), batch)
            .await
            .unwrap();
    }
    let mut client = gw.client().await;
    let newest = client
        .request("chat.history", json!({"sessionKey": "big", "limit": 50}))
        .await
        .unwrap();
    let seqs: Vec<i64> = newest["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (99_951..=100_000).collect::<Vec<_>>());
    assert_eq!(newest["nextBefore"], 99_951);
    assert_eq!(newest["messages"][49]["content"], "m100000");

    let mut before: Value = Value::Null;
    let mut seen = 0;
    let mut expected_top = 100_000;
    loop {
        let page = client
            .request(
                "chat.history",
                json!({"sessionKey": "big", "limit": 1000, "before": before}),
            )
            .await
            .unwrap();
        let seqs: Vec<i64> = page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["seq"].as_i64().unwrap())
            .collect();
        assert_eq!(seqs.last().copied(), Some(expected_top));
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
        seen += seqs.len();
        expected_top = seqs[0] - 1;
        before = page["nextBefore"].clone();
        if before.is_null() {
            break;
        }
    }
    assert_eq!((seen, expected_top), (100_000, 0));
    gw.stop().await;
}

#[tokio::test]
async fn a_key_without_a_session_has_an_empty_history_and_an_unknown_session_id_is_not_found() {
    let gw = TestGateway::start().await;
    let empty = gw
        .call(
            "chat.history",
            json!({"sessionKey": "cron:nothing", "limit": 50}),
        )
        .await;
    assert_eq!(
        empty,
        json!({"sessionKey": "agent:main:cron:nothing", "messages": []})
    );
    // Nothing was created by reading: only the main session, there from the start.
    let list = gw.call("sessions.list", json!({})).await;
    assert_eq!(list["count"], 1, "{list}");
    assert_eq!(list["sessions"][0]["key"], "agent:main:main");
    let missing = gw
        .call_err(
            "chat.history",
            json!({"sessionKey": "5b0e7a52-8c1e-4c8f-9d35-0f4c1a6e2b99"}),
        )
        .await;
    assert_eq!(missing.code, switchboard_protocol::ErrorCode::NotFound);
    gw.stop().await;
}
