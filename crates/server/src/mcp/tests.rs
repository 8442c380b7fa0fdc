//! The handler's pieces that need no transport: results, errors, progress and cancellation.
//! The whole server is tested through a real MCP client in the CLI's suite (`suite/mcp.rs`).

use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use switchboard_protocol::tools::ToolHints;

#[test]
fn a_tool_result_is_text_and_structured_content_with_its_error_flag() {
    let ok = mcp_result(ToolOutput::ok(json!({"count": 0, "sessions": []})));
    assert_eq!(ok.is_error, Some(false));
    assert_eq!(
        ok.structured_content,
        Some(json!({"count": 0, "sessions": []}))
    );
    assert_eq!(
        ok.content[0].as_text().map(|t| t.text.as_str()),
        Some(r#"{"count":0,"sessions":[]}"#)
    );

    let refused = mcp_result(ToolOutput {
        is_error: true,
        ..ToolOutput::ok(json!({"status": "forbidden", "error": "no"}))
    });
    assert_eq!(refused.is_error, Some(true));
    assert!(refused.structured_content.is_some());

    // Every tool error is an object, so it is structured content too.
    let error = mcp_result(ToolOutput::error("The arguments of x were not valid JSON"));
    assert_eq!(error.is_error, Some(true));
    let expected = json!({"status": "error", "error": "The arguments of x were not valid JSON"});
    assert_eq!(error.structured_content, Some(expected.clone()));
    assert_eq!(
        error.content[0].as_text().map(|t| t.text.as_str()),
        Some(expected.to_string().as_str())
    );

    // structuredContent must be an object: a plain-text result goes as text only.
    let text = mcp_result(ToolOutput::ok(json!("plain")));
    assert_eq!(text.structured_content, None);
    assert_eq!(
        text.content[0].as_text().map(|t| t.text.as_str()),
        Some("plain")
    );
}

#[test]
fn gateway_errors_map_onto_json_rpc_codes_and_keep_theirs() {
    let cases = [
        (ErrorCode::InvalidRequest, -32602),
        (ErrorCode::NotFound, -32602),
        (ErrorCode::Forbidden, -32602),
        (ErrorCode::Unauthorized, -32600),
        (ErrorCode::Unavailable, -32603),
        (ErrorCode::Internal, -32603),
    ];
    for (code, json_rpc) in cases {
        let error = to_mcp_error(code, "what to fix".into());
        assert_eq!(error.code.0, json_rpc, "{code:?}");
        assert_eq!(error.message, "what to fix");
        assert_eq!(error.data, Some(json!({"code": code.as_str()})));
    }
}

#[test]
fn undecodable_requests_say_what_the_params_must_be() {
    let args = undecodable(
        "tools/call",
        Some(&json!({"name": "sessions_list", "arguments": [1, 2]})),
    );
    assert_eq!(args.code.0, -32602);
    assert!(
        args.message
            .contains("arguments of sessions_list must be a JSON object")
            && args.message.contains("[1,2]"),
        "{}",
        args.message
    );
    let nameless = undecodable("tools/call", Some(&json!({"name": 7})));
    assert!(
        nameless.message.contains("\"name\""),
        "{}",
        nameless.message
    );
    let other = undecodable("tools/frobnicate", None);
    assert_eq!(other.code.0, -32601);
    assert!(other.message.contains("tools/call"), "{}", other.message);
}

#[test]
fn the_progress_total_is_the_calls_timeout_when_it_has_one() {
    assert_eq!(wait_seconds(&json!({"timeoutSeconds": 30})), Some(30.0));
    assert_eq!(wait_seconds(&json!({"timeoutSeconds": "12.7"})), Some(12.0));
    assert_eq!(wait_seconds(&json!({"timeoutSeconds": 0})), None);
    assert_eq!(wait_seconds(&json!({"limit": 5})), None);
    assert_eq!(wait_seconds(&Value::Null), None);
}

type Reports = Arc<Mutex<Vec<u64>>>;

fn recorder(reports: &Reports) -> impl FnMut(u64) -> std::future::Ready<()> + use<> {
    let reports = reports.clone();
    move |elapsed| {
        if let Ok(mut r) = reports.lock() {
            r.push(elapsed);
        }
        std::future::ready(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_pending_call_reports_progress_at_once_and_then_regularly() {
    let reports = Reports::default();
    let call = async {
        tokio::time::sleep(Duration::from_secs(12)).await;
        "done"
    };
    let (outcome, cancelled) = supervise(
        call,
        &CancellationToken::new(),
        &CancellationToken::new(),
        Some(recorder(&reports)),
    )
    .await;
    assert_eq!((outcome, cancelled), ("done", false));
    assert_eq!(*reports.lock().unwrap(), vec![0, 5, 10]);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_stops_waiting_and_is_still_awaited_to_its_end() {
    let reports = Reports::default();
    let stop_waiting = CancellationToken::new();
    let cancelled = CancellationToken::new();
    let waiter = stop_waiting.clone();
    // Like sessions_send: it waits until told to stop, then finishes what it does.
    let call = async move {
        waiter.cancelled().await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        "answered as a timeout"
    };
    let client = cancelled.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(7)).await;
        client.cancel();
    });
    let (outcome, was_cancelled) =
        supervise(call, &cancelled, &stop_waiting, Some(recorder(&reports))).await;
    assert_eq!((outcome, was_cancelled), ("answered as a timeout", true));
    assert!(stop_waiting.is_cancelled());
    // No progress after the cancellation.
    assert_eq!(*reports.lock().unwrap(), vec![0, 5]);
}

#[test]
fn tools_keep_their_name_description_and_schema() {
    let schema = json!({"type": "object", "properties": {"limit": {"type": ["number", "null"]}}});
    let tool = mcp_tool(ToolDescriptor {
        name: "sessions_list".into(),
        description: "List sessions.".into(),
        input_schema: schema.clone(),
        annotations: None,
        group: None,
    });
    assert_eq!(
        serde_json::to_value(&tool).unwrap(),
        json!({"name": "sessions_list", "description": "List sessions.", "inputSchema": schema})
    );
    let acting = mcp_tool(ToolDescriptor {
        name: "sessions_send".into(),
        description: "Send.".into(),
        input_schema: schema.clone(),
        annotations: Some(ToolHints::ACTS),
        group: None,
    });
    assert_eq!(
        serde_json::to_value(&acting).unwrap()["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true})
    );
}
