//! A gateway method's params (`switchboard_protocol::decode`), as the WebSocket and `/rpc`
//! decode them for the method the first byte picks: a typed value that re-encodes to params
//! that decode equal, or an INVALID_REQUEST that names the method and what was wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_fuzz::{pick, refusal_of, round_trip, says};
use switchboard_protocol::decode::params;
use switchboard_protocol::{
    ErrorCode, chat, cron, delivery, exchanges, frames, overview, pairing, runs, sessions, tools,
};

/// Decodes `value` as `method`'s params of type `T` and checks the door's promises.
fn check<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
    method: &str,
    value: Option<Value>,
) {
    match params::<T>(method, value.clone()) {
        Ok(decoded) => round_trip(&decoded, |json| params::<T>(method, Some(json))),
        Err(error) => {
            refusal_of(&error.message, &value.unwrap_or_default());
            assert_eq!(error.code, ErrorCode::InvalidRequest);
            assert!(
                error.message.starts_with(&format!("{method}: ")),
                "{}",
                error.message
            );
            says(
                &error.message,
                &["invalid params", "params must be a JSON object"],
            );
        }
    }
}

type Check = fn(&str, Option<Value>);

/// Each method with params and the type its handler decodes them into.
const METHODS: &[(&str, Check)] = &[
    ("connect", check::<frames::ConnectParams>),
    ("sessions.list", check::<sessions::SessionsListParams>),
    ("sessions.create", check::<sessions::SessionsCreateParams>),
    ("sessions.resolve", check::<sessions::SessionsResolveParams>),
    ("sessions.patch", check::<sessions::SessionsPatchParams>),
    ("sessions.reset", check::<sessions::SessionKeyParams>),
    (
        "sessions.subscribe",
        check::<sessions::SessionsSubscribeParams>,
    ),
    ("chat.history", check::<chat::ChatHistoryParams>),
    ("chat.inject", check::<chat::ChatInjectParams>),
    ("chat.send", check::<runs::ChatSendParams>),
    ("chat.abort", check::<runs::ChatAbortParams>),
    ("agent", check::<runs::AgentParams>),
    ("agent.wait", check::<runs::AgentWaitParams>),
    ("tools.invoke", check::<tools::ToolsInvokeParams>),
    ("tools.list", check::<tools::ToolsListParams>),
    ("send", check::<delivery::SendParams>),
    ("deliveries.list", check::<delivery::DeliveriesListParams>),
    ("exchanges.list", check::<exchanges::ExchangesListParams>),
    ("exchanges.get", check::<exchanges::ExchangesGetParams>),
    ("cron.add", check::<cron::CronAddParams>),
    ("cron.list", check::<cron::CronListParams>),
    ("cron.get", check::<cron::CronJobIdParams>),
    ("cron.runs", check::<cron::CronRunsParams>),
    ("cron.update", check::<cron::CronUpdateParams>),
    ("pairing.list", check::<pairing::PairingListParams>),
    ("pairing.approve", check::<pairing::PairingApproveParams>),
    (
        "sessions.describe",
        check::<overview::SessionsDescribeParams>,
    ),
    ("agent.identity.get", check::<overview::AgentIdentityParams>),
];

fuzz_target!(|data: &[u8]| {
    let (at, rest) = pick(data, METHODS.len());
    let (method, check) = METHODS[at];
    // What a client sends is JSON, but the door's decoder sees any value; text that is not
    // JSON is tried as a string value (a client's `"params": "…"`).
    let value = serde_json::from_slice(rest)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(rest).into_owned()));
    check(method, Some(value));
});
