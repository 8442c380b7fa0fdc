//! The engine: configuration, the store and (later) the runtime, behind one handle that adapters
//! share as `Arc<Engine>`. State is passed, never global.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::clock::{Clock, SystemClock};
use crate::config::{Config, SessionScope};
use crate::delivery::{self, Outbox};
use crate::error::{CoreError, CoreResult};
use crate::keys::{self, KeyContext, Scope, SessionKey};
use crate::runtime::Runtime;
use crate::runtime::lanes::Lanes;
use crate::runtime::providers::Providers;
use crate::store::{NewSession, SqliteStore, Store};
use crate::subagents;
use crate::tools::{Tool, ToolRegistry};

/// What an embedder (a test, the gateway) adds to the engine.
#[derive(Default)]
pub struct EngineOptions {
    /// Tools beyond the built-in ones.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The clock of schedules (cron slots, sub-agent archiving); the system clock when `None`
    /// (tests pass a manual one).
    pub clock: Option<Arc<dyn Clock>>,
}

pub struct Engine {
    config: Config,
    home: PathBuf,
    store: Arc<dyn Store>,
    sqlite: SqliteStore,
    default_agent: String,
    started: Instant,
    runtime: Runtime,
    outbox: Outbox,
    clock: Arc<dyn Clock>,
    closed: AtomicBool,
    cron: crate::cron::CronState,
}

impl Engine {
    /// Opens the store under `home` and recovers from an unclean stop: runs left live by a dead
    /// process become `aborted`, short transcript mirrors are rebuilt.
    pub async fn open(home: &Path, config: Config) -> CoreResult<Arc<Self>> {
        Self::open_with(home, config, EngineOptions::default()).await
    }

    pub async fn open_with(
        home: &Path,
        config: Config,
        options: EngineOptions,
    ) -> CoreResult<Arc<Self>> {
        let providers = Providers::from_config(&config).map_err(CoreError::Invalid)?;
        let mut tools = ToolRegistry::default();
        crate::tools::sessions::register(&mut tools);
        for tool in options.tools {
            tools.register(tool);
        }
        let runtime = Runtime::new(providers, tools, Lanes::from_config(&config));
        let clock: Arc<dyn Clock> = options.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let cron = crate::cron::CronState::new(Some(clock.clone()));
        let sqlite = SqliteStore::open(home)?;
        let store: Arc<dyn Store> = Arc::new(sqlite.clone());
        let aborted = store.abort_interrupted_runs().await?;
        if aborted > 0 {
            tracing::warn!(
                aborted,
                "marked runs interrupted by the last stop as aborted"
            );
        }
        let default_agent = config.default_agent_id();
        let outbox = Outbox::new(Duration::from_secs(config.delivery.timeout_seconds))
            .map_err(CoreError::Invalid)?;
        let engine = Arc::new(Self {
            config,
            home: home.to_path_buf(),
            store,
            sqlite,
            default_agent,
            started: Instant::now(),
            runtime,
            outbox,
            clock,
            cron,
            closed: AtomicBool::new(false),
        });
        // Pending deliveries and unfinished sub-agents left by the last process resume here.
        tokio::spawn(delivery::run(Arc::downgrade(&engine)));
        let resumed = subagents::resume(&engine).await?;
        if resumed > 0 {
            tracing::info!(
                resumed,
                "resumed sub-agents whose announce was not finished"
            );
        }
        tokio::spawn(subagents::sweep(Arc::downgrade(&engine)));
        Ok(engine)
    }

    /// Stops background work (the outbox, sub-agent sweeps, the cron scheduler), commits what is
    /// pending and stops the store's writer.
    pub async fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        self.wake_outbox();
        self.stop_cron().await;
        self.sqlite.close().await;
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Now on the engine's clock (see [`EngineOptions::clock`]).
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub(crate) fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    pub(crate) fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    pub(crate) fn cron_state(&self) -> &crate::cron::CronState {
        &self.cron
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Reads served by the store since the engine opened (see `SqliteStore::reads`).
    pub fn store_reads(&self) -> u64 {
        self.sqlite.reads()
    }

    pub fn uptime_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    pub fn default_agent_id(&self) -> &str {
        &self.default_agent
    }

    pub fn scope(&self) -> Scope {
        match self.config.session.scope {
            SessionScope::Global => Scope::Global,
            _ => Scope::PerSender,
        }
    }

    pub fn main_key(&self) -> &str {
        &self.config.session.main_key
    }

    /// The key context of `agent_id` (the default agent for operator calls).
    pub fn key_context<'a>(&'a self, agent_id: &'a str) -> KeyContext<'a> {
        KeyContext {
            agent_id,
            main_key: self.main_key(),
            scope: self.scope(),
        }
    }

    /// Canonicalises a key for an operator call; `agent_id` picks the agent that legacy keys and
    /// `main` belong to (default agent when absent).
    pub fn canonical_key(&self, input: &str, agent_id: Option<&str>) -> CoreResult<SessionKey> {
        let agent = agent_id.map(keys::normalize_agent_id);
        let agent = agent.as_deref().unwrap_or(&self.default_agent);
        Ok(keys::canonicalize(input, &self.key_context(agent))?)
    }

    /// What a new session at `key` starts with: agent, kind, channel and chat type from the key.
    pub fn new_session(&self, key: &SessionKey) -> NewSession {
        NewSession {
            key: key.as_str().to_string(),
            agent_id: key.agent_id().unwrap_or(&self.default_agent).to_string(),
            kind: key.kind(self.main_key()),
            channel: key.channel().map(str::to_string),
            chat_type: key.chat_type(self.main_key()),
            label: None,
            display_name: None,
            spawned_by: None,
        }
    }

    /// Whether `key` is the main session of its agent (it cannot be deleted).
    pub fn is_main(&self, key: &SessionKey) -> bool {
        key.is_global() || key.rest() == self.main_key()
    }

    /// Reports an invalid input with what is accepted.
    pub fn invalid(message: impl Into<String>) -> CoreError {
        CoreError::Invalid(message.into())
    }
}
