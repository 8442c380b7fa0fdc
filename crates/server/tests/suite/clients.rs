//! What the reference's own clients need to see a turn through (issue 35): its TUI and Control
//! UI key their "sending" and "working" states on the order of a turn's frames and on the
//! identities in the stored messages and the session's row.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_protocol::Frame;
use switchboard_protocol::empty::EmptyState;
use switchboard_server::client::GatewayClient;

use super::harness::TestGateway;

/// A frame as a label: `res` for the answer to `id`, `event stream/phase` for an event.
fn label(frame: &Frame, id: &str) -> Option<String> {
    match frame {
        Frame::Res(res) if res.id == id => Some("res".into()),
        Frame::Event(e) if e.event == "agent" => {
            let data = &e.payload["data"];
            let phase = data["phase"].as_str().map(|p| format!(" {p}"));
            Some(format!(
                "agent {}{}",
                e.payload["stream"].as_str().unwrap_or("?"),
                phase.unwrap_or_default()
            ))
        }
        Frame::Event(e) if e.event == "chat" => Some(format!(
            "chat {}",
            e.payload["state"].as_str().unwrap_or("?")
        )),
        _ => None,
    }
}

/// Sends `@reply <text>` with `chat.send` under `run_id` and reads the frames of this
/// connection until the run's `chat` final, as labels, with the frames themselves.
async fn turn(client: &mut GatewayClient, run_id: &str, text: &str) -> Vec<(String, Frame)> {
    let params = json!({
        "sessionKey": "main",
        "message": format!("@reply {text}"),
        "idempotencyKey": run_id,
    });
    let id = client.send_request("chat.send", params).await.unwrap();
    let mut frames = Vec::new();
    loop {
        let frame = client.next_frame().await.unwrap();
        let Some(label) = label(&frame, &id) else {
            continue;
        };
        let last = label == "chat final";
        frames.push((label, frame));
        if last {
            return frames;
        }
    }
}

#[tokio::test]
async fn a_chat_send_is_answered_before_any_event_of_its_run() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    // Instant replies, one after the other: each answer comes first, every time (the TUI
    // stayed busy when a run's end arrived before the answer that named it).
    for n in 0..5 {
        let run_id = format!("instant-{n}");
        let frames = turn(&mut client, &run_id, "pong").await;
        let labels: Vec<&str> = frames.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            labels,
            vec![
                "res",
                "agent lifecycle queued",
                "agent lifecycle start",
                "agent assistant",
                "chat delta",
                "agent usage",
                "agent lifecycle end",
                "chat final",
            ]
        );
        let Frame::Res(answer) = &frames[0].1 else {
            panic!("the answer comes first");
        };
        assert_eq!(answer.payload.as_ref().unwrap()["runId"], json!(run_id));
        let Frame::Event(usage) = &frames[5].1 else {
            panic!("usage is an event");
        };
        assert_eq!(
            (
                usage.payload["runId"].clone(),
                usage.payload["data"].clone()
            ),
            (json!(run_id), json!({"outputTokens": 1}))
        );
    }
    client.close().await;
    gw.stop().await;
}

/// The user and assistant messages of a page, without their timestamps and usage.
fn identities(messages: &Value) -> Vec<Value> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| json!({"role": m["role"], "seq": m["seq"], "__openclaw": m["__openclaw"]}))
        .collect()
}

#[tokio::test]
async fn stored_messages_and_the_row_name_the_run_that_made_them() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    turn(&mut client, "run-a", "first").await;
    let history = gw.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(
        identities(&history["messages"]),
        vec![
            json!({"role": "user", "seq": 1, "__openclaw":
                {"id": "00000001", "seq": 1, "idempotencyKey": "run-a:user"}}),
            json!({"role": "assistant", "seq": 2, "__openclaw":
                {"id": "00000002", "seq": 2, "runId": "run-a"}}),
        ]
    );
    // The row says the run is done, which one, and how long it took (the Control UI's "Done
    // in …" and the end of its "Working…").
    let row = gw.call("sessions.describe", json!({"key": "main"})).await["session"].clone();
    let runtime = row["runtimeMs"].as_i64().unwrap();
    assert_eq!(
        row["endedAt"].as_i64().unwrap() - row["startedAt"].as_i64().unwrap(),
        runtime
    );
    assert_eq!(
        (
            row["status"].clone(),
            row["lastRunId"].clone(),
            row["hasActiveRun"].clone(),
            row["activeRunIds"].clone()
        ),
        (json!("done"), json!("run-a"), json!(false), json!([]))
    );
    let listed = gw.call("sessions.list", json!({})).await;
    assert_eq!(listed["sessions"][0]["lastRunId"], "run-a");
    // A session that ran nothing has none of these fields.
    gw.call("sessions.create", json!({"key": "agent:main:quiet"}))
        .await;
    let quiet = gw
        .call("sessions.describe", json!({"key": "agent:main:quiet"}))
        .await["session"]
        .clone();
    assert_eq!((quiet.get("status"), quiet.get("lastRunId")), (None, None));
    client.close().await;
    gw.stop().await;
}

#[tokio::test]
async fn the_references_features_we_lack_answer_their_empty_state() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    // `openclaw models list` requires this capability of the gateway.
    assert_eq!(
        client.hello["features"]["capabilities"],
        json!(["published-model-catalog"])
    );
    for method in switchboard_protocol::empty::METHODS {
        let mut answer = client.request(method, json!({})).await.unwrap();
        // The clock and the configured models are the gateway's; the rest is the empty state
        // whose shapes the protocol crate pins.
        for clock in ["ts", "updatedAt"] {
            if let Some(ts) = answer.get_mut(clock) {
                *ts = json!(0);
            }
        }
        if let Some(models) = answer.get_mut("models") {
            assert!(!models.as_array().unwrap().is_empty(), "{method}");
            *models = json!([]);
        }
        let empty = EmptyState::of(method, 0, Vec::new()).unwrap();
        assert_eq!(
            json!({"method": method, "answer": answer}),
            json!({"method": method, "answer": empty})
        );
    }
    // `openclaw channels status`: the channels as `health` has them, each with its accounts
    // as a list (none is configured here).
    let channels = client.request("channels.status", json!({})).await.unwrap();
    let order: Vec<String> = serde_json::from_value(channels["channelOrder"].clone()).unwrap();
    assert!(order.contains(&"telegram".to_string()), "{order:?}");
    let accounts: Vec<Value> = order
        .iter()
        .map(|name| channels["channelAccounts"][name].clone())
        .collect();
    assert_eq!(accounts, vec![json!([]); order.len()]);
    assert_eq!(channels["statusIssues"], json!([]));
    client.close().await;
    gw.stop().await;
}

#[tokio::test]
async fn the_reference_clis_commands_get_the_fields_they_read() {
    let gw = TestGateway::start().await;
    // `openclaw agent --json`: the run's tokens and its duration.
    let agent = gw
        .call(
            "agent",
            json!({"sessionKey": "main", "message": "@reply hi", "idempotencyKey": "a-1"}),
        )
        .await;
    let meta = &agent["result"]["meta"];
    assert!(meta["durationMs"].as_i64().unwrap() >= 0, "{meta}");
    let usage = &meta["agentMeta"]["usage"];
    assert_eq!(
        usage["total"].as_u64().unwrap(),
        usage["input"].as_u64().unwrap() + usage["output"].as_u64().unwrap()
    );
    assert!(usage["output"].as_u64().unwrap() >= 1, "{usage}");
    // `openclaw status --json` lists the agents from `sessions.byAgent`.
    let status = gw.call("status", json!({})).await;
    assert_eq!(status["sessions"]["byAgent"][0]["agentId"], "main");
    assert_eq!(status["sessions"]["byAgent"][0]["count"], 1);
    // `openclaw cron list` shows where a job delivers; `cron runs` its last firing.
    for (id, deliver) in [("loud", true), ("quiet", false)] {
        gw.call(
            "cron.add",
            json!({"id": id, "schedule": "every 10m", "message": "@reply tick", "deliver": deliver}),
        )
        .await;
    }
    let listed = gw.call("cron.list", json!({})).await;
    assert_eq!(
        listed["deliveryPreviews"],
        json!({
            "loud": {"label": "announce", "detail": "the job session's route"},
            "quiet": {"label": "not requested", "detail": "not requested"},
        })
    );
    let none = gw.call("cron.runs", json!({"id": "loud"})).await;
    assert_eq!(
        (none["entries"].clone(), none["total"].clone()),
        (json!([]), json!(0))
    );
    let fired = gw.call("cron.run", json!({"id": "loud"})).await;
    let run_id = fired["runId"].as_str().unwrap().to_string();
    gw.call("agent.wait", json!({"runId": run_id, "timeoutMs": 30000}))
        .await;
    let runs = gw.call("cron.runs", json!({"id": "loud"})).await;
    let entry = &runs["entries"][0];
    assert_eq!(
        (
            entry["jobId"].clone(),
            entry["runId"].clone(),
            entry["action"].clone(),
            entry["status"].clone(),
            entry["sessionKey"].clone(),
            runs["total"].clone()
        ),
        (
            json!("loud"),
            json!(run_id),
            json!("finished"),
            json!("ok"),
            json!("agent:main:cron:loud"),
            json!(1)
        )
    );
    let missing = gw.call_err("cron.runs", json!({"id": "nope"})).await;
    assert!(
        missing.message.starts_with("cron job not found: nope"),
        "{}",
        missing.message
    );
    gw.stop().await;
}

#[tokio::test]
async fn cron_update_enables_disables_and_edits_a_job() {
    let gw = TestGateway::start().await;
    gw.call(
        "cron.add",
        json!({"id": "edit-me", "schedule": "every 10m", "message": "@reply tick"}),
    )
    .await;
    // `openclaw cron disable|enable|edit`, in the reference's shapes.
    let off = gw
        .call(
            "cron.update",
            json!({"id": "edit-me", "patch": {"enabled": false}}),
        )
        .await;
    assert_eq!(off["enabled"], false);
    let listed = gw.call("cron.list", json!({})).await;
    assert_eq!(listed["jobs"], json!([]));
    let edited = gw
        .call(
            "cron.update",
            json!({"id": "edit-me", "patch": {
                "enabled": true,
                "schedule": {"kind": "every", "everyMs": 1_200_000},
                "payload": {"kind": "agentTurn", "message": "@reply tock"},
                "delivery": {"mode": "announce"},
            }}),
        )
        .await;
    assert_eq!(
        (
            edited["enabled"].clone(),
            edited["scheduleText"].clone(),
            edited["message"].clone(),
            edited["deliver"].clone()
        ),
        (
            json!(true),
            json!("every 20m"),
            json!("@reply tock"),
            json!(true)
        )
    );
    let bad = gw
        .call_err(
            "cron.update",
            json!({"id": "edit-me", "patch": {"schedule": "often"}}),
        )
        .await;
    assert!(bad.message.contains("often"), "{}", bad.message);
    let kept = gw.call("cron.get", json!({"id": "edit-me"})).await;
    assert_eq!(kept["scheduleText"], "every 20m");
    let missing = gw
        .call_err(
            "cron.update",
            json!({"id": "nope", "patch": {"enabled": true}}),
        )
        .await;
    assert!(
        missing.message.starts_with("cron job not found: nope"),
        "{}",
        missing.message
    );
    gw.stop().await;
}
