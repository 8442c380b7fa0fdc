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
        (health["sessionCount"].clone(), health["sessions"]["count"].clone()),
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
    assert!(path.ends_with("agents/ops/sessions/sessions.json"), "{path}");
    let recent = agents[0]["sessions"]["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 3);
    assert!(recent[0]["age"].as_i64().unwrap() >= 0);
    assert_eq!(health["channelOrder"], json!(["webhook"]));
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
