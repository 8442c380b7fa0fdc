//! Sessions for operators: the core operations behind `sessions.*`, `chat.*`, `agent`,
//! `agent.wait`, `agents.list` and the `/send` command, taking and answering protocol types.
//! References are resolved by the one reference resolver ([`Resolver`], `crate::resolve`, below
//! this component) that every door and tool shares. It knows nothing of sockets; the server only
//! decodes and encodes.
//!
//! Must not: decide visibility or send policy itself (`crate::access` does), or run turns (the
//! runtime does; `chat.send` and `agent` submit runs to it).

mod attachments;
mod commands;
mod health;
mod history;
mod kept;
mod list;
mod list_patch;
mod list_text;
mod manage;
mod overview;
mod runs;
mod usage;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use switchboard_protocol::agents::{AgentModel, AgentSummary, AgentsListResult};
use switchboard_protocol::events::SessionsChanged;
use switchboard_protocol::list_json::RowHead;
use switchboard_protocol::sessions::{SessionRow, SubagentStatus};

pub use commands::{Command, CommandReply, Door};
pub use health::{HealthParts, channel_health, channels_status};
pub(crate) use runs::submit_checked;

use crate::clock::Clock;
use crate::config::Config;
use crate::error::CoreResult;
use crate::keys::{self, SessionKey, SessionKind};
use crate::resolve::Resolver;
use crate::runtime::Runtime;
use crate::store::{EntryView, SessionEntry, SessionReads, Store, StoredMessage};

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
    /// Pages read a moment ago, answered again while the store has not changed.
    kept: kept::Pages,
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
            kept: kept::Pages::new(),
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

    /// `sessions.list` pages brought up to date from the rows written since they were kept,
    /// rather than read whole (a count since start; tests prove the path is taken).
    pub fn lists_patched(&self) -> u64 {
        (self.kept.patched).load(std::sync::atomic::Ordering::Relaxed)
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
        let (run_state, activity) = self
            .runtime
            .run_views(&[e.key.as_str()])
            .pop()
            .unwrap_or_default();
        let mut row = row_in(
            e,
            self.store.as_ref(),
            &self.config,
            &mut ModelLookups::default(),
        );
        row.run_state = run_state;
        row.activity = activity;
        row
    }

    /// [`Sessions::row`] for each entry, and for a sub-agent's session how far its task got (one
    /// store read for all the rows that have a parent).
    pub async fn rows(&self, entries: Vec<SessionEntry>) -> CoreResult<Vec<SessionRow>> {
        // The runs' maps are read once for the page, and the config once per model.
        let mut models = ModelLookups::default();
        let views = {
            let keys: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
            self.runtime.run_views(&keys)
        };
        let parents = entries
            .iter()
            .map(|e| e.spawned_by.is_some().then_some(e.key.as_str()));
        let mut subagents = self.subagents(parents).await?.into_iter();
        Ok(entries
            .iter()
            .zip(views)
            .map(|(e, (run_state, activity))| {
                let mut row = row_in(e, self.store.as_ref(), &self.config, &mut models);
                row.run_state = run_state;
                row.activity = activity;
                row.subagent = subagents.next().flatten();
                row
            })
            .collect())
    }

    /// How far the task of each sub-agent's session among `children` got (a row's key, `None`
    /// for a row without a parent), in their order: one store read for all of them.
    async fn subagents<'k>(
        &self,
        children: impl Iterator<Item = Option<&'k str>>,
    ) -> CoreResult<Vec<Option<SubagentStatus>>> {
        let mut statuses = Vec::new();
        let mut at: std::collections::HashMap<&'k str, usize> = std::collections::HashMap::new();
        for (i, child) in children.enumerate() {
            statuses.push(None);
            if let Some(child) = child {
                at.insert(child, i);
            }
        }
        if at.is_empty() {
            return Ok(statuses);
        }
        let keys = at
            .keys()
            .map(|k| SessionKey::from_canonical(k.to_string()))
            .collect();
        for record in self.store.get_subagents(keys).await? {
            if let Some(i) = at.get(record.child_key.as_str()) {
                statuses[*i] = Some(SubagentStatus {
                    state: record.state.into(),
                    outcome: record.outcome,
                    task: record.task,
                    ended_at: record.ended_at,
                });
            }
        }
        Ok(statuses)
    }

    /// `agents.list`: the configured agents (the default agent when none are), each with its
    /// model, spawn rights, tools and resolved settings.
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
                    settings: Some(settings_of(&agent)),
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
    row_in(e, store, config, &mut ModelLookups::default())
}

/// [`row`] with the page's [`ModelLookups`].
fn row_in<M>(
    e: &SessionEntry,
    store: &dyn SessionReads,
    config: &Config,
    models: &mut ModelLookups,
) -> SessionRow<M> {
    let path = store.transcript_path(&e.agent_id, &e.session_id);
    let transcript = path.as_deref().map(Path::to_string_lossy);
    let view = e.view();
    SessionRow::from_head(&row_head(&view, transcript.as_deref(), config, models))
}

/// What a row shows of its stored entry (SPEC §7.1), borrowed from it: [`row`] and the rows
/// `sessions.list` writes as the store reads them (`list_text.rs`) are both made of this.
pub(crate) fn row_head<'a>(
    e: &'a EntryView<'_>,
    transcript_path: Option<&'a str>,
    config: &Config,
    models: &'a mut ModelLookups,
) -> RowHead<'a> {
    let channel = match e.kind {
        SessionKind::Cron | SessionKind::Hook | SessionKind::Node => Some(crate::channel::INTERNAL),
        SessionKind::Group => e.channel.or_else(|| keys::key_channel(e.key)),
        _ => e
            .last_channel
            .or(e.channel)
            .or_else(|| keys::key_channel(e.key)),
    };
    // The effective model (see `effective_model`).
    let ModelLookups { agents, windows } = models;
    let model = match e.last_model.or(e.model) {
        Some(model) => model,
        None => agents.model(config, e.agent_id),
    };
    RowHead {
        key: keys::display_key(e.key),
        kind: e.kind.into(),
        channel: channel.unwrap_or("unknown"),
        agent_id: e.agent_id,
        session_id: e.session_id,
        created_at: e.created_at,
        updated_at: e.updated_at,
        chat_type: e.chat_type.map(|c| c.as_str()),
        display_name: e.display_name,
        label: e.label,
        context_tokens: windows.window(config, model),
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
        delivery_context: e.delivery_context.as_ref(),
        spawned_by: e.spawned_by.map(keys::display_key),
        archived_at: e.archived_at,
        transcript_path,
    }
}

/// What the rows of a page look up in the config: an agent's model and a model's context
/// window, found once for a run of rows that share them (most pages: one agent, one model)
/// rather than once a row (each lookup normalises or lowercases a name into a new string).
#[derive(Default)]
pub(crate) struct ModelLookups {
    agents: AgentModels,
    windows: ContextWindows,
}

/// The last agent whose model was looked up, and that model.
#[derive(Default)]
struct AgentModels(Option<(String, String)>);

impl AgentModels {
    /// [`Config::agent_model`].
    fn model(&mut self, config: &Config, agent_id: &str) -> &str {
        if !matches!(&self.0, Some((id, _)) if id == agent_id) {
            self.0 = Some((
                agent_id.to_string(),
                config.agent_model(agent_id).to_string(),
            ));
        }
        self.0.as_ref().map_or("", |(_, model)| model.as_str())
    }
}

/// The last model whose context window was looked up, and that window.
#[derive(Default)]
struct ContextWindows(Option<(String, Option<u64>)>);

impl ContextWindows {
    /// [`Config::context_window`].
    fn window(&mut self, config: &Config, model: &str) -> Option<u64> {
        match &self.0 {
            Some((known, window)) if known == model => *window,
            _ => {
                let window = config.context_window(model);
                self.0 = Some((model.to_string(), window));
                window
            }
        }
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

/// An agent's resolved settings as `agents.list` shows them.
fn settings_of(
    agent: &crate::config::ResolvedAgent,
) -> switchboard_protocol::agents::AgentSettings {
    switchboard_protocol::agents::AgentSettings {
        configured: agent.configured,
        thinking_level: agent.thinking_level.as_str().into(),
        sandbox_mode: agent.sandbox_mode.as_str().into(),
        sandbox_network: agent.sandbox_network,
        session_tools_visibility: agent.session_tools_visibility.as_str().into(),
        tools_profile: agent.tools_profile.map(|p| p.as_str().to_string()),
        tools_allow: agent.tools_allow.clone(),
        tools_deny: agent.tools_deny.clone(),
        workspace: agent.workspace.clone(),
        subagent_model: agent.subagent_model.clone(),
        system_prompt_chars: agent
            .system_prompt
            .as_ref()
            .map_or(0, |p| p.chars().count()),
    }
}
