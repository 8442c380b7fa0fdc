//! The one reference resolver (SPEC §2.3, §8.1): what a session reference names — a full key, a
//! legacy key, `main`, a sessionId, or a label (+ agentId) — for operators (who see every
//! session) and for a session's agent (the access decision applied). Used by the gateway
//! methods, the session tools, `tools.invoke`, MCP and the inbound doors alike.
//!
//! For an agent, the reference is resolved with the *requester's* key context (`main` and
//! legacy keys belong to the calling agent), then `access::decide` is asked about the resolved
//! entry. So a sessionId or a label can never reach a session its key could not, and a refusal
//! says nothing the caller did not already give: when the reference was a sessionId or a label,
//! the resolved key in the denial message is replaced with that reference. A key that names no
//! session is checked against the rules too (as a session nobody spawned), so "forbidden" vs
//! "not found" does not tell a sandboxed caller which hidden keys exist.
//!
//! It sits below the components, beside `access` (it imports only `access`, `config`, `error`,
//! `keys` and `store`), so every component that resolves a reference can hold it without
//! importing `sessions`.

use std::sync::Arc;

use crate::access::{self, Operation, Requester, SendDecision, Target};
use crate::config::Config;
use crate::error::{CoreError, CoreResult};
use crate::keys::{self, SessionKey};
use crate::store::{EntryPatch, NewSession, SessionEntry, Store, StoreError, TryLock, WriteOp};
use switchboard_protocol::sessions::Patch;

/// A reference as a tool or a method gives it: a key (any accepted form, or a sessionId), or a
/// label with an optional agent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reference<'a> {
    pub key: Option<&'a str>,
    pub label: Option<&'a str>,
    pub agent_id: Option<&'a str>,
}

/// Why an agent's reference resolves to nothing it may use.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The reference was malformed or named nothing; the message says what to do.
    #[error("{0}")]
    Invalid(String),
    /// Access rules refused the target; the message names the setting.
    #[error("{0}")]
    Forbidden(String),
    /// The store could not be read.
    #[error("could not read the session store: {0}")]
    Store(StoreError),
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// The resolver component.
pub struct Resolver {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    /// The config's default agent, resolved once (every operator reference may need it).
    default_agent: String,
}

impl Resolver {
    pub fn new(config: Arc<Config>, store: Arc<dyn Store>) -> Self {
        let default_agent = config.default_agent_id();
        Self {
            config,
            store,
            default_agent,
        }
    }

    /// An operator's key (`agent_id` picks the agent legacy keys and `main` belong to; the
    /// default agent when absent), canonical.
    pub fn canonical(&self, input: &str, agent_id: Option<&str>) -> CoreResult<SessionKey> {
        let agent = match agent_id {
            Some(agent) => keys::normalize_agent_id(agent),
            None => self.default_agent.clone(),
        };
        Ok(keys::canonicalize(input, &self.config.key_context(&agent))?)
    }

    /// What a new session at `key` starts with: agent, kind, channel and chat type from the key.
    pub fn new_session(&self, key: &SessionKey) -> NewSession {
        NewSession::for_key(key, &self.default_agent, &self.config.session.main_key)
    }

    /// Applies an owner's `/send on|off|inherit` (`policy`: the new override, `None` clears it)
    /// to `key`, creating the session when it is new, in one commit; answers the confirmation
    /// the chat is told.
    pub async fn set_send_override(
        &self,
        key: &SessionKey,
        policy: Option<&'static str>,
    ) -> CoreResult<String> {
        let patch = EntryPatch {
            send_policy: policy.map_or(Patch::Clear, |p| Patch::Set(p.to_string())),
            ..EntryPatch::default()
        };
        self.store
            .write_batch(vec![
                WriteOp::Create(Box::new(self.new_session(key))),
                WriteOp::Patch {
                    key: key.clone(),
                    patch: Box::new(patch),
                },
            ])
            .await?;
        let shown = policy.unwrap_or("inherit (the configured policy)");
        Ok(format!("Send policy for {}: {shown}.", key.display()))
    }

    /// The entry an operator's reference names: a key (any accepted form) or a sessionId.
    /// Errors: `NotFound`; `Key` for a malformed key.
    pub async fn find(&self, reference: &str, agent_id: Option<&str>) -> CoreResult<SessionEntry> {
        let reference = reference.trim();
        if keys::looks_like_session_id(reference) {
            return self
                .store
                .get_by_session_id(&reference.to_lowercase())
                .await?
                .ok_or_else(|| CoreError::session_not_found(reference));
        }
        // A caller's agent must be configured and agree with the key's own.
        let key = match agent_id {
            Some(_) => self.caller_key(reference, agent_id)?,
            None => self.canonical(reference, None)?,
        };
        match self.store.get(&key).await? {
            Some(entry) => Ok(entry),
            // No session, and none can be made: say why (`agent:nobody:main`).
            None => Err(self
                .configured_key(key)
                .err()
                .unwrap_or_else(|| CoreError::session_not_found(reference))),
        }
    }

    /// The entry with this sessionId, for an operator. Errors: `NotFound`.
    pub async fn by_session_id(&self, session_id: &str) -> CoreResult<SessionEntry> {
        self.store
            .get_by_session_id(&session_id.trim().to_lowercase())
            .await?
            .ok_or_else(|| CoreError::session_not_found(session_id))
    }

    /// The key an operator's message goes to: a sessionId's session (which must exist), or the
    /// canonical key (whose session a run may create). An `agent_id` is the caller's, checked as
    /// [`Resolver::caller_key`] checks it.
    pub async fn target_key(
        &self,
        reference: &str,
        agent_id: Option<&str>,
    ) -> CoreResult<SessionKey> {
        if keys::looks_like_session_id(reference.trim()) {
            let key = self.find(reference, None).await?.key;
            if let Some(raw) = agent_id {
                agent_agrees(&key, &self.known_agent(raw)?, raw)?;
            }
            return Ok(key);
        }
        self.caller_key(reference, agent_id)
    }

    /// A caller's `agentId`, normalised as the reference does (`Ops` is `ops`), which must name
    /// a configured agent: a typo must not start sessions of an agent nobody configured.
    /// Errors: `NotFound` naming the configured agents.
    /// An id with no letter or digit (`-`, `☃`) names no agent, although it normalises to
    /// the default.
    pub fn known_agent(&self, raw: &str) -> CoreResult<String> {
        let agent = keys::normalize_agent_id(raw);
        let known = self.config.agent_ids();
        if known.contains(&agent) && raw.chars().any(|c| c.is_ascii_alphanumeric()) {
            return Ok(agent);
        }
        Err(CoreError::NotFound(format!(
            "agentId: no agent {raw:?} (configured: {})",
            known.join(", ")
        )))
    }

    /// An operator's key with the `agentId` it came with, as the reference reads the pair: the
    /// agent must be configured ([`Resolver::known_agent`]) and a key that names its agent
    /// (`agent:<id>:…`) must name the same one. Errors: `NotFound`, `Invalid`, `Key`.
    /// The key's own agent must be configured too: `agent:nobody:main` is refused, never run
    /// on the defaults (SPEC §12).
    pub fn caller_key(&self, input: &str, agent_id: Option<&str>) -> CoreResult<SessionKey> {
        let key = match agent_id {
            None => self.canonical(input, None)?,
            Some(raw) => {
                let agent = self.known_agent(raw)?;
                let key = self.canonical(input, Some(&agent))?;
                agent_agrees(&key, &agent, raw)?;
                key
            }
        };
        self.configured_key(key)
    }

    /// `key` when the agent it names is configured. Errors: `NotFound` naming the key, its
    /// agent and the configured agents.
    pub fn configured_key(&self, key: SessionKey) -> CoreResult<SessionKey> {
        let known = self.config.agent_ids();
        match key.agent_id() {
            Some(agent) if !known.iter().any(|k| k == agent) => Err(CoreError::NotFound(format!(
                "sessionKey: {} belongs to agent {agent:?}, which is not configured \
                 (configured: {})",
                key.display(),
                known.join(", ")
            ))),
            _ => Ok(key),
        }
    }

    /// The entry with `label` among `agent_id`'s sessions (the default agent when absent), for
    /// an operator. Errors: `NotFound`.
    pub async fn by_label(&self, label: &str, agent_id: Option<&str>) -> CoreResult<SessionEntry> {
        let agent = agent_id
            .map(keys::normalize_agent_id)
            .unwrap_or_else(|| self.default_agent.clone());
        self.store
            .get_by_label(&agent, label)
            .await?
            .ok_or_else(|| {
                CoreError::NotFound(format!("No session with label {label:?} for agent {agent}"))
            })
    }

    /// Refuses a message into `key` when the send policy denies it (`Forbidden`): the check
    /// `chat.send`, `agent` and hooks make. A key with no session yet is judged from the key.
    /// Answers the session it read (`None`: none yet), which their submit takes as it is.
    pub async fn check_send(&self, key: &SessionKey) -> CoreResult<Option<SessionEntry>> {
        let entry = self.store.get(key).await?;
        self.judge_send(key, entry.as_ref())?;
        Ok(entry)
    }

    /// [`Resolver::check_send`] for a message that starts a run, with what asking for the
    /// session's lock found ([`crate::store::Store::get_for_run`]: one statement on a shared
    /// store), for [`crate::runtime::Runtime::submit_locked`]. A refused message lets the lock
    /// go.
    /// `read`: the entry read now ([`crate::store::Store::read_for_run`]), never one kept.
    pub async fn check_send_for_run(
        &self,
        key: &SessionKey,
        read: bool,
    ) -> CoreResult<(Option<SessionEntry>, TryLock)> {
        let (entry, lock) = match read {
            true => self.store.read_for_run(key).await?,
            false => self.store.get_for_run(key).await?,
        };
        self.judge_send(key, entry.as_ref())?;
        Ok((entry, lock))
    }

    fn judge_send(&self, key: &SessionKey, entry: Option<&SessionEntry>) -> CoreResult<()> {
        match access::send_policy(&self.config, key.as_str(), entry) {
            SendDecision::Allow => Ok(()),
            SendDecision::Deny { reason } => Err(CoreError::Forbidden(reason)),
        }
    }

    /// The entry a session tool's `sessionKey` or `label` (+ `agentId`) names — exactly one of
    /// them; neither is `sessionKey required` — if `requester` (of the agent `agent`) may
    /// perform `op` on it.
    pub async fn for_agent(
        &self,
        requester: &Requester,
        agent: &str,
        reference: Reference<'_>,
        op: Operation,
    ) -> Result<SessionEntry, Refusal> {
        let key = reference.key.map(str::trim).filter(|s| !s.is_empty());
        let label = reference.label.map(str::trim).filter(|s| !s.is_empty());
        match (key, label) {
            (Some(_), Some(_)) => Err(Refusal::Invalid(
                "Give either sessionKey or label (with an optional agentId), not both".into(),
            )),
            (Some(key), None) => self.key_for_agent(requester, agent, key, op).await,
            (None, Some(label)) => {
                self.label_for_agent(requester, agent, label, reference.agent_id, op)
                    .await
            }
            (None, None) => Err(Refusal::Invalid("sessionKey required".into())),
        }
    }

    /// A `sessionKey` reference — a full key, a legacy key, `main`, or a sessionId.
    async fn key_for_agent(
        &self,
        requester: &Requester,
        agent: &str,
        reference: &str,
        op: Operation,
    ) -> Result<SessionEntry, Refusal> {
        if keys::looks_like_session_id(reference) {
            let entry = self
                .store
                .get_by_session_id(&reference.to_lowercase())
                .await?
                .ok_or_else(|| Refusal::Invalid(CoreError::tool_session_not_found(reference)))?;
            self.check(requester, &entry, op, reference)?;
            return Ok(entry);
        }
        let key = keys::canonicalize(reference, &self.config.key_context(agent))
            .map_err(|e| Refusal::Invalid(format!("sessionKey: {e}")))?;
        match self.store.get(&key).await? {
            Some(entry) => {
                self.check(requester, &entry, op, key.as_str())?;
                Ok(entry)
            }
            None => {
                // Ask about the key as a session nobody spawned, so a hidden key and a missing
                // one answer alike.
                let owner = key
                    .agent_id()
                    .map(str::to_string)
                    .unwrap_or_else(|| self.default_agent.clone());
                let hypothetical = Target {
                    key: key.as_str(),
                    agent_id: &owner,
                    spawned_by: None,
                };
                if let Err(denial) = access::decide(&self.config, requester, hypothetical, op) {
                    return Err(Refusal::Forbidden(denial.message));
                }
                Err(Refusal::Invalid(format!(
                    "No session found: {} (use sessions_list to find sessions)",
                    key.display()
                )))
            }
        }
    }

    /// A `label` reference, among `agent_id`'s sessions (default: the requester's agent).
    async fn label_for_agent(
        &self,
        requester: &Requester,
        caller_agent: &str,
        label: &str,
        agent_id: Option<&str>,
        op: Operation,
    ) -> Result<SessionEntry, Refusal> {
        let agent = match agent_id.map(str::trim).filter(|a| !a.is_empty()) {
            Some(a) => keys::normalize_agent_id(a),
            None => caller_agent.to_string(),
        };
        let shown = format!("label {label:?}");
        match self.store.get_by_label(&agent, label).await? {
            Some(entry) => {
                self.check(requester, &entry, op, &shown)?;
                Ok(entry)
            }
            None => {
                // As for keys: a label the caller could not see anyway is refused, not reported
                // missing (probing another agent's or a hidden session's labels learns nothing).
                let main = self.config.main_session_key(&agent);
                let hypothetical = Target {
                    key: main.as_str(),
                    agent_id: &agent,
                    spawned_by: None,
                };
                if let Err(denial) = access::decide(&self.config, requester, hypothetical, op) {
                    return Err(Refusal::Forbidden(hide_key(&denial.message, &main, &shown)));
                }
                Err(Refusal::Invalid(format!(
                    "No session found with {shown} for agent {agent} (use sessions_list to find \
                     sessions and their labels)"
                )))
            }
        }
    }

    /// `Ok` when `op` on `entry` is allowed; otherwise `Forbidden` with the denial, naming the
    /// target only as `shown` (what the caller gave).
    fn check(
        &self,
        requester: &Requester,
        entry: &SessionEntry,
        op: Operation,
        shown: &str,
    ) -> Result<(), Refusal> {
        access::decide(&self.config, requester, target_of(entry), op)
            .map_err(|denial| Refusal::Forbidden(hide_key(&denial.message, &entry.key, shown)))
    }
}

/// The access target of a stored entry.
pub fn target_of(entry: &SessionEntry) -> Target<'_> {
    Target {
        key: entry.key.as_str(),
        agent_id: &entry.agent_id,
        spawned_by: entry.spawned_by.as_ref().map(SessionKey::as_str),
    }
}

/// `Ok` unless `key` belongs to another agent than the caller's `agent` (given as `raw`).
fn agent_agrees(key: &SessionKey, agent: &str, raw: &str) -> CoreResult<()> {
    match key.agent_id() {
        Some(owner) if owner != agent => Err(CoreError::invalid(format!(
            "agentId: {raw:?} does not match the agent of {} ({owner}); leave agentId out, or \
             give a key of agent {agent}",
            key.display()
        ))),
        _ => Ok(()),
    }
}

/// `message` with the key replaced by `shown`.
fn hide_key(message: &str, key: &SessionKey, shown: &str) -> String {
    message.replace(key.as_str(), shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_name_only_what_the_caller_gave() {
        let key = SessionKey::from_canonical("agent:main:cron:secret".into());
        assert_eq!(
            hide_key(
                "Session not visible from this sandboxed agent session: agent:main:cron:secret",
                &key,
                "0b0e7a52-8c1e-4c8f-9d35-0f4c1a6e2b11"
            ),
            "Session not visible from this sandboxed agent session: \
             0b0e7a52-8c1e-4c8f-9d35-0f4c1a6e2b11"
        );
    }
}
