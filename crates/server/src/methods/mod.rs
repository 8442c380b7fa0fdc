//! Gateway methods: one dispatch table for the WebSocket and `POST /rpc`. Params are decoded
//! into the protocol crate's types; a bad field is an `INVALID_REQUEST` that names it.

mod delivery;
pub(crate) use delivery::info as delivery_info;
mod cron;
mod runs;
mod sessions;
mod system;
mod tools;

use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_core::CoreError;
use switchboard_core::runtime::cancel::CancelToken;
use switchboard_protocol::{ErrorCode, ErrorShape};

use crate::ServerState;

/// Every method this gateway answers (advertised in `hello-ok`).
pub const METHODS: &[&str] = &[
    "health",
    "agents.list",
    "sessions.list",
    "sessions.create",
    "sessions.resolve",
    "sessions.patch",
    "sessions.reset",
    "sessions.delete",
    "chat.history",
    "chat.inject",
    "chat.send",
    "chat.abort",
    "agent",
    "agent.wait",
    "sessions.subscribe",
    "sessions.unsubscribe",
    "tools.invoke",
    "tools.list",
    "send",
    "deliveries.list",
    "cron.add",
    "cron.list",
    "cron.remove",
    "cron.run",
];

/// Events a client may receive.
pub const EVENTS: &[&str] = &[
    "connect.challenge",
    "tick",
    "shutdown",
    "agent",
    "chat",
    "delivery",
];

pub type MethodResult = Result<Value, ErrorShape>;

/// Sends an early answer under the request's id (`agent` answers `accepted` first).
pub type Interim<'a> = &'a (dyn Fn(Value) + Send + Sync);

/// Runs one method. `gone` is cancelled when the caller goes away (its connection closed): a
/// method that waits may stop waiting then; nothing it started is cut off.
pub async fn dispatch(
    state: &ServerState,
    method: &str,
    params: Option<Value>,
    interim: Interim<'_>,
    gone: &CancelToken,
) -> MethodResult {
    let engine = state.engine.as_ref();
    match method {
        "health" => system::health(state).await,
        "agents.list" => system::agents_list(engine),
        "sessions.list" => sessions::list(engine, parse(method, params)?).await,
        "sessions.create" => sessions::create(engine, parse(method, params)?).await,
        "sessions.resolve" => sessions::resolve(engine, parse(method, params)?).await,
        "sessions.patch" => sessions::patch(engine, parse(method, params)?).await,
        "sessions.reset" => sessions::reset(engine, parse(method, params)?).await,
        "sessions.delete" => sessions::delete(engine, parse(method, params)?).await,
        "chat.history" => sessions::history(engine, parse(method, params)?).await,
        "chat.inject" => sessions::inject(engine, parse(method, params)?).await,
        "chat.send" => runs::chat_send(&state.engine, parse(method, params)?).await,
        "chat.abort" => runs::chat_abort(engine, parse(method, params)?).await,
        "agent" => runs::agent(&state.engine, parse(method, params)?, interim).await,
        "agent.wait" => runs::agent_wait(engine, parse(method, params)?).await,
        "tools.invoke" => tools::invoke(&state.engine, parse(method, params)?, gone).await,
        "tools.list" => tools::list(engine, parse(method, params)?).await,
        "send" => delivery::send(engine, parse(method, params)?).await,
        "deliveries.list" => delivery::list(engine, parse(method, params)?).await,
        "cron.add" => cron::add(engine, parse(method, params)?).await,
        "cron.list" => cron::list(engine).await,
        "cron.remove" => cron::remove(engine, parse(method, params)?).await,
        "cron.run" => cron::run(&state.engine, parse(method, params)?).await,
        "connect" => Err(ErrorShape::new(
            ErrorCode::InvalidRequest,
            "connect: this connection is already connected",
        )),
        other => Err(ErrorShape::new(
            ErrorCode::InvalidRequest,
            format!("unknown method: {other}; available: {}", METHODS.join(", ")),
        )),
    }
}

/// Decodes params (absent or `null` = `{}`), naming the offending field on failure.
pub fn parse<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, ErrorShape> {
    let value = match params {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(v) => v,
    };
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(" at {path}")
        };
        ErrorShape::new(
            ErrorCode::InvalidRequest,
            format!("{method}: invalid params{at}: {}", e.inner()),
        )
    })
}

pub(crate) fn to_value<T: serde::Serialize>(value: T) -> MethodResult {
    serde_json::to_value(value).map_err(|e| {
        ErrorShape::new(
            ErrorCode::Internal,
            format!("could not encode the result: {e}"),
        )
    })
}

pub(crate) fn core_err(e: CoreError) -> ErrorShape {
    e.to_shape()
}
