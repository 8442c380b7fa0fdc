//! `sessions.create`, `sessions.resolve`, `sessions.patch`, `sessions.reset`,
//! `sessions.delete`, and a node client's session.

use switchboard_protocol::sessions::{
    Patch, SessionKeyParams, SessionsCompactResult, SessionsCreateParams, SessionsCreateResult,
    SessionsDeleteResult, SessionsPatchParams, SessionsPatchResult, SessionsResetResult,
    SessionsResolveParams, SessionsResolveResult,
};

use super::Sessions;
use crate::error::{CoreError, CoreResult};
use crate::keys::SessionKey;
use crate::runtime::compact::When;
use crate::store::EntryPatch;

/// Labels are short handles for humans and models.
const MAX_LABEL_CHARS: usize = 64;
/// A display name is a chat's title, not a document.
const MAX_DISPLAY_NAME_CHARS: usize = 200;

fn check_label(label: &str) -> CoreResult<()> {
    let n = label.chars().count();
    if label.trim().is_empty() || n > MAX_LABEL_CHARS || label.chars().any(char::is_control) {
        return Err(CoreError::invalid(format!(
            "label: {label:?} is not allowed; expected 1–{MAX_LABEL_CHARS} characters without \
             control characters, unique per agent"
        )));
    }
    Ok(())
}

fn check_display_name(name: &str) -> CoreResult<()> {
    let n = name.chars().count();
    if n > MAX_DISPLAY_NAME_CHARS || name.chars().any(char::is_control) {
        let shown: String = name.chars().take(40).collect();
        return Err(CoreError::invalid(format!(
            "displayName: {shown:?}… ({n} characters) is not allowed; expected at most \
             {MAX_DISPLAY_NAME_CHARS} characters without control characters"
        )));
    }
    Ok(())
}

/// A `verboseLevel` as the reference reads it: `off` (also `false`, `no`, `0`), `on` (also
/// `minimal`, `true`, `yes`, `1`) or `full` (also `all`, `everything`), any case; stored as
/// `off`, `on` or `full`.
fn verbose_level(level: &str) -> CoreResult<&'static str> {
    match level.trim().to_ascii_lowercase().as_str() {
        "off" | "false" | "no" | "0" => Ok("off"),
        "on" | "minimal" | "true" | "yes" | "1" => Ok("on"),
        "full" | "all" | "everything" => Ok("full"),
        _ => Err(CoreError::invalid(format!(
            "verboseLevel: {level:?} is not a level; expected \"off\", \"on\" or \"full\" \
             (any case), or null to clear"
        ))),
    }
}

impl Sessions {
    /// A model a run could use now (`provider/model` of a configured provider), refused at the
    /// call instead of failing the session's next run.
    pub(super) fn check_model(&self, model: &str) -> CoreResult<()> {
        self.runtime
            .providers()
            .resolve(model)
            .map(|_| ())
            .map_err(|e| CoreError::invalid(format!("model: {e}")))
    }

    /// Creates an empty session; idempotent for an existing key.
    pub async fn create(&self, p: SessionsCreateParams) -> CoreResult<SessionsCreateResult> {
        let key = self.resolver.caller_key(&p.key, p.agent_id.as_deref())?;
        if let Some(label) = &p.label {
            check_label(label)?;
        }
        if let Some(name) = &p.display_name {
            check_display_name(name)?;
        }
        let mut new = self.resolver.new_session(&key);
        new.label = p.label;
        new.display_name = p.display_name;
        let (entry, created) = self.store.create(new).await?;
        if created {
            self.changed(&entry.key, "create");
        }
        let session = self.row(&entry);
        Ok(SessionsCreateResult {
            ok: true,
            key: session.key.clone(),
            session_id: entry.session_id,
            created,
            session,
        })
    }

    /// Exactly one of `key` / `sessionId` / `label` (+ `agentId`) → `{key}`.
    pub async fn resolve(&self, p: SessionsResolveParams) -> CoreResult<SessionsResolveResult> {
        let given = [p.key.is_some(), p.session_id.is_some(), p.label.is_some()];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(CoreError::invalid(
                "give exactly one of key, sessionId or label (with an optional agentId)",
            ));
        }
        if let Some(agent) = &p.agent_id {
            self.resolver.known_agent(agent)?;
        }
        let entry = if let Some(label) = &p.label {
            self.resolver.by_label(label, p.agent_id.as_deref()).await?
        } else if let Some(id) = &p.session_id {
            self.resolver.by_session_id(id).await?
        } else {
            self.resolver
                .find(p.key.as_deref().unwrap_or_default(), p.agent_id.as_deref())
                .await?
        };
        Ok(SessionsResolveResult {
            ok: true,
            key: self.row(&entry).key,
            session_id: entry.session_id,
        })
    }

    pub async fn patch(&self, p: SessionsPatchParams) -> CoreResult<SessionsPatchResult> {
        let entry = self.resolver.find(&p.key, p.agent_id.as_deref()).await?;
        if let Patch::Set(label) = &p.label {
            check_label(label)?;
        }
        if let Patch::Set(name) = &p.display_name {
            check_display_name(name)?;
        }
        if let Patch::Set(model) = &p.model {
            self.check_model(model)?;
        }
        if let Patch::Set(policy) = &p.send_policy
            && policy != "allow"
            && policy != "deny"
        {
            return Err(CoreError::invalid(format!(
                "sendPolicy: {policy:?} is not allowed; expected \"allow\", \"deny\" or null (inherit)"
            )));
        }
        if !p.spawned_by.is_keep() && !entry.key.is_subagent() {
            return Err(CoreError::invalid(format!(
                "spawnedBy: only sub-agent sessions (agent:<agentId>:subagent:<id>) have a parent; {} is not one",
                entry.key
            )));
        }
        let spawned_by = match p.spawned_by {
            Patch::Set(parent) => {
                Patch::Set(self.resolver.canonical(&parent, Some(&entry.agent_id))?)
            }
            Patch::Clear => Patch::Clear,
            Patch::Keep => Patch::Keep,
        };
        let thinking_level = match p.thinking_level {
            Patch::Set(level) => Patch::Set(thinking_level(&level)?.as_str().to_string()),
            other => other,
        };
        let verbose_level = match p.verbose_level {
            Patch::Set(level) => Patch::Set(verbose_level(&level)?.to_string()),
            other => other,
        };
        let patch = EntryPatch {
            label: p.label,
            display_name: p.display_name,
            model: p.model,
            thinking_level,
            verbose_level,
            send_policy: p.send_policy,
            spawned_by,
            ..EntryPatch::default()
        };
        let entry = self.store.patch(&entry.key, patch).await?;
        self.changed(&entry.key, "update");
        let session = self.row(&entry);
        Ok(SessionsPatchResult {
            ok: true,
            key: session.key.clone(),
            session,
        })
    }

    pub async fn reset(&self, p: SessionKeyParams) -> CoreResult<SessionsResetResult> {
        let entry = self.resolver.find(&p.key, p.agent_id.as_deref()).await?;
        let previous = entry.session_id.clone();
        let entry = self.store.reset(&entry.key).await?;
        self.changed(&entry.key, "reset");
        let path = self.store.transcript_path(&entry.agent_id, &previous);
        Ok(SessionsResetResult {
            ok: true,
            key: self.row(&entry).key,
            session_id: entry.session_id,
            previous_session_id: previous,
            previous_transcript_path: path.map(|p| p.to_string_lossy().into_owned()),
        })
    }

    /// `sessions.compact`: everything but the newest turn summarised into one message the model
    /// is sent instead (the messages stay in the transcript). Errors: `NotFound`; `Unavailable`
    /// when the session's model could not write the summary.
    pub async fn compact(&self, p: SessionKeyParams) -> CoreResult<SessionsCompactResult> {
        let entry = self.resolver.find(&p.key, p.agent_id.as_deref()).await?;
        let done = self.runtime.compact(&entry.key, When::Asked).await?;
        if done.is_some() {
            self.changed(&entry.key, "update");
        }
        Ok(SessionsCompactResult {
            ok: true,
            key: entry.key.display().to_string(),
            compacted: done.is_some(),
            messages: done.as_ref().map_or(0, |d| d.messages),
            summary: done.map(|d| d.summary),
        })
    }

    /// Removes the entry; the transcript stays on disk and in the database (archived, not lost).
    pub async fn delete(&self, p: SessionKeyParams) -> CoreResult<SessionsDeleteResult> {
        let entry = self.resolver.find(&p.key, p.agent_id.as_deref()).await?;
        if self.config.is_main(&entry.key) {
            return Err(CoreError::invalid(format!(
                "{} is the main session of agent {}; it cannot be deleted (use sessions.reset to start it afresh)",
                self.row(&entry).key,
                entry.agent_id
            )));
        }
        let entry = self.store.delete(&entry.key).await?;
        self.changed(&entry.key, "delete");
        let path = self
            .store
            .transcript_path(&entry.agent_id, &entry.session_id);
        Ok(SessionsDeleteResult {
            ok: true,
            key: entry.key.display().to_string(),
            deleted: true,
            session_id: entry.session_id,
            archived_transcript_path: path.map(|p| p.to_string_lossy().into_owned()),
        })
    }

    /// A node client's session, `node-<nodeId>` of the default agent, created on its first
    /// connect (SPEC §9.3). Errors: `Invalid` for a missing or unusable node id.
    pub async fn node_session(
        &self,
        node_id: Option<&str>,
        display_name: Option<String>,
    ) -> CoreResult<SessionKey> {
        let node_id = node_id.map(str::trim).unwrap_or_default();
        if node_id.is_empty() {
            return Err(CoreError::invalid(
                "connect: role \"node\" needs nodeId (the device's id; its session is node-<nodeId>)",
            ));
        }
        let key = self
            .resolver
            .canonical(&format!("node-{node_id}"), None)
            .map_err(|e| {
                CoreError::Invalid(format!(
                    "connect: nodeId {node_id:?} does not make a session key: {e}"
                ))
            })?;
        let mut new = self.resolver.new_session(&key);
        new.display_name = display_name;
        self.store.create(new).await?;
        Ok(key)
    }
}

/// A thinking level as `sessions.patch` and `/think` take it (any case); the error names the
/// levels.
pub(super) fn thinking_level(text: &str) -> CoreResult<crate::config::ThinkingLevel> {
    use crate::config::ThinkingLevel;
    ThinkingLevel::parse(&text.trim().to_lowercase()).ok_or_else(|| {
        CoreError::Invalid(format!(
            "thinkingLevel: {text:?} is not a level; expected one of {}",
            ThinkingLevel::NAMES.join(", ")
        ))
    })
}
