//! `sessions.create`, `sessions.resolve`, `sessions.patch`, `sessions.reset`, `sessions.delete`.

use serde_json::{Value, json};
use switchboard_protocol::sessions::{
    Patch, SessionKeyParams, SessionsCreateParams, SessionsPatchParams, SessionsResolveParams,
};

use super::{find, not_found, row};
use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::keys;
use crate::store::EntryPatch;

/// Labels are short handles for humans and models.
const MAX_LABEL_CHARS: usize = 64;

fn check_label(label: &str) -> CoreResult<()> {
    let n = label.chars().count();
    if label.trim().is_empty() || n > MAX_LABEL_CHARS {
        return Err(Engine::invalid(format!(
            "label: {label:?} is not allowed; expected 1–{MAX_LABEL_CHARS} characters, unique per agent"
        )));
    }
    Ok(())
}

/// Creates an empty session; idempotent for an existing key.
pub async fn create(engine: &Engine, p: SessionsCreateParams) -> CoreResult<Value> {
    let key = engine.canonical_key(&p.key, p.agent_id.as_deref())?;
    if let Some(label) = &p.label {
        check_label(label)?;
    }
    let mut new = engine.new_session(&key);
    new.label = p.label;
    new.display_name = p.display_name;
    let (entry, created) = engine.store().create(new).await?;
    Ok(json!({
        "ok": true,
        "key": row(engine, &entry).key,
        "sessionId": entry.session_id,
        "created": created,
        "session": row(engine, &entry),
    }))
}

/// Exactly one of `key` / `sessionId` / `label` (+ `agentId`) → `{key}`.
pub async fn resolve(engine: &Engine, p: SessionsResolveParams) -> CoreResult<Value> {
    let given = [p.key.is_some(), p.session_id.is_some(), p.label.is_some()];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(Engine::invalid(
            "give exactly one of key, sessionId or label (with an optional agentId)",
        ));
    }
    let entry = if let Some(label) = &p.label {
        let agent = p
            .agent_id
            .as_deref()
            .map(keys::normalize_agent_id)
            .unwrap_or_else(|| engine.default_agent_id().to_string());
        engine
            .store()
            .get_by_label(&agent, label)
            .await?
            .ok_or_else(|| {
                CoreError::NotFound(format!("No session with label {label:?} for agent {agent}"))
            })?
    } else if let Some(id) = &p.session_id {
        engine
            .store()
            .get_by_session_id(&id.trim().to_lowercase())
            .await?
            .ok_or_else(|| not_found(id))?
    } else {
        find(
            engine,
            p.key.as_deref().unwrap_or_default(),
            p.agent_id.as_deref(),
        )
        .await?
    };
    let row = row(engine, &entry);
    Ok(json!({"ok": true, "key": row.key, "sessionId": entry.session_id}))
}

pub async fn patch(engine: &Engine, p: SessionsPatchParams) -> CoreResult<Value> {
    let entry = find(engine, &p.key, None).await?;
    if let Patch::Set(label) = &p.label {
        check_label(label)?;
    }
    if let Patch::Set(policy) = &p.send_policy
        && policy != "allow"
        && policy != "deny"
    {
        return Err(Engine::invalid(format!(
            "sendPolicy: {policy:?} is not allowed; expected \"allow\", \"deny\" or null (inherit)"
        )));
    }
    if !p.spawned_by.is_keep() && !keys::SessionKey::from_canonical(entry.key.clone()).is_subagent()
    {
        return Err(Engine::invalid(format!(
            "spawnedBy: only sub-agent sessions (agent:<agentId>:subagent:<id>) have a parent; {} is not one",
            entry.key
        )));
    }
    let spawned_by = match p.spawned_by {
        Patch::Set(parent) => Patch::Set(
            engine
                .canonical_key(&parent, Some(&entry.agent_id))?
                .into_string(),
        ),
        other => other,
    };
    let patch = EntryPatch {
        label: p.label,
        display_name: p.display_name,
        model: p.model,
        thinking_level: p.thinking_level,
        verbose_level: p.verbose_level,
        send_policy: p.send_policy,
        spawned_by,
        ..EntryPatch::default()
    };
    let entry = engine.store().patch(&entry.key, patch).await?;
    let row = row(engine, &entry);
    Ok(json!({"ok": true, "key": row.key, "session": row}))
}

pub async fn reset(engine: &Engine, p: SessionKeyParams) -> CoreResult<Value> {
    let entry = find(engine, &p.key, None).await?;
    let previous = entry.session_id.clone();
    let entry = engine.store().reset(&entry.key).await?;
    let row = row(engine, &entry);
    Ok(json!({
        "ok": true,
        "key": row.key,
        "sessionId": entry.session_id,
        "previousSessionId": previous,
        "previousTranscriptPath": engine.store().transcript_path(&entry.agent_id, &previous),
    }))
}

/// Removes the entry; the transcript stays on disk and in the database (archived, not lost).
pub async fn delete(engine: &Engine, p: SessionKeyParams) -> CoreResult<Value> {
    let entry = find(engine, &p.key, None).await?;
    if engine.is_main(&keys::SessionKey::from_canonical(entry.key.clone())) {
        return Err(Engine::invalid(format!(
            "{} is the main session of agent {}; it cannot be deleted (use sessions.reset to start it afresh)",
            row(engine, &entry).key,
            entry.agent_id
        )));
    }
    let entry = engine.store().delete(&entry.key).await?;
    Ok(json!({
        "ok": true,
        "key": entry.key,
        "deleted": true,
        "sessionId": entry.session_id,
        "archivedTranscriptPath": engine.store().transcript_path(&entry.agent_id, &entry.session_id),
    }))
}
