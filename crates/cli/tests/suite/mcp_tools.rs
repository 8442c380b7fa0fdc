//! MCP tools through the gateway binary: a config file names the PyPI `mcp-server-time` (the
//! issue's own example, run by the test kit's venv Python), and a client sees the tool
//! (`switchboard tools list`, `agents.list`, `health`) and a run calls it.

use std::path::Path;

use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::mcp_servers;

use super::process::{GatewayProcess, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_time_server_is_listed_and_called_through_the_gateway() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let python = match mcp_servers::time_server(tmp) {
        Ok(python) => python,
        Err(missing) => return mcp_servers::not_run("a_configured_time_server", &missing),
    };
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        r#"{{ mcp: {{ servers: {{ time: {{ command: "{}", args: ["-m", "mcp_server_time"] }} }} }} }}"#,
        python.display()
    );
    std::fs::write(home.path().join("config.json5"), config).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let listed = run(
        home.path(),
        &gateway.url,
        &["tools", "list", "--agent", "main"],
    );
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(stdout.contains("time__get_current_time"), "{stdout}");
    assert!(stdout.contains("sessions_spawn"), "{stdout}");

    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let agents = client.request("agents.list", json!({})).await.unwrap();
    let tools = &agents["agents"][0]["tools"];
    assert!(
        tools
            .as_array()
            .unwrap()
            .contains(&json!("time__convert_time")),
        "{agents}"
    );
    let health = client.request("health", json!({})).await.unwrap();
    assert_eq!(health["mcp"]["time"]["state"], "running", "{health}");
    assert_eq!(health["mcp"]["time"]["transport"], "stdio");
    // `switchboard health` says so, counting the server's tools (it read `tools` as a number
    // once, and said 0).
    let said = run(home.path(), &gateway.url, &["health"]);
    let said = String::from_utf8_lossy(&said.stdout);
    let offered = health["mcp"]["time"]["tools"].as_array().unwrap().len();
    assert!(offered >= 2, "{health}");
    assert!(
        said.contains(&format!("mcp       time: running ({offered} tools)")),
        "{said}"
    );

    let message = "@tool time__get_current_time {\"timezone\": \"UTC\"}";
    let sent = client
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": message, "idempotencyKey": "t1"}),
        )
        .await
        .unwrap();
    let wait = json!({"runId": sent["runId"], "timeoutMs": 60_000});
    let waited = client.request("agent.wait", wait).await.unwrap();
    assert_eq!(waited["status"], "ok", "{waited}");
    let history = client
        .request("chat.history", json!({"sessionKey": "main", "limit": 10}))
        .await
        .unwrap();
    let result = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "toolResult")
        .unwrap_or_else(|| panic!("a toolResult in {history}"));
    assert_eq!(result["toolName"], "time__get_current_time");
    let text = result["content"][0]["text"].as_str().unwrap();
    let answer: Value = serde_json::from_str(text).unwrap();
    assert!(answer["datetime"].is_string(), "{answer}");
    client.close().await;
    gateway.stop();
}
