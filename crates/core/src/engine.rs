//! The composition root: [`Engine::open`] builds every component, hands each what it needs, and
//! keeps them for adapters (the gateway, the CLI, tests), which share the engine as
//! `Arc<Engine>`. The engine wires; it holds no logic of its own — every operation lives in the
//! component that owns it (`engine.sessions().list(…)`, `engine.runtime().submit(…)`). State is
//! passed, never global.
//!
//! Build order (each line gets only what the lines above made):
//!
//! 1. the clock, the store (SQLite), and the recovery of an unclean stop (runs left live by a
//!    dead process become `aborted`);
//! 2. the resolver (references → sessions), the channel registry (every channel's sender and
//!    state) and the outbox, which sends through it;
//! 3. the runtime, whose replies go to `delivery::replies`;
//! 4. the components above the runtime: sessions, the agent-to-agent exchanges, sub-agents, the
//!    inbound doors (the HTTP ones, pairing, and each channel's own door), cron;
//! 5. the tools (the session tools and any the embedder adds), installed into the runtime;
//! 6. background work: the outbox task, the resumption of unfinished sub-agents, the archive
//!    sweeper (the cron scheduler and the channels' doors start only when asked: [`Cron::start`],
//!    [`Engine::start_channels`]).
//!
//! Adding a channel is a folder under `channels/` and a line in `channel_registry` (and one in
//! `doors` when it has a door that runs by itself).
//!
//! Shutdown ([`Engine::shutdown`], the sequence of `docs/architecture.md`): the cron scheduler
//! stops firing; the runtime refuses new runs and lets live ones finish for the grace period, then
//! aborts the rest (each recorded `aborted`, partial output kept); the background tasks stop and
//! are waited for; the store's writer commits what it holds and stops. A restart after it finds
//! nothing interrupted.

pub mod gauges;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::a2a::{A2aChannel, Remotes};
use crate::a2a_tasks::push::PushChannel;
use crate::a2a_tasks::{A2aParts, A2aTasks};
use crate::channel::{Channel, Channels, Door, HttpDoor};
use crate::channels::discord::Discord;
use crate::channels::imessage::IMessage;
use crate::channels::kit::{Chat, Reach};
use crate::channels::local::Local;
use crate::channels::matrix::Matrix;
use crate::channels::pairing::Pairing;
use crate::channels::signal::Signal;
use crate::channels::slack::Slack;
use crate::channels::telegram::Telegram;
use crate::channels::webhook::Webhook;
use crate::channels::whatsapp::WhatsApp;
use crate::channels::{ChatChannel, DoorParts, Inbound};
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::cron::{Cron, CronParts};
use crate::delivery::replies::Replies;
use crate::delivery::{Outbox, OutboxParts};
use crate::error::{CoreError, CoreResult};
use crate::exchange::Exchanges;
use crate::mcp::Mcp;
use crate::resolve::Resolver;
use crate::runtime::providers::Providers;
use crate::runtime::tool::{Tool, ToolRegistry};
use crate::runtime::{Runtime, RuntimeParts};
use crate::sessions::Sessions;
use crate::store::{Store, WriteOp};
use crate::subagents::{Subagents, SubagentsParts};
use crate::tools::ToolInvoker;
use crate::tools::agent::AgentTools;
use crate::tools::exec::{Approvals, ExecTools};
use crate::tools::sessions::{self as session_tools, SessionTools};

/// What an embedder (a test, the gateway) adds to the engine.
#[derive(Default)]
pub struct EngineOptions {
    /// Tools beyond the built-in ones.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The clock every time is read from; the system clock when `None` (tests pass a manual
    /// one).
    pub clock: Option<Arc<dyn Clock>>,
    /// Wraps the opened store before any component is given it (tests that make chosen store
    /// calls fail put their wrapper around the real store here).
    pub wrap_store: Option<StoreWrapper>,
    /// The program that builds the command sandbox: the gateway's own binary, which answers
    /// `switchboard_core::sandbox::COMMAND` before anything else. `None`: sandboxed sessions
    /// run no commands (an embedder without the binary).
    pub sandbox_helper: Option<PathBuf>,
}

/// See [`EngineOptions::wrap_store`].
pub type StoreWrapper = Box<dyn FnOnce(Arc<dyn Store>) -> Arc<dyn Store> + Send>;

/// The components, built and wired.
pub struct Engine {
    config: Arc<Config>,
    home: PathBuf,
    clock: Arc<dyn Clock>,
    store: Arc<dyn Store>,
    started_ms: i64,
    runtime: Runtime,
    resolver: Arc<Resolver>,
    sessions: Arc<Sessions>,
    outbox: Arc<Outbox>,
    subagents: Arc<Subagents>,
    exchanges: Arc<Exchanges>,
    inbound: Arc<Inbound>,
    channels: Arc<Channels>,
    pairing: Arc<Pairing>,
    a2a: Arc<A2aTasks>,
    /// The channels' own inbound doors.
    doors: ChatDoors,
    mcp: Arc<Mcp>,
    tools: Arc<ToolInvoker>,
    cron: Arc<Cron>,
    /// Commands waiting for an operator's approval.
    approvals: Arc<Approvals>,
    /// Every background task of every component.
    tasks: TaskTracker,
    /// Cancelled first at shutdown: nothing new is scheduled (cron).
    intake: CancellationToken,
    /// Cancelled once the runs ended: the background loops stop (outbox, sweeper).
    stop: CancellationToken,
}

/// How often a gateway sharing the store looks for the work of gateways that stopped.
const ADOPT_EVERY: Duration = Duration::from_secs(3);

/// Takes up, until the engine stops, the work of the gateways sharing the store that stopped:
/// their running runs are resumed here, their queued ones run here, their sub-agents' announces
/// and their exchanges go on here (docs/scale-out.md).
async fn adopt_orphans(engine: Arc<Engine>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(ADOPT_EVERY) => {}
            () = engine.intake.cancelled() => return,
        }
        let orphans = match engine.store.orphans().await {
            Ok(orphans) if !orphans.is_empty() => orphans,
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "could not look for the work of stopped gateways");
                continue;
            }
        };
        let (subagents, exchanges) = (orphans.subagents.len(), orphans.exchanges.len());
        match engine.runtime.take_up(orphans.runs).await {
            Ok(runs) => tracing::warn!(
                interrupted = runs.interrupted,
                resumed = runs.resumed,
                subagents,
                exchanges,
                "took up the work of a gateway that stopped"
            ),
            Err(e) => tracing::error!(error = %e, "could not take up a stopped gateway's runs"),
        }
        engine.subagents.resume(orphans.subagents);
        engine.exchanges.resume(orphans.exchanges);
    }
}

/// Every channel this gateway connects, in the order `send` lists them and `health` shows
/// them, and those of them with doors of their own (built later, above the sessions: `doors`);
/// each outbound HTTP call is bounded by `delivery.timeoutSeconds`. A new channel is a line in
/// `chats`.
fn channel_registry(
    home: &Path,
    config: &Arc<Config>,
    store: &Arc<dyn Store>,
    clock: &Arc<dyn Clock>,
    stop: &CancellationToken,
) -> CoreResult<(Arc<Channels>, ChatChannels)> {
    let timeout = Duration::from_secs(config.delivery.timeout_seconds);
    let http = crate::runtime::providers::http::client(timeout).map_err(CoreError::Invalid)?;
    let reach = Reach { http: &http, home };
    let chats: Vec<Arc<dyn ChatChannel>> = vec![
        Chat::<Telegram>::new(config.clone(), store.clone(), &reach),
        Chat::<Discord>::new(config.clone(), store.clone(), &reach),
        Chat::<Slack>::new(config.clone(), store.clone(), &reach),
        Chat::<WhatsApp>::new(config.clone(), store.clone(), &reach),
        Chat::<Signal>::new(config.clone(), store.clone(), &reach),
        Chat::<Matrix>::new(config.clone(), store.clone(), &reach),
    ];
    let mut channels: Vec<Arc<dyn Channel>> = vec![
        Arc::new(Webhook::new(config.clone(), http.clone())),
        Arc::new(PushChannel::new(store.clone(), http.clone())),
        Arc::new(Local::webchat(store.clone(), clock.clone())),
        Arc::new(Local::internal(store.clone(), clock.clone())),
        Arc::new(IMessage),
    ];
    channels.extend(chats.iter().map(|c| c.clone() as Arc<dyn Channel>));
    // Remote A2A agents: the sends of sessions_send to a2a:<remote> (crate::a2a).
    let a2a = A2aChannel::new(
        config.clone(),
        store.clone(),
        clock.clone(),
        http,
        stop.clone(),
    );
    channels.push(Arc::new(a2a));
    Ok((Arc::new(Channels::new(channels)), chats))
}

/// The A2A tasks component, over the runtime and the outbox.
fn a2a_tasks(
    config: &Arc<Config>,
    store: &Arc<dyn Store>,
    clock: &Arc<dyn Clock>,
    (runtime, resolver, outbox): (&Runtime, &Arc<Resolver>, &Arc<Outbox>),
) -> Arc<A2aTasks> {
    A2aTasks::new(A2aParts {
        config: config.clone(),
        store: store.clone(),
        runtime: runtime.clone(),
        resolver: resolver.clone(),
        outbox: outbox.clone(),
        clock: clock.clone(),
    })
}

/// The channels with doors of their own.
type ChatChannels = Vec<Arc<dyn ChatChannel>>;

/// The channels' doors: those that run by themselves (started by [`Engine::start_channels`])
/// and the HTTP ones by channel name (served by the server, [`Engine::http_door`]).
#[derive(Default)]
struct ChatDoors {
    running: Vec<Arc<dyn Door>>,
    http: BTreeMap<&'static str, Arc<dyn HttpDoor>>,
}

/// The doors messages come in by: the HTTP sources ([`Inbound`]), DM pairing, and the
/// channels' own doors (pollers, sockets, webhooks), which stop taking messages when intake
/// stops.
fn doors(
    config: &Arc<Config>,
    (store, runtime, sessions): (&Arc<dyn Store>, &Runtime, &Arc<Sessions>),
    (resolver, outbox, clock): (&Arc<Resolver>, &Arc<Outbox>, &Arc<dyn Clock>),
    (channels, chats): (&Arc<Channels>, ChatChannels),
    (tasks, intake): (&TaskTracker, &CancellationToken),
) -> (Arc<Inbound>, Arc<Pairing>, ChatDoors) {
    let inbound = Arc::new(Inbound::new(
        config.clone(),
        runtime.clone(),
        resolver.clone(),
        outbox.clone(),
    ));
    let pairing = Arc::new(Pairing::new(
        store.clone(),
        outbox.clone(),
        clock.clone(),
        channels.clone(),
    ));
    let parts = DoorParts {
        store: store.clone(),
        inbound: inbound.clone(),
        sessions: sessions.clone(),
        pairing: pairing.clone(),
        runtime: runtime.clone(),
        tasks: tasks.clone(),
        stop: intake.clone(),
    };
    let mut doors = ChatDoors::default();
    for chat in chats {
        let name = chat.name();
        let built = chat.doors(&parts);
        doors.running.extend(built.running);
        if let Some(http) = built.http {
            doors.http.insert(name, http);
        }
    }
    (inbound, pairing, doors)
}

impl Engine {
    /// Opens the store under `home` on the system clock and recovers from an unclean stop.
    pub async fn open(home: &Path, config: Config) -> CoreResult<Arc<Self>> {
        Self::open_with(home, config, EngineOptions::default()).await
    }

    /// Builds and wires every component (see the module doc for the order).
    pub async fn open_with(
        home: &Path,
        config: Config,
        options: EngineOptions,
    ) -> CoreResult<Arc<Self>> {
        let config = Arc::new(config);
        let clock: Arc<dyn Clock> = options.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let providers = Arc::new(Providers::from_config(&config).map_err(CoreError::Invalid)?);
        if let Some(helper) = &options.sandbox_helper {
            crate::tools::exec::probe_sandboxes(home, &config, helper).await?;
        }
        let mut store = crate::store::open(home, &config.store, clock.clone()).await?;
        if let Some(wrap) = options.wrap_store {
            store = wrap(store);
        }
        let extras = (options.tools, options.sandbox_helper);
        let engine = Self::wire(home, config, clock, store, providers, extras)?;
        // MCP servers start now: a run waits for their first connection, not for a client.
        engine.mcp.start();
        if let Err(e) = engine.resume().await {
            // Nothing may keep running for an engine that never opened.
            engine.shutdown(Duration::ZERO).await;
            return Err(e);
        }
        engine.subagents.start_sweeper();
        let engine = Arc::new(engine);
        engine.runtime.start_bus(engine.stop.clone());
        if engine.store.cluster().shared() {
            engine.tasks.spawn(adopt_orphans(engine.clone()));
        }
        Ok(engine)
    }

    /// Takes up what the last process left: the unfinished sub-agents and exchanges are read
    /// first, then the queued runs start again (the running ones end aborted), then the outbox,
    /// the sub-agents and the exchanges go on. Reading first matters: a resumed run may start a
    /// new exchange or sub-agent at once, and that one already has its driver.
    async fn resume(&self) -> CoreResult<()> {
        self.create_main_sessions().await?;
        let subagents = self.subagents.unfinished().await?;
        let exchanges = self.exchanges.unfinished().await?;
        let recovered = self.runtime.recover().await?;
        if recovered.interrupted > 0 || recovered.resumed > 0 {
            tracing::warn!(
                interrupted = recovered.interrupted,
                resumed = recovered.resumed,
                "runs left by the last stop: queued again, the running ones to be resumed from their \
                 transcripts (interrupted: stored without their request, ended aborted)"
            );
        }
        self.outbox.start();
        if !subagents.is_empty() {
            let count = subagents.len();
            tracing::info!(count, "resuming sub-agents whose announce was not finished");
        }
        self.subagents.resume(subagents);
        if !exchanges.is_empty() {
            let count = exchanges.len();
            tracing::info!(count, "resuming unfinished agent-to-agent exchanges");
        }
        self.exchanges.resume(exchanges);
        Ok(())
    }

    /// Every configured agent's main session exists from the first start on (one commit; the
    /// ones that exist are left as they are), so `agent:<id>:main` can be named at once — by
    /// an MCP client acting as it, or as a send's target.
    async fn create_main_sessions(&self) -> CoreResult<()> {
        let creates = self
            .config
            .agent_ids()
            .iter()
            .map(|id| self.config.main_session_key(id))
            .map(|key| WriteOp::Create(Box::new(self.resolver.new_session(&key))))
            .collect();
        self.store().write_batch(creates).await?;
        Ok(())
    }

    /// Builds the components on an open store; starts nothing.
    fn wire(
        home: &Path,
        config: Arc<Config>,
        clock: Arc<dyn Clock>,
        store: Arc<dyn Store>,
        providers: Arc<Providers>,
        (extra_tools, helper): (Vec<Arc<dyn Tool>>, Option<PathBuf>),
    ) -> CoreResult<Self> {
        let tasks = TaskTracker::new();
        let (intake, stop) = (CancellationToken::new(), CancellationToken::new());
        let resolver = Arc::new(Resolver::new(config.clone(), store.clone()));
        let (channels, chats) = channel_registry(home, &config, &store, &clock, &stop)?;
        let outbox = Outbox::new(OutboxParts {
            config: config.clone(),
            store: store.clone(),
            channels: channels.clone(),
            resolver: resolver.clone(),
            clock: clock.clone(),
            tasks: tasks.clone(),
            stop: stop.clone(),
        });
        let runtime = Runtime::new(RuntimeParts {
            config: config.clone(),
            store: store.clone(),
            providers,
            clock: clock.clone(),
            replies: Arc::new(Replies::new(outbox.clone(), store.clone())),
            tasks: tasks.clone(),
        });
        let subagents = Subagents::new(SubagentsParts {
            config: config.clone(),
            store: store.clone(),
            runtime: runtime.clone(),
            outbox: outbox.clone(),
            clock: clock.clone(),
            tasks: tasks.clone(),
            stop: stop.clone(),
        });
        let exchanges = Arc::new(Exchanges::new(
            config.clone(),
            store.clone(),
            runtime.clone(),
            resolver.clone(),
            tasks.clone(),
        ));
        let cron = cron(
            &config,
            &store,
            (&runtime, &resolver, &clock),
            (&tasks, &intake),
        );
        let (mcp, approvals) = install_tools(
            (&runtime, home, helper, extra_tools),
            (&config, &store, &resolver, &outbox),
            (&exchanges, &subagents, &cron),
            (&tasks, &stop),
        );
        let sessions = Arc::new(Sessions::new(
            config.clone(),
            store.clone(),
            runtime.clone(),
            resolver.clone(),
            clock.clone(),
        ));
        let (inbound, pairing, doors) = doors(
            &config,
            (&store, &runtime, &sessions),
            (&resolver, &outbox, &clock),
            (&channels, chats),
            (&tasks, &intake),
        );
        Ok(Self {
            a2a: a2a_tasks(&config, &store, &clock, (&runtime, &resolver, &outbox)),
            sessions,
            channels,
            pairing,
            doors,
            mcp,
            inbound,
            cron,
            approvals,
            tools: invoker(&config, &resolver, &runtime),
            started_ms: clock.now_ms(),
            home: home.to_path_buf(),
            config,
            clock,
            store,
            runtime,
            resolver,
            outbox,
            subagents,
            exchanges,
            tasks,
            intake,
            stop,
        })
    }

    /// The graceful shutdown: cron stops firing; live runs get up to `grace` to finish, then are
    /// stopped (left `running`, resumed at the next start); the background tasks stop and are
    /// waited for; the store commits what it holds and its writer stops. Calling it again is
    /// harmless.
    pub async fn shutdown(&self, grace: Duration) {
        self.intake.cancel();
        self.runtime.shutdown(grace).await;
        self.stop.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        self.write_session_indexes().await;
        self.store.close().await;
    }

    /// Rewrites the agents' `sessions.json` (the reference's session index, read by its importer);
    /// a failure is logged, never fatal: the index is derived data.
    async fn write_session_indexes(&self) {
        let agents = self.config.agent_ids();
        match crate::store::write_indexes(self.store(), &agents).await {
            Ok(count) => tracing::debug!(count, "session indexes written"),
            // A second shutdown: the first one wrote them.
            Err(crate::store::StoreError::Closed) => {}
            Err(e) => tracing::warn!(error = %e, "could not write the session indexes"),
        }
    }

    /// Stops at once: [`Engine::shutdown`] with no grace period.
    pub async fn close(&self) {
        self.shutdown(Duration::ZERO).await;
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Now (ms) on the engine's clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Runs: submit, wait, abort, events.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// References → sessions, for every door.
    pub fn resolver(&self) -> &Arc<Resolver> {
        &self.resolver
    }

    /// `sessions.*`, `chat.*`, `agent`, `agents.list`.
    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.sessions
    }

    /// `send`, `deliveries.list`, delivery events.
    pub fn a2a(&self) -> &Arc<A2aTasks> {
        &self.a2a
    }

    pub fn outbox(&self) -> &Arc<Outbox> {
        &self.outbox
    }

    /// Spawned sub-agents: their announces and archiving.
    pub fn subagents(&self) -> &Arc<Subagents> {
        &self.subagents
    }

    /// The agent-to-agent exchanges (`exchanges.list`, `exchanges.get`).
    pub fn exchanges(&self) -> &Arc<Exchanges> {
        &self.exchanges
    }

    /// `POST /channels/webhook/…` and `POST /hooks/agent`.
    pub fn inbound(&self) -> &Arc<Inbound> {
        &self.inbound
    }

    /// `tools.invoke`, `tools.list`, MCP.
    pub fn tools(&self) -> &Arc<ToolInvoker> {
        &self.tools
    }

    /// The MCP servers whose tools agents call (their states for `health`).
    pub fn mcp(&self) -> &Arc<Mcp> {
        &self.mcp
    }

    /// DM pairing (`pairing.list`, `pairing.approve`).
    pub fn pairing(&self) -> &Arc<Pairing> {
        &self.pairing
    }

    /// Every connected channel: their states for `health` and `status`.
    pub fn channels(&self) -> &Arc<Channels> {
        &self.channels
    }

    /// Starts the channels' own inbound doors (the Telegram bots' polling); they stop with
    /// intake at shutdown.
    pub fn start_channels(&self) {
        for door in &self.doors.running {
            door.clone().start();
        }
    }

    /// The HTTP door of the channel named `name` (`/channels/<name>`), when it has one.
    pub fn http_door(&self, name: &str) -> Option<Arc<dyn HttpDoor>> {
        self.doors.http.get(name).cloned()
    }

    /// `cron.*` and the scheduler.
    /// Commands waiting for an operator's approval (`exec.approvals.*`).
    pub fn approvals(&self) -> &Arc<Approvals> {
        &self.approvals
    }

    pub fn cron(&self) -> &Arc<Cron> {
        &self.cron
    }

    /// The store, for embedders that seed or inspect it (the CLI's `dev seed`, tests). The
    /// gateway's doors go through the components instead.
    /// Whether the store answers now (`health`, and the doors refuse calls while it does not).
    pub fn store_health(&self) -> crate::store::StoreHealth {
        self.store.health()
    }

    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The gauges that mirror the engine's state (`GET /metrics` reads them at each scrape).
    pub async fn mirrored_gauges(&self) -> Vec<gauges::Reading> {
        let channels = self.channels().statuses();
        gauges::read(self.store.as_ref(), &self.config, &self.runtime, &channels).await
    }

    /// Reads served by the store since the engine opened (see [`Store::reads`]).
    pub fn store_reads(&self) -> u64 {
        self.store.reads()
    }

    pub fn uptime_ms(&self) -> u64 {
        self.clock.now_ms().saturating_sub(self.started_ms).max(0) as u64
    }
}

/// The cron scheduler, stopped with the intake.
fn cron(
    config: &Arc<Config>,
    store: &Arc<dyn Store>,
    (runtime, resolver, clock): (&Runtime, &Arc<Resolver>, &Arc<dyn Clock>),
    (tasks, intake): (&TaskTracker, &CancellationToken),
) -> Arc<Cron> {
    Cron::new(CronParts {
        config: config.clone(),
        store: store.clone(),
        runtime: runtime.clone(),
        resolver: resolver.clone(),
        clock: clock.clone(),
        tasks: tasks.clone(),
        stop: intake.clone(),
    })
}

/// `tools.invoke` and MCP's door to the tools.
fn invoker(config: &Arc<Config>, resolver: &Arc<Resolver>, runtime: &Runtime) -> Arc<ToolInvoker> {
    Arc::new(ToolInvoker::new(
        config.clone(),
        resolver.clone(),
        runtime.clone(),
    ))
}

/// The built-in tools and any extra ones in the runtime's registry, and the MCP servers' tools
/// as its tool source (answered, to be started and watched).
fn install_tools(
    (runtime, home, helper, extra): (&Runtime, &Path, Option<PathBuf>, Vec<Arc<dyn Tool>>),
    (config, store, resolver, outbox): (
        &Arc<Config>,
        &Arc<dyn Store>,
        &Arc<Resolver>,
        &Arc<Outbox>,
    ),
    (exchanges, subagents, cron): (&Arc<Exchanges>, &Arc<Subagents>, &Arc<Cron>),
    (tasks, stop): (&TaskTracker, &CancellationToken),
) -> (Arc<Mcp>, Arc<Approvals>) {
    let mut registry = ToolRegistry::default();
    let session_tools = SessionTools {
        config: config.clone(),
        resolver: resolver.clone(),
        exchanges: exchanges.clone(),
        subagents: subagents.clone(),
        remotes: Arc::new(Remotes::new(store.clone(), outbox.clone())),
    };
    session_tools::register(&mut registry, Arc::new(session_tools));
    let agent_tools = AgentTools::new(config.clone(), home, outbox.clone(), cron.clone());
    crate::tools::agent::register(&mut registry, Arc::new(agent_tools));
    let file_tools = crate::tools::fs::FileTools::new(config.clone(), home);
    crate::tools::fs::register(&mut registry, Arc::new(file_tools));
    crate::tools::web::register(&mut registry, config.clone());
    let approvals = Arc::new(Approvals::new(home));
    let exec_tools = ExecTools::new(config.clone(), home, helper, approvals.clone());
    let exec_tools = Arc::new(exec_tools);
    exec_tools.watch(runtime, (tasks, stop));
    crate::tools::exec::register(&mut registry, exec_tools);
    for tool in extra {
        registry.register(tool);
    }
    runtime.install_tools(registry);
    let mcp = Mcp::new(runtime.config(), tasks.clone(), stop.clone());
    runtime.install_tool_source(mcp.clone());
    (mcp, approvals)
}
