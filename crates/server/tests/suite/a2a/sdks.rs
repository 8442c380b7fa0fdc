//! The official A2A SDKs as clients of the gateway: `a2a-sdk` (Python) for the card, send,
//! stream, get, list, cancel, subscribe and push; `@a2a-js/sdk` (JavaScript) for send and stream. Each
//! script prints what it saw as JSON, compared whole.

use std::path::{Path, PathBuf};
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::store::{DeliveryQuery, DeliveryStatus};
use switchboard_testkit::a2a::{self, PushReceiver};

use super::super::harness::{TOKEN, TestGateway};

fn tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

/// Runs `program script args…` off the async threads; answers the JSON it printed last.
async fn run_script(program: PathBuf, script: PathBuf, args: Vec<String>) -> Value {
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&program)
            .arg(&script)
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the SDK script failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// The stream both SDKs see for `@slow 1` + `@reply one two three`: the task, WORKING as the
/// run starts and with each word, the reply as an artifact, the final status with it.
fn slow_reply_stream(submitted: &str, working: &str, completed: &str) -> Value {
    json!([
        ["task", submitted],
        ["status", working, ""],
        ["status", working, "one "],
        ["status", working, "two "],
        ["status", working, "three"],
        ["artifact", "one two three"],
        ["status", completed, "one two three"],
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_as_a_client_of_every_method() {
    let python = match a2a::python_sdk(tmp()) {
        Ok(python) => python,
        Err(missing) => {
            return a2a::not_run("the_python_sdk_as_a_client_of_every_method", &missing);
        }
    };
    let script = tmp().join("a2a-sdk-client.py");
    std::fs::write(&script, include_str!("sdk_client.py")).unwrap();
    let gateway = TestGateway::start().await;
    let receiver = PushReceiver::start().await;
    let base = format!("http://{}", gateway.addr);
    let mut seen = run_script(python, script, vec![base, TOKEN.into(), receiver.url()]).await;
    let pushed = seen["push"]
        .as_object_mut()
        .unwrap()
        .remove("task")
        .unwrap();
    assert_eq!(
        seen,
        json!({
            "card": {"name": "main", "urls": ["<base>/a2a/main"], "binding": "JSONRPC",
                     "version": "1.0", "streaming": true, "push": true, "schemes": ["bearer"]},
            "send": {"state": "TASK_STATE_COMPLETED", "artifact": ["pong"]},
            "get": {"same": true, "state": "TASK_STATE_COMPLETED", "artifact": ["pong"]},
            "stream": slow_reply_stream(
                "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"),
            "list": {"pages": true, "last_page_token": ""},
            "cancel": {"state": "TASK_STATE_CANCELED", "again": "TaskNotCancelableError"},
            "subscribe": [["task", true], ["status", "TASK_STATE_CANCELED"]],
            "unknown": "TaskNotFoundError",
            "push": {"state": "TASK_STATE_COMPLETED", "configs": [[true, "push-secret"]]},
        })
    );
    assert_pushed_once(&gateway, &receiver, pushed.as_str().unwrap()).await;
    gateway.stop().await;
}

/// The task's three pushes reached the receiver once each, with the config's token: its
/// `SUBMITTED` and `WORKING` states and the completed task with the reply.
async fn assert_pushed_once(gateway: &TestGateway, receiver: &PushReceiver, task: &str) {
    receiver.wait_for(3).await;
    // Once the outbox marked them delivered, nothing more is on its way.
    let store = gateway.engine.store();
    let query = DeliveryQuery {
        limit: 100,
        ..DeliveryQuery::default()
    };
    let mut records = Vec::new();
    for _ in 0..1200 {
        records = store.list_deliveries(query.clone()).await.unwrap();
        records.retain(|d| d.channel == "a2a-push");
        if records
            .iter()
            .all(|d| d.status == DeliveryStatus::Delivered)
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Only the task with a config has pushes: one record for each state pushed.
    let of_task: Vec<(Option<&str>, DeliveryStatus)> = records
        .iter()
        .map(|d| (d.run_id.as_ref().map(|r| r.as_str()), d.status))
        .collect();
    let delivered = (Some(task), DeliveryStatus::Delivered);
    assert_eq!(of_task, [delivered, delivered, delivered]);
    let pushes = receiver.pushes();
    let seen = |state: &str| {
        let some = |s: &str| Some(s.to_string());
        (some(task), some(state), some("push-secret"))
    };
    assert_eq!(
        a2a::by_state(pushes.clone()),
        [
            seen("TASK_STATE_SUBMITTED"),
            seen("TASK_STATE_WORKING"),
            seen("TASK_STATE_COMPLETED")
        ]
    );
    let done = pushes.iter().find_map(|p| p.body.get("task")).unwrap();
    assert_eq!(done["artifacts"][0]["parts"], json!([{"text": "pushed"}]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_javascript_sdk_sends_and_streams() {
    let dir = match a2a::js_sdk(tmp()) {
        Ok(dir) => dir,
        Err(missing) => return a2a::not_run("the_javascript_sdk_sends_and_streams", &missing),
    };
    // Beside its node_modules, so that its import of the SDK resolves.
    let script = dir.join("a2a-sdk-client.mjs");
    std::fs::write(&script, include_str!("sdk_client.mjs")).unwrap();
    let gateway = TestGateway::start().await;
    let base = format!("http://{}", gateway.addr);
    let seen = run_script("node".into(), script, vec![base, TOKEN.into()]).await;
    assert_eq!(
        seen,
        json!({
            "send": {"state": "COMPLETED", "artifact": ["pong"]},
            "stream": slow_reply_stream("SUBMITTED", "WORKING", "COMPLETED"),
        })
    );
    gateway.stop().await;
}
