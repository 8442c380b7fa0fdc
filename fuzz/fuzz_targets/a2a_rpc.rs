//! A `POST /a2a/<agentId>` body (`crates/server/src/a2a/rpc.rs`) with an `A2A-Version` header
//! the first byte picks: a JSON-RPC 2.0 request of a known method whose params decode into the
//! method's type (and re-encode to params that decode equal), or a JSON-RPC error that says what
//! is wrong, under the request's id when it had a usable one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_fuzz::{pick, round_trip, says};
use switchboard_protocol::a2a::{self, A2aErrorCode, Method};
use switchboard_protocol::decode::params;

/// The `A2A-Version` headers tried: none (read as 0.3), 1.x, another major, and junk.
const VERSIONS: &[Option<&str>] = &[
    Some("1.0"),
    None,
    Some("1"),
    Some("0.3"),
    Some(" 1.1 "),
    Some("x"),
];

fn check<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
    method: Method,
    value: Option<Value>,
) {
    let name = method.as_str();
    match params::<T>(name, value) {
        Ok(decoded) => round_trip(&decoded, |json| params::<T>(name, Some(json))),
        Err(error) => says(
            &error.message,
            &["invalid params", "params must be a JSON object"],
        ),
    }
}

fn params_of(method: Method, value: Option<Value>) {
    match method {
        Method::SendMessage | Method::SendStreamingMessage => {
            check::<a2a::SendMessageRequest>(method, value)
        }
        Method::GetTask => check::<a2a::GetTaskRequest>(method, value),
        Method::ListTasks => check::<a2a::ListTasksRequest>(method, value),
        Method::CancelTask | Method::SubscribeToTask => check::<a2a::TaskIdRequest>(method, value),
        Method::CreateTaskPushNotificationConfig => {
            check::<a2a::TaskPushNotificationConfig>(method, value)
        }
        Method::GetTaskPushNotificationConfig | Method::DeleteTaskPushNotificationConfig => {
            check::<a2a::PushConfigRequest>(method, value)
        }
        Method::ListTaskPushNotificationConfigs => {
            check::<a2a::ListPushConfigsRequest>(method, value)
        }
        Method::GetExtendedAgentCard => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let (at, body) = pick(data, VERSIONS.len());
    match switchboard_server::fuzzing::a2a_body(body, VERSIONS[at]) {
        Ok((method, value)) => params_of(method, value),
        Err((id, error)) => {
            says(
                &error.message,
                &["expected", "must be", "speaks A2A", "send the header"],
            );
            assert!(
                matches!(id, Value::Null | Value::String(_) | Value::Number(_)),
                "id {id}"
            );
            let given = serde_json::from_slice::<Value>(body).ok();
            let given = given
                .as_ref()
                .and_then(|v| v.get("id"))
                .cloned()
                .unwrap_or(Value::Null);
            if matches!(given, Value::String(_) | Value::Number(_)) {
                assert_eq!(id, given, "the answer's id is the request's");
            }
            if error.code == A2aErrorCode::ParseError.code() {
                assert!(given.is_null());
            }
        }
    }
});
