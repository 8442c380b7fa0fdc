//! Roles and scopes: every method × {operator with read, write, admin, no scopes, node}, the
//! grant stated in hello-ok, an unknown role refused at connect, and a node that cannot leave its
//! session through its own agent's session tools.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_protocol::{ErrorCode, ErrorShape};
use switchboard_server::client::{ClientError, GatewayClient, connect_params};

use super::harness::{TOKEN, TestGateway};

/// The scope each method needs, written out here so that a change to the server's table (or a
/// method added without a scope) fails this test.
const NEEDS: &[(&str, &str)] = &[
    ("health", "operator.read"),
    ("channels.status", "operator.read"),
    ("agents.list", "operator.read"),
    ("sessions.list", "operator.read"),
    ("sessions.create", "operator.write"),
    ("sessions.resolve", "operator.read"),
    ("sessions.patch", "operator.write"),
    ("sessions.reset", "operator.admin"),
    ("sessions.delete", "operator.admin"),
    ("sessions.compact", "operator.write"),
    ("chat.history", "operator.read"),
    ("chat.startup", "operator.read"),
    ("chat.inject", "operator.write"),
    ("chat.send", "operator.write"),
    ("chat.abort", "operator.write"),
    ("agent", "operator.write"),
    ("agent.wait", "operator.write"),
    ("sessions.subscribe", "operator.read"),
    ("sessions.unsubscribe", "operator.read"),
    ("tools.invoke", "operator.write"),
    ("tools.list", "operator.read"),
    ("send", "operator.write"),
    ("deliveries.list", "operator.read"),
    ("exchanges.list", "operator.read"),
    ("exchanges.get", "operator.read"),
    ("cron.add", "operator.admin"),
    ("cron.get", "operator.read"),
    ("cron.list", "operator.read"),
    ("cron.status", "operator.read"),
    ("cron.update", "operator.admin"),
    ("cron.remove", "operator.admin"),
    ("cron.run", "operator.admin"),
    ("cron.runs", "operator.read"),
    ("pairing.list", "operator.admin"),
    ("pairing.approve", "operator.admin"),
    ("status", "operator.read"),
    ("system-presence", "operator.read"),
    ("config.get", "operator.read"),
    ("models.list", "operator.read"),
    ("agent.identity.get", "operator.read"),
    ("sessions.describe", "operator.read"),
    ("sessions.messages.subscribe", "operator.read"),
    ("sessions.messages.unsubscribe", "operator.read"),
    ("usage.cost", "operator.read"),
    ("sessions.usage", "operator.read"),
    ("sessions.usage.timeseries", "operator.read"),
    ("sessions.usage.logs", "operator.read"),
    ("channels.pairing.list", "operator.pairing"),
    ("logs.tail", "operator.read"),
    ("exec.approvals.list", "operator.read"),
    ("exec.approvals.get", "operator.admin"),
    ("exec.approvals.approve", "operator.admin"),
    ("exec.approvals.deny", "operator.admin"),
    ("update.status", "operator.read"),
    ("exec.approval.list", "operator.read"),
    ("plugin.approval.list", "operator.read"),
    ("openclaw.approval.list", "operator.read"),
    ("question.list", "operator.read"),
    ("tasks.list", "operator.read"),
    ("models.authStatus", "operator.read"),
    ("talk.catalog", "operator.read"),
    ("progressCard.get", "operator.read"),
    ("chat.metadata", "operator.read"),
    ("sessions.branches.list", "operator.read"),
    ("sessions.companion.state", "operator.read"),
    ("sessions.observer.visibility", "operator.read"),
    ("wake", "operator.write"),
    ("last-heartbeat", "operator.read"),
    ("node.list", "operator.read"),
    ("node.pair.list", "operator.pairing"),
    ("device.pair.list", "operator.pairing"),
    ("plugins.list", "operator.read"),
    ("usage.status", "operator.read"),
    ("skills.status", "operator.read"),
    ("diagnostics.stability", "operator.read"),
    ("doctor.memory.status", "operator.read"),
];

fn rank(scope: &str) -> u8 {
    match scope {
        "operator.read" => 1,
        "operator.write" => 2,
        "operator.admin" => 3,
        other => panic!("not a scope: {other}"),
    }
}

/// Whether scopes `granted` let a caller use a method that `needs` a scope: admin implies write
/// implies read; `operator.pairing` stands beside them, covered by admin.
fn allows(granted: &[&str], needs: &str) -> bool {
    if needs == "operator.pairing" {
        return granted
            .iter()
            .any(|g| *g == needs || *g == "operator.admin");
    }
    let ranked = granted.iter().filter(|g| **g != "operator.pairing");
    ranked
        .map(|g| rank(g))
        .max()
        .is_some_and(|g| g >= rank(needs))
}

/// Connects with `params` (a `connect` request's params); answers the client and hello-ok.
pub(super) async fn connect_with(gw: &TestGateway, params: Value) -> (GatewayClient, Value) {
    let mut client = GatewayClient::open(&gw.url).await.unwrap();
    assert_eq!(
        client.next_event().await.unwrap().event,
        "connect.challenge"
    );
    let hello = client.request("connect", params).await.unwrap();
    (client, hello)
}

pub(super) fn operator(scopes: Option<&[&str]>) -> Value {
    let mut params = serde_json::to_value(connect_params(Some(TOKEN))).unwrap();
    match scopes {
        Some(scopes) => params["scopes"] = json!(scopes),
        None => {
            params.as_object_mut().unwrap().remove("scopes");
        }
    }
    params
}

fn node(id: &str) -> Value {
    let mut params = serde_json::to_value(connect_params(Some(TOKEN))).unwrap();
    params["role"] = json!("node");
    params["nodeId"] = json!(id);
    params["scopes"] = json!([]);
    params
}

/// The gateway's error for a call, or `None` when it answered.
async fn outcome(client: &mut GatewayClient, method: &str, params: Value) -> Option<ErrorShape> {
    match client.request(method, params).await {
        Ok(_) => None,
        Err(ClientError::Gateway(e)) => Some(e),
        Err(e) => panic!("{method}: {e}"),
    }
}

#[tokio::test]
async fn every_method_against_every_grant() {
    let gw = TestGateway::start().await;
    let (_, hello) = connect_with(&gw, operator(Some(&["operator.admin"]))).await;
    let advertised: Vec<&str> = hello["features"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let listed: Vec<&str> = NEEDS.iter().map(|(m, _)| *m).collect();
    assert_eq!(
        advertised, listed,
        "every advertised method has a scope here"
    );

    // (name, the scopes asked for)
    type Case<'a> = (&'a str, Option<&'a [&'a str]>);
    let grants: [Case; 6] = [
        ("read", Some(&["operator.read"])),
        ("write", Some(&["operator.write"])),
        ("admin", Some(&["operator.admin"])),
        ("pairing", Some(&["operator.pairing"])),
        ("empty scopes", Some(&[])),
        ("no scopes field", None),
    ];
    for (name, scopes) in grants {
        let (mut client, _) = connect_with(&gw, operator(scopes)).await;
        for (method, needs) in NEEDS {
            // `{}` is a harmless call: allowed methods that change anything refuse it as
            // invalid params, after the access check.
            let error = outcome(&mut client, method, json!({})).await;
            let allowed = allows(scopes.unwrap_or_default(), needs);
            match error {
                Some(e) if e.code == ErrorCode::Forbidden => {
                    assert!(!allowed, "{name} may call {method}, got {e:?}");
                    assert!(e.message.contains(needs), "{name} {method}: {}", e.message);
                    assert_eq!(e.details.unwrap()["requiredScope"], *needs);
                }
                other => assert!(allowed, "{name} must not call {method}, got {other:?}"),
            }
        }
        client.close().await;
    }

    // A node: every method on another session is refused, naming what a node may do.
    let (mut client, hello) = connect_with(&gw, node("pi")).await;
    let own = hello["sessionKey"].as_str().unwrap().to_string();
    for (method, _) in NEEDS {
        let e = outcome(&mut client, method, json!({"sessionKey": "main"}))
            .await
            .unwrap_or_else(|| panic!("a node called {method} on main"));
        assert_eq!(e.code, ErrorCode::Forbidden, "{method}: {e:?}");
        assert!(e.message.contains("role node"), "{}", e.message);
        assert!(e.message.contains(&own), "{}", e.message);
    }
    // On its own session it may read and run; not inject, reset or route elsewhere.
    let history = client
        .request("chat.history", json!({"sessionKey": own}))
        .await
        .unwrap();
    assert_eq!(history["sessionKey"], own.as_str());
    for (method, params) in [
        ("chat.inject", json!({"sessionKey": own, "message": "x"})),
        ("sessions.reset", json!({"key": own})),
        (
            "agent",
            json!({"sessionKey": own, "message": "x", "channel": "webhook", "to": "ops"}),
        ),
    ] {
        let e = outcome(&mut client, method, params).await.unwrap();
        assert_eq!(e.code, ErrorCode::Forbidden, "{method}: {e:?}");
    }
    client.close().await;
    gw.stop().await;
}

#[tokio::test]
async fn hello_ok_states_the_grant() {
    let gw = TestGateway::start().await;
    let cases = [
        (
            operator(Some(&["operator.read"])),
            json!({"role": "operator", "scopes": ["operator.read"]}),
        ),
        (
            // The reference CLI's scopes: the ones this gateway does not know are not granted.
            operator(Some(&[
                "operator.admin",
                "operator.read",
                "operator.write",
                "operator.approvals",
                "operator.pairing",
            ])),
            json!({"role": "operator",
                   "scopes": ["operator.read", "operator.write", "operator.admin",
                              "operator.pairing"]}),
        ),
        (operator(None), json!({"role": "operator", "scopes": []})),
        (node("kitchen"), json!({"role": "node", "scopes": []})),
    ];
    for (params, auth) in cases {
        let (client, hello) = connect_with(&gw, params).await;
        assert_eq!(hello["auth"], auth);
        client.close().await;
    }
    gw.stop().await;
}

#[tokio::test]
async fn an_unknown_role_is_refused_at_connect() {
    let gw = TestGateway::start().await;
    let mut params = operator(Some(&["operator.admin"]));
    params["role"] = json!("superuser");
    let mut client = GatewayClient::open(&gw.url).await.unwrap();
    client.next_event().await.unwrap();
    let res = client.request_frame("connect", params).await.unwrap();
    let error = res.error.unwrap();
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert!(
        error.message.contains("unknown role \"superuser\"")
            && error.message.contains("\"operator\"")
            && error.message.contains("\"node\""),
        "{}",
        error.message
    );
    let closed = loop {
        match client.next_frame().await {
            Ok(_) => {}
            Err(ClientError::Closed(reason)) => break reason.unwrap_or_default(),
            Err(e) => panic!("{e}"),
        }
    };
    assert!(
        closed.starts_with("1008") && closed.contains("invalid role"),
        "{closed}"
    );
    gw.assert_serving().await;
    gw.stop().await;
}

/// What a victim session holds; it must never reach a node.
const SECRET: &str = "victim secret 7731: the launch code";

/// Has `client` make the agent of `session` call `tool` with `args` (a scripted `@tool` line
/// through `chat.send`), waits for the run (through an operator: a node may not call
/// `agent.wait`), and answers the tool result it produced, parsed.
async fn tool_result_of(
    gw: &TestGateway,
    client: &mut GatewayClient,
    session: &str,
    tool: &str,
    args: &Value,
) -> Value {
    static SENT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let message = format!("@tool {tool} {args}");
    let sent = client
        .request(
            "chat.send",
            json!({"sessionKey": session, "message": message, "idempotencyKey": format!("{tool}-{n}")}),
        )
        .await
        .unwrap();
    let waited = gw
        .call(
            "agent.wait",
            json!({"runId": sent["runId"], "timeoutMs": 30_000}),
        )
        .await;
    assert_eq!(waited["status"], "ok", "{tool}: {waited}");
    let history = client
        .request("chat.history", json!({"sessionKey": session}))
        .await
        .unwrap();
    let result = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "toolResult")
        .unwrap_or_else(|| panic!("{tool}: no tool result in {history}"));
    assert_eq!(result["toolName"], tool, "{result}");
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn a_node_cannot_leave_its_session_through_its_agents_session_tools() {
    // The default config: no sandbox, so only the node rule stands in the way.
    let gw = TestGateway::start().await;
    let victim = "agent:main:victim";
    gw.call(
        "chat.inject",
        json!({"sessionKey": victim, "message": SECRET}),
    )
    .await;
    let (mut client, hello) = connect_with(&gw, node("pi")).await;
    let own = hello["sessionKey"].as_str().unwrap().to_string();
    let victim_before = gw.call("chat.history", json!({"sessionKey": victim})).await;
    let keys = |list: &Value| -> Vec<String> {
        let rows = list["sessions"].as_array().unwrap();
        rows.iter()
            .map(|r| r["key"].as_str().unwrap().to_string())
            .collect()
    };
    let sessions_before = keys(&gw.call("sessions.list", json!({})).await);
    assert!(
        sessions_before.iter().any(|k| k == victim),
        "{sessions_before:?}"
    );

    let hidden = format!("Session not visible from this sandboxed agent session: {victim}");
    let forbidden = |error: &str| json!({"status": "forbidden", "error": error});
    let spawn_task = format!("@tool sessions_history {{\"sessionKey\":\"{victim}\"}}");
    let cases = [
        (
            "sessions_history",
            json!({"sessionKey": victim, "includeTools": true}),
            forbidden(&hidden),
        ),
        (
            "sessions_send",
            json!({"sessionKey": victim, "message": "@reply pwned", "timeoutSeconds": 5}),
            forbidden(&hidden),
        ),
        (
            "sessions_spawn",
            json!({"task": spawn_task}),
            forbidden(
                "sessions_spawn is not allowed from node sessions (a node session is confined \
                 to itself)",
            ),
        ),
        // Not even itself, as for a sandboxed session that spawned nothing.
        (
            "sessions_list",
            json!({"messageLimit": 5}),
            json!({"count": 0, "sessions": []}),
        ),
        // No agent it could spawn.
        (
            "agents_list",
            json!({}),
            json!({"requester": "main", "allowAny": false, "agents": []}),
        ),
    ];
    for (tool, args, want) in &cases {
        let got = tool_result_of(&gw, &mut client, &own, tool, args).await;
        assert_eq!(&got, want, "{tool}");
    }
    // An operator's message into the node session does not unlock it: the rule is the session's.
    let mut operator = gw.client().await;
    let (tool, args, want) = &cases[0];
    let got = tool_result_of(&gw, &mut operator, &own, tool, args).await;
    assert_eq!(&got, want, "{tool} sent by an operator");
    operator.close().await;

    // Nothing of the victim reached the node, nothing reached the victim, nothing was created.
    let node_transcript = client
        .request("chat.history", json!({"sessionKey": own}))
        .await
        .unwrap();
    // The secret's words, not its digits: those once matched a millisecond timestamp.
    let words = SECRET.rsplit(": ").next().unwrap();
    assert!(
        !node_transcript.to_string().contains(words),
        "{node_transcript}"
    );
    let victim_after = gw.call("chat.history", json!({"sessionKey": victim})).await;
    assert_eq!(victim_after["messages"], victim_before["messages"]);
    assert_eq!(
        keys(&gw.call("sessions.list", json!({})).await),
        sessions_before
    );
    client.close().await;
    gw.stop().await;
}
