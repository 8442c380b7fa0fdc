//! What a session tool's `sessionKey` (or `label`) names, and whether the caller may touch it
//! (SPEC §2.3, §8.1).
//!
//! Every tool reference goes through [`target`] or [`target_by_label`]: the reference is resolved
//! with the *requester's* key context (`main` and legacy keys belong to the calling agent), then
//! `access::decide` is asked about the resolved entry. So a sessionId or a label can never reach a
//! session its key could not, and a refusal says nothing the caller did not already give: when the
//! reference was a sessionId or a label, the resolved key in the denial message is replaced with
//! that reference. A key that names no session is checked against the rules too (as a session
//! nobody spawned), so "forbidden" vs "not found" does not tell a sandboxed caller which hidden
//! keys exist.

use schemars::JsonSchema;
use serde_json::{Value, json};

use crate::access::{self, Operation, Requester, Target};
use crate::keys::{self, SessionKey};
use crate::store::{SessionEntry, StoreError};
use crate::tools::{ToolContext, ToolOutput, schema_for};

/// [`schema_for`] without the noise optional fields carry (`"default": null`) and with each
/// description on one line (doc comments wrap).
pub(crate) fn schema<P: JsonSchema>() -> Value {
    let mut schema = schema_for::<P>();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(map) = property {
                if map.get("default") == Some(&Value::Null) {
                    map.remove("default");
                }
                if let Some(Value::String(text)) = map.get_mut("description") {
                    *text = text.replace('\n', " ");
                }
            }
        }
    }
    schema
}

/// `{"status": "error", "error": message}`: the call was wrong or failed; the message says how to
/// fix it.
pub(crate) fn error(message: impl Into<String>) -> ToolOutput {
    ToolOutput {
        content: json!({"status": "error", "error": message.into()}),
        is_error: true,
    }
}

/// `{"status": "forbidden", "error": message}`: access rules refused the target.
pub(crate) fn forbidden(message: impl Into<String>) -> ToolOutput {
    ToolOutput {
        content: json!({"status": "forbidden", "error": message.into()}),
        is_error: true,
    }
}

/// A store failure as a tool error (not the caller's fault).
pub(crate) fn store_error(e: StoreError) -> ToolOutput {
    error(format!("could not read the session store: {e}"))
}

/// The requester facts of the calling session.
pub(crate) fn requester(ctx: &ToolContext) -> Requester {
    access::requester(ctx.engine.config(), &ctx.session_key)
}

/// The calling agent: the context's, else the one its key names.
pub(crate) fn caller_agent(ctx: &ToolContext) -> String {
    if ctx.agent_id.is_empty() {
        requester(ctx).agent_id
    } else {
        ctx.agent_id.clone()
    }
}

/// The access target of a stored entry.
pub(crate) fn target_of(entry: &SessionEntry) -> Target<'_> {
    Target {
        key: &entry.key,
        agent_id: &entry.agent_id,
        spawned_by: entry.spawned_by.as_deref(),
    }
}

/// The entry `sessionKey` or `label` (+ `agentId`) names, for tools that accept either (exactly
/// one of them; neither is `sessionKey required`).
pub(crate) async fn reference(
    ctx: &ToolContext,
    session_key: Option<&str>,
    label: Option<&str>,
    agent_id: Option<&str>,
    op: Operation,
) -> Result<SessionEntry, ToolOutput> {
    let session_key = session_key.map(str::trim).filter(|s| !s.is_empty());
    let label = label.map(str::trim).filter(|s| !s.is_empty());
    match (session_key, label) {
        (Some(_), Some(_)) => Err(error(
            "Give either sessionKey or label (with an optional agentId), not both",
        )),
        (Some(key), None) => target(ctx, key, op).await,
        (None, Some(label)) => target_by_label(ctx, label, agent_id, op).await,
        (None, None) => Err(error("sessionKey required")),
    }
}

/// The entry a `sessionKey` reference names — a full key, a legacy key, `main`, or a sessionId —
/// if the requester may perform `op` on it.
pub(crate) async fn target(
    ctx: &ToolContext,
    reference: &str,
    op: Operation,
) -> Result<SessionEntry, ToolOutput> {
    let engine = &ctx.engine;
    let reference = reference.trim();
    let requester = requester(ctx);
    if keys::looks_like_session_id(reference) {
        let entry = engine
            .store()
            .get_by_session_id(&reference.to_lowercase())
            .await
            .map_err(store_error)?
            .ok_or_else(|| error(crate::sessions::not_found(reference).to_string()))?;
        check(ctx, &requester, &entry, op, reference)?;
        return Ok(entry);
    }
    let agent = caller_agent(ctx);
    let key = keys::canonicalize(reference, &engine.key_context(&agent))
        .map_err(|e| error(format!("sessionKey: {e}")))?;
    match engine
        .store()
        .get(key.as_str())
        .await
        .map_err(store_error)?
    {
        Some(entry) => {
            check(ctx, &requester, &entry, op, key.as_str())?;
            Ok(entry)
        }
        None => {
            // Ask about the key as a session nobody spawned, so a hidden key and a missing one
            // answer alike.
            let owner = key
                .agent_id()
                .map(str::to_string)
                .unwrap_or_else(|| engine.default_agent_id().to_string());
            let hypothetical = Target {
                key: key.as_str(),
                agent_id: &owner,
                spawned_by: None,
            };
            if let Err(denial) = access::decide(engine.config(), &requester, hypothetical, op) {
                return Err(forbidden(denial.message));
            }
            Err(error(format!(
                "No session found: {} (use sessions_list to find sessions)",
                key.display()
            )))
        }
    }
}

/// The entry with `label` in `agent_id`'s sessions (default: the requester's agent), if the
/// requester may perform `op` on it.
pub(crate) async fn target_by_label(
    ctx: &ToolContext,
    label: &str,
    agent_id: Option<&str>,
    op: Operation,
) -> Result<SessionEntry, ToolOutput> {
    let engine = &ctx.engine;
    let label = label.trim();
    let requester = requester(ctx);
    let agent = match agent_id.map(str::trim).filter(|a| !a.is_empty()) {
        Some(a) => keys::normalize_agent_id(a),
        None => caller_agent(ctx),
    };
    let shown = format!("label {label:?}");
    let found = engine
        .store()
        .get_by_label(&agent, label)
        .await
        .map_err(store_error)?;
    match found {
        Some(entry) => {
            check(ctx, &requester, &entry, op, &shown)?;
            Ok(entry)
        }
        None => {
            // As for keys: a label the caller could not see anyway is refused, not reported
            // missing (probing another agent's or a hidden session's labels learns nothing).
            let main = keys::main_session_key(&agent, &engine.key_context(&agent));
            let hypothetical = Target {
                key: main.as_str(),
                agent_id: &agent,
                spawned_by: None,
            };
            if let Err(denial) = access::decide(engine.config(), &requester, hypothetical, op) {
                return Err(forbidden(hide_key(&denial.message, &main, &shown)));
            }
            Err(error(format!(
                "No session found with {shown} for agent {agent} (use sessions_list to find \
                 sessions and their labels)"
            )))
        }
    }
}

/// `Ok` when `op` on `entry` is allowed; otherwise `forbidden` with the denial, naming the target
/// only as `shown` (what the caller gave).
fn check(
    ctx: &ToolContext,
    requester: &Requester,
    entry: &SessionEntry,
    op: Operation,
    shown: &str,
) -> Result<(), ToolOutput> {
    access::decide(ctx.engine.config(), requester, target_of(entry), op).map_err(|denial| {
        let key = SessionKey::from_canonical(entry.key.clone());
        forbidden(hide_key(&denial.message, &key, shown))
    })
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
