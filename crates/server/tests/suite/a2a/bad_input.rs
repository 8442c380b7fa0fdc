//! Bad input on `/a2a/<agentId>`: each refusal is a JSON-RPC error with the A2A code and a
//! message that says what is accepted, and nothing is stored.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::store::RunQuery;

use super::super::harness::TestGateway;
use super::{post, rpc};

/// The error's code and whether its message says `hint`.
pub(super) fn error(body: &Value, hint: &str) -> i64 {
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(hint), "{hint:?} not in {body}");
    assert!(body.get("result").is_none(), "{body}");
    body["error"]["code"].as_i64().unwrap()
}

/// Nothing of the refused calls was stored: no A2A session, no run.
pub(super) async fn nothing_stored(gateway: &TestGateway) {
    let store = gateway.engine.store();
    let query = RunQuery {
        key: "agent:".into(),
        prefix: true,
        before: None,
        limit: 10,
    };
    assert_eq!(store.list_runs(query).await.unwrap(), Vec::new());
    // The main session of the default agent is the only one.
    assert_eq!(store.count().await.unwrap(), 1);
}

fn send(parts: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": {
        "messageId": "m-1", "role": "ROLE_USER", "parts": parts}}})
    .to_string()
}

#[tokio::test]
async fn a_body_that_is_not_json_or_not_a_request_is_refused() {
    let gateway = TestGateway::start().await;
    let (status, body) = rpc(&gateway, "main", "{not json").await;
    assert_eq!(
        (status, error(&body, "not JSON"), &body["id"]),
        (200, -32700, &Value::Null)
    );
    let (_, body) = rpc(&gateway, "main", r#"{"id": 3, "method": "SendMessage"}"#).await;
    assert_eq!(
        (error(&body, "\"jsonrpc\" must be \"2.0\""), &body["id"]),
        (-32600, &json!(3))
    );
    let (_, body) = rpc(&gateway, "main", "[1, 2]").await;
    assert_eq!(error(&body, "not an object"), -32600);
    // Found by the a2a_rpc fuzz target: an id that is an object was echoed back as the answer's
    // id; an id of no allowed type is answered under null.
    for id in [r#"{"a": 2}"#, "[1]", "true"] {
        let call = format!(r#"{{"jsonrpc": "2.0", "id": {id}, "method": "GetTask"}}"#);
        let (_, body) = rpc(&gateway, "main", &call).await;
        assert_eq!(
            (
                error(&body, "\"id\" must be a string, a number or null"),
                &body["id"]
            ),
            (-32600, &Value::Null)
        );
    }
    let call = r#"{"jsonrpc": "1.0", "id": {"a": 2}, "method": "GetTask"}"#;
    let (_, body) = rpc(&gateway, "main", call).await;
    assert_eq!(&body["id"], &Value::Null, "{body}");
    nothing_stored(&gateway).await;
    gateway.stop().await;
}

#[tokio::test]
async fn an_unknown_method_is_refused_naming_the_methods_spoken() {
    let gateway = TestGateway::start().await;
    let call = r#"{"jsonrpc": "2.0", "id": "a", "method": "message/send", "params": {}}"#;
    let (status, body) = rpc(&gateway, "main", call).await;
    assert_eq!(
        (status, error(&body, "SendMessage, SendStreamingMessage")),
        (200, -32601)
    );
    assert_eq!(body["id"], "a");
    nothing_stored(&gateway).await;
    gateway.stop().await;
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_refused_before_anything_is_read() {
    let gateway = TestGateway::start().await;
    let call = send(json!([{"text": "@reply pong"}]));
    for headers in [
        vec![("a2a-version", "1.0")],
        vec![("a2a-version", "1.0"), ("authorization", "Bearer wrong")],
    ] {
        let (status, body) = post(&gateway, "main", &call, &headers).await;
        assert_eq!(
            (
                status,
                error(&body, "Authorization: Bearer <gateway token>")
            ),
            (401, -32600)
        );
    }
    nothing_stored(&gateway).await;
    gateway.stop().await;
}

#[tokio::test]
async fn a_version_other_than_1_is_refused_saying_which_is_spoken() {
    let gateway = TestGateway::start().await;
    let call = send(json!([{"text": "@reply pong"}]));
    let token = format!("Bearer {}", super::super::harness::TOKEN);
    let (_, body) = post(&gateway, "main", &call, &[("authorization", &token)]).await;
    assert_eq!(
        error(
            &body,
            "no A2A-Version header or query parameter (read as A2A 0.3)"
        ),
        -32009
    );
    let (_, body) = post(
        &gateway,
        "main",
        &call,
        &[("authorization", &token), ("a2a-version", "0.3")],
    )
    .await;
    assert_eq!(error(&body, "send the header A2A-Version: 1.0"), -32009);
    nothing_stored(&gateway).await;
    gateway.stop().await;
}

#[tokio::test]
async fn a_message_without_text_parts_is_refused() {
    let gateway = TestGateway::start().await;
    let call = send(json!([{"data": {"k": 1}}, {"url": "https://example.com/f.png"}]));
    let (_, body) = rpc(&gateway, "main", &call).await;
    assert_eq!(error(&body, "send parts with text"), -32005);
    // Params that do not fit the method name what is wrong.
    let call = r#"{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 5}}"#;
    let (_, body) = rpc(&gateway, "main", call).await;
    assert_eq!(error(&body, "message"), -32602);
    nothing_stored(&gateway).await;
    gateway.stop().await;
}

#[tokio::test]
async fn an_unknown_task_or_agent_is_refused() {
    let gateway = TestGateway::start().await;
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": "nope"}});
        let (_, body) = rpc(&gateway, "main", &call.to_string()).await;
        assert_eq!(
            error(&body, "no task \"nope\" for agent main"),
            -32001,
            "{method}"
        );
    }
    // A run that is not an A2A task of the agent is not one either.
    let run = gateway
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "@reply hi"}),
        )
        .await;
    let call =
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": run["runId"]}});
    let (_, body) = rpc(&gateway, "main", &call.to_string()).await;
    assert_eq!(error(&body, "no task"), -32001);
    let (status, body) = rpc(&gateway, "nobody", &send(json!([{"text": "hi"}]))).await;
    assert_eq!((status, error(&body, "no agent \"nobody\"")), (404, -32600));
    gateway.stop().await;
}

#[tokio::test]
async fn a_body_declared_other_than_json_is_refused() {
    let gateway = TestGateway::start().await;
    let token = format!("Bearer {}", super::super::harness::TOKEN);
    let response = reqwest::Client::new()
        .post(format!("http://{}/a2a/main", gateway.addr))
        .header("authorization", token)
        .header("a2a-version", "1.0")
        .header("content-type", "text/plain")
        .body(send(json!([{"text": "@reply pong"}])))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 415);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        error(
            &body,
            "Content-Type must be application/json (got text/plain)"
        ),
        -32600
    );
    nothing_stored(&gateway).await;
    gateway.stop().await;
}

#[tokio::test]
async fn a_bad_page_token_or_push_config_is_refused_saying_what_is_taken() {
    let gateway = TestGateway::start().await;
    let call = |method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
    };
    let list = call("ListTasks", json!({"pageToken": "garbage"}));
    let (_, body) = rpc(&gateway, "main", &list).await;
    assert_eq!(error(&body, "pass the nextPageToken"), -32602);
    let (_, body) = rpc(&gateway, "main", &send(json!([{"text": "@reply x"}]))).await;
    let task = body["result"]["task"]["id"].as_str().unwrap().to_string();
    let create = call(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": "ftp://example.com/push"}),
    );
    let (_, body) = rpc(&gateway, "main", &create).await;
    assert_eq!(error(&body, "is not an http or https URL"), -32602);
    let delete = call(
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task, "id": "nope"}),
    );
    let (_, body) = rpc(&gateway, "main", &delete).await;
    assert_eq!(error(&body, "has no push config \"nope\""), -32602);
    let listed = call("ListTaskPushNotificationConfigs", json!({"taskId": task}));
    let (_, body) = rpc(&gateway, "main", &listed).await;
    assert_eq!(body["result"], json!({"configs": [], "nextPageToken": ""}));
    let (_, body) = rpc(&gateway, "main", &call("GetExtendedAgentCard", json!({}))).await;
    assert_eq!(error(&body, "no extended card"), -32007);
    gateway.stop().await;
}

#[tokio::test]
async fn the_send_policy_applies_as_to_sessions_send() {
    use switchboard_core::config::{Config, SendAction, SendPolicyMatch, SendPolicyRule};
    let mut config = Config::default();
    config.session.send_policy.rules = vec![SendPolicyRule {
        r#match: SendPolicyMatch {
            channel: None,
            chat_type: None,
            key_prefix: Some("a2a:".into()),
        },
        action: SendAction::Deny,
    }];
    let gateway = TestGateway::start_with(config).await;
    let (_, body) = rpc(&gateway, "main", &send(json!([{"text": "@reply pong"}]))).await;
    assert_eq!(
        error(
            &body,
            "send blocked by session policy: (rule 1: keyPrefix=a2a: → deny)"
        ),
        -32600
    );
    nothing_stored(&gateway).await;
    gateway.stop().await;
}
