//! Observability through the gateway binary (SPEC §10b): `GET /metrics` checked by `promtool`
//! and scraped by a real Prometheus that sees a run counted, and JSON log lines that carry the
//! run's ids and never a secret, at any level.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use switchboard_testkit::prometheus::{Prometheus, ScrapeAuth, check_metrics};
use switchboard_testkit::{FakeTelegram, MockLlm};

use super::process::{GatewayProcess, until};

/// The gateway's HTTP base (`http://127.0.0.1:<port>`) of its WebSocket URL.
fn http_base(gateway: &GatewayProcess) -> String {
    gateway
        .url
        .replace("ws://", "http://")
        .trim_end_matches('/')
        .to_string()
}

async fn scrape(gateway: &GatewayProcess, token: &str) -> String {
    let client = switchboard_core::http_client(Duration::from_secs(30)).unwrap();
    let answer = client
        .get(format!("{}/metrics", http_base(gateway)))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    answer.text().await.unwrap()
}

/// Scrapes until the text holds `line`, for a minute at most; answers the last scrape.
async fn scrape_until(gateway: &GatewayProcess, token: &str, line: &str) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let text = scrape(gateway, token).await;
        if text.contains(line) || tokio::time::Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One agent turn through a real WebSocket client: answers the run id.
async fn turn(gateway: &GatewayProcess, message: &str) -> String {
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let sent = client
        .request("agent", json!({"sessionKey": "main", "message": message}))
        .await
        .unwrap();
    let run_id = sent["runId"].as_str().unwrap().to_string();
    let waited = client
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 60_000}))
        .await
        .unwrap();
    assert_eq!(waited["status"], "ok", "{waited}");
    client.close().await;
    run_id
}

/// The first value of an instant query's answer (`None`: no series).
fn first_value(result: &Value) -> Option<String> {
    result[0]["value"][1].as_str().map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promtool_accepts_the_scrape_and_a_real_prometheus_sees_a_run_counted() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let target: std::net::SocketAddr = http_base(&gateway)
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let prometheus = match Prometheus::start(target, ScrapeAuth::Bearer(&gateway.token)).await {
        Ok(prometheus) => prometheus,
        Err(why) => {
            switchboard_testkit::not_run(&format!("Prometheus test NOT RUN: {why}"));
            return;
        }
    };
    // Scraped with the token, and no run counted yet.
    until(async || {
        let up = prometheus.query("up{job=\"switchboard\"}").await.ok()?;
        (first_value(&up).as_deref() == Some("1")).then_some(())
    })
    .await;
    let ok_runs = "sum(switchboard_runs_total{agent=\"main\",status=\"ok\"})";
    assert_eq!(prometheus.query(ok_runs).await.unwrap(), json!([]));

    turn(&gateway, "@reply counted").await;
    // The run's waiters are told just before it is counted and its lane let go.
    let ok_line = "switchboard_runs_total{agent=\"main\",status=\"ok\"} 1\n";
    scrape_until(&gateway, &gateway.token, ok_line).await;
    let text = scrape_until(
        &gateway,
        &gateway.token,
        "switchboard_lane_busy{lane=\"main\"} 0\n",
    )
    .await;
    for series in [
        "switchboard_runs_total{agent=\"main\",status=\"ok\"} 1\n",
        "switchboard_turns_total{agent=\"main\"} 1\n",
        "switchboard_model_calls_total{provider=\"builtin\",model=\"scripted\",outcome=\"ok\"} 1\n",
        "switchboard_lane_busy{lane=\"main\"} 0\n",
        "# TYPE switchboard_model_call_seconds histogram\n",
        "# TYPE switchboard_store_operation_seconds histogram\n",
        "switchboard_websocket_clients ",
        "switchboard_http_connections ",
    ] {
        assert!(
            text.contains(series),
            "{series:?} is not in the scrape:\n{text}"
        );
    }
    match check_metrics(&text) {
        Ok(Ok(_)) => {}
        Ok(Err(complaints)) => panic!("promtool check metrics: {complaints}\n{text}"),
        Err(why) => switchboard_testkit::not_run(&format!("promtool NOT RUN: {why}")),
    }
    // Prometheus's next scrapes see the counter move.
    until(async || {
        let runs = prometheus.query(ok_runs).await.ok()?;
        (first_value(&runs).as_deref() == Some("1")).then_some(())
    })
    .await;
    let targets = prometheus.targets().await.unwrap();
    assert_eq!(
        targets[0]["health"],
        "up",
        "{targets}\n{}",
        prometheus.log()
    );
    // Every query of the Grafana dashboard in docs/ is one this Prometheus accepts.
    let dashboard =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana-dashboard.json");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(dashboard).unwrap()).unwrap();
    let queries: Vec<&str> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|panel| panel["targets"].as_array().unwrap())
        .map(|target| target["expr"].as_str().unwrap())
        .collect();
    assert!(queries.len() >= 10, "{dashboard}");
    for query in queries {
        if let Err(e) = prometheus.query(query).await {
            panic!("the dashboard's query {query:?} is refused: {e}");
        }
    }
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scrapes_a_loopback_only_gateway_without_a_token() {
    let home = tempfile::tempdir().unwrap();
    let config = r#"{ observability: { metrics: { auth: "loopback" } } }"#;
    std::fs::write(home.path().join("config.json5"), config).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let target = http_base(&gateway)
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let prometheus = match Prometheus::start(target, ScrapeAuth::None).await {
        Ok(prometheus) => prometheus,
        Err(why) => {
            switchboard_testkit::not_run(&format!("Prometheus test NOT RUN: {why}"));
            return;
        }
    };
    until(async || {
        let slots = prometheus
            .query("switchboard_lane_slots{lane=\"main\"}")
            .await
            .ok()?;
        (first_value(&slots).as_deref() == Some("4")).then_some(())
    })
    .await;
    gateway.stop();
}

const GATEWAY_TOKEN: &str = "gw-secret-3f9a1c77d2e84b51";
const PROVIDER_KEY: &str = "sk-provider-secret-8d41e0b2c9";
const BOT_TOKEN: &str = "987654:telegram-secret-5be2a9c0f1";
const COLLECTOR_KEY: &str = "collector-secret-77c1e9a4b0";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_the_run_ids_and_no_secret_at_any_level() {
    let receiver = switchboard_testkit::otlp::Receiver::start().await;
    let llm = MockLlm::start().await;
    let telegram = FakeTelegram::start(BOT_TOKEN).await;
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        r#"{{
          gateway: {{ auth: {{ token: "{GATEWAY_TOKEN}" }} }},
          logging: {{ format: "json" }},
          observability: {{ otlp: {{ endpoint: "{}", headers: {{ "x-api-key": "{COLLECTOR_KEY}" }} }} }},
          models: {{ providers: {{ mock: {{ api: "openai-completions", baseUrl: "{}",
            apiKey: "{PROVIDER_KEY}", models: [{{ id: "m", cost: {{ input: 3, output: 15 }} }}] }} }} }},
          agents: {{ defaults: {{ model: "mock/m" }} }},
          channels: {{ telegram: {{ enabled: true, botToken: "{BOT_TOKEN}", apiBase: "{}",
            dmPolicy: "open", pollTimeoutSeconds: 1 }} }},
        }}"#,
        receiver.endpoint(),
        llm.openai_base_url(),
        telegram.api_base()
    );
    std::fs::write(home.path().join("config.json5"), config).unwrap();
    // The harness reads the token from the state dir; the gateway takes the config's.
    std::fs::write(home.path().join("gateway-token"), GATEWAY_TOKEN).unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (gateway, reader) =
        GatewayProcess::start_logging(home.path(), &[("RUST_LOG", "trace")], log.clone());

    let run_id = turn(&gateway, "hello over the socket").await;
    telegram.private_message(42, "alice", "hello over telegram");
    let sent = tokio::time::timeout(Duration::from_secs(60), telegram.wait_sent(1)).await;
    assert!(sent.is_ok(), "the bot never replied");
    // The fake records the reply when its request arrives; the gateway counts the attempt when
    // the answer comes back, a moment later: scrape until it has (or a minute has passed).
    let delivered =
        "switchboard_outbox_attempts_total{channel=\"telegram\",outcome=\"delivered\"} 1\n";
    let metrics = scrape_until(&gateway, GATEWAY_TOKEN, delivered).await;
    assert!(gateway.terminate().success());
    reader.join().unwrap();
    llm.stop().await;
    telegram.stop().await;

    let text = log.lock().unwrap().clone();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect();
    assert!(
        lines.iter().any(|l| l["level"] == "TRACE") && lines.iter().any(|l| l["level"] == "DEBUG"),
        "RUST_LOG=trace was not honoured:\n{text}"
    );
    // The run's span, among the spans of a line (outermost first).
    let run_span = |line: &Value| -> Option<Value> {
        let spans = line["spans"].as_array()?;
        spans
            .iter()
            .find(|s| s["run_id"] == run_id.as_str() && s["session"] == "agent:main:main")
            .cloned()
    };
    let in_run = lines
        .iter()
        .find_map(run_span)
        .unwrap_or_else(|| panic!("no line carries the run {run_id} and its session:\n{text}"));
    // With traces on, the run's lines carry its trace id too: the one its spans were sent with.
    let trace_id = in_run["trace_id"].as_str().unwrap_or_default();
    assert_eq!(trace_id.len(), 32, "{in_run}");
    let spans = receiver
        .wait_for("the run's span", |spans| {
            spans
                .iter()
                .any(|s| s.attr("run_id") == Some(run_id.as_str()))
        })
        .await;
    let run_span = spans
        .iter()
        .find(|s| s.attr("run_id") == Some(run_id.as_str()))
        .unwrap();
    assert_eq!(run_span.trace_id, trace_id);
    let exported = format!("{spans:?}");
    for secret in [
        GATEWAY_TOKEN,
        PROVIDER_KEY,
        BOT_TOKEN,
        COLLECTOR_KEY,
        "telegram-secret",
        "provider-secret",
        "collector-secret",
    ] {
        assert!(!text.contains(secret), "{secret:?} is in the log");
        assert!(!metrics.contains(secret), "{secret:?} is in the metrics");
        assert!(!exported.contains(secret), "{secret:?} is in a span");
    }
    // Priced by the config's cost (3 and 15 USD per million tokens), labelled by agent and
    // model; no session key is a label.
    assert!(
        metrics.contains(
            "switchboard_model_cost_microusd_total{agent=\"main\",provider=\"mock\",model=\"m\"}"
        ),
        "{metrics}"
    );
    assert!(metrics.contains(delivered), "{metrics}");
    assert!(!metrics.contains("agent:main:"), "{metrics}");
}
