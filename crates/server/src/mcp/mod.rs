//! The session tools over the Model Context Protocol (SPEC §10), acting as one chosen session.
//!
//! One handler, [`McpServer`], answers `tools/list` and `tools/call` for both transports; what
//! differs is how a call reaches the engine, which is an [`Invoker`]:
//! - [`LocalInvoker`] calls the engine in this process (the gateway's `/mcp` endpoint);
//! - [`RemoteInvoker`] calls a running gateway's `tools.list` / `tools.invoke` over the protocol
//!   (`switchboard mcp --session KEY`, stdio).
//!
//! Both end in the engine's tool invoker, so the tools, their schemas, their results and
//! the access rules are exactly those of `tools.invoke` and of the session's own agent. Nothing
//! here knows a tool by name: a tool registered in the core registry shows up with no change.
//!
//! While a call is pending the handler reports MCP progress (when the client sent a
//! `progressToken`), and a client's `notifications/cancelled` makes a waiting tool stop waiting
//! as its timeout would — the run it waits for goes on. The call is never dropped half-way.
//! Decisions (acting session, auth, error mapping): `docs/mcp.md`.

pub(crate) mod checks;
pub mod http;
mod local;
mod remote;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode as JsonRpcCode, Implementation, InitializeResult, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use switchboard_core::runtime::tool::ToolOutput;
use switchboard_protocol::tools::ToolDescriptor;
use switchboard_protocol::{ErrorCode, ErrorShape};
use tokio_util::sync::CancellationToken;

pub use local::LocalInvoker;
pub use remote::RemoteInvoker;

/// How often a pending call reports progress (the first report goes out at once).
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// How the MCP handler reaches the session tools. Errors are the gateway's error shapes: an
/// unknown acting session (`NOT_FOUND`), an unknown tool or args that are not an object
/// (`INVALID_REQUEST`), a tool the session may not call (`FORBIDDEN`), a gateway that cannot be
/// reached (`UNAVAILABLE`). A tool's own failure is not an error but a result with `is_error`.
pub trait Invoker: Send + Sync + 'static {
    /// The tools `session` may call, with their schemas.
    fn list_tools(
        &self,
        session: &str,
    ) -> impl Future<Output = Result<Vec<ToolDescriptor>, ErrorShape>> + Send;

    /// Runs `tool` as `session`. Once `stop_waiting` is cancelled a waiting tool answers as its
    /// timeout would (and the call returns soon after); the invoker must not cut a call off
    /// before the tool has started what it starts.
    fn call_tool(
        &self,
        session: &str,
        tool: &str,
        args: Value,
        stop_waiting: CancellationToken,
    ) -> impl Future<Output = Result<ToolOutput, ErrorShape>> + Send;
}

/// The session the handler acts as.
#[derive(Debug, Clone)]
pub enum Acting {
    /// Fixed for the process (`switchboard mcp --session KEY`).
    Session(String),
    /// Chosen per connection by the HTTP layer (`/mcp?session=KEY` or the
    /// `X-Switchboard-Session` header), found in each request's extensions as
    /// [`http::ActingSession`].
    PerConnection,
}

/// The MCP server: the session tools of the acting session, through an [`Invoker`].
pub struct McpServer<I> {
    invoker: Arc<I>,
    acting: Acting,
}

impl<I> Clone for McpServer<I> {
    fn clone(&self) -> Self {
        Self {
            invoker: self.invoker.clone(),
            acting: self.acting.clone(),
        }
    }
}

impl<I: Invoker> McpServer<I> {
    pub fn new(invoker: Arc<I>, acting: Acting) -> Self {
        Self { invoker, acting }
    }

    /// The acting session of the request, or an error that says how to choose one.
    fn session(&self, context: &RequestContext<RoleServer>) -> Result<String, McpError> {
        match &self.acting {
            Acting::Session(key) => Ok(key.clone()),
            Acting::PerConnection => context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<http::ActingSession>())
                .map(|acting| acting.0.clone())
                .ok_or_else(|| McpError::invalid_request(http::NO_SESSION, None)),
        }
    }

    /// A gateway error as an MCP error; an unknown acting session also says where it was chosen.
    fn error(&self, session: &str, e: ErrorShape) -> McpError {
        let message = if e.code == ErrorCode::NotFound {
            let hint = match self.acting {
                Acting::Session(_) => "switchboard mcp --session KEY",
                Acting::PerConnection => "/mcp?session=KEY or the X-Switchboard-Session header",
            };
            unknown_session(&e.message, session, hint)
        } else {
            e.message
        };
        to_mcp_error(e.code, message)
    }
}

/// What an unknown acting session is told: the gateway's message, and how to name an existing
/// session (`hint`: where it was chosen) or create one.
pub(crate) fn unknown_session(message: &str, session: &str, hint: &str) -> String {
    format!(
        "{message} — this MCP server acts as the session {session:?}, which must exist: name an \
         existing one with {hint} (see `switchboard sessions list`), or create it with \
         `switchboard call sessions.create --params '{{\"key\":\"{session}\"}}'`"
    )
}

/// The wire error codes onto JSON-RPC's: what the caller must fix is `invalid params` (-32602),
/// a missing token `invalid request` (-32600), the gateway's own trouble `internal error`
/// (-32603). `data.code` keeps the gateway's code.
pub fn to_mcp_error(code: ErrorCode, message: String) -> McpError {
    let data = Some(json!({"code": code.as_str()}));
    match code {
        ErrorCode::InvalidRequest | ErrorCode::NotFound | ErrorCode::Forbidden => {
            McpError::invalid_params(message, data)
        }
        ErrorCode::Unauthorized => McpError::invalid_request(message, data),
        ErrorCode::Unavailable | ErrorCode::Internal => McpError::internal_error(message, data),
    }
}

/// A core tool as an MCP tool: same name, description and input schema.
fn mcp_tool(descriptor: ToolDescriptor) -> Tool {
    let schema = match descriptor.input_schema {
        Value::Object(map) => map,
        // Every registered tool has an object schema; an odd one still lists as "any object".
        _ => JsonObject::from_iter([("type".to_string(), json!("object"))]),
    };
    let tool = Tool::new(descriptor.name, descriptor.description, Arc::new(schema));
    match descriptor.annotations {
        Some(hints) => tool.annotate(
            ToolAnnotations::new()
                .read_only(hints.read_only_hint)
                .destructive(hints.destructive_hint)
                .idempotent(hints.idempotent_hint)
                .open_world(hints.open_world_hint),
        ),
        None => tool,
    }
}

/// A tool's JSON result as MCP content: the JSON as text, the object itself as
/// `structuredContent`, and the tool's error flag as `isError`.
fn mcp_result(output: ToolOutput) -> CallToolResult {
    let mut result = if output.is_error {
        CallToolResult::error(vec![ContentBlock::text(output.text())])
    } else {
        CallToolResult::success(vec![ContentBlock::text(output.text())])
    };
    if output.content.is_object() {
        result.structured_content = Some(output.content);
    }
    result
}

/// What rmcp could not decode reaches us as a "custom" request named after its method: a known
/// method with bad params gets an error that says what the params must be.
fn undecodable(method: &str, params: Option<&Value>) -> McpError {
    let field = |name: &str| params.and_then(|p| p.get(name));
    match method {
        "tools/call" => {
            let message = match (field("name"), field("arguments")) {
                (Some(Value::String(name)), Some(args)) => format!(
                    "the arguments of {name} must be a JSON object matching its inputSchema (see \
                     tools/list), got {}",
                    clip(&args.to_string(), 200)
                ),
                _ => "tools/call needs params {\"name\": <a tool from tools/list>, \
                      \"arguments\": {…}}"
                    .to_string(),
            };
            McpError::invalid_params(message, None)
        }
        "tools/list" => McpError::invalid_params(
            "tools/list takes no params, or {\"cursor\": <a cursor from a previous page>}",
            None,
        ),
        other => McpError::new(
            JsonRpcCode::METHOD_NOT_FOUND,
            format!(
                "unknown method {other}: this server answers initialize, ping, tools/list and tools/call"
            ),
            None,
        ),
    }
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `timeoutSeconds` of a call's arguments, when it has one (the progress total).
fn wait_seconds(args: &Value) -> Option<f64> {
    let value = args.get("timeoutSeconds")?;
    let seconds = value
        .as_f64()
        .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))?;
    (seconds > 0.0).then_some(seconds.floor())
}

impl<I: Invoker> ServerHandler for McpServer<I> {
    fn get_info(&self) -> ServerConfig {
        let acting = match &self.acting {
            Acting::Session(key) => format!("the session {key}"),
            Acting::PerConnection => "the session chosen for this connection".to_string(),
        };
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("switchboard", env!("CARGO_PKG_VERSION"))
                    .with_title("switchboard session tools"),
            )
            .with_instructions(format!(
                "The session tools of a switchboard gateway, acting as {acting}, with the tools \
                 and access rules of that session's own agent: list sessions, read their history, \
                 message them and wait for the reply, spawn sub-agents where allowed."
            ))
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(undecodable(&request.method, request.params.as_ref()))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let session = self.session(&context)?;
        let tools = self
            .invoker
            .list_tools(&session)
            .await
            .map_err(|e| self.error(&session, e))?;
        Ok(ListToolsResult::with_all_items(
            tools.into_iter().map(mcp_tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let session = self.session(&context)?;
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let total = wait_seconds(&args);
        let tool = request.name.to_string();
        let stop_waiting = CancellationToken::new();
        // Under the `/mcp` request's span, and so in its trace (a run it starts included).
        let span = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<http::RequestSpan>())
            .map_or_else(tracing::Span::current, |span| span.0.clone());
        let call = tracing::Instrument::instrument(
            self.invoker
                .call_tool(&session, &tool, args, stop_waiting.clone()),
            span,
        );
        let report = context.meta.get_progress_token().map(|token| {
            let (tool, peer) = (tool.clone(), context.peer.clone());
            move |elapsed: u64| {
                let mut progress = ProgressNotificationParam::new(token.clone(), elapsed as f64)
                    .with_message(format!("{tool}: waiting ({elapsed}s)"));
                if let Some(total) = total {
                    progress = progress.with_total(total);
                }
                let peer = peer.clone();
                async move {
                    if let Err(e) = peer.notify_progress(progress).await {
                        tracing::debug!(error = %e, "could not send MCP progress");
                    }
                }
            }
        });
        let (outcome, cancelled) = supervise(call, &context.ct, &stop_waiting, report).await;
        if cancelled {
            // The client no longer waits for an answer; this one is not sent.
            return Err(McpError::invalid_request("cancelled by the client", None));
        }
        let output = outcome.map_err(|e| self.error(&session, e))?;
        Ok(mcp_result(output).into())
    }
}

/// Awaits `call` to its end — a cancellation only makes it stop waiting, so nothing it started
/// is cut off. Meanwhile `report(elapsed seconds)` runs at once and then every
/// [`PROGRESS_EVERY`] until the call ends or is cancelled; `cancelled` (the client's
/// `notifications/cancelled`) cancels `stop_waiting`. Answers the outcome and whether the client
/// cancelled.
async fn supervise<T, R, P>(
    call: impl Future<Output = T>,
    cancelled: &CancellationToken,
    stop_waiting: &CancellationToken,
    mut report: Option<R>,
) -> (T, bool)
where
    R: FnMut(u64) -> P,
    P: Future<Output = ()>,
{
    tokio::pin!(call);
    let started = tokio::time::Instant::now();
    // The first report goes before the call is first polled: a call that ends at once still
    // told the client it was under way, ahead of its answer.
    if let Some(report) = report.as_mut() {
        report(0).await;
    }
    let mut ticks = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut was_cancelled = false;
    loop {
        tokio::select! {
            outcome = &mut call => return (outcome, was_cancelled),
            () = cancelled.cancelled(), if !was_cancelled => {
                was_cancelled = true;
                stop_waiting.cancel();
                tracing::info!("MCP call cancelled by the client: stopped waiting");
            }
            _ = ticks.tick(), if report.is_some() && !was_cancelled => {
                if let Some(report) = report.as_mut() {
                    report(started.elapsed().as_secs()).await;
                }
            }
        }
    }
}

/// Serves `server` over stdin/stdout until the client closes the stream.
pub async fn serve_stdio<I: Invoker>(server: McpServer<I>) -> Result<(), std::io::Error> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| std::io::Error::other(format!("MCP initialization failed: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| std::io::Error::other(format!("the MCP server stopped: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests;
