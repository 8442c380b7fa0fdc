//! What the reference's clients ask on start and on every screen, from what the sessions
//! component knows: the default model, one session's row, the agent's identity, the models, the
//! status summary and the token cost.

use std::collections::BTreeMap;

use serde_json::json;
use switchboard_protocol::overview::{
    AgentIdentity, AgentIdentityParams, AgentSessions, ModelInfo, ModelsListResult,
    SessionDefaults, SessionsDescribeParams, SessionsDescribeResult, StatusResult, StatusSessions,
};

use super::Sessions;
use super::health::channel_health;
use crate::channel::ChannelStatus;
use crate::config::{BUILTIN_MODELS, BUILTIN_PROVIDER, ModelInput, ModelRef};
use crate::error::{CoreError, CoreResult};

impl Sessions {
    /// The model of a session that names none: the default agent's.
    pub fn defaults(&self) -> SessionDefaults {
        let agent = self.config.agent(&self.config.default_agent_id());
        let (provider, model) = ModelRef::split(&agent.model).unwrap_or(("", &agent.model));
        SessionDefaults {
            model: model.to_string(),
            model_provider: provider.to_string(),
            context_tokens: self.config.context_window(&agent.model),
        }
    }

    /// `sessions.describe`: the session's row, or `null` when it does not exist.
    pub async fn describe(&self, p: SessionsDescribeParams) -> CoreResult<SessionsDescribeResult> {
        if let Some(agent) = &p.agent_id {
            self.resolver.known_agent(agent)?;
        }
        let session = match self.resolver.find(&p.key, p.agent_id.as_deref()).await {
            Ok(entry) => self.rows(vec![entry]).await?.pop(),
            Err(CoreError::NotFound(_)) => None,
            Err(e) => return Err(e),
        };
        Ok(SessionsDescribeResult {
            session,
            defaults: self.defaults(),
        })
    }

    /// `agent.identity.get`: the agent named, else the session's, else the default one.
    pub async fn identity(&self, p: AgentIdentityParams) -> CoreResult<AgentIdentity> {
        let agent_id = match (p.agent_id, p.session_key) {
            (Some(id), _) => {
                let id = crate::keys::normalize_agent_id(&id);
                if !self.config.agent_ids().contains(&id) {
                    return Err(CoreError::NotFound(format!(
                        "agent not found: {id} (agents.list shows the agents)"
                    )));
                }
                id
            }
            (None, Some(key)) => self
                .resolver
                .canonical(&key, None)?
                .agent_id()
                .map_or_else(|| self.config.default_agent_id(), str::to_string),
            (None, None) => self.config.default_agent_id(),
        };
        let name = self.config.agent(&agent_id).name.clone();
        Ok(AgentIdentity {
            name: name.unwrap_or_else(|| agent_id.clone()),
            agent_id,
        })
    }

    /// `models.list`: the built-in models, every configured model, and the models agents name on
    /// providers that list none (they accept any id).
    pub fn models(&self) -> ModelsListResult {
        let mut models: BTreeMap<String, ModelInfo> = BTreeMap::new();
        for id in BUILTIN_MODELS {
            let info = model_info(BUILTIN_PROVIDER, id, None, None, &["text"]);
            models.insert(format!("{BUILTIN_PROVIDER}/{id}"), info);
        }
        for (provider, config) in &self.config.models.providers {
            for m in &config.models {
                let images = m
                    .input
                    .as_ref()
                    .is_none_or(|i| i.contains(&ModelInput::Image));
                let input: &[&str] = if images {
                    &["text", "image"]
                } else {
                    &["text"]
                };
                let info = model_info(provider, &m.id, m.name.clone(), m.context_window, input);
                models.insert(format!("{provider}/{}", m.id), info);
            }
        }
        for id in self.config.agent_ids() {
            let reference = self.config.agent(&id).model;
            if let Some((provider, model)) = ModelRef::split(&reference)
                && !models.contains_key(&reference)
            {
                let info = model_info(provider, model, None, None, &["text", "image"]);
                models.insert(reference.clone(), info);
            }
        }
        ModelsListResult {
            models: models.into_values().collect(),
        }
    }

    /// `status`: the gateway's version, channels (as their statuses say), sessions and
    /// default model.
    pub async fn status(&self, channels: &[ChannelStatus]) -> CoreResult<StatusResult> {
        let health = self.health().await?;
        let (channels, order, labels) = channel_health(channels);
        let channel_summary = order
            .iter()
            .map(|id| {
                let accounts = channels[id]["accounts"].as_object().map_or(0, |a| a.len());
                let label = labels.get(id).cloned().unwrap_or_else(|| id.clone());
                let state = if accounts > 0 {
                    "configured"
                } else {
                    "not configured"
                };
                format!("{label}: {state} ({accounts} accounts)")
            })
            .collect();
        let agents: Vec<_> = health
            .agents
            .iter()
            .map(|a| json!({"agentId": a.agent_id, "enabled": false, "everyMs": null}))
            .collect();
        Ok(StatusResult {
            ok: true,
            runtime_version: env!("CARGO_PKG_VERSION").to_string(),
            channel_summary,
            heartbeat: json!({"defaultAgentId": health.default_agent_id, "agents": agents}),
            sessions: StatusSessions {
                paths: health
                    .agents
                    .iter()
                    .map(|a| a.sessions.path.clone())
                    .collect(),
                count: health.session_count,
                defaults: self.defaults(),
                recent: health.sessions.recent,
                by_agent: health
                    .agents
                    .iter()
                    .map(|a| AgentSessions {
                        agent_id: a.agent_id.clone(),
                        sessions: a.sessions.clone(),
                    })
                    .collect(),
            },
            queued_system_events: Vec::new(),
        })
    }
}

fn model_info(
    provider: &str,
    id: &str,
    name: Option<String>,
    context_window: Option<u64>,
    input: &[&str],
) -> ModelInfo {
    ModelInfo {
        name: name.unwrap_or_else(|| id.to_string()),
        id: id.to_string(),
        provider: provider.to_string(),
        context_window,
        input: input.iter().map(|s| s.to_string()).collect(),
    }
}
