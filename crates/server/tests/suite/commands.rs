//! Slash commands at the operator's doors (`chat.send`, `agent`) and the webhook channel,
//! answered by the gateway without a model call, over a real WebSocket and HTTP.

use serde_json::{Value, json};
use switchboard_protocol::ErrorCode;
use switchboard_server::client::GatewayClient;

use super::access::{connect_with, operator};
use super::harness::TestGateway;

/// `chat.send` of `message` to `main` under the id `id`.
async fn send(client: &mut GatewayClient, id: &str, message: &str) -> Value {
    let params = json!({"sessionKey": "main", "message": message, "idempotencyKey": id});
    client.request("chat.send", params).await.unwrap()
}

/// The text of the `chat` event that ends the run `id`.
async fn final_text(client: &mut GatewayClient, id: &str) -> String {
    loop {
        let event = client.next_event().await.unwrap();
        let payload = event.payload;
        if event.event == "chat" && payload["runId"] == id && payload["state"] == "final" {
            return payload["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string();
        }
    }
}

#[tokio::test]
async fn commands_are_answered_by_the_gateway_and_told_as_a_runs_reply() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    send(&mut client, "t1", "@reply hello").await;
    let wait = json!({"runId": "t1", "timeoutMs": 10_000});
    client.request("agent.wait", wait).await.unwrap();
    // `/status` (as the TUI sends it): the card, in the answer and as the run's final reply.
    let status = send(&mut client, "s1", "/status").await;
    assert_eq!(
        (&status["command"], &status["runId"]),
        (&json!("/status"), &json!("s1"))
    );
    let card = status["reply"].as_str().unwrap();
    for line in [
        "Session: agent:main:main",
        "Model: builtin/scripted",
        "Tokens: ",
    ] {
        assert!(card.contains(line), "{card}");
    }
    assert_eq!(final_text(&mut client, "s1").await, card);
    // Settings, each checked as sessions.patch checks it.
    let think = send(&mut client, "s2", "/think high").await;
    assert_eq!(think["reply"], "Thinking level set to high.");
    let model = send(&mut client, "s3", "/model builtin/echo").await;
    assert_eq!(
        model["reply"],
        "Model set to builtin/echo for this session."
    );
    let verbose = send(&mut client, "s4", "/VERBOSE full").await;
    assert_eq!(verbose["reply"], "Verbose set to full.");
    let row = &gw.call("sessions.describe", json!({"key": "main"})).await["session"];
    assert_eq!(
        (&row["thinkingLevel"], &row["verboseLevel"]),
        (&json!("high"), &json!("full"))
    );
    let card = send(&mut client, "s7", "/status").await["reply"].clone();
    let card = card.as_str().unwrap();
    assert!(
        card.contains("Model: builtin/echo (set for this session)"),
        "{card}"
    );
    let asked = send(&mut client, "s5", "/model").await;
    assert!(
        asked["reply"]
            .as_str()
            .unwrap()
            .starts_with("Model: builtin/echo.")
    );
    let params = json!({"sessionKey": "main", "message": "/model nowhere/x"});
    let wrong = client.request_frame("chat.send", params).await.unwrap();
    let error = wrong.error.unwrap();
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert!(error.message.contains("nowhere"), "{}", error.message);
    let stop = send(&mut client, "s6", "/stop").await;
    assert_eq!(stop["reply"], "No run to stop.");
    // No model was called: the transcript holds the first turn alone.
    let history = gw.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(
        history["messages"].as_array().unwrap().len(),
        2,
        "{history}"
    );
    // A message that only looks like a command goes to the model.
    let run = send(&mut client, "r2", "/status please").await;
    assert_eq!(run["status"], "started");
    client.close().await;
    gw.stop().await;
}

#[tokio::test]
async fn new_and_reset_need_admin_and_agent_answers_a_command_at_once() {
    let gw = TestGateway::start().await;
    gw.call(
        "chat.send",
        json!({"sessionKey": "main", "message": "@reply hi"}),
    )
    .await;
    let before =
        gw.call("sessions.describe", json!({"key": "main"})).await["session"]["sessionId"].clone();
    let (mut writer, _) = connect_with(&gw, operator(Some(&["operator.write"]))).await;
    for command in ["/new", "/reset", "/send off"] {
        let params = json!({"sessionKey": "main", "message": command});
        let refused = writer.request_frame("chat.send", params).await.unwrap();
        let error = refused.error.unwrap();
        assert_eq!(error.code, ErrorCode::Forbidden, "{command}");
        assert!(
            error.message.contains("operator.admin"),
            "{}",
            error.message
        );
    }
    // What a writer may: the status, and a stop.
    let status = json!({"sessionKey": "main", "message": "/status"});
    assert_eq!(
        writer.request("chat.send", status).await.unwrap()["command"],
        "/status"
    );
    writer.close().await;
    let reset = gw
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "/new"}),
        )
        .await;
    assert!(
        reset["reply"]
            .as_str()
            .unwrap()
            .starts_with("New session: agent:main:main")
    );
    let after =
        gw.call("sessions.describe", json!({"key": "main"})).await["session"]["sessionId"].clone();
    assert_ne!(before, after);
    // `openclaw agent --message /status`: the card is the run's reply, no run is queued.
    let agent = gw
        .call("agent", json!({"sessionKey": "main", "message": "/status"}))
        .await;
    assert_eq!(agent["status"], "ok");
    let text = agent["result"]["payloads"][0]["text"].as_str().unwrap();
    assert!(text.contains("Session: agent:main:main"), "{agent}");
    gw.stop().await;
}

#[tokio::test]
async fn exec_approvals_get_answers_the_allowlist_file_without_its_socket_token() {
    let gw = TestGateway::start().await;
    let absent = gw.call("exec.approvals.get", json!({})).await;
    assert_eq!(
        (&absent["exists"], &absent["file"]),
        (&json!(false), &json!({"version": 1, "agents": {}}))
    );
    let path = absent["path"].as_str().unwrap().to_string();
    assert!(path.ends_with("exec-approvals.json"), "{path}");
    let file = json!({"version": 1, "socket": {"path": "/run/x.sock", "token": "s3cret"},
        "agents": {"main": {"allowlist": [{"pattern": "/usr/bin/echo"}]}}});
    std::fs::write(&path, file.to_string()).unwrap();
    let present = gw.call("exec.approvals.get", json!({})).await;
    assert_eq!(present["exists"], true);
    assert_eq!(present["file"]["agents"], file["agents"]);
    assert_eq!(present["file"]["socket"], json!({"path": "/run/x.sock"}));
    assert!(!present.to_string().contains("s3cret"));
    assert_ne!(present["hash"], absent["hash"]);
    gw.stop().await;
}
