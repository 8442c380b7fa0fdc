//! Views of a [`Config`] that other modules ask for: one agent with its overrides merged onto
//! `agents.defaults`, the default agent, and a copy safe to print.

use super::{
    AgentEntry, Config, ModelRef, SandboxMode, SessionScope, SessionToolsVisibility, ThinkingLevel,
    ToolProfile,
};
use crate::keys::{self, KeyContext, Scope, SessionKey, normalize_agent_id};

/// What [`Config::redacted`] puts in place of every secret.
pub const REDACTED: &str = "[redacted]";

/// One agent as the runtime sees it: its own settings where it has them, `agents.defaults`
/// everywhere else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedAgent {
    /// The normalised agent id.
    pub id: String,
    /// Display name.
    pub name: Option<String>,
    /// Whether the id is in `agents.list` (unconfigured ids run on the defaults).
    pub configured: bool,
    /// Whether this is the default agent.
    pub is_default: bool,
    /// The agent's own system prompt.
    pub system_prompt: Option<String>,
    /// Primary model, `provider/model`.
    pub model: String,
    /// Models to try, in order, when the primary fails.
    pub model_fallbacks: Vec<String>,
    /// Which of its sessions are sandboxed.
    pub sandbox_mode: SandboxMode,
    /// What its sandboxed sessions may see.
    pub session_tools_visibility: SessionToolsVisibility,
    /// Whether its sandboxed commands have a network.
    pub sandbox_network: bool,
    /// Other agents it may spawn (`"*"` = any).
    pub allow_agents: Vec<String>,
    /// Model for its sub-agents: its own `subagents.model`, else `agents.defaults.subagents.model`;
    /// `None` means "the agent's own model".
    pub subagent_model: Option<String>,
    /// Its tool profile: its own, else `tools.profile` (`None`: every tool, `group:runtime`
    /// only where named).
    pub tools_profile: Option<ToolProfile>,
    /// Tools allowed (empty = all).
    pub tools_allow: Vec<String>,
    /// Tools refused.
    pub tools_deny: Vec<String>,
    /// `agents.list[].workspace` as written, if set.
    pub workspace: Option<String>,
    /// How much its models think (a session's `thinkingLevel` overrides it).
    pub thinking_level: ThinkingLevel,
}

impl Config {
    /// The key scope of `session.scope`.
    pub fn scope(&self) -> Scope {
        match self.session.scope {
            SessionScope::Global => Scope::Global,
            _ => Scope::PerSender,
        }
    }

    /// The key context of `agent_id`: its `main` and legacy keys.
    pub fn key_context<'a>(&'a self, agent_id: &'a str) -> KeyContext<'a> {
        KeyContext {
            agent_id,
            main_key: &self.session.main_key,
            scope: self.scope(),
        }
    }

    /// The main session key of `agent_id`.
    pub fn main_session_key(&self, agent_id: &str) -> SessionKey {
        keys::main_session_key(agent_id, &self.key_context(agent_id))
    }

    /// Whether `key` is the main session of its agent (it cannot be deleted).
    pub fn is_main(&self, key: &SessionKey) -> bool {
        key.is_global() || key.rest() == self.session.main_key
    }

    /// The `agents.list` entry with `default: true`, else the first entry, else `main`.
    pub fn default_agent_id(&self) -> String {
        let list = &self.agents.list;
        list.iter()
            .find(|agent| agent.default)
            .or_else(|| list.first())
            .map_or_else(|| "main".to_owned(), |agent| normalize_agent_id(&agent.id))
    }

    /// The agent ids that exist: `agents.list` in file order, or the implicit default agent
    /// (`main`) when the list is empty.
    pub fn agent_ids(&self) -> Vec<String> {
        if self.agents.list.is_empty() {
            return vec![self.default_agent_id()];
        }
        self.agents
            .list
            .iter()
            .map(|agent| normalize_agent_id(&agent.id))
            .collect()
    }

    fn entry(&self, id: &str) -> Option<&AgentEntry> {
        self.agents
            .list
            .iter()
            .find(|agent| normalize_agent_id(&agent.id) == id)
    }

    /// The primary model of agent `id`: [`Config::agent`]'s `model`, without resolving the rest
    /// (a list row needs only this).
    pub fn agent_model(&self, id: &str) -> &str {
        let entry = self.entry(&normalize_agent_id(id));
        let model = entry
            .and_then(|agent| agent.model.as_ref())
            .unwrap_or(&self.agents.defaults.model);
        &model.primary
    }

    /// The agent `id` (normalised first) with its overrides merged onto `agents.defaults`. Works
    /// for ids that are not configured too: they get the defaults and `configured: false`.
    pub fn agent(&self, id: &str) -> ResolvedAgent {
        let id = normalize_agent_id(id);
        let defaults = &self.agents.defaults;
        let entry = self.entry(&id);
        let model: &ModelRef = entry
            .and_then(|agent| agent.model.as_ref())
            .unwrap_or(&defaults.model);
        let subagent_model = entry
            .and_then(|agent| agent.subagents.model.as_ref())
            .or(defaults.subagents.model.as_ref())
            .map(|model| model.primary.clone());
        let is_default = id == self.default_agent_id();
        ResolvedAgent {
            name: entry.and_then(|agent| agent.name.clone()),
            configured: entry.is_some(),
            is_default,
            system_prompt: entry
                .and_then(|agent| agent.system_prompt.clone())
                .filter(|prompt| !prompt.trim().is_empty()),
            model: model.primary.clone(),
            model_fallbacks: model.fallbacks.clone(),
            sandbox_mode: entry
                .and_then(|agent| agent.sandbox.mode)
                .unwrap_or(defaults.sandbox.mode),
            session_tools_visibility: entry
                .and_then(|agent| agent.sandbox.session_tools_visibility)
                .unwrap_or(defaults.sandbox.session_tools_visibility),
            sandbox_network: entry
                .and_then(|agent| agent.sandbox.network)
                .unwrap_or(defaults.sandbox.network),
            allow_agents: entry
                .map(|agent| agent.subagents.allow_agents.clone())
                .unwrap_or_default(),
            subagent_model,
            thinking_level: entry
                .and_then(|agent| agent.thinking_level)
                .unwrap_or(defaults.thinking_level),
            tools_profile: entry
                .and_then(|agent| agent.tools.profile)
                .or(self.tools.profile),
            workspace: entry.and_then(|agent| agent.workspace.clone()),
            tools_allow: entry
                .map(|agent| agent.tools.allow.clone())
                .unwrap_or_default(),
            tools_deny: entry
                .map(|agent| agent.tools.deny.clone())
                .unwrap_or_default(),
            id,
        }
    }

    /// The configured context window of `provider/model`, if the config names one.
    pub fn context_window(&self, reference: &str) -> Option<u64> {
        let (provider, model) = ModelRef::split(reference)?;
        let provider = self.models.providers.get(&provider.to_lowercase())?;
        provider
            .models
            .iter()
            .find(|m| m.id == model)
            .and_then(|m| m.context_window)
    }

    /// A copy with every secret — gateway, hook, channel and account tokens, API keys, and every
    /// provider header value (they often carry credentials) — replaced by [`REDACTED`]. For
    /// `config show` and anything else that prints a config.
    pub fn redacted(&self) -> Config {
        fn hide(secret: &mut Option<String>) {
            if secret.is_some() {
                *secret = Some(REDACTED.to_owned());
            }
        }
        let mut copy = self.clone();
        hide(&mut copy.gateway.auth.token);
        for provider in copy.models.providers.values_mut() {
            hide(&mut provider.api_key);
            for value in provider.headers.values_mut() {
                *value = REDACTED.to_owned();
            }
        }
        for account in copy.channels.webhook.accounts.values_mut() {
            hide(&mut account.token);
        }
        let chats = &mut copy.channels;
        chats.telegram.hide_secrets();
        chats.discord.hide_secrets();
        chats.slack.hide_secrets();
        chats.whatsapp.hide_secrets();
        chats.matrix.hide_secrets();
        hide(&mut copy.hooks.token);
        hide(&mut copy.tools.web.search.api_key);
        // A database URL may carry its password.
        hide(&mut copy.store.url);
        // MCP servers' environments and headers carry their API keys.
        for server in copy.mcp.servers.values_mut() {
            for value in server.env.values_mut().chain(server.headers.values_mut()) {
                *value = REDACTED.to_owned();
            }
        }
        // A collector's headers carry its API key.
        for value in copy.observability.otlp.headers.values_mut() {
            *value = REDACTED.to_owned();
        }
        // A2A remotes' bearer tokens.
        for agent in &mut copy.agents.list {
            for remote in agent.a2a.remotes.values_mut() {
                hide(&mut remote.token);
            }
        }
        copy
    }
}
