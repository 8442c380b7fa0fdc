//! Sessions for operators: the core operations behind `sessions.*`, `chat.*`, `agent`,
//! `agent.wait`, `agents.list` and the `/send` command, taking and answering protocol types.
//! References are resolved by the one reference resolver ([`Resolver`], `crate::resolve`, below
//! this component) that every door and tool shares. It knows nothing of sockets; the server only
//! decodes and encodes.
//!
//! Must not: decide visibility or send policy itself (`crate::access` does), or run turns (the
//! runtime does; `chat.send` and `agent` submit runs to it).

mod attachments;
mod health;
mod history;
mod list;
mod manage;
mod overview;
mod runs;

use std::sync::Arc;

use serde_json::Value;
use switchboard_protocol::agents::{AgentModel, AgentSummary, AgentsListResult};
use switchboard_protocol::events::SessionsChanged;
use switchboard_protocol::runs::RunState;
use switchboard_protocol::sessions::{RunActivity, SessionRow, SubagentStatus};

pub use health::{HealthParts, channel_health, channels_status};

use crate::clock::Clock;
use crate::config::Config;
use crate::error::CoreResult;
use crate::keys::{SessionKey, SessionKind};
use crate::resolve::Resolver;
use crate::runtime::Runtime;
use crate::store::{SessionEntry, SessionReads, Store, StoredMessage};

/// Session changes buffered per subscriber before a slow one starts missing them.
const CHANGES_BUFFERED: usize = 256;

/// The sessions component.
pub struct Sessions {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    runtime: Runtime,
    resolver: Arc<Resolver>,
    clock: Arc<dyn Clock>,
    /// Sessions per agent for `health`, and when they were counted (see `health.rs`).
    counts: std::sync::Mutex<Option<health::Counts>>,
    /// Sessions created, patched, reset or deleted by an operation here (`sessions.changed`).
    changes: tokio::sync::broadcast::Sender<Arc<SessionsChanged>>,
}

impl Sessions {
    pub fn new(
        config: Arc<Config>,
        store: Arc<dyn Store>,
        runtime: Runtime,
        resolver: Arc<Resolver>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            config,
            store,
            runtime,
            resolver,
            clock,
            counts: std::sync::Mutex::new(None),
            changes: tokio::sync::broadcast::channel(CHANGES_BUFFERED).0,
        }
    }

    /// Session changes made from now on (runs tell theirs through the runtime's events).
    pub fn subscribe_changes(&self) -> tokio::sync::broadcast::Receiver<Arc<SessionsChanged>> {
        self.changes.subscribe()
    }

    /// Tells subscribers that `key` changed for `reason`.
    fn changed(&self, key: &SessionKey, reason: &str) {
        let _ = self.changes.send(Arc::new(SessionsChanged {
            session_key: key.display().to_string(),
            agent_id: key.agent_id().map(str::to_string),
            reason: reason.to_string(),
            phase: None,
            run_id: None,
            ts: self.clock.now_ms(),
        }));
    }

    /// The reference resolver.
    pub fn resolver(&self) -> &Arc<Resolver> {
        &self.resolver
    }

    /// How many sessions the store holds (`health`).
    pub async fn count(&self) -> CoreResult<u64> {
        Ok(self.store.count().await?)
    }

    /// The row a caller sees for an entry, with what its runs are doing now.
    pub fn row(&self, e: &SessionEntry) -> SessionRow {
        self.row_of(e.clone())
    }

    /// [`Sessions::row`] of an entry the caller is done with: its strings move into the row.
    fn row_of(&self, e: SessionEntry) -> SessionRow {
        let view = self.runtime.run_views(&[&e.key]).pop().unwrap_or_default();
        self.row_with(e, view, &mut ModelLookups::new(&self.config))
    }

    /// The row of an entry with what its runs are doing (`Runtime::run_views`).
    fn row_with(
        &self,
        e: SessionEntry,
        (run_state, activity): (Option<RunState>, Option<RunActivity>),
        models: &mut ModelLookups<'_>,
    ) -> SessionRow {
        let mut row = row_in(e, self.store.as_ref(), models);
        row.run_state = run_state;
        row.activity = activity;
        row
    }

    /// [`Sessions::row`] for each entry, and for a sub-agent's session how far its task got (one
    /// store read for all the rows that have a parent).
    pub async fn rows(&self, entries: Vec<SessionEntry>) -> CoreResult<Vec<SessionRow>> {
        let at: std::collections::HashMap<SessionKey, usize> = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.spawned_by.is_some())
            .map(|(i, e)| (e.key.clone(), i))
            .collect();
        // The runs' maps are read once for the page, and the config once per model.
        let mut models = ModelLookups::new(&self.config);
        let views = {
            let keys: Vec<&SessionKey> = entries.iter().map(|e| &e.key).collect();
            self.runtime.run_views(&keys)
        };
        let mut rows: Vec<SessionRow> = entries
            .into_iter()
            .zip(views)
            .map(|(e, view)| self.row_with(e, view, &mut models))
            .collect();
        if at.is_empty() {
            return Ok(rows);
        }
        let children = at.keys().cloned().collect();
        for record in self.store.get_subagents(children).await? {
            if let Some(row) = at.get(&record.child_key).map(|i| &mut rows[*i]) {
                row.subagent = Some(SubagentStatus {
                    state: record.state.into(),
                    outcome: record.outcome,
                    task: record.task,
                    ended_at: record.ended_at,
                });
            }
        }
        Ok(rows)
    }

    /// `agents.list`: the configured agents (the default agent when none are).
    pub fn agents_list(&self) -> AgentsListResult {
        let config = &self.config;
        let default_id = config.default_agent_id();
        let agents = config
            .agent_ids()
            .into_iter()
            .map(|id| {
                let agent = config.agent(&id);
                let main = config.main_session_key(&id);
                AgentSummary {
                    default: id == default_id,
                    name: agent.name.clone(),
                    model: AgentModel {
                        primary: agent.model.clone(),
                        fallbacks: agent.model_fallbacks.clone(),
                    },
                    main_key: main.display().to_string(),
                    allow_agents: agent.allow_agents.clone(),
                    tools: self
                        .runtime
                        .tools_for(&main, &agent)
                        .iter()
                        .map(|t| t.name().to_string())
                        .collect(),
                    id,
                }
            })
            .collect();
        AgentsListResult { default_id, agents }
    }
}

/// The row a caller sees for an entry (SPEC §7.1). `model` is the session's effective model: the
/// one its last model call used, else the one a run would use now (its override, else its
/// agent's).
pub fn row<M>(e: &SessionEntry, store: &dyn SessionReads, config: &Config) -> SessionRow<M> {
    row_of(e.clone(), store, config)
}

/// [`row`] of an entry the caller is done with: its strings move into the row.
pub fn row_of<M>(e: SessionEntry, store: &dyn SessionReads, config: &Config) -> SessionRow<M> {
    row_in(e, store, &mut ModelLookups::new(config))
}

/// What the rows of a page look up in the config: an agent's model and a model's context
/// window, found once for a run of rows that share them (most pages: one agent, one model)
/// rather than once a row (each lookup normalises or lowercases a name into a new string).
pub(crate) struct ModelLookups<'a> {
    config: &'a Config,
    agent: Option<(String, String)>,
    window: Option<(String, Option<u64>)>,
}

impl<'a> ModelLookups<'a> {
    pub(crate) fn new(config: &'a Config) -> Self {
        Self {
            config,
            agent: None,
            window: None,
        }
    }

    /// [`Config::agent_model`].
    fn agent_model(&mut self, agent_id: &str) -> String {
        match &self.agent {
            Some((id, model)) if id == agent_id => model.clone(),
            _ => {
                let model = self.config.agent_model(agent_id).to_string();
                self.agent = Some((agent_id.to_string(), model.clone()));
                model
            }
        }
    }

    /// [`Config::context_window`].
    fn context_window(&mut self, model: &str) -> Option<u64> {
        match &self.window {
            Some((known, window)) if known == model => *window,
            _ => {
                let window = self.config.context_window(model);
                self.window = Some((model.to_string(), window));
                window
            }
        }
    }
}

/// [`row_of`] with the page's [`ModelLookups`].
fn row_in<M>(
    e: SessionEntry,
    store: &dyn SessionReads,
    models: &mut ModelLookups<'_>,
) -> SessionRow<M> {
    let key_channel = || e.key.channel().map(str::to_string);
    let channel = match e.kind {
        SessionKind::Cron | SessionKind::Hook | SessionKind::Node => {
            Some(crate::channel::INTERNAL.to_string())
        }
        SessionKind::Group => e.channel.clone().or_else(key_channel),
        _ => e
            .last_channel
            .clone()
            .or_else(|| e.channel.clone())
            .or_else(key_channel),
    };
    // The effective model (see `effective_model`), moved out of the entry.
    let model = match e.last_model.or(e.model) {
        Some(model) => model,
        None => models.agent_model(&e.agent_id),
    };
    let transcript_path = store
        .transcript_path(&e.agent_id, &e.session_id)
        .map(|path| {
            path.into_os_string()
                .into_string()
                .unwrap_or_else(|path| path.to_string_lossy().into_owned())
        });
    SessionRow {
        key: e.key.into_display(),
        kind: e.kind.into(),
        channel: channel.unwrap_or_else(|| "unknown".to_string()),
        agent_id: e.agent_id,
        session_id: e.session_id,
        created_at: e.created_at,
        updated_at: e.updated_at,
        chat_type: e.chat_type.map(|c| c.as_str().to_string()),
        display_name: e.display_name,
        label: e.label,
        context_tokens: models.context_window(&model),
        model: Some(model),
        input_tokens: Some(e.input_tokens).filter(|n| *n > 0),
        output_tokens: Some(e.output_tokens).filter(|n| *n > 0),
        // How full the context is (the last model call's size), as the reference's clients read
        // it beside `contextTokens`; the session's sums are `inputTokens`/`outputTokens`.
        total_tokens: e.context_tokens.filter(|n| *n > 0),
        cost_usd: Some(e.cost_usd).filter(|usd| *usd > 0.0),
        thinking_level: e.thinking_level,
        verbose_level: e.verbose_level,
        system_sent: Some(e.system_sent).filter(|b| *b),
        aborted_last_run: Some(e.aborted_last_run).filter(|b| *b),
        send_policy: e.send_policy,
        last_channel: e.last_channel,
        last_to: e.last_to,
        delivery_context: e.delivery_context,
        spawned_by: e.spawned_by.map(SessionKey::into_display),
        archived_at: e.archived_at,
        transcript_path,
        messages: None,
        run_state: None,
        activity: None,
        subagent: None,
    }
}

/// The session's effective model: the one its last model call used, else the one a run would
/// use now (its override, else its agent's).
pub fn effective_model(e: &SessionEntry, config: &Config) -> String {
    e.last_model
        .clone()
        .or_else(|| e.model.clone())
        .unwrap_or_else(|| config.agent_model(&e.agent_id).to_string())
}

/// A stored message in transcript format with its `seq`.
pub fn with_seq(m: StoredMessage) -> Value {
    let mut message = m.message;
    if let Value::Object(map) = &mut message {
        map.insert("seq".to_string(), Value::from(m.seq));
    }
    message
}
