//! Session management for operators: the logic behind `sessions.*`, `chat.history`,
//! `chat.inject` and `agents.list`. It canonicalises keys, builds rows and talks to the store;
//! it knows nothing of sockets. Agent-facing session tools (with visibility rules) build on the
//! same row and history code later.

mod history;
mod list;
mod manage;

use serde_json::Value;
use switchboard_protocol::agents::{AgentSummary, AgentsListResult};
use switchboard_protocol::sessions::SessionRow;

use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::keys::{self, SessionKind};
use crate::store::{SessionEntry, StoredMessage};

pub use history::{history, inject};
pub use list::list;
pub use manage::{create, delete, patch, reset, resolve};

/// The row a caller sees for an entry (SPEC §7.1).
pub fn row(engine: &Engine, e: &SessionEntry) -> SessionRow {
    let key_channel = || {
        keys::SessionKey::from_canonical(e.key.clone())
            .channel()
            .map(str::to_string)
    };
    let channel = match e.kind {
        SessionKind::Cron | SessionKind::Hook | SessionKind::Node => Some("internal".to_string()),
        SessionKind::Group => e.channel.clone().or_else(key_channel),
        _ => e
            .last_channel
            .clone()
            .or_else(|| e.channel.clone())
            .or_else(key_channel),
    };
    SessionRow {
        key: if e.key == "global" {
            "main".to_string()
        } else {
            e.key.clone()
        },
        kind: e.kind.as_str().to_string(),
        channel: channel.unwrap_or_else(|| "unknown".to_string()),
        agent_id: e.agent_id.clone(),
        session_id: e.session_id.clone(),
        created_at: e.created_at,
        updated_at: e.updated_at,
        chat_type: e.chat_type.map(|c| c.as_str().to_string()),
        display_name: e.display_name.clone(),
        label: e.label.clone(),
        model: e.model.clone(),
        context_tokens: e.context_tokens,
        input_tokens: Some(e.input_tokens).filter(|n| *n > 0),
        output_tokens: Some(e.output_tokens).filter(|n| *n > 0),
        total_tokens: Some(e.total_tokens).filter(|n| *n > 0),
        thinking_level: e.thinking_level.clone(),
        verbose_level: e.verbose_level.clone(),
        system_sent: Some(e.system_sent).filter(|b| *b),
        aborted_last_run: Some(e.aborted_last_run).filter(|b| *b),
        send_policy: e.send_policy.clone(),
        last_channel: e.last_channel.clone(),
        last_to: e.last_to.clone(),
        delivery_context: e.delivery_context.clone(),
        spawned_by: e.spawned_by.clone(),
        archived_at: e.archived_at,
        transcript_path: engine
            .store()
            .transcript_path(&e.agent_id, &e.session_id)
            .to_string_lossy()
            .into_owned(),
        messages: None,
    }
}

/// A stored message in transcript format with its `seq`.
pub fn with_seq(m: StoredMessage) -> Value {
    let mut message = m.message;
    if let Value::Object(map) = &mut message {
        map.insert("seq".to_string(), Value::from(m.seq));
    }
    message
}

/// Finds the entry a reference names: a key (any accepted form) or a sessionId.
pub async fn find(
    engine: &Engine,
    reference: &str,
    agent_id: Option<&str>,
) -> CoreResult<SessionEntry> {
    let reference = reference.trim();
    if keys::looks_like_session_id(reference) {
        if let Some(entry) = engine
            .store()
            .get_by_session_id(&reference.to_lowercase())
            .await?
        {
            return Ok(entry);
        }
        return Err(not_found(reference));
    }
    let key = engine.canonical_key(reference, agent_id)?;
    engine
        .store()
        .get(key.as_str())
        .await?
        .ok_or_else(|| not_found(reference))
}

pub(crate) fn not_found(reference: &str) -> CoreError {
    CoreError::NotFound(format!(
        "Session not found: {reference} (use the full sessionKey from sessions_list)"
    ))
}

/// `agents.list`: the configured agents (the default agent when none are).
pub fn agents_list(engine: &Engine) -> AgentsListResult {
    let config = engine.config();
    let agents = config
        .agent_ids()
        .into_iter()
        .map(|id| {
            let agent = config.agent(&id);
            let main = keys::main_session_key(&id, &engine.key_context(&id));
            AgentSummary {
                default: id == engine.default_agent_id(),
                name: agent.name.clone(),
                model: agent.model.clone(),
                main_key: main.display().to_string(),
                id,
            }
        })
        .collect();
    AgentsListResult {
        default_id: engine.default_agent_id().to_string(),
        agents,
    }
}
