//! Rules of A2A 1.0 (and of JSON-RPC 2.0 under it) that a careless-caller test found broken:
//! the bounds of `pageSize` and `historyLength`, a message's required `role` and `parts`, agent
//! ids that name no agent, a task's history, `totalSize`, the version as a query parameter, and
//! notifications. Each test quotes the rule it checks; "A2A 1.0" is the specification at its
//! `v1.0.0` tag (`docs/specification.md`, and `specification/a2a.proto`, which its §1.4 makes
//! normative).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::store::RunQuery;

use super::super::harness::{TOKEN, TestGateway};
use super::bad_input::{error, nothing_stored};
use super::{post, post_text, rpc};

/// A JSON-RPC request of `method` with `params`, id 1.
fn call(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

/// `SendMessage` of `message` (blocking: answered once the task ended).
fn send(message: Value) -> String {
    call("SendMessage", json!({"message": message}))
}

/// A user's message `id` saying `text` in conversation `context`.
fn message(id: &str, context: &str, text: &str) -> Value {
    json!({"messageId": id, "contextId": context, "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// The runs stored for the default agent's A2A conversations.
async fn runs(gateway: &TestGateway) -> usize {
    let query = RunQuery {
        key: "agent:main:a2a:".into(),
        prefix: true,
        before: None,
        limit: 100,
    };
    gateway.engine.store().list_runs(query).await.unwrap().len()
}

/// The id of the task a `SendMessage` answered.
fn task_id(body: &Value) -> String {
    body["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {body}"))
        .to_string()
}

#[tokio::test]
async fn list_tasks_page_size_outside_1_to_100_is_refused_naming_the_range() {
    // A2A 1.0 a2a.proto:676-677, ListTasksRequest.page_size: "The minimum value is 1." "The
    // maximum value is 100." (docs/specification.md §6.5, line 1581, answers such a request:
    // "Must be between 1 and 100 inclusive, got 150"), and §3.3.2 (Validation Errors):
    // "Servers SHOULD specify which parameter(s) failed validation and why".
    let gateway = TestGateway::start().await;
    for size in [0, -1, 101, 1000] {
        let (status, body) = rpc(
            &gateway,
            "main",
            &call("ListTasks", json!({"pageSize": size})),
        )
        .await;
        let code = error(
            &body,
            &format!("pageSize {size} is out of range: give 1 to 100"),
        );
        assert_eq!((status, code), (200, -32602), "pageSize {size}");
    }
    for size in [1, 100] {
        let (_, body) = rpc(
            &gateway,
            "main",
            &call("ListTasks", json!({"pageSize": size})),
        )
        .await;
        assert_eq!(body["result"]["pageSize"], size, "{body}");
    }
    // "If unspecified, at most 50 tasks will be returned." (a2a.proto:675)
    let (_, body) = rpc(&gateway, "main", &call("ListTasks", json!({}))).await;
    assert_eq!(body["result"]["pageSize"], 50, "{body}");
    gateway.stop().await;
}

#[tokio::test]
async fn a_negative_history_length_is_refused_naming_the_field() {
    // A2A 1.0 §3.3.2 (Validation Errors): "Servers MUST validate all input parameters before
    // processing" and "SHOULD specify which parameter(s) failed validation"; §6.5 (line 1585)
    // answers `historyLength=-5` with "Must be non-negative integer, got -5"; §3.2.4 gives
    // meaning to unset, 0 and "> 0" only.
    let gateway = TestGateway::start().await;
    let negative = json!({"message": message("m-1", "c1", "@reply x"),
        "configuration": {"historyLength": -1}});
    let (_, body) = rpc(&gateway, "main", &call("SendMessage", negative)).await;
    assert_eq!(
        error(&body, "configuration.historyLength -1 is negative"),
        -32602
    );
    nothing_stored(&gateway).await;
    let (_, body) = rpc(
        &gateway,
        "main",
        &call("ListTasks", json!({"historyLength": -2})),
    )
    .await;
    assert_eq!(error(&body, "historyLength -2 is negative"), -32602);
    let (_, body) = rpc(&gateway, "main", &send(message("m-2", "c1", "@reply x"))).await;
    let get = call(
        "GetTask",
        json!({"id": task_id(&body), "historyLength": -3}),
    );
    let (_, body) = rpc(&gateway, "main", &get).await;
    assert_eq!(error(&body, "historyLength -3 is negative"), -32602);
    gateway.stop().await;
}

#[tokio::test]
async fn a_message_without_the_user_role_is_refused_naming_message_role() {
    // A2A 1.0 a2a.proto:268, Message: "Role role = 4 [(google.api.field_behavior) = REQUIRED];"
    // and :248 "ROLE_USER … The message is from the client to the server."; §5.7 (line 1265):
    // "Implementations SHOULD validate these requirements and reject messages with missing
    // required fields."
    let gateway = TestGateway::start().await;
    let without = json!({"messageId": "m-1", "parts": [{"text": "@reply x"}]});
    let (status, body) = rpc(&gateway, "main", &send(without)).await;
    assert_eq!(
        (
            status,
            error(
                &body,
                "message.role is required: send \"role\": \"ROLE_USER\""
            )
        ),
        (200, -32602)
    );
    let unspecified = json!({"messageId": "m-2", "role": "ROLE_UNSPECIFIED",
        "parts": [{"text": "@reply x"}]});
    let (_, body) = rpc(&gateway, "main", &send(unspecified)).await;
    assert_eq!(error(&body, "message.role is required"), -32602);
    let agent = json!({"messageId": "m-3", "role": "ROLE_AGENT", "parts": [{"text": "@reply x"}]});
    let (_, body) = rpc(&gateway, "main", &send(agent)).await;
    assert_eq!(
        error(&body, "message.role ROLE_AGENT is the agent's role"),
        -32602
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"ROLE_USER\"")
    );
    nothing_stored(&gateway).await;
    gateway.stop().await;
}

#[tokio::test]
async fn a_message_with_no_parts_is_invalid_params_naming_message_parts() {
    // A2A 1.0 a2a.proto:270, Message: "repeated Part parts = 5 [(google.api.field_behavior) =
    // REQUIRED];" and §5.7 (line 1265): "Arrays marked as required MUST contain at least one
    // element."; §3.3.2 lists "missing required message parts" among the validation errors
    // (-32602), not as an unsupported content type (-32005, "A Media Type provided in the
    // request's message parts … is not supported").
    let gateway = TestGateway::start().await;
    for message in [
        json!({"messageId": "m-1", "role": "ROLE_USER", "parts": []}),
        json!({"messageId": "m-2", "role": "ROLE_USER"}),
    ] {
        let (_, body) = rpc(&gateway, "main", &send(message)).await;
        assert_eq!(error(&body, "message.parts is empty"), -32602);
    }
    let blank = json!({"messageId": "m-3", "role": "ROLE_USER", "parts": [{"text": "  "}]});
    let (_, body) = rpc(&gateway, "main", &send(blank)).await;
    assert_eq!(
        error(&body, "message.parts: the text parts are empty"),
        -32602
    );
    nothing_stored(&gateway).await;
    gateway.stop().await;
}

#[tokio::test]
async fn an_agent_id_with_no_letter_or_digit_is_not_found() {
    // docs/a2a.md (Errors): "an unknown agent in the path | -32600 | 404"; A2A 1.0 §3.3.2
    // (Resource Errors, line 528): "Servers MUST return a not found error when a requested
    // resource does not exist". `-` and `☃` once normalised to the default agent, `main`.
    let gateway = TestGateway::start().await;
    for agent in ["-", "%E2%98%83", "☃", "--"] {
        let (status, body) = rpc(&gateway, agent, &send(message("m-1", "c1", "@reply x"))).await;
        assert_eq!((status, error(&body, "no agent")), (404, -32600), "{agent}");
        assert_eq!(body["id"], 1, "{body}");
        let card = format!(
            "http://{}/a2a/{agent}/.well-known/agent-card.json",
            gateway.addr
        );
        let response = reqwest::get(card).await.unwrap();
        assert_eq!(response.status().as_u16(), 404, "the card of {agent}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(error(&body, "no agent"), -32600);
    }
    nothing_stored(&gateway).await;
    gateway.stop().await;
}

#[tokio::test]
async fn get_task_answers_the_last_history_length_messages() {
    // A2A 1.0 §3.2.4 (History Length Semantics, lines 471-473): "Unset/undefined: No limit
    // imposed; server returns its default amount of history (implementation-defined, may be all
    // history)", "0: No history should be returned; the `history` field SHOULD be omitted",
    // "> 0: Return at most this many recent messages from the task's history"; a2a.proto:660-662,
    // GetTaskRequest.history_length: "The server MUST NOT return more messages than the provided
    // value".
    let gateway = TestGateway::start().await;
    let (_, body) = rpc(
        &gateway,
        "main",
        &send(message("m-h", "ctx-h", "@reply pong")),
    )
    .await;
    let task = task_id(&body);
    let asked = json!({"messageId": "m-h", "contextId": "ctx-h", "taskId": task,
        "role": "ROLE_USER", "parts": [{"text": "@reply pong"}]});
    let reply = json!({"messageId": format!("{task}-status"), "contextId": "ctx-h",
        "taskId": task, "role": "ROLE_AGENT", "parts": [{"text": "pong"}]});
    // The blocking answer carries the whole history when none is asked.
    assert_eq!(body["result"]["task"]["history"], json!([asked, reply]));
    let get = |length: Option<i64>| {
        let mut params = json!({"id": task});
        if let Some(n) = length {
            params["historyLength"] = json!(n);
        }
        call("GetTask", params)
    };
    for (length, expected) in [
        (None, Some(json!([asked, reply]))),
        (Some(5), Some(json!([asked, reply]))),
        (Some(2), Some(json!([asked, reply]))),
        (Some(1), Some(json!([reply]))),
        (Some(0), None),
    ] {
        let (_, body) = rpc(&gateway, "main", &get(length)).await;
        let task = body["result"]
            .as_object()
            .unwrap_or_else(|| panic!("{body}"));
        assert_eq!(
            task.get("history"),
            expected.as_ref(),
            "historyLength {length:?}"
        );
    }
    // The same in SendMessage's configuration and in ListTasks (a2a.proto:684, "The maximum
    // number of messages to include in each task's history").
    let configured = json!({"message": message("m-i", "ctx-h", "@reply again"),
        "configuration": {"historyLength": 0}});
    let (_, body) = rpc(&gateway, "main", &call("SendMessage", configured)).await;
    assert_eq!(body["result"]["task"].get("history"), None, "{body}");
    let list = call(
        "ListTasks",
        json!({"contextId": "ctx-h", "historyLength": 1}),
    );
    let (_, body) = rpc(&gateway, "main", &list).await;
    let last: Vec<&Value> = body["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["history"][0]["parts"][0]["text"])
        .collect();
    assert_eq!(last, [&json!("again"), &json!("pong")]);
    gateway.stop().await;
}

#[tokio::test]
async fn list_tasks_total_size_counts_every_matching_task() {
    // A2A 1.0 a2a.proto:701, ListTasksResponse.total_size: "Total number of tasks available
    // (before pagination)."
    let gateway = TestGateway::start().await;
    for i in 0..3 {
        let id = format!("m-{i}");
        rpc(&gateway, "main", &send(message(&id, "ctx-t", "@reply x"))).await;
    }
    rpc(
        &gateway,
        "main",
        &send(message("m-other", "ctx-u", "@reply y")),
    )
    .await;
    let mut token = String::new();
    let mut seen = Vec::new();
    loop {
        let params = json!({"contextId": "ctx-t", "pageSize": 1, "pageToken": token});
        let (_, body) = rpc(&gateway, "main", &call("ListTasks", params)).await;
        let result = &body["result"];
        assert_eq!(
            (&result["totalSize"], &result["pageSize"]),
            (&json!(3), &json!(1)),
            "{body}"
        );
        seen.extend(
            result["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].clone()),
        );
        token = result["nextPageToken"].as_str().unwrap().to_string();
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    // Across conversations, and after the state filter.
    let all = |params: Value| call("ListTasks", params);
    let (_, body) = rpc(&gateway, "main", &all(json!({"pageSize": 2}))).await;
    assert_eq!(body["result"]["totalSize"], 4, "{body}");
    let done = json!({"status": "TASK_STATE_COMPLETED", "pageSize": 1});
    let (_, body) = rpc(&gateway, "main", &all(done)).await;
    assert_eq!(body["result"]["totalSize"], 4, "{body}");
    let failed = json!({"status": "TASK_STATE_FAILED"});
    let (_, body) = rpc(&gateway, "main", &all(failed)).await;
    assert_eq!(
        (&body["result"]["totalSize"], &body["result"]["tasks"]),
        (&json!(0), &json!([]))
    );
    gateway.stop().await;
}

#[tokio::test]
async fn the_version_may_come_as_a_query_parameter() {
    // A2A 1.0 §3.6.1 (line 726): "Clients MAY provide the `A2A-Version` as a request parameter
    // instead of a header."; §3.2.6: service parameters have "case-insensitive string keys".
    let gateway = TestGateway::start().await;
    let token = format!("Bearer {TOKEN}");
    let auth = [("authorization", token.as_str())];
    let list = call("ListTasks", json!({}));
    for agent in ["main?A2A-Version=1.0", "main?a2a-version=1.0"] {
        let (status, body) = post(&gateway, agent, &list, &auth).await;
        assert_eq!(
            (status, &body["result"]["totalSize"]),
            (200, &json!(0)),
            "{body}"
        );
    }
    let (_, body) = post(&gateway, "main?A2A-Version=0.3", &list, &auth).await;
    assert_eq!(
        error(&body, "A2A version \"0.3\" is not spoken here"),
        -32009
    );
    // The header, when there is one, is the version asked.
    let header = [("authorization", token.as_str()), ("a2a-version", "1.0")];
    let (_, body) = post(&gateway, "main?A2A-Version=0.3", &list, &header).await;
    assert_eq!(body["result"]["totalSize"], 0, "{body}");
    gateway.stop().await;
}

#[tokio::test]
async fn the_bearer_scheme_is_read_in_any_case() {
    // RFC 7235 §2.1: HTTP authentication "uses a case-insensitive token as a means to identify
    // the authentication scheme"; A2A 1.0 §7.3 defers to the HTTP scheme the card declares.
    let gateway = TestGateway::start().await;
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let auth = format!("{scheme} {TOKEN}");
        let headers = [("authorization", auth.as_str()), ("a2a-version", "1.0")];
        let (status, body) = post(&gateway, "main", &call("ListTasks", json!({})), &headers).await;
        assert_eq!(
            (status, &body["result"]["totalSize"]),
            (200, &json!(0)),
            "{scheme}"
        );
    }
    gateway.stop().await;
}

#[tokio::test]
async fn a_notification_is_done_and_not_answered() {
    // JSON-RPC 2.0 §4.1: "A Notification is a Request object without an "id" member." … "The
    // Server MUST NOT reply to a Notification"; A2A 1.0 §9 (JSON-RPC binding) says nothing more,
    // so no response object and no body: 204 No Content.
    let gateway = TestGateway::start().await;
    let auth = format!("Bearer {TOKEN}");
    let headers = [("authorization", auth.as_str()), ("a2a-version", "1.0")];
    let notification = |method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
    };
    let sent = notification(
        "SendMessage",
        json!({"message": message("m-n", "ctx-n", "@reply x")}),
    );
    assert_eq!(
        post_text(&gateway, "main", &sent, &headers).await,
        (204, String::new())
    );
    // Done all the same: the message's task is stored (before the 204).
    assert_eq!(runs(&gateway).await, 1);
    // Refused ones are not answered either: an unknown method or task, bad params, no version.
    for body in [
        notification("message/send", json!({})),
        notification("GetTask", json!({"id": "nope"})),
        notification(
            "SendMessage",
            json!({"message": {"messageId": "m-x", "parts": []}}),
        ),
    ] {
        assert_eq!(
            post_text(&gateway, "main", &body, &headers).await,
            (204, String::new())
        );
    }
    let unversioned = [("authorization", auth.as_str())];
    let listed = notification("ListTasks", json!({}));
    assert_eq!(
        post_text(&gateway, "main", &listed, &unversioned).await,
        (204, String::new())
    );
    assert_eq!(runs(&gateway).await, 1);
    // `"id": null` is an id (JSON-RPC 2.0 §4: an id "MUST contain a String, Number, or NULL
    // value if included"): answered, under null.
    let null_id =
        json!({"jsonrpc": "2.0", "id": null, "method": "GetTask", "params": {"id": "nope"}});
    let (status, body) = rpc(&gateway, "main", &null_id.to_string()).await;
    assert_eq!(
        (status, error(&body, "no task"), &body["id"]),
        (200, -32001, &Value::Null)
    );
    // A body that is not a valid Request object is no notification: answered, under null
    // (JSON-RPC 2.0 §5: "If there was an error in detecting the id in the Request object (e.g.
    // Parse error/Invalid Request), it MUST be Null.").
    let invalid = json!({"jsonrpc": "1.0", "method": "GetTask"}).to_string();
    let (_, body) = rpc(&gateway, "main", &invalid).await;
    assert_eq!(error(&body, "\"jsonrpc\" must be \"2.0\""), -32600);
    gateway.stop().await;
}
