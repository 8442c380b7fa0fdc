//! Gateway methods: one dispatch table for the WebSocket and `POST /rpc`. Params are decoded
//! into the protocol crate's types; a bad field is an `INVALID_REQUEST` that names it.

mod cron;
mod delivery;
mod overview;
mod payload;
mod runs;
mod sessions;
mod system;
mod tools;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_core::CoreError;
use switchboard_protocol::{ErrorCode, ErrorShape};
use tokio_util::sync::CancellationToken;

use crate::ServerState;
use crate::access::{Grant, Scope};

pub use payload::Payload;

/// Every method this gateway answers (advertised in `hello-ok`) and the operator scope it needs
/// (docs/protocol.md has the table; `crate::access` applies it; nodes have their own rule).
pub const METHODS: &[(&str, Scope)] = &[
    ("health", Scope::Read),
    ("channels.status", Scope::Read),
    ("agents.list", Scope::Read),
    ("sessions.list", Scope::Read),
    ("sessions.create", Scope::Write),
    ("sessions.resolve", Scope::Read),
    ("sessions.patch", Scope::Write),
    ("sessions.reset", Scope::Admin),
    ("sessions.delete", Scope::Admin),
    ("sessions.compact", Scope::Write),
    ("chat.history", Scope::Read),
    ("chat.startup", Scope::Read),
    ("chat.inject", Scope::Write),
    ("chat.send", Scope::Write),
    ("chat.abort", Scope::Write),
    ("agent", Scope::Write),
    ("agent.wait", Scope::Write),
    ("sessions.subscribe", Scope::Read),
    ("sessions.unsubscribe", Scope::Read),
    ("tools.invoke", Scope::Write),
    ("tools.list", Scope::Read),
    ("send", Scope::Write),
    ("deliveries.list", Scope::Read),
    ("exchanges.list", Scope::Read),
    ("exchanges.get", Scope::Read),
    ("cron.add", Scope::Admin),
    ("cron.get", Scope::Read),
    ("cron.list", Scope::Read),
    ("cron.status", Scope::Read),
    ("cron.update", Scope::Admin),
    ("cron.remove", Scope::Admin),
    ("cron.run", Scope::Admin),
    ("cron.runs", Scope::Read),
    ("pairing.list", Scope::Admin),
    ("pairing.approve", Scope::Admin),
    ("status", Scope::Read),
    ("system-presence", Scope::Read),
    ("config.get", Scope::Read),
    ("models.list", Scope::Read),
    ("agent.identity.get", Scope::Read),
    ("sessions.describe", Scope::Read),
    ("sessions.messages.subscribe", Scope::Read),
    ("sessions.messages.unsubscribe", Scope::Read),
    ("usage.cost", Scope::Read),
    ("sessions.usage", Scope::Read),
    ("sessions.usage.timeseries", Scope::Read),
    ("sessions.usage.logs", Scope::Read),
    ("channels.pairing.list", Scope::Pairing),
    ("logs.tail", Scope::Read),
    ("exec.approvals.list", Scope::Read),
    ("exec.approvals.get", Scope::Admin),
    ("exec.approvals.approve", Scope::Admin),
    ("exec.approvals.deny", Scope::Admin),
    // The reference's features this gateway does not have: their empty state.
    ("update.status", Scope::Read),
    ("exec.approval.list", Scope::Read),
    ("plugin.approval.list", Scope::Read),
    ("openclaw.approval.list", Scope::Read),
    ("question.list", Scope::Read),
    ("tasks.list", Scope::Read),
    ("models.authStatus", Scope::Read),
    ("talk.catalog", Scope::Read),
    ("progressCard.get", Scope::Read),
    ("chat.metadata", Scope::Read),
    ("sessions.branches.list", Scope::Read),
    ("sessions.companion.state", Scope::Read),
    ("sessions.observer.visibility", Scope::Read),
    ("wake", Scope::Write),
    ("last-heartbeat", Scope::Read),
    ("node.list", Scope::Read),
    ("node.pair.list", Scope::Pairing),
    ("device.pair.list", Scope::Pairing),
    ("plugins.list", Scope::Read),
    ("usage.status", Scope::Read),
    ("skills.status", Scope::Read),
    ("diagnostics.stability", Scope::Read),
    ("doctor.memory.status", Scope::Read),
];

/// `{key}` (or `{sessionKey}`): one session.
#[derive(serde::Deserialize)]
pub struct KeyParams {
    #[serde(alias = "sessionKey")]
    pub key: String,
}

/// The methods' names, in table order.
pub fn method_names() -> impl Iterator<Item = &'static str> {
    METHODS.iter().map(|(name, _)| *name)
}

/// Whether a request of `method` gets a span of its own (docs/observability.md): the methods
/// that may start or change work; reads and `agent.wait` (a wait) do not, so a trace shows what
/// happened rather than who looked.
pub fn is_traced(method: &str) -> bool {
    method != "agent.wait" && !matches!(scope_of(method), Some(Scope::Read) | None)
}

/// The scope `method` needs; `None` for a method this gateway does not answer.
pub fn scope_of(method: &str) -> Option<Scope> {
    METHODS
        .iter()
        .find(|(name, _)| *name == method)
        .map(|(_, scope)| *scope)
}

/// Whether `grant` may call `method` with `params` (see `crate::access`).
pub fn authorize(
    state: &ServerState,
    grant: &Grant,
    method: &str,
    params: Option<&Value>,
) -> Result<(), ErrorShape> {
    let resolver = state.engine.resolver();
    grant.authorize(method, scope_of(method), params, |key, agent| {
        resolver.canonical(key, agent).ok().map(|k| k.into_string())
    })
}

/// Events a client may receive.
pub const EVENTS: &[&str] = switchboard_protocol::events::EVENTS;

pub type MethodResult = Result<Value, ErrorShape>;

/// Sends an early answer under the request's id (`agent` answers `accepted` first).
pub type Interim<'a> = &'a (dyn Fn(Value) + Send + Sync);

/// Runs one method for a caller with `grant` (checked first, whatever the door). `gone` is
/// cancelled when the caller goes away (its connection closed): a method that waits may stop
/// waiting then; nothing it started is cut off.
pub async fn dispatch(
    state: &ServerState,
    grant: &Grant,
    method: &str,
    params: Option<Value>,
    interim: Interim<'_>,
    gone: &CancellationToken,
) -> Result<Payload, ErrorShape> {
    if let Some(error) = overview::unavailable(method) {
        return Err(error);
    }
    authorize(state, grant, method, params.as_ref())?;
    refuse_unreachable(state, method)?;
    // The large reads are encoded from their typed rows straight into the frame's text.
    let engine = state.engine.as_ref();
    match method {
        "sessions.list" => sessions::list(engine, parse(method, params)?).await,
        "chat.history" | "chat.startup" => sessions::history(engine, parse(method, params)?).await,
        _ => run(state, (method, grant.is_admin()), params, interim, gone)
            .await
            .map(Payload::Value),
    }
}

/// Methods that answer without the store: they are served while it is unreachable.
const WITHOUT_STORE: &[&str] = &[
    "health",
    "channels.status",
    "logs.tail",
    "models.list",
    "config.get",
];

/// A new call that needs the store is refused at once while the store is unreachable (it
/// would wait for the database for as long as it is away); nothing of it was run.
fn refuse_unreachable(state: &ServerState, method: &str) -> Result<(), ErrorShape> {
    let store = state.engine.store_health();
    if store.state != switchboard_core::store::StoreState::Unreachable
        || WITHOUT_STORE.contains(&method)
    {
        return Ok(());
    }
    let detail = store.detail.unwrap_or_default();
    Err(ErrorShape::new(
        ErrorCode::Unavailable,
        format!(
            "{method} was not run: the store is unreachable ({detail}); try again when health says the store is ok"
        ),
    ))
}

/// Methods that take no params: a field given to them is refused like any unknown field (the
/// reference's closed schemas say the same, after [`switchboard_protocol::reference_fields`]).
const NO_PARAMS: &[&str] = &[
    "agents.list",
    "channels.status",
    "cron.status",
    "config.get",
    "models.list",
    "exec.approvals.list",
    "exec.approvals.get",
    "channels.pairing.list",
];

/// Methods whose params are not read, here or in the reference (which has no schema for them,
/// so its clients may send anything): any params are accepted (docs/protocol.md).
pub const ANY_PARAMS: &[&str] = &[
    "health",
    "status",
    "system-presence",
    "wake",
    "last-heartbeat",
    "exec.approval.list",
    "plugin.approval.list",
    "openclaw.approval.list",
    "diagnostics.stability",
    "doctor.memory.status",
];

/// The params of a method in [`NO_PARAMS`], or of an empty-state one not in [`ANY_PARAMS`].
#[derive(serde::Deserialize)]
struct NoParams {}

/// `owner`: the caller has `operator.admin` (slash commands that change a session need it).
async fn run(
    state: &ServerState,
    (method, owner): (&str, bool),
    p: Option<Value>,
    interim: Interim<'_>,
    gone: &CancellationToken,
) -> MethodResult {
    let engine = state.engine.as_ref();
    let empty_state = switchboard_protocol::empty::METHODS.contains(&method);
    if NO_PARAMS.contains(&method) || (empty_state && !ANY_PARAMS.contains(&method)) {
        parse::<NoParams>(method, p.clone())?;
    }
    match method {
        "health" => system::health(state).await,
        "channels.status" => system::channels(engine),
        "agents.list" => {
            // Each agent's tools include the MCP servers' once they first connected.
            engine.runtime().tools_ready().await;
            to_value(engine.sessions().agents_list())
        }
        "sessions.create" => sessions::create(engine, parse(method, p)?).await,
        "sessions.resolve" => sessions::resolve(engine, parse(method, p)?).await,
        "sessions.patch" => sessions::patch(engine, parse(method, p)?).await,
        "sessions.reset" => sessions::reset(engine, parse(method, p)?).await,
        "sessions.delete" => sessions::delete(engine, parse(method, p)?).await,
        "sessions.compact" => answer(engine.sessions().compact(parse(method, p)?).await),
        "chat.inject" => sessions::inject(engine, parse(method, p)?).await,
        "chat.send" => runs::chat_send(engine, parse(method, p)?, owner).await,
        "chat.abort" => runs::chat_abort(engine, parse(method, p)?).await,
        "agent" => runs::agent(engine, parse(method, p)?, owner, interim).await,
        "agent.wait" => runs::agent_wait(engine, parse(method, p)?).await,
        "tools.invoke" => tools::invoke(engine, parse(method, p)?, gone).await,
        "tools.list" => tools::list(engine, parse(method, p)?).await,
        "exec.approvals.list" => tools::approvals(engine),
        "exec.approvals.get" => tools::allowlist(engine),
        "exec.approvals.approve" => tools::decide(engine, parse(method, p)?, true),
        "exec.approvals.deny" => tools::decide(engine, parse(method, p)?, false),
        "send" => delivery::send(engine, parse(method, p)?).await,
        "deliveries.list" => delivery::list(engine, parse(method, p)?).await,
        "exchanges.list" => answer(engine.exchanges().list(parse(method, p)?).await),
        "exchanges.get" => answer(engine.exchanges().get(parse(method, p)?).await),
        "cron.add" => cron::add(engine, parse(method, p)?).await,
        "cron.get" => cron::get(engine, parse(method, p)?).await,
        "cron.list" => cron::list(engine, parse(method, p)?).await,
        "cron.status" => cron::status(engine).await,
        "cron.update" => cron::update(engine, parse(method, p)?).await,
        "cron.remove" => cron::remove(engine, parse(method, p)?).await,
        "cron.run" => cron::run(engine, parse(method, p)?).await,
        "cron.runs" => cron::runs(engine, parse(method, p)?).await,
        "pairing.list" => answer(engine.pairing().list(parse(method, p)?).await),
        "pairing.approve" => answer(engine.pairing().approve(parse(method, p)?).await),
        "status" => overview::status(engine).await,
        "system-presence" => overview::presence(engine),
        "config.get" => overview::config_get(engine),
        "models.list" => to_value(engine.sessions().models()),
        "agent.identity.get" => overview::identity(engine, parse(method, p)?).await,
        "sessions.describe" => overview::describe(engine, parse(method, p)?).await,
        "usage.cost" => answer(engine.sessions().usage_cost(parse(method, p)?).await),
        "sessions.usage" => answer(engine.sessions().sessions_usage(parse(method, p)?).await),
        "sessions.usage.timeseries" => {
            answer(engine.sessions().usage_timeseries(parse(method, p)?).await)
        }
        "sessions.usage.logs" => answer(engine.sessions().usage_logs(parse(method, p)?).await),
        "channels.pairing.list" => answer(engine.pairing().channels_list().await),
        "logs.tail" => overview::logs_tail(parse(method, p)?),
        m if switchboard_protocol::empty::METHODS.contains(&m) => overview::empty_state(engine, m),
        "sessions.subscribe"
        | "sessions.unsubscribe"
        | "sessions.messages.subscribe"
        | "sessions.messages.unsubscribe" => Err(ErrorShape::new(
            ErrorCode::InvalidRequest,
            format!(
                "{method} chooses the events a WebSocket connection receives: call it on the \
                 WebSocket; POST /rpc has no connection to send events to"
            ),
        )),
        "connect" => Err(ErrorShape::new(
            ErrorCode::InvalidRequest,
            "connect: this connection is already connected",
        )),
        other => Err(unknown_method(other)),
    }
}

/// An unknown method, with the nearest known one; the whole list is where a client looks it up
/// (the connect answer's `features.methods`), not in a message a person reads.
fn unknown_method(name: &str) -> ErrorShape {
    let near = switchboard_protocol::checked::closest(name, method_names())
        .map(|m| format!("; did you mean {m}?"))
        .unwrap_or_default();
    ErrorShape::new(
        ErrorCode::InvalidRequest,
        format!(
            "unknown method: {name}{near} ({} methods are answered here: the connect answer's \
             features.methods lists them, docs/protocol.md describes them)",
            method_names().count()
        ),
    )
}

/// Decodes params (absent or `null` = `{}`, otherwise an object), naming the offending field on
/// failure in the wire's words (`switchboard_protocol::decode`).
pub fn parse<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, ErrorShape> {
    switchboard_protocol::decode::params(method, params)
}

pub(crate) fn to_value<T: Serialize>(value: T) -> MethodResult {
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

/// A core operation's answer as a method's: the value encoded, the error mapped once.
pub(crate) fn answer<T: Serialize>(result: Result<T, CoreError>) -> MethodResult {
    to_value(result.map_err(core_err)?)
}
