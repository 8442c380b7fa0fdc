//! One configured MCP server under supervision: connected at start (stdio: the child process
//! is started; HTTP: the session is opened), its tools listed, listed again on
//! `notifications/tools/list_changed`, and reconnected with a growing backoff (0.5 s doubling
//! to 30 s) whenever it goes away, until the gateway stops (which ends the child process).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, SubscriptionFilter};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService, Subscription};
use rmcp::transport::{
    StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use rmcp::{ClientHandler, ServiceExt};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::tool::{McpTool, offered_name};
use crate::access::glob_allowed;
use crate::config::McpServerConfig;
use crate::runtime::providers::ToolSpec;

const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection that lived this long was healthy: the next failure starts the backoff anew.
const STABLE: Duration = Duration::from_secs(60);

/// Where a server stands.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    Starting,
    Running,
    /// Gone; reconnecting after a wait.
    Restarting,
    Stopped,
}

impl State {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Restarting => "restarting",
            Self::Stopped => "stopped",
        }
    }
}

impl From<&State> for switchboard_protocol::agents::McpServerState {
    fn from(state: &State) -> Self {
        match state {
            State::Starting => Self::Starting,
            State::Running => Self::Running,
            State::Restarting => Self::Restarting,
            State::Stopped => Self::Stopped,
        }
    }
}

#[derive(Default)]
struct Live {
    peer: Option<Peer<RoleClient>>,
    /// Counts connections: a call's failure names the one it used.
    generation: u64,
    pid: Option<u32>,
    /// The last tools listed (kept while the server is down: a call then says it is down).
    tools: Vec<Arc<McpTool>>,
    last_error: Option<String>,
    restarts: u64,
    /// The last line the child wrote on stderr.
    stderr: Option<String>,
}

/// A supervised MCP server.
pub struct Server {
    pub name: String,
    pub config: McpServerConfig,
    state: watch::Sender<State>,
    live: Mutex<Live>,
    cancelled: AtomicU64,
    /// Set once the first connection attempt ended, either way.
    pub(super) tried: watch::Sender<bool>,
    refresh: Notify,
    /// The connection (by generation) a call could not reach: it is dropped and a new one made
    /// (an HTTP session does not end by itself when its server goes away).
    unreachable: watch::Sender<u64>,
    /// The engine's tracker and stop token: the stderr reader is tracked and ends at shutdown
    /// even when a grandchild of the server still holds the pipe open.
    tasks: TaskTracker,
    stop: CancellationToken,
}

/// What `health` shows of a server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    pub transport: &'static str,
    pub state: State,
    pub tools: Vec<String>,
    pub pid: Option<u32>,
    pub last_error: Option<String>,
    pub restarts: u64,
    pub cancelled: u64,
}

/// Tells the supervisor when the server's tool list changed.
struct Handler {
    server: Arc<Server>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.server.refresh.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("switchboard", env!("CARGO_PKG_VERSION")),
        )
    }
}

type Running = RunningService<RoleClient, Handler>;

impl Server {
    pub fn new(
        name: String,
        config: McpServerConfig,
        tasks: TaskTracker,
        stop: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            name,
            config,
            state: watch::channel(State::Starting).0,
            live: Mutex::new(Live::default()),
            cancelled: AtomicU64::new(0),
            tried: watch::channel(false).0,
            refresh: Notify::new(),
            unreachable: watch::channel(0).0,
            tasks,
            stop,
        })
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection and its generation, while the server runs.
    pub(super) fn peer(&self) -> Option<(Peer<RoleClient>, u64)> {
        let live = self.live();
        let running = *self.state.borrow() == State::Running;
        let peer = live.peer.clone().filter(|_| running)?;
        Some((peer, live.generation))
    }

    pub(super) fn tools(&self) -> Vec<Arc<McpTool>> {
        self.live().tools.clone()
    }

    /// Why the server is not running, for a call's error result.
    pub(super) fn why_down(&self) -> String {
        let state = self.state.borrow().as_str();
        match &self.live().last_error {
            Some(error) => format!("{state}: {error}"),
            None => state.to_string(),
        }
    }

    /// A call found connection `generation` broken: the supervisor replaces it (a later
    /// connection is left alone).
    pub(super) fn unreachable(&self, generation: u64) {
        self.unreachable.send_replace(generation);
    }

    pub(super) fn count_cancelled(&self) {
        self.cancelled.fetch_add(1, Ordering::Relaxed);
    }

    pub fn status(&self) -> ServerStatus {
        let live = self.live();
        ServerStatus {
            name: self.name.clone(),
            transport: if self.config.url.is_some() {
                "http"
            } else {
                "stdio"
            },
            state: self.state.borrow().clone(),
            tools: live.tools.iter().map(|t| t.spec.name.clone()).collect(),
            pid: live.pid,
            last_error: live.last_error.clone(),
            restarts: live.restarts,
            cancelled: self.cancelled.load(Ordering::Relaxed),
        }
    }

    /// Connects, serves and reconnects until `stop`.
    pub(super) async fn supervise(self: Arc<Self>, stop: CancellationToken) {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let started = Instant::now();
            let connected = tokio::select! {
                connected = self.connect() => connected,
                () = stop.cancelled() => break,
            };
            match connected {
                Ok(running) => {
                    self.serve(running, &stop).await;
                    if stop.is_cancelled() {
                        break;
                    }
                }
                Err(why) => {
                    tracing::warn!(server = %self.name, "MCP server: {why}");
                    self.live().last_error = Some(why);
                    self.tried.send_replace(true);
                }
            }
            if started.elapsed() > STABLE {
                backoff = FIRST_BACKOFF;
            }
            self.state.send_replace(State::Restarting);
            self.live().restarts += 1;
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = stop.cancelled() => break,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        self.state.send_replace(State::Stopped);
        self.tried.send_replace(true);
        let mut live = self.live();
        live.peer = None;
        // The tools hold the server: let both go.
        live.tools.clear();
    }

    /// Starts or opens the connection and lists the tools, within `timeoutSeconds`.
    async fn connect(self: &Arc<Self>) -> Result<Running, String> {
        let timeout = Duration::from_secs(self.config.timeout_seconds);
        let handler = Handler {
            server: self.clone(),
        };
        let attempt = async {
            let (running, pid) = match &self.config.url {
                Some(url) => (self.open_http(url, handler).await?, None),
                None => self.start_child(handler).await?,
            };
            let listed = running
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| format!("tools/list failed: {e}"))?;
            Ok::<_, String>((running, pid, listed))
        };
        let (running, pid, listed) = tokio::time::timeout(timeout, attempt)
            .await
            .map_err(|_| format!("no answer within {}s (timeoutSeconds)", timeout.as_secs()))??;
        let tools = self.offer(listed);
        {
            let mut live = self.live();
            live.peer = Some(running.peer().clone());
            live.generation += 1;
            live.pid = pid;
            live.tools = tools;
            live.last_error = None;
        }
        self.state.send_replace(State::Running);
        self.tried.send_replace(true);
        tracing::info!(server = %self.name, tools = self.live().tools.len(), "MCP server: running");
        Ok(running)
    }

    async fn start_child(
        self: &Arc<Self>,
        handler: Handler,
    ) -> Result<(Running, Option<u32>), String> {
        let program = self.config.command.clone().unwrap_or_default();
        let mut command = tokio::process::Command::new(&program);
        command.args(&self.config.args).envs(&self.config.env);
        if let Some(cwd) = &self.config.cwd {
            command.current_dir(cwd);
        }
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {program:?}: {e}"))?;
        let pid = transport.id();
        if let Some(stderr) = stderr {
            self.keep_stderr(stderr);
        }
        let running = handler
            .serve(transport)
            .await
            .map_err(|e| format!("{program:?} started but did not answer initialize: {e}"))?;
        Ok((running, pid))
    }

    async fn open_http(&self, url: &str, handler: Handler) -> Result<Running, String> {
        let mut headers = std::collections::HashMap::new();
        for (name, value) in &self.config.headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| format!("header {name:?} is not a valid header name: {e}"))?;
            let value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| format!("the value of header {name} is not a valid header value"))?;
            headers.insert(name, value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
        let client = crate::runtime::providers::http::client_builder()
            .build()
            .map_err(|e| format!("cannot build the HTTP client for {url}: {e}"))?;
        let transport = StreamableHttpClientTransport::with_client(client, config);
        handler
            .serve(transport)
            .await
            .map_err(|e| format!("{url} did not answer initialize: {e}"))
    }

    /// The child's stderr, line by line, to the debug log; the last line is kept for `health`.
    /// Until the pipe closes or the gateway stops (a grandchild may keep the pipe open after
    /// the child was ended).
    fn keep_stderr(self: &Arc<Self>, stderr: tokio::process::ChildStderr) {
        let server = self.clone();
        self.tasks.spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            loop {
                let line = tokio::select! {
                    line = lines.next_line() => line,
                    () = server.stop.cancelled() => return,
                };
                let Ok(Some(line)) = line else { return };
                tracing::debug!(server = %server.name, "MCP server stderr: {line}");
                server.live().stderr = Some(line);
            }
        });
    }

    /// Serves the connection until it ends or the gateway stops; lists the tools again when
    /// the server says they changed.
    async fn serve(self: &Arc<Self>, running: Running, stop: &CancellationToken) {
        let peer = running.peer().clone();
        let generation = self.live().generation;
        let mut unreachable = self.unreachable.subscribe();
        let cancel = running.cancellation_token();
        let mut changes = listen(&peer).await;
        let ended = running.waiting();
        tokio::pin!(ended);
        loop {
            tokio::select! {
                () = self.refresh.notified() => self.relist(&peer).await,
                changed = next_change(&mut changes) => match changed {
                    true => self.relist(&peer).await,
                    false => changes = None,
                },
                () = stop.cancelled() => {
                    cancel.cancel();
                    let _ = ended.await;
                    return;
                }
                () = async { let _ = unreachable.wait_for(|g| *g == generation).await; } => {
                    cancel.cancel();
                    let _ = ended.await;
                    break;
                }
                _ = &mut ended => break,
            }
        }
        let mut live = self.live();
        live.peer = None;
        live.pid = None;
        live.last_error = Some(match live.stderr.take() {
            Some(line) => format!("the server went away (its last words: {line})"),
            None => "the server went away or could not be reached".into(),
        });
        drop(live);
        tracing::warn!(server = %self.name, "MCP server: connection ended; restarting");
    }

    async fn relist(self: &Arc<Self>, peer: &Peer<RoleClient>) {
        match peer.list_all_tools().await {
            Ok(listed) => {
                let tools = self.offer(listed);
                tracing::info!(server = %self.name, tools = tools.len(), "MCP server: its tools changed");
                self.live().tools = tools;
            }
            Err(e) => {
                tracing::warn!(server = %self.name, error = %e, "MCP server: tools/list failed");
            }
        }
    }

    /// The listed tools this server offers (its `tools.allow/deny`), by offered name. Two tools
    /// whose names come out the same keep the first; the other is refused in the log and in
    /// `lastError`.
    fn offer(self: &Arc<Self>, listed: Vec<rmcp::model::Tool>) -> Vec<Arc<McpTool>> {
        let policy = &self.config.tools;
        let mut offered: Vec<Arc<McpTool>> = Vec::new();
        for tool in listed {
            let remote = tool.name.to_string();
            if !glob_allowed(&remote, &policy.allow, &policy.deny) {
                continue;
            }
            let name = offered_name(&self.name, &remote);
            if let Some(first) = offered.iter().find(|t| t.spec.name == name) {
                let why = format!(
                    "tools {} and {remote} are both offered as {name}; {remote} is left out",
                    first.remote
                );
                tracing::error!(server = %self.name, "MCP server: {why}");
                self.live().last_error = Some(why);
                continue;
            }
            let hints = tool
                .annotations
                .as_ref()
                .and_then(|a| serde_json::to_value(a).ok())
                .and_then(|a| serde_json::from_value(a).ok());
            let description = tool.description.as_deref().unwrap_or_default().to_string();
            let schema = serde_json::Value::Object((*tool.input_schema).clone());
            offered.push(Arc::new(McpTool {
                server: self.clone(),
                spec: Arc::new(ToolSpec::new(name, description, schema)),
                remote,
                hints,
            }));
        }
        offered
    }
}

/// On a connection whose protocol has subscriptions (2026-07-28), `notifications/tools/
/// list_changed` comes only to a client that listens for it; older servers send it unasked
/// (to [`Handler`]) and refuse the request, which answers `None`.
async fn listen(peer: &Peer<RoleClient>) -> Option<Subscription> {
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    match tokio::time::timeout(Duration::from_secs(5), peer.listen(filter)).await {
        Ok(Ok(subscription)) => Some(subscription),
        _ => None,
    }
}

/// The next notification of the subscription (`true`), or its end (`false`); never resolves
/// without one.
async fn next_change(changes: &mut Option<Subscription>) -> bool {
    match changes {
        Some(subscription) => matches!(subscription.next().await, Ok(Some(_))),
        None => std::future::pending().await,
    }
}
