//! `chat.history` (newest page first, `before` paging) and `chat.inject`.

use serde_json::{Value, json};
use switchboard_protocol::chat::{
    ChatHistoryParams, ChatHistoryResult, ChatInjectParams, ChatInjectResult, InjectMessage,
};
use switchboard_protocol::lenient::clamp_or;
use switchboard_protocol::message::TranscriptMessage;

use super::{find, row, with_seq};
use crate::engine::Engine;
use crate::error::{CoreError, CoreResult};
use crate::keys;
use crate::store::message_id;

pub const DEFAULT_LIMIT: i64 = 200;
pub const MAX_LIMIT: i64 = 1000;

pub async fn history(engine: &Engine, p: ChatHistoryParams) -> CoreResult<ChatHistoryResult> {
    let entry = match find(engine, &p.session_key, None).await {
        Ok(entry) => entry,
        // A valid key that names no session yet has an empty history (the reference's answer,
        // which its clients expect); nothing is created. An unknown sessionId stays an error.
        Err(CoreError::NotFound(_)) if !keys::looks_like_session_id(p.session_key.trim()) => {
            let key = engine.canonical_key(&p.session_key, None)?;
            return Ok(ChatHistoryResult {
                session_key: key.display().to_string(),
                session_id: None,
                messages: Vec::new(),
                next_before: None,
            });
        }
        Err(e) => return Err(e),
    };
    let limit = clamp_or(p.limit, DEFAULT_LIMIT, 1, MAX_LIMIT) as usize;
    let before = p.before.filter(|b| *b > 0);
    let page = engine
        .store()
        .history(&entry.session_id, limit, before)
        .await?;
    Ok(ChatHistoryResult {
        session_key: row(engine, &entry).key,
        session_id: Some(entry.session_id),
        messages: page.messages.into_iter().map(with_seq).collect(),
        next_before: page.next_before,
    })
}

/// Appends one message without a run, creating the session when the key is new.
pub async fn inject(engine: &Engine, p: ChatInjectParams) -> CoreResult<ChatInjectResult> {
    let message = inject_message(p.message, p.role.as_deref())?;
    let reference = p.session_key.trim();
    let key = if keys::looks_like_session_id(reference) {
        find(engine, reference, None).await?.key
    } else {
        engine
            .canonical_key(reference, p.agent_id.as_deref())?
            .into_string()
    };
    let new = engine.new_session(&keys::SessionKey::from_canonical(key.clone()));
    let appended = engine
        .store()
        .append(&key, Some(new), vec![message])
        .await?;
    let seq = appended
        .seqs
        .first()
        .copied()
        .unwrap_or(appended.entry.last_seq);
    Ok(ChatInjectResult {
        ok: true,
        session_key: row(engine, &appended.entry).key,
        session_id: appended.entry.session_id,
        seq,
        message_id: message_id(seq),
    })
}

/// Text becomes a message of `role`; an object must be a transcript message.
fn inject_message(message: InjectMessage, role: Option<&str>) -> CoreResult<Value> {
    let now = crate::clock::now_ms();
    match message {
        InjectMessage::Text(text) => match role.unwrap_or("assistant") {
            "assistant" => Ok(json!({
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "provider": "switchboard", "model": "inject",
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
                "stopReason": "stop", "timestamp": now,
            })),
            "user" => Ok(json!({
                "role": "user", "content": text, "timestamp": now,
                "provenance": {"kind": "inject"},
            })),
            other => Err(Engine::invalid(format!(
                "role: {other:?} is not allowed; expected \"assistant\" (default) or \"user\""
            ))),
        },
        InjectMessage::Message(mut value) => {
            if let Value::Object(map) = &mut value {
                map.entry("timestamp").or_insert(Value::from(now));
            }
            let parsed: TranscriptMessage = serde_json::from_value(value).map_err(|e| {
                Engine::invalid(format!(
                    "message: not a transcript message ({e}); expected text, or an object with role \
                     \"user\" | \"assistant\" | \"toolResult\" in the transcript format"
                ))
            })?;
            serde_json::to_value(parsed).map_err(|e| Engine::invalid(format!("message: {e}")))
        }
    }
}
