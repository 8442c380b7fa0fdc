//! The operator's reads behind the reference's Usage page and `openclaw gateway usage-cost`:
//! tokens and cost counted from real turns against a mock model with prices, by day, agent,
//! model, channel and session, over a real WebSocket.

use serde_json::{Value, json};
use switchboard_core::config::{
    Config, ModelCost, ModelEntry, ModelRef, ProviderApi, ProviderConfig,
};
use switchboard_testkit::MockLlm;

use super::harness::TestGateway;
use super::input_errors::two_agents;

/// Agents `main` and `ops` on `mock/m1`, priced $1 in and $2 out per million tokens (the mock
/// reports 10 in and 5 out for every call).
fn priced(mock: &MockLlm) -> Config {
    let mut config = two_agents();
    let model = ModelEntry {
        id: "m1".into(),
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
        api_key: Some("sk-test".into()),
        max_retries: Some(0),
        models: vec![model],
        ..ProviderConfig::default()
    };
    config.models.providers.insert("mock".into(), provider);
    config.agents.defaults.model = ModelRef::new("mock/m1");
    config
}

/// Two turns of `main` and one of `ops`.
async fn three_turns(gw: &TestGateway) {
    let mut client = gw.client().await;
    for (key, text) in [
        ("main", "one"),
        ("main", "two"),
        ("agent:ops:main", "three"),
    ] {
        let agent = json!({"sessionKey": key, "message": text});
        let accepted = client.request("agent", agent).await.unwrap();
        let wait = json!({"runId": accepted["runId"], "timeoutMs": 10_000});
        let done = client.request("agent.wait", wait).await.unwrap();
        assert_eq!(done["status"], "ok", "{done}");
    }
    client.close().await;
}

fn close(a: &Value, b: f64) -> bool {
    (a.as_f64().unwrap() - b).abs() < 1e-12
}

#[tokio::test]
async fn the_usage_page_reads_the_turns_by_day_agent_model_channel_and_session() {
    let mock = MockLlm::start().await;
    let gw = TestGateway::start_with(priced(&mock)).await;
    three_turns(&gw).await;
    // What the Control UI's Usage page sends.
    let page = json!({"agentScope": "all", "mode": "utc", "groupBy": "family", "limit": 1000,
        "includeContextWeight": false});
    let usage = gw.call("sessions.usage", page).await;
    let today = usage["endDate"].as_str().unwrap().to_string();
    let totals = &usage["totals"];
    assert_eq!(
        (&totals["input"], &totals["output"]),
        (&json!(30), &json!(15))
    );
    assert!(close(&totals["totalCost"], 60.0 / 1e6), "{totals}");
    assert_eq!(totals["missingCostEntries"], 0);
    let a = &usage["aggregates"];
    assert_eq!(a["sessionCount"], 2);
    assert_eq!(
        (
            &a["messages"]["user"],
            &a["messages"]["assistant"],
            &a["messages"]["errors"]
        ),
        (&json!(3), &json!(3), &json!(0))
    );
    assert_eq!(a["daily"].as_array().unwrap().len(), 1);
    assert_eq!(
        (&a["daily"][0]["date"], &a["daily"][0]["tokens"]),
        (&json!(today), &json!(45))
    );
    assert_eq!(a["costDaily"][0]["totalTokens"], 45);
    assert_eq!(
        (
            &a["byModel"][0]["provider"],
            &a["byModel"][0]["model"],
            &a["byModel"][0]["count"]
        ),
        (&json!("mock"), &json!("m1"), &json!(3))
    );
    let agents: Vec<(&str, u64)> = (a["byAgent"].as_array().unwrap().iter())
        .map(|r| {
            (
                r["agentId"].as_str().unwrap(),
                r["totals"]["input"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(agents, [("main", 20), ("ops", 10)]);
    assert_eq!(a["byChannel"][0]["channel"], "webchat");
    assert_eq!(
        a["tools"],
        json!({"totalCalls": 0, "uniqueTools": 0, "tools": []})
    );
    // Sessions busiest first, each with its own counts.
    let rows = usage["sessions"].as_array().unwrap();
    let keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["agent:main:main", "agent:ops:main"]);
    assert_eq!(rows[0]["usage"]["messageCounts"]["assistant"], 2);
    assert_eq!(rows[0]["usage"]["totalTokens"], 30);
    assert_eq!(rows[0]["usage"]["activityDates"], json!([today]));
    assert_eq!(
        (&rows[0]["agentId"], &rows[0]["model"]),
        (&json!("main"), &json!("m1"))
    );

    // One agent, one session, and a window before any turn.
    let ops = gw.call("sessions.usage", json!({"agentId": "ops"})).await;
    assert_eq!(
        (
            &ops["totals"]["input"],
            ops["sessions"].as_array().unwrap().len()
        ),
        (&json!(10), 1)
    );
    let main = gw
        .call("sessions.usage", json!({"key": "main", "limit": 1}))
        .await;
    assert_eq!(main["sessions"][0]["key"], "agent:main:main");
    assert_eq!(main["totals"]["input"], 20);
    let before = json!({"startDate": "2020-01-01", "endDate": "2020-01-31"});
    let quiet = gw.call("sessions.usage", before).await;
    assert_eq!(
        (&quiet["totals"]["totalTokens"], &quiet["sessions"]),
        (&json!(0), &json!([]))
    );
    assert_eq!(quiet["aggregates"]["daily"], json!([]));
    gw.stop().await;
}

#[tokio::test]
async fn usage_cost_has_every_day_and_a_session_has_its_calls_and_messages() {
    let mock = MockLlm::start().await;
    let gw = TestGateway::start_with(priced(&mock)).await;
    three_turns(&gw).await;
    // `openclaw gateway usage-cost --days 7`.
    let cost = gw.call("usage.cost", json!({"days": 7})).await;
    let daily = cost["daily"].as_array().unwrap();
    assert_eq!((cost["days"].as_u64(), daily.len()), (Some(7), 7));
    assert_eq!(daily[6]["totalTokens"], 45);
    assert_eq!(daily[0]["totalTokens"], 0);
    assert_eq!(cost["totals"]["totalTokens"], 45);
    assert!(close(&cost["byModel"]["mock/m1"]["totalCost"], 60.0 / 1e6));
    let ops = gw.call("usage.cost", json!({"agentId": "ops"})).await;
    assert_eq!(ops["totals"]["input"], 10);

    // The Usage page's detail of one session: its calls with running sums, and its messages.
    let series = gw
        .call("sessions.usage.timeseries", json!({"key": "main"}))
        .await;
    let points = series["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert_eq!(
        (&points[1]["totalTokens"], &points[1]["cumulativeTokens"]),
        (&json!(15), &json!(30))
    );
    let logs = gw.call("sessions.usage.logs", json!({"key": "main"})).await;
    let roles: Vec<&str> = (logs["logs"].as_array().unwrap().iter())
        .map(|l| l["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(
        (&logs["logs"][0]["content"], &logs["logs"][1]["tokens"]),
        (&json!("one"), &json!(15))
    );
    gw.stop().await;
}

#[tokio::test]
async fn a_wrong_usage_read_says_which_field_and_what_is_accepted() {
    let gw = TestGateway::start_with(two_agents()).await;
    let cases = [
        (
            "sessions.usage",
            json!({"startDate": "2026-11-01"}),
            "startDate and endDate go together",
        ),
        (
            "sessions.usage",
            json!({"startDate": "2026-11-31", "endDate": "2026-12-01"}),
            "YYYY-MM-DD",
        ),
        (
            "sessions.usage",
            json!({"agentScope": "all", "agentId": "main"}),
            "agentScope \"all\"",
        ),
        (
            "sessions.usage",
            json!({"limit": 0}),
            "limit: 0 is out of range",
        ),
        (
            "sessions.usage",
            json!({"range": "2w"}),
            "accepted: 7d, 30d, 90d, 1y, all",
        ),
        ("sessions.usage", json!({"agentId": "ghost"}), "ghost"),
        (
            "sessions.usage",
            json!({"grupBy": "family"}),
            "did you mean `groupBy`",
        ),
        ("usage.cost", json!({"days": 0}), "days: 0 is out of range"),
        (
            "usage.cost",
            json!({"mode": "specific", "timeZone": "Europe/Berlin"}),
            "needs utcOffset",
        ),
        (
            "sessions.usage.timeseries",
            json!({"key": "nowhere"}),
            "no transcript found",
        ),
        (
            "sessions.usage.logs",
            json!({"key": "main", "limit": 5000}),
            "1 to 1000",
        ),
    ];
    for (method, params, says) in cases {
        let error = gw.call_err(method, params.clone()).await;
        assert!(
            error.message.contains(says),
            "{method} {params}: {}",
            error.message
        );
    }
    gw.assert_serving().await;
    gw.stop().await;
}
