//! What the reference's own clients (its CLI, TUI and Control UI) call and read, answered in its
//! shapes over our own client: `health` as `openclaw health` prints it, and the start-up methods.

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::config::{AgentEntry, Config, WebhookAccount};

use super::harness::TestGateway;

#[tokio::test]
async fn health_answers_agents_sessions_and_channels_as_the_reference_prints_them() {
    let mut config = Config::default();
    config.agents.list = vec![
        AgentEntry {
            id: "main".into(),
            ..AgentEntry::default()
        },
        AgentEntry {
            id: "ops".into(),
            name: Some("Ops".into()),
            default: true,
            ..AgentEntry::default()
        },
    ];
    config.channels.webhook.enabled = true;
    config
        .channels
        .webhook
        .accounts
        .insert("hub".into(), WebhookAccount::default());
    let gw = TestGateway::start_with(config).await;
    for key in ["agent:ops:a", "agent:ops:b", "agent:main:c"] {
        gw.call("sessions.create", json!({"key": key})).await;
    }
    let health = gw.call("health", json!({})).await;
    assert_eq!(health["ok"], true);
    assert_eq!(health["defaultAgentId"], "ops");
    assert_eq!(health["heartbeatSeconds"], 0);
    // Two main sessions (made at start) and three created.
    assert_eq!(
        (
            health["sessionCount"].clone(),
            health["sessions"]["count"].clone()
        ),
        (json!(5), json!(5))
    );
    let agents = health["agents"].as_array().unwrap();
    let summary: Vec<_> = agents
        .iter()
        .map(|a| {
            (
                a["agentId"].clone(),
                a["isDefault"].clone(),
                a["sessions"]["count"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (json!("ops"), json!(true), json!(3)),
            (json!("main"), json!(false), json!(2))
        ]
    );
    assert_eq!(agents[0]["name"], "Ops");
    let path = agents[0]["sessions"]["path"].as_str().unwrap();
    match gw.mirrors() {
        // Before a stop has written the index, the database file it is rebuilt from: a path
        // that exists, not a file still to come.
        true => assert!(
            path.ends_with("switchboard.db") && std::path::Path::new(path).is_file(),
            "{path}"
        ),
        false => assert_eq!(path, "(database)"),
    }
    let recent = agents[0]["sessions"]["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 3);
    assert!(recent[0]["age"].as_i64().unwrap() >= 0);
    assert_eq!(
        health["channelOrder"],
        json!([
            "webhook", "telegram", "discord", "slack", "whatsapp", "signal", "matrix"
        ])
    );
    assert_eq!(health["channels"]["telegram"]["state"], "off");
    assert_eq!(health["channels"]["signal"]["state"], "off");
    assert_eq!(health["channelLabels"]["signal"], "Signal");
    assert_eq!(health["channels"]["discord"]["state"], "off");
    assert_eq!(health["channelLabels"]["discord"], "Discord");
    assert_eq!(health["channels"]["slack"]["state"], "off");
    assert_eq!(health["channelLabels"]["slack"], "Slack");
    assert_eq!(health["channels"]["whatsapp"]["state"], "off");
    assert_eq!(health["channelLabels"]["whatsapp"], "WhatsApp");
    assert_eq!(health["channels"]["matrix"]["state"], "off");
    assert_eq!(health["channelLabels"]["matrix"], "Matrix");
    assert_eq!(health["channelLabels"]["webhook"], "Webhook");
    assert_eq!(
        health["channels"]["webhook"],
        json!({"configured": true, "enabled": true,
            "accounts": {"hub": {"accountId": "hub", "configured": true, "enabled": true}}})
    );
    assert!(health["durationMs"].as_i64().unwrap() >= 0);
    assert!(health["ts"].as_i64().unwrap() > 0);
    gw.stop().await;
}

#[tokio::test]
async fn the_start_up_methods_of_the_reference_clients_answer() {
    use switchboard_core::config::{ModelCost, ModelEntry, ProviderApi, ProviderConfig};
    use switchboard_testkit::MockLlm;

    let mock = MockLlm::start().await;
    let mut config = Config::default();
    let model = ModelEntry {
        id: "m1".into(),
        context_window: Some(64_000),
        cost: Some(ModelCost {
            input: 1.0,
            output: 2.0,
            ..ModelCost::default()
        }),
        ..ModelEntry::default()
    };
    let provider = ProviderConfig {
        api: ProviderApi::OpenAiCompletions,
        base_url: Some(mock.openai_base_url()),
        api_key: Some("sk-very-secret".into()),
        max_retries: Some(0),
        models: vec![model],
        ..ProviderConfig::default()
    };
    config.models.providers.insert("mock".into(), provider);
    config.agents.defaults.model = switchboard_core::config::ModelRef::new("mock/m1");
    let gw = TestGateway::start_with(config).await;
    let mut client = gw.client().await;

    let status = gw.call("status", json!({})).await;
    assert_eq!(status["runtimeVersion"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        status["sessions"]["defaults"],
        json!({"model": "m1", "modelProvider": "mock", "contextTokens": 64_000})
    );
    assert_eq!(status["sessions"]["count"], 1);
    let presence = gw.call("system-presence", json!({})).await;
    assert_eq!(presence[0]["mode"], "gateway");
    let config = gw.call("config.get", json!({})).await;
    assert_eq!(
        config["config"]["models"]["providers"]["mock"]["apiKey"],
        "[redacted]"
    );
    assert!(!config.to_string().contains("sk-very-secret"));
    let models = gw.call("models.list", json!({})).await;
    let names: Vec<String> = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["provider"].as_str().unwrap(),
                m["id"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(names, ["builtin/echo", "builtin/scripted", "mock/m1"]);
    let identity = gw
        .call("agent.identity.get", json!({"sessionKey": "main"}))
        .await;
    assert_eq!(identity, json!({"agentId": "main", "name": "main"}));
    let nobody = gw
        .call_err("agent.identity.get", json!({"agentId": "nobody"}))
        .await;
    assert!(
        nobody.message.contains("agent not found: nobody"),
        "{}",
        nobody.message
    );

    // The TUI reads a session's row and the defaults; a row shows its model's context window.
    let described = gw.call("sessions.describe", json!({"key": "main"})).await;
    assert_eq!(described["session"]["key"], "agent:main:main");
    assert_eq!(described["session"]["contextTokens"], 64_000);
    assert_eq!(described["defaults"]["model"], "m1");
    let missing = gw
        .call("sessions.describe", json!({"key": "nowhere"}))
        .await;
    assert_eq!(missing["session"], serde_json::Value::Null);
    let listed = gw.call("sessions.list", json!({})).await;
    assert_eq!(listed["defaults"]["modelProvider"], "mock");

    // Cost from the token counts and the configured prices (the mock reports 10 in, 5 out).
    client
        .request("agent", json!({"sessionKey": "main", "message": "hello"}))
        .await
        .unwrap();
    let usage = gw.call("usage.cost", json!({})).await;
    assert_eq!(
        (
            usage["totals"]["input"].clone(),
            usage["totals"]["output"].clone()
        ),
        (json!(10), json!(5))
    );
    let cost = usage["byModel"]["mock/m1"]["totalCost"].as_f64().unwrap();
    assert!((cost - 20.0 / 1_000_000.0).abs() < 1e-12, "{cost}");

    // After a second turn the row sums the tokens in and out, while `totalTokens` is how full
    // the context is (the last call's 10 + 5), beside the window: the TUI's `tokens 15/64k`.
    client
        .request("agent", json!({"sessionKey": "main", "message": "again"}))
        .await
        .unwrap();
    let row = &gw.call("sessions.describe", json!({"key": "main"})).await["session"];
    assert_eq!(
        [
            &row["inputTokens"],
            &row["outputTokens"],
            &row["totalTokens"]
        ],
        [&json!(20), &json!(10), &json!(15)]
    );

    // What this gateway has no counterpart of says so, by name, as UNAVAILABLE.
    let set = gw.call_err("config.set", json!({"raw": "{}"})).await;
    assert_eq!(set.code, switchboard_protocol::ErrorCode::Unavailable);
    assert!(
        set.message.starts_with("config.set is not available"),
        "{}",
        set.message
    );
    gw.stop().await;
    mock.stop().await;
}

#[tokio::test]
async fn session_lists_stay_live_with_sessions_changed() {
    let gw = TestGateway::start().await;
    let mut watcher = gw.client().await;
    watcher
        .request("sessions.subscribe", json!({}))
        .await
        .unwrap();
    let mut messages = gw.client().await;
    messages
        .request("sessions.messages.subscribe", json!({"key": "main"}))
        .await
        .unwrap();
    gw.call(
        "sessions.create",
        json!({"key": "agent:main:fresh", "label": "fresh"}),
    )
    .await;
    gw.call("sessions.delete", json!({"key": "agent:main:fresh"}))
        .await;
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = watcher.next_event().await.unwrap();
        if event.event == "sessions.changed" {
            seen.push((
                event.payload["sessionKey"].clone(),
                event.payload["reason"].clone(),
            ));
        }
    }
    assert_eq!(
        seen,
        vec![
            (json!("agent:main:fresh"), json!("create")),
            (json!("agent:main:fresh"), json!("delete"))
        ]
    );
    // `sessions.messages.subscribe {key}` follows that session's runs, started by anyone.
    gw.call(
        "chat.send",
        json!({"sessionKey": "main", "message": "@reply hi"}),
    )
    .await;
    loop {
        let event = messages.next_event().await.unwrap();
        assert_ne!(event.event, "sessions.changed", "only asked for messages");
        if event.event == "chat" && event.payload["state"] == "final" {
            assert_eq!(event.payload["message"]["content"][0]["text"], "hi");
            break;
        }
    }
    gw.stop().await;
}
