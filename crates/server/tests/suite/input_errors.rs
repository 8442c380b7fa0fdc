//! Nonsense input through the real gateway: each is refused with the code it deserves and a
//! message that names the field and what is accepted (not serde's Rust words), or — where the
//! reference accepts it — answered as docs/protocol.md says. After each, the same connection
//! serves a good request, and so does the gateway.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{AgentEntry, Config};
use switchboard_protocol::{ErrorCode, Frame};
use switchboard_server::client::{ClientError, GatewayClient};

use super::harness::{TOKEN, TestGateway, raw_http};
use super::mcp::INITIALIZE;
use super::protocol::http;

/// Agents `main` (the default) and `ops`.
pub(super) fn two_agents() -> Config {
    let mut config = Config::default();
    config.agents.list = ["main", "ops"]
        .into_iter()
        .map(|id| AgentEntry {
            id: id.into(),
            default: id == "main",
            ..Default::default()
        })
        .collect();
    config
}

/// The error `method` with `params` is answered on `client`, which must still serve after it.
async fn refused(
    client: &mut GatewayClient,
    method: &str,
    params: Value,
) -> switchboard_protocol::ErrorShape {
    let answer = client.request(method, params.clone()).await;
    let Err(ClientError::Gateway(error)) = answer else {
        panic!("{method} {params}: expected an error, got {answer:?}");
    };
    let health = client.request("health", Value::Null).await.unwrap();
    assert_eq!(health["ok"], true, "the connection goes on after {method}");
    error
}

/// One nonsense input: the method, its params, the code, and the stable parts of the message
/// (the field it names and what it says is accepted).
struct Case {
    method: &'static str,
    params: Value,
    code: ErrorCode,
    says: &'static [&'static str],
}

fn case(
    method: &'static str,
    params: Value,
    code: ErrorCode,
    says: &'static [&'static str],
) -> Case {
    Case {
        method,
        params,
        code,
        says,
    }
}

const OBJECT: &str = "params must be a JSON object of named fields";

/// What used to be accepted silently (or answered in serde's words), and what it gets now.
fn cases() -> Vec<Case> {
    use ErrorCode::{InvalidRequest as Invalid, NotFound};
    vec![
        // Params that are not an object were read field by field (`[1]` as `{}`), or named a
        // Rust struct.
        case(
            "sessions.list",
            json!([1]),
            Invalid,
            &[OBJECT, "got an array"],
        ),
        case(
            "chat.history",
            json!(["main"]),
            Invalid,
            &[OBJECT, "got an array"],
        ),
        case(
            "sessions.list",
            json!("main"),
            Invalid,
            &[OBJECT, "got a string"],
        ),
        // Numbers below their least meaningful value were ignored or clamped.
        case(
            "chat.send",
            json!({"sessionKey": "main", "message": "hi", "timeoutMs": -5}),
            Invalid,
            &["at timeoutMs", "expected a number ≥ 0, got -5"],
        ),
        case(
            "agent",
            json!({"sessionKey": "main", "message": "hi", "timeout": -5}),
            Invalid,
            &["at timeout", "expected a number ≥ 0, got -5"],
        ),
        case(
            "agent.wait",
            json!({"runId": "r1", "timeoutMs": -5}),
            Invalid,
            &["at timeoutMs", "expected a number ≥ 0, got -5"],
        ),
        case(
            "chat.history",
            json!({"sessionKey": "main", "before": -99}),
            Invalid,
            &["at before", "expected a number ≥ 1, got -99"],
        ),
        case(
            "chat.history",
            json!({"sessionKey": "main", "limit": 0}),
            Invalid,
            &["at limit", "expected a number ≥ 1, got 0"],
        ),
        case(
            "sessions.list",
            json!({"limit": -5}),
            Invalid,
            &["at limit", "expected a number ≥ 1, got -5"],
        ),
        case(
            "sessions.list",
            json!({"activeMinutes": -3}),
            Invalid,
            &["at activeMinutes", "expected a number ≥ 1, got -3"],
        ),
        case(
            "sessions.list",
            json!({"messageLimit": -1}),
            Invalid,
            &["at messageLimit", "expected a number ≥ 0, got -1"],
        ),
        case(
            "deliveries.list",
            json!({"limit": -1}),
            Invalid,
            &["at limit", "expected a number ≥ 1, got -1"],
        ),
        case(
            "exchanges.list",
            json!({"limit": 0}),
            Invalid,
            &["at limit", "expected a number ≥ 1, got 0"],
        ),
        // An agent nobody configured was ignored, or started sessions of its own.
        case(
            "agent",
            json!({"sessionKey": "agent:main:x2", "message": "hi", "agentId": "UNKNOWN AGENT!"}),
            NotFound,
            &[
                "agentId: no agent \"UNKNOWN AGENT!\"",
                "configured: main, ops",
            ],
        ),
        case(
            "chat.inject",
            json!({"sessionKey": "main", "message": "x", "agentId": "UNKNOWN AGENT!"}),
            NotFound,
            &["agentId: no agent", "configured: main, ops"],
        ),
        case(
            "sessions.create",
            json!({"key": "agent:main:zz", "agentId": "nobody"}),
            NotFound,
            &["agentId: no agent \"nobody\"", "configured: main, ops"],
        ),
        case(
            "sessions.describe",
            json!({"key": "main", "agentId": "nobody"}),
            NotFound,
            &["agentId: no agent \"nobody\"", "configured: main, ops"],
        ),
        case(
            "sessions.resolve",
            json!({"label": "x", "agentId": "nobody"}),
            NotFound,
            &["agentId: no agent \"nobody\""],
        ),
        // A key of one agent with another's agentId (the reference refuses the pair).
        case(
            "agent",
            json!({"sessionKey": "agent:main:x3", "message": "hi", "agentId": "ops"}),
            Invalid,
            &[
                "agentId: \"ops\" does not match the agent of agent:main:x3 (main)",
                "give a key of agent ops",
            ],
        ),
        case(
            "sessions.create",
            json!({"key": "agent:ops:x4", "agentId": "main"}),
            Invalid,
            &["agentId: \"main\" does not match the agent of agent:ops:x4 (ops)"],
        ),
        // A verbose level nothing reads was stored as given.
        case(
            "sessions.patch",
            json!({"key": "main", "verboseLevel": "loud"}),
            Invalid,
            &[
                "verboseLevel: \"loud\" is not a level",
                "expected \"off\", \"on\" or \"full\"",
            ],
        ),
        // Unclear answers: serde's words for one-or-many, Rust types, a method that needs a
        // connection, a field named with another's value.
        case(
            "sessions.list",
            json!({"kinds": 5}),
            Invalid,
            &[
                "at kinds",
                "expected a string or an array of strings",
                "got a number",
            ],
        ),
        case(
            "sessions.list",
            json!({"kinds": ["main", 3]}),
            Invalid,
            &["at kinds", "got an array holding 3"],
        ),
        case(
            "chat.send",
            json!({"sessionKey": "main", "message": "x", "attachments": [5]}),
            Invalid,
            &["at attachments[0]", "expected an object"],
        ),
        case(
            "chat.send",
            json!({"sessionKey": "main", "message": "x", "attachments": "x"}),
            Invalid,
            &["at attachments", "expected an array"],
        ),
        case(
            "logs.tail",
            json!({"cursor": -1}),
            Invalid,
            &["at cursor", "expected a whole number ≥ 0"],
        ),
        case(
            "chat.inject",
            json!({"sessionKey": "main", "message": {"role": "user", "content": 5}}),
            Invalid,
            &[
                "content: expected text or an array of content blocks",
                "got a number",
            ],
        ),
        case(
            "cron.add",
            json!({"name": "a", "schedule": {"kind": "every", "everyMs": 60000}, "payload": {"kind": "agentTurn", "message": "x"}, "delivery": 5}),
            Invalid,
            &[
                "delivery: 5 is not an object",
                "expected {mode: \"announce\" | \"none\"}",
            ],
        ),
    ]
}

#[tokio::test]
async fn nonsense_params_get_errors_that_name_the_field_and_what_is_accepted() {
    let gw = TestGateway::start_with(two_agents()).await;
    let mut client = gw.client().await;
    for Case {
        method,
        params,
        code,
        says,
    } in cases()
    {
        let error = refused(&mut client, method, params.clone()).await;
        assert_eq!(error.code, code, "{method} {params}: {}", error.message);
        for part in says {
            assert!(
                error.message.contains(part),
                "{method} {params}: {:?} should say {part:?}",
                error.message
            );
        }
        for rust in ["struct ", "untagged enum", "u64", "usize", "a sequence"] {
            assert!(
                !error.message.contains(rust),
                "{method} {params}: {:?} speaks Rust ({rust})",
                error.message
            );
        }
    }
    // Nothing was created for the agent nobody configured, nor for the refused pairs.
    let sessions = client.request("sessions.list", json!({})).await.unwrap();
    let keys: Vec<&str> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| row["key"].as_str())
        .collect();
    assert!(
        keys.iter()
            .all(|k| !k.contains("unknown-agent") && !k.ends_with(":x2") && !k.ends_with(":x3")),
        "{keys:?}"
    );
    // The same values in range are served.
    let answer = client
        .request(
            "chat.history",
            json!({"sessionKey": "main", "limit": 5, "before": 1}),
        )
        .await
        .unwrap();
    assert_eq!(answer["messages"], json!([]));
    let patched = client
        .request(
            "sessions.patch",
            json!({"key": "main", "verboseLevel": "YES"}),
        )
        .await
        .unwrap();
    assert_eq!(patched["session"]["verboseLevel"], "on");
    let accepted = client
        .request(
            "sessions.create",
            json!({"key": "agent:ops:x5", "agentId": "Ops"}),
        )
        .await
        .unwrap();
    assert_eq!(accepted["key"], "agent:ops:x5");
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn what_the_reference_accepts_is_answered_as_documented() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    // A session that does not exist yet has an empty history (docs/protocol.md, chat.history).
    let empty = client
        .request(
            "chat.history",
            json!({"sessionKey": "agent:main:nobody-yet"}),
        )
        .await
        .unwrap();
    assert_eq!(
        empty,
        json!({"sessionKey": "agent:main:nobody-yet", "messages": []})
    );
    // A key given twice is refused, naming it (the reference's JSON.parse keeps the last one;
    // here neither is guessed), and the answer carries the request's id.
    let twice = r#"{"type":"req","id":"dup","method":"chat.history","params":{"sessionKey":"agent:main:nope","sessionKey":"main","limit":1}}"#;
    client.send_text(twice.into()).await.unwrap();
    let Frame::Res(res) = client.next_frame().await.unwrap() else {
        panic!("expected the response")
    };
    assert_eq!(res.id, "dup");
    let error = res.error.expect("refused");
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert!(
        error
            .message
            .contains("the key \"sessionKey\" is written twice in one object"),
        "{}",
        error.message
    );
    // An agentId filter names no session of an agent nobody configured: nothing listed.
    let none = client
        .request("sessions.list", json!({"agentId": "nobody"}))
        .await
        .unwrap();
    assert_eq!(none["count"], 0);
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn over_http_a_connection_method_and_an_array_of_params_are_explained() {
    let gw = TestGateway::start().await;
    let rpc = |body: &'static str| http(gw.addr, "POST", "/rpc", Some(TOKEN), body);
    let (status, body) = rpc(r#"{"method":"sessions.subscribe","params":{}}"#).await;
    assert_eq!(status, 400);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("sessions.subscribe chooses the events a WebSocket connection")
            && message.contains("call it on the WebSocket"),
        "{message}"
    );
    let (status, body) = rpc(r#"{"method":"sessions.list","params":[1]}"#).await;
    assert_eq!(status, 400);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("params must be a JSON object") && message.ends_with("got an array"),
        "{message}"
    );
    // An array of a request's fields is not a request.
    let (status, body) = rpc(r#"["health",{}]"#).await;
    assert_eq!(status, 400);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("a JSON object, not an array"), "{message}");
    let (status, body) = rpc(r#"{"method":"sessions.list","params":{}}"#).await;
    assert_eq!((status, body["ok"].clone()), (200, json!(true)));
    gw.stop().await;
}

/// A POST to `path` on `/mcp` with the token, as an MCP client sends it.
async fn mcp(gw: &TestGateway, path: &str, body: &str) -> super::harness::RawResponse {
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    raw_http(gw.addr, &request).await
}

#[tokio::test]
async fn mcp_refuses_an_unknown_acting_session_and_malformed_bodies_at_once() {
    let gw = TestGateway::start().await;
    // An acting session that does not exist is refused at initialize, not at the first call.
    let answer = mcp(&gw, "/mcp?session=agent:main:nowhere", INITIALIZE).await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    let error = &answer.json["error"];
    assert_eq!(
        (error["code"].clone(), error["data"]["code"].clone()),
        (json!(-32602), json!("NOT_FOUND"))
    );
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("Session not found: agent:main:nowhere")
            && message.contains("which must exist")
            && message.contains("/mcp?session=KEY or the X-Switchboard-Session header"),
        "{message}"
    );
    for (key, why) in [
        ("agent::x", "empty segment"),
        ("../../etc", "contains a path separator (U+002F)"),
    ] {
        let answer = mcp(&gw, &format!("/mcp?session={key}"), INITIALIZE).await;
        assert_eq!(answer.status, 400, "{}", answer.body);
        let message = answer.json["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("the acting session (?session= or X-Switchboard-Session)")
                && message.contains(why)
                && message.contains("accepted:"),
            "{message}"
        );
    }
    // Bodies that are not one JSON-RPC message: 400 with what is wrong, not 415.
    let cases = [
        ("{not json", -32700, "parse error: the body is not JSON"),
        ("[1,2]", -32600, "a batch (a JSON array) is not accepted"),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"initialize"}"#,
            -32600,
            "jsonrpc: expected \"2.0\"",
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, -32600, "method: missing"),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":5}"#,
            -32602,
            "params of initialize: expected an object",
        ),
    ];
    for (body, code, says) in cases {
        let answer = mcp(&gw, "/mcp?session=main", body).await;
        assert_eq!(answer.status, 400, "{body}: {}", answer.body);
        assert_eq!(answer.json["error"]["code"], code, "{body}");
        let message = answer.json["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(says), "{body}: {message}");
    }
    // An existing session initializes.
    let answer = mcp(&gw, "/mcp?session=main", INITIALIZE).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body.contains("\"serverInfo\""), "{}", answer.body);
    gw.assert_serving().await;
    gw.stop().await;
}
