//! What the gateway warns about while it serves: a delivery that cannot be made names its
//! channel (an announce into a chat of a channel this gateway does not connect).

use std::sync::{Arc, Mutex};

use serde_json::json;
use switchboard_server::client::GatewayClient;

use super::process::{GatewayProcess, until};

#[tokio::test]
async fn an_announce_to_a_channel_this_gateway_does_not_connect_logs_a_warning_naming_it() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.json5"),
        r#"{ agents: { list: [{ id: "main", default: true,
             systemPrompt: "@when \"announce step\" @reply Heads up, sms" }] } }"#,
    )
    .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let env = [("SWITCHBOARD_LOG", "warn")];
    let (gateway, reader) = GatewayProcess::start_logging(home.path(), &env, log.clone());
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let dev = "sms:group:dev";
    for key in ["main", dev] {
        client
            .request("sessions.create", json!({"key": key}))
            .await
            .unwrap();
    }
    let args = json!({"sessionKey": dev, "message": "@reply hi", "timeoutSeconds": 30});
    let sent = client
        .request(
            "tools.invoke",
            json!({"sessionKey": "main", "tool": "sessions_send", "args": args}),
        )
        .await
        .unwrap();
    assert_eq!(sent["result"]["status"], "ok", "{sent}");
    let line = until(async || {
        let log = log.lock().unwrap().clone();
        log.lines()
            .find(|l| l.contains("delivery failed"))
            .map(str::to_string)
    })
    .await;
    assert!(
        line.contains("WARN")
            && line.contains("kind=announce")
            && line.contains("channel=sms")
            && line.contains("not connected to this gateway"),
        "{line}"
    );
    client.close().await;
    assert!(gateway.terminate().success());
    reader.join().unwrap();
}
