//! The tool contract: what a tool is ([`Tool`], or [`TypedTool`] behind [`Typed`]), what a call
//! is given ([`ToolContext`]), what it answers ([`ToolOutput`]), and the [`ToolRegistry`] of all
//! tools. The runtime owns the contract; the tools themselves live above it (`crate::tools`) and
//! are installed by the composition root.
//!
//! A tool never sees the engine. Its [`ToolContext`] is the narrow host handle of one call: who
//! calls ([`Caller`]: session, agent, run, the chain of sessions that led here), the store's
//! session reads ([`SessionReads`], not the whole store), the clock, and submitting and waiting on runs — waits hand the caller's lane slot back, so a tool
//! that waits on another run can never starve the lanes. Everything else a tool needs (the
//! config, other components) it is given when it is built. Tools never panic the gateway: every
//! failure becomes an error result the model can act on.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_protocol::message::ContentBlock;
use tokio_util::sync::CancellationToken;

use super::joined::Joined;
use super::lanes::LeaseHolder;
use super::providers::ToolSpec;
use super::{Accepted, RunRequest, Runtime, WaitOutcome};
use crate::error::CoreResult;
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::SessionReads;
pub use switchboard_protocol::tools::ToolHints;

/// What a tool answers: JSON (sent to the model as text), whether it is an error, images to
/// store with it (an MCP tool's), and structured data for programs (not sent to the model).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: Value,
    pub is_error: bool,
    pub images: Vec<ContentBlock>,
    pub details: Option<Value>,
}

impl ToolOutput {
    pub fn ok(content: Value) -> Self {
        Self {
            content,
            is_error: false,
            images: Vec::new(),
            details: None,
        }
    }

    /// `{"status": "error", "error": message}`: the shape of every tool failure, so a model
    /// (or an MCP client) reads every error the same way.
    pub fn error(message: impl Into<String>) -> Self {
        let failure = switchboard_protocol::session_tools::ToolFailure::error(message);
        Self {
            is_error: true,
            ..Self::ok(serde_json::to_value(failure).unwrap_or(Value::Null))
        }
    }

    /// The text the model reads.
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// Who calls a tool: complete before the call starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    /// The requester session.
    pub session_key: SessionKey,
    /// Its agent.
    pub agent_id: String,
    /// The run the call belongs to (`invoke-<uuid>` for a call outside a run).
    pub run_id: RunId,
    /// Sessions that led to this run, the requester's own first (the cycle guard, SPEC §6.3).
    pub chain: Vec<SessionKey>,
    /// Where the message that caused the call came from: what the call starts reports back
    /// there, never to a chat the session used last (SPEC §9.1).
    pub origin: Origin,
}

/// Where the message that caused a tool call came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// A chat: its reply's route.
    Chat(switchboard_protocol::sessions::DeliveryContext),
    /// No chat: the terminal, the web page, cron, a hook, another agent.
    Elsewhere,
    /// The call was made on the session itself (`tools.invoke`, an operator's): the session's
    /// own route says.
    Session,
}

/// The host handle of one tool call (see the module doc).
pub struct ToolContext {
    caller: Caller,
    runtime: Runtime,
    lease: LeaseHolder,
    stop_waiting: CancellationToken,
    /// The model's tool call being made (none for `tools.invoke`): its id, and whether it is
    /// made again by its run resumed after a stop.
    call: Mutex<Option<(String, bool)>>,
    /// The reply of the call being made, when it is left to the call's write.
    reply: Joined,
    /// A run's calls (not `tools.invoke`'s): their results are written before anyone is told
    /// them, so a wait may be told a run's end before it commits (`told.rs`).
    in_run: bool,
    /// What the write of the call's result must check: the ends it was told (`told.rs`).
    requires: Mutex<Vec<crate::store::WriteOp>>,
}

impl ToolContext {
    pub(super) fn new(
        caller: Caller,
        runtime: Runtime,
        lease: LeaseHolder,
        stop_waiting: CancellationToken,
    ) -> Self {
        Self {
            caller,
            runtime,
            lease,
            stop_waiting,
            call: Mutex::new(None),
            reply: Joined::default(),
            in_run: false,
            requires: Mutex::new(Vec::new()),
        }
    }

    /// The context of a run's calls, whose replies may be left to them ([`Joined`]).
    pub(super) fn with_reply(mut self, reply: Joined) -> Self {
        self.reply = reply;
        self.in_run = true;
        self
    }

    /// The checks the write of a result must carry ([`ToolContext::wait_run`]), taken.
    pub(super) fn take_required(&self) -> Vec<crate::store::WriteOp> {
        std::mem::take(&mut *self.requires.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The model's reply, when it waits for this call's write to commit it: the write adds it
    /// ([`Joined::send_with`]). `None` when it was written before the call.
    pub fn left_reply(&self) -> Option<Joined> {
        self.reply.is_left().then(|| self.reply.clone())
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Notes the model's tool call being made now (`again`: by its run resumed after a stop).
    pub(super) fn calling(&self, id: &str, again: bool) {
        *self.call.lock().unwrap_or_else(|p| p.into_inner()) = Some((id.to_string(), again));
    }

    /// Whether the call being made was made before, by this run before a stop: what it made
    /// then (named by [`ToolContext::call_name`]) may exist. A first call looks for nothing.
    pub fn made_again(&self) -> bool {
        let call = self.call.lock().unwrap_or_else(|p| p.into_inner());
        call.as_ref().is_some_and(|(_, again)| *again)
    }

    /// A name for what `tool` makes in the model's current tool call, the same when that call
    /// is made again by its run resumed after a stop (SPEC §6.3): a tool names the runs and
    /// sessions it makes by it, so a repeated call finds them instead of making them twice.
    /// `None` outside a run's tool call (`tools.invoke`).
    pub fn call_name(&self, tool: &str) -> Option<String> {
        let call = self.call.lock().unwrap_or_else(|p| p.into_inner());
        let (id, _) = call.as_ref()?;
        Some(format!("{tool}:{}:{id}", self.caller.run_id))
    }

    /// The store's session reads: sessions, transcripts and their mirrors. A tool writes
    /// nothing through the store; it submits runs (which the runtime records).
    pub fn store(&self) -> &dyn SessionReads {
        self.runtime.store()
    }

    /// Now (ms) on the gateway's clock.
    pub fn now_ms(&self) -> i64 {
        self.runtime.now_ms()
    }

    /// The names of the tools `agent` may call in the session `key` (what its runs are offered).
    pub fn tool_names(
        &self,
        key: &SessionKey,
        agent: &crate::config::ResolvedAgent,
    ) -> Vec<String> {
        self.runtime
            .tools_for(key, agent)
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    /// Submits a run (answers once it is committed and queued).
    pub async fn submit(&self, request: RunRequest) -> CoreResult<Accepted> {
        self.runtime.submit(request).await
    }

    /// Cancelled when the caller stops waiting (an MCP client's cancellation, a closed
    /// connection): a tool that waits answers as a timeout would.
    pub fn stopped_waiting(&self) -> &CancellationToken {
        &self.stop_waiting
    }

    /// Awaits `wait` (another run's completion) without holding this call's lane slot, so the
    /// awaited run can always be scheduled.
    pub async fn while_waiting<F: Future>(&self, wait: F) -> F::Output {
        self.lease.while_waiting(wait).await
    }

    /// Waits up to `timeout` for the run to end, without holding this call's lane slot. When the
    /// caller stops waiting first (an MCP client's cancellation, a closed connection), answers
    /// as a timeout would: the run goes on.
    pub async fn wait_run(&self, run_id: &RunId, timeout: Duration) -> CoreResult<WaitOutcome> {
        let runtime = &self.runtime;
        self.while_waiting(async {
            tokio::select! {
                waited = self.wait_told(run_id, timeout) => waited,
                () = self.stop_waiting.cancelled() => runtime.wait(run_id, Duration::ZERO).await,
            }
        })
        .await
    }

    /// [`Runtime::wait`]; in a run, told the end as soon as it is queued, the check of the end
    /// kept for the result's write (`told.rs`).
    async fn wait_told(&self, run_id: &RunId, timeout: Duration) -> CoreResult<WaitOutcome> {
        if !self.in_run {
            return self.runtime.wait(run_id, timeout).await;
        }
        let told = self.runtime.wait_told(run_id, timeout).await?;
        if let Some(check) = told.requires {
            let mut requires = self.requires.lock().unwrap_or_else(|p| p.into_inner());
            requires.push(check);
        }
        Ok(told.outcome)
    }
}

/// A tool an agent can call.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// Written for the model: what it does, when to use it.
    fn description(&self) -> &str;
    /// JSON schema of the arguments (see [`schema_for`]).
    fn parameters(&self) -> Value;
    fn call<'a>(&'a self, ctx: &'a ToolContext, arguments: Value) -> ToolFuture<'a>;

    /// What calling it does (MCP annotations); `None` says nothing.
    fn hints(&self) -> Option<ToolHints> {
        None
    }

    /// Whether a call cut off by a stop may be made again when its run is resumed (SPEC §6.3):
    /// a tool that only reads, or whose second identical call changes nothing more.
    fn repeatable(&self) -> bool {
        self.hints().is_some_and(|h| h.repeatable())
    }

    /// The answer to arguments that are not a JSON object (a model's malformed call), in the
    /// tool's own result shape; `message` says how to fix the call.
    fn invalid(&self, message: String) -> ToolOutput {
        ToolOutput::error(message)
    }

    /// Whether this call's every effect is one store write that takes the model's reply with
    /// it ([`ToolContext::left_reply`]): then the reply is not written before the call. A call
    /// that acts anywhere else must not say so: its reply would not be in the transcript yet.
    fn joins_reply(&self, _ctx: &ToolContext, _arguments: &Value) -> bool {
        false
    }

    /// The spec the model sees. Built on every call here; the registry's tools keep theirs
    /// (every run's request offers them: their schemas are constant).
    fn spec(&self) -> Arc<ToolSpec> {
        Arc::new(ToolSpec::new(
            self.name().to_string(),
            self.description().to_string(),
            self.parameters(),
        ))
    }
}

/// A registered tool with its spec built once.
struct Specced {
    tool: Arc<dyn Tool>,
    spec: Arc<ToolSpec>,
}

impl Tool for Specced {
    fn name(&self) -> &str {
        self.tool.name()
    }
    fn description(&self) -> &str {
        self.tool.description()
    }
    fn parameters(&self) -> Value {
        self.spec.parameters.clone()
    }
    fn call<'a>(&'a self, ctx: &'a ToolContext, arguments: Value) -> ToolFuture<'a> {
        self.tool.call(ctx, arguments)
    }
    fn hints(&self) -> Option<ToolHints> {
        self.tool.hints()
    }
    fn repeatable(&self) -> bool {
        self.tool.repeatable()
    }
    fn joins_reply(&self, ctx: &ToolContext, arguments: &Value) -> bool {
        self.tool.joins_reply(ctx, arguments)
    }
    fn invalid(&self, message: String) -> ToolOutput {
        self.tool.invalid(message)
    }
    fn spec(&self) -> Arc<ToolSpec> {
        self.spec.clone()
    }
}

/// Runs a tool call in its span (OpenTelemetry's GenAI `execute_tool <name>`): a run the tool
/// starts (`sessions_send`, `sessions_spawn`) continues its trace as its child.
pub(super) async fn traced(
    name: &str,
    call_id: &str,
    call: impl Future<Output = ToolOutput>,
) -> ToolOutput {
    let span = tracing::info_span!(
        "tool_call",
        otel.name = %format_args!("execute_tool {name}"),
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        error.type = tracing::field::Empty,
    );
    let output = tracing::Instrument::instrument(call, span.clone()).await;
    if output.is_error {
        span.record("otel.status_code", "error");
        span.record("error.type", "tool_error");
    }
    output
}

/// The parameters schema of `P` as models read it (see `switchboard_protocol::session_tools`).
pub fn schema_for<P: JsonSchema>() -> Value {
    switchboard_protocol::session_tools::tool_schema::<P>()
}

/// A typed tool result: how it says it is an error, and the result that reports arguments the
/// tool could not use.
pub trait ToolResult: Serialize {
    fn is_error(&self) -> bool;
    /// The result for arguments that do not match the schema; `message` says how to fix them.
    fn invalid(message: String) -> Self;
}

/// A tool with typed parameters and a typed result: [`Typed`] decodes the arguments (a bad call
/// gets [`ToolResult::invalid`] with a message that tells the model how to fix it), runs the
/// tool, and encodes the result. Decoding and encoding live here once, not in every tool.
pub trait TypedTool: Send + Sync + 'static {
    type Params: DeserializeOwned + JsonSchema + Send;
    type Output: ToolResult + Send;
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// What calling it does (MCP annotations).
    fn hints(&self) -> ToolHints;
    /// Whether a call cut off by a stop may be made again (see [`Tool::repeatable`]); a tool
    /// that makes runs says so when it names them by [`ToolContext::call_name`].
    fn repeatable(&self) -> bool {
        self.hints().repeatable()
    }
    /// Whether a call with `params` takes the model's reply into its one write (see
    /// [`Tool::joins_reply`]).
    fn joins_reply(&self, _ctx: &ToolContext, _params: &Self::Params) -> bool {
        false
    }
    fn run(
        &self,
        ctx: &ToolContext,
        params: Self::Params,
    ) -> impl Future<Output = Self::Output> + Send;
}

/// A [`TypedTool`] as a [`Tool`]. Its schema is derived once: every run shows it to the model.
pub struct Typed<T> {
    tool: T,
    schema: OnceLock<Value>,
}

impl<T: TypedTool> Typed<T> {
    pub fn new(tool: T) -> Self {
        Self {
            tool,
            schema: OnceLock::new(),
        }
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        self.tool.name()
    }

    fn description(&self) -> &str {
        self.tool.description()
    }

    fn parameters(&self) -> Value {
        self.schema.get_or_init(schema_for::<T::Params>).clone()
    }

    fn hints(&self) -> Option<ToolHints> {
        Some(self.tool.hints())
    }

    fn repeatable(&self) -> bool {
        self.tool.repeatable()
    }

    fn joins_reply(&self, ctx: &ToolContext, arguments: &Value) -> bool {
        T::Params::deserialize(arguments).is_ok_and(|params| self.tool.joins_reply(ctx, &params))
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            match parse_args::<T::Params>(self, arguments) {
                Ok(params) => encode(&self.tool.run(ctx, params).await),
                Err(message) => self.invalid(message),
            }
        })
    }

    fn invalid(&self, message: String) -> ToolOutput {
        encode(&T::Output::invalid(message))
    }
}

/// A typed result as the model reads it.
fn encode<R: ToolResult>(output: &R) -> ToolOutput {
    match serde_json::to_value(output) {
        Ok(content) => ToolOutput {
            is_error: output.is_error(),
            ..ToolOutput::ok(content)
        },
        Err(e) => ToolOutput::error(format!("the result could not be encoded: {e}")),
    }
}

/// Decodes arguments into `P`, or an error message that tells the model how to fix the call.
pub fn parse_args<P: DeserializeOwned>(tool: &dyn Tool, arguments: Value) -> Result<P, String> {
    let arguments = match arguments {
        Value::Null => Value::Object(Default::default()),
        Value::String(raw) => {
            return Err(format!(
                "The arguments of {} were not valid JSON: {}. Send a JSON object matching the schema: {}",
                tool.name(),
                clip(&raw, 200),
                tool.parameters()
            ));
        }
        other => other,
    };
    if !arguments.is_object() {
        return Err(format!(
            "The arguments of {} must be a JSON object, got {}. Schema: {}",
            tool.name(),
            clip(&arguments.to_string(), 200),
            tool.parameters()
        ));
    }
    switchboard_protocol::checked::from_value(&arguments).map_err(|refusal| {
        let at = match refusal.path.as_str() {
            "." => String::new(),
            path => format!(" at `{path}`"),
        };
        format!(
            "Invalid arguments for {}{at}: {}. Fix the call to match the schema: {}",
            tool.name(),
            refusal.message,
            tool.parameters()
        )
    })
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}…")
}

/// Tools that come and go while the gateway runs (MCP servers' tools): the runtime asks for
/// the current set whenever it offers tools.
pub trait ToolSource: Send + Sync {
    /// The tools offered now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
    /// Resolves once every server has finished its first attempt to connect (each bounded by
    /// its timeout), so a run right after start sees the tools a working server has.
    fn ready(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// All tools known to the gateway, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let spec = tool.spec();
        let tool = Arc::new(Specced { tool, spec });
        self.tools.insert(tool.name().to_string(), tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Every tool, by name.
    pub fn all(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values()
    }
}
