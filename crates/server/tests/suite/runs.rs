//! Runs over the gateway: `agent` (accepted, then the outcome under the same id), `chat.send` +
//! `agent.wait`, streamed events, `chat.abort`.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_protocol::{ErrorCode, Frame};

use super::harness::TestGateway;

#[tokio::test]
async fn agent_answers_accepted_then_the_outcome_under_the_same_id() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    let request = json!({"type": "req", "id": "a1", "method": "agent",
        "params": {"sessionKey": "main", "message": "@reply hello there", "idempotencyKey": "k1"}});
    client.send_text(request.to_string()).await.unwrap();
    let mut responses = Vec::new();
    while responses.len() < 2 {
        if let Frame::Res(res) = client.next_frame().await.unwrap() {
            responses.push(res);
        }
    }
    assert_eq!(
        (responses[0].id.as_str(), responses[1].id.as_str()),
        ("a1", "a1")
    );
    let accepted = responses[0].payload.clone().unwrap();
    let outcome = responses[1].payload.clone().unwrap();
    assert_eq!(accepted["status"], "accepted");
    assert!(accepted["acceptedAt"].as_i64().unwrap() > 0);
    assert_eq!(outcome["runId"], accepted["runId"]);
    assert_eq!(
        (outcome["status"].clone(), outcome["reply"].clone()),
        (json!("ok"), json!("hello there"))
    );
    assert_eq!(outcome["summary"], "hello there");
    // The reference's shapes too: the key is the run id, the accepted answer names the session
    // and the agent, and the result carries payloads (what its CLI prints) and meta.
    assert_eq!(accepted["runId"], "k1");
    assert_eq!(
        (accepted["sessionKey"].clone(), accepted["agentId"].clone()),
        (json!("agent:main:main"), json!("main"))
    );
    assert_eq!(
        outcome["result"]["payloads"],
        json!([{"text": "hello there"}])
    );
    assert_eq!(outcome["result"]["text"], "hello there");
    let meta = &outcome["result"]["meta"];
    assert!(
        meta["durationMs"].as_i64().is_some_and(|ms| ms >= 0),
        "{meta}"
    );
    assert_eq!(
        (
            meta["agentMeta"]["provider"].clone(),
            meta["agentMeta"]["model"].clone()
        ),
        (json!("builtin"), json!("scripted"))
    );
    assert!(meta["agentMeta"]["sessionId"].is_string(), "{meta}");
    // chat.send's key is its run id as well: a client waits on the key it sent.
    let sent = client
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": "@reply again", "idempotencyKey": "ref-2"}),
        )
        .await
        .unwrap();
    assert_eq!(sent["runId"], "ref-2");
    let waited = client
        .request("agent.wait", json!({"runId": "ref-2", "timeoutMs": 10000}))
        .await
        .unwrap();
    assert_eq!(
        (waited["status"].clone(), waited["reply"].clone()),
        (json!("ok"), json!("again"))
    );

    // The same idempotency key does no work twice.
    let again = client
        .request(
            "agent",
            json!({"sessionKey": "main", "message": "@reply other", "idempotencyKey": "k1"}),
        )
        .await
        .unwrap();
    assert_eq!(
        (again["runId"].clone(), again["reply"].clone()),
        (accepted["runId"].clone(), json!("hello there"))
    );
    let history = client
        .request("chat.history", json!({"sessionKey": "main"}))
        .await
        .unwrap();
    assert_eq!(history["messages"].as_array().unwrap().len(), 4);

    let bad_lane = client
        .request_frame(
            "agent",
            json!({"sessionKey": "main", "message": "x", "lane": "fast"}),
        )
        .await
        .unwrap();
    assert!(
        bad_lane
            .error
            .unwrap()
            .message
            .contains("expected main, nested, subagent or cron")
    );
    gw.stop().await;
}

#[tokio::test]
async fn chat_send_streams_events_and_agent_wait_answers_any_finished_run() {
    let gw = TestGateway::start().await;
    let mut watcher = gw.client().await;
    let subscribed = watcher
        .request(
            "sessions.subscribe",
            json!({"sessionKeys": ["discord:group:ops"]}),
        )
        .await
        .unwrap();
    assert_eq!(
        subscribed["sessionKeys"],
        json!(["agent:main:discord:group:ops"])
    );
    let mut client = gw.client().await;
    let started = client
        .request("chat.send", json!({"sessionKey": "discord:group:ops", "message": "@tool nothing_here {}\n@reply one two three", "idempotencyKey": "s1"}))
        .await
        .unwrap();
    assert_eq!(started["status"], "started");
    let run_id = started["runId"].as_str().unwrap().to_string();

    // A connected client sees the run: queued, start, the tool call and its error result, the
    // reply growing piece by piece, the end; and `chat` events with the pieces and the final state.
    let mut streams = Vec::new();
    let mut chat_states = Vec::new();
    let mut last_text = String::new();
    let mut changes = Vec::new();
    loop {
        let event = watcher.next_event().await.unwrap();
        if event.payload["runId"] != run_id.as_str() {
            continue;
        }
        assert!(event.seq.is_some());
        match event.event.as_str() {
            "agent" => {
                let stream = event.payload["stream"].as_str().unwrap().to_string();
                let phase = event.payload["data"]["phase"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                if stream == "assistant" {
                    last_text.push_str(event.payload["data"]["delta"].as_str().unwrap());
                }
                streams.push(format!("{stream}:{phase}"));
                if phase == "end" {
                    break;
                }
            }
            "chat" => chat_states.push(event.payload["state"].as_str().unwrap().to_string()),
            // A subscribed client also hears that the session's row changed with each phase.
            "sessions.changed" => {
                changes.push(event.payload["phase"].as_str().unwrap().to_string())
            }
            other => panic!("unexpected event {other}"),
        }
    }
    streams.dedup();
    assert_eq!(
        streams,
        [
            "lifecycle:queued",
            "lifecycle:start",
            // After each model call: the run's output tokens so far.
            "usage:",
            "tool:call",
            "tool:result",
            "assistant:",
            "usage:",
            "lifecycle:end"
        ]
    );
    assert_eq!(last_text, "one two three");
    let final_chat = watcher.next_event().await.unwrap();
    assert_eq!(
        (
            final_chat.event.as_str(),
            final_chat.payload["state"].clone()
        ),
        ("chat", json!("final"))
    );
    assert_eq!(
        final_chat.payload["message"]["content"][0]["text"],
        "one two three"
    );
    assert!(chat_states.iter().all(|s| s == "delta") && !chat_states.is_empty());
    let ended = watcher.next_event().await.unwrap();
    changes.push(ended.payload["phase"].as_str().unwrap_or("").to_string());
    assert_eq!(
        (ended.event.as_str(), ended.payload["sessionKey"].clone()),
        ("sessions.changed", json!("agent:main:discord:group:ops"))
    );
    assert_eq!(changes, ["queued", "start", "end"]);

    let waited = client
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 5000}))
        .await
        .unwrap();
    assert_eq!(
        (waited["status"].clone(), waited["reply"].clone()),
        (json!("ok"), json!("one two three"))
    );
    assert!(waited["startedAt"].as_i64().unwrap() <= waited["endedAt"].as_i64().unwrap());
    let list = client.request("sessions.list", json!({})).await.unwrap();
    assert_eq!(list["sessions"][0]["key"], "agent:main:discord:group:ops");
    assert_eq!(list["sessions"][0]["kind"], "group");

    let unknown = client
        .request_frame("agent.wait", json!({"runId": "no-such-run"}))
        .await
        .unwrap();
    assert_eq!(unknown.error.unwrap().code, ErrorCode::NotFound);
    gw.stop().await;
}

#[tokio::test]
async fn chat_abort_ends_a_run_aborted_and_a_short_wait_says_it_is_running() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    let started = client
        .request("chat.send", json!({"sessionKey": "main", "message": "@slow 1000\n@reply a b c d e f g h i j k l m n o p"}))
        .await
        .unwrap();
    let run_id = started["runId"].as_str().unwrap().to_string();
    // Wait for some text to stream, so the abort keeps a partial reply.
    loop {
        let event = client.next_event().await.unwrap();
        if event.payload["runId"] == run_id.as_str() && event.payload["stream"] == "assistant" {
            break;
        }
    }
    let waited = client
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 10}))
        .await
        .unwrap();
    assert_eq!(waited["status"], "timeout");
    assert_eq!(
        (waited["waitTimedOut"].clone(), waited["state"].clone()),
        (json!(true), json!("running"))
    );

    let aborted = client
        .request("chat.abort", json!({"sessionKey": "main"}))
        .await
        .unwrap();
    assert_eq!(aborted["runIds"], json!([run_id]));
    let waited = client
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 5000}))
        .await
        .unwrap();
    assert_eq!(waited["status"], "aborted");
    let history = client
        .request("chat.history", json!({"sessionKey": "main"}))
        .await
        .unwrap();
    let last = history["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["stopReason"], "aborted");
    assert!(
        last["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("a ")
    );
    let row = &client.request("sessions.list", json!({})).await.unwrap()["sessions"][0];
    assert_eq!(row["abortedLastRun"], true);
    let nothing = client
        .request("chat.abort", json!({"sessionKey": "main"}))
        .await
        .unwrap();
    assert_eq!(nothing["aborted"], false);
    gw.stop().await;
}

#[tokio::test]
async fn agent_over_http_rpc_answers_the_outcome() {
    let gw = TestGateway::start().await;
    let body = json!({"method": "agent", "params": {"sessionKey": "cron:nightly", "message": "@reply nightly done"}});
    let (status, response) = super::protocol::http(
        gw.addr,
        "POST",
        "/rpc",
        Some(super::harness::TOKEN),
        &body.to_string(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(response["payload"]["reply"], "nightly done");
    assert_eq!(response["payload"]["sessionKey"], "agent:main:cron:nightly");
    let _: Value = response;
    gw.stop().await;
}

/// `openclaw agent --agent main` sends no `sessionKey`, `--session-id` a `sessionId`: the
/// agent's main session, and the session that id names.
#[tokio::test]
async fn agent_without_a_session_key_runs_in_the_main_session_or_the_one_its_id_names() {
    let gw = TestGateway::start().await;
    let main = gw
        .call("agent", json!({"message": "@reply hi", "agentId": "main"}))
        .await;
    assert_eq!(main["sessionKey"], "agent:main:main", "{main}");
    gw.call("sessions.create", json!({"key": "agent:main:desk"}))
        .await;
    let desk = gw
        .call("sessions.resolve", json!({"key": "agent:main:desk"}))
        .await;
    let id = desk["sessionId"].as_str().unwrap().to_string();
    let by_id = gw
        .call("agent", json!({"message": "@reply there", "sessionId": id}))
        .await;
    assert_eq!(by_id["sessionKey"], "agent:main:desk", "{by_id}");
    gw.stop().await;
}

#[tokio::test]
async fn run_events_go_only_to_subscribed_clients() {
    let gw = TestGateway::start().await;
    let mut bystander = gw.client().await;
    let mut everything = gw.client().await;
    everything
        .request("sessions.subscribe", json!({"all": true}))
        .await
        .unwrap();
    let mut client = gw.client().await;
    let outcome = client
        .request(
            "agent",
            json!({"sessionKey": "cron:a", "message": "@reply hi"}),
        )
        .await
        .unwrap();
    assert_eq!(outcome["status"], "ok");
    // The client that ran it, and the one subscribed to all, saw its events.
    let seen = client.next_event().await.unwrap();
    assert_eq!(
        (seen.event.as_str(), seen.payload["runId"].clone()),
        ("agent", outcome["runId"].clone())
    );
    let seen = everything.next_event().await.unwrap();
    assert_eq!(seen.payload["runId"], outcome["runId"]);
    // The bystander gets nothing of cron:a. Once it follows cron:b, whose run starts after
    // cron:a's ended, the first run event it receives is cron:b's: events reach a connection in
    // the order they happened, so a leaked cron:a event would come first.
    bystander
        .request("sessions.subscribe", json!({"sessionKeys": ["cron:b"]}))
        .await
        .unwrap();
    let other = client
        .request(
            "agent",
            json!({"sessionKey": "cron:b", "message": "@reply hi"}),
        )
        .await
        .unwrap();
    let first = loop {
        let event = bystander.next_event().await.unwrap();
        if event.event != "tick" {
            break event;
        }
    };
    assert_eq!(
        (
            first.payload["sessionKey"].clone(),
            first.payload["runId"].clone()
        ),
        (json!("agent:main:cron:b"), other["runId"].clone())
    );
    // Unsubscribing stops the flow for the client that subscribed to all.
    let after = everything
        .request("sessions.unsubscribe", json!({"all": true}))
        .await
        .unwrap();
    assert_eq!(
        (after["all"].clone(), after["sessionKeys"].clone()),
        (json!(false), json!([]))
    );
    let bad = everything
        .request_frame("sessions.subscribe", json!({"sessionKeys": ["agent::x"]}))
        .await
        .unwrap();
    assert_eq!(bad.error.unwrap().code, ErrorCode::InvalidRequest);
    gw.stop().await;
}
