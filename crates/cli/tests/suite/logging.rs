//! What the gateway logs: `RUST_LOG` is honoured (`SWITCHBOARD_LOG` wins when both are set), and
//! the token never appears, even at trace level.

use std::sync::{Arc, Mutex};

use switchboard_server::client::GatewayClient;

use super::process::GatewayProcess;

/// Runs a gateway with `env`, uses it with its token on every door, stops it, and answers
/// everything it logged, the token, and what `logs.tail` answered (each line checked to be in
/// the log).
async fn logged(env: &[(&str, &str)]) -> (String, String, Vec<String>) {
    let home = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (gateway, reader) = GatewayProcess::start_logging(home.path(), env, log.clone());
    let token = gateway.token.clone();
    let mut client = GatewayClient::connect(&gateway.url, Some(&token))
        .await
        .unwrap();
    let health = client
        .request("health", serde_json::Value::Null)
        .await
        .unwrap();
    assert_eq!(health["ok"], true);
    // `logs.tail` (the reference's `openclaw logs`) answers the lines written to stderr so far
    // (the first may come just after the banner the harness waited for).
    let mut tail = serde_json::Value::Null;
    for _ in 0..25 {
        tail = client
            .request("logs.tail", serde_json::json!({"limit": 50}))
            .await
            .unwrap();
        if tail["cursor"].as_u64() > Some(0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let tail_lines: Vec<String> = tail["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    client.close().await;
    let http = gateway.url.replace("ws://", "http://");
    let http = http.trim_end_matches('/');
    let client = switchboard_core::http_client(std::time::Duration::from_secs(30)).unwrap();
    let rpc = client
        .post(format!("{http}/rpc"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"method": "sessions.list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(rpc.status(), 200);
    let mcp = client
        .post(format!("{http}/mcp?session=main"))
        .bearer_auth(&token)
        .header("Accept", "application/json, text/event-stream")
        .json(
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    assert!(mcp.status().is_success(), "{}", mcp.status());
    assert!(gateway.terminate().success());
    reader.join().unwrap();
    let text = log.lock().unwrap().clone();
    // Each line is answered as the reference's log line: its time and message are the log's.
    for line in &tail_lines {
        let parsed: serde_json::Value = serde_json::from_str(line).unwrap();
        for part in ["time", "message"] {
            let part = parsed[part].as_str().unwrap();
            assert!(text.contains(part), "{part:?} of {line} is not in the log");
        }
    }
    assert!(!tail_lines.iter().any(|l| l.contains(&token)));
    (text, token, tail_lines)
}

#[tokio::test]
async fn rust_log_is_honoured_and_the_token_is_never_logged() {
    let (log, token, tail) = logged(&[("RUST_LOG", "trace")]).await;
    assert!(
        !tail.is_empty(),
        "logs.tail answered nothing; the log was:\n{log}"
    );
    // The default is info: debug lines show that RUST_LOG was read.
    assert!(
        log.contains("DEBUG"),
        "RUST_LOG=trace was not honoured:\n{log}"
    );
    assert!(!log.contains(&token), "the token was logged");
    // SWITCHBOARD_LOG wins over RUST_LOG.
    let (log, token, _) = logged(&[("RUST_LOG", "trace"), ("SWITCHBOARD_LOG", "warn")]).await;
    assert!(!log.contains("TRACE") && !log.contains("DEBUG"), "{log}");
    assert!(!log.contains(&token));
}
