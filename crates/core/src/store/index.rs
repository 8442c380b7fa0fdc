//! The session index next to the JSONL mirror: `agents/<agentId>/sessions/sessions.json`, the
//! reference's legacy session store (an object keyed by session key, each entry with its
//! `sessionId`, `sessionFile`, `updatedAt`, label and counters). Its importer (`openclaw doctor
//! --session-sqlite import`) reads it to give transcripts their original keys and labels.
//!
//! Like the mirror it is derived data: rebuilt from the database when the gateway starts and when
//! it stops (the importer runs on a stopped gateway), written atomically (a temp file renamed
//! over the old one), so a reader never sees half a file. It is not rewritten on every turn:
//! that would put an O(sessions) write on the hot path.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::{ListQuery, SessionEntry, Store, StoreError, private};

/// Sessions read per page while rebuilding.
const PAGE: usize = 1_000;

/// Rewrites every agent's `sessions.json`; answers how many sessions they list.
pub async fn write_indexes(store: &dyn Store, agent_ids: &[String]) -> Result<usize, StoreError> {
    let mut by_agent: BTreeMap<String, Map<String, Value>> = agent_ids
        .iter()
        .map(|id| (id.clone(), Map::new()))
        .collect();
    let mut cursor = None;
    let mut count = 0;
    loop {
        let page = store.list(ListQuery::every(cursor, PAGE)).await?;
        for entry in &page.entries {
            let file = store.transcript_path(&entry.agent_id, &entry.session_id);
            let agent = by_agent.entry(entry.agent_id.clone()).or_default();
            agent.insert(entry.key.as_str().to_string(), index_entry(entry, &file));
            count += 1;
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    for (agent_id, entries) in by_agent {
        let transcript = store.transcript_path(&agent_id, "index");
        let Some(dir) = transcript.parent() else {
            continue;
        };
        write_atomically(&dir.join("sessions.json"), &Value::Object(entries))?;
    }
    Ok(count)
}

/// One entry in the reference's shape.
fn index_entry(e: &SessionEntry, file: &Path) -> Value {
    let mut entry = json!({
        "sessionId": e.session_id,
        "sessionFile": file.to_string_lossy(),
        "createdAt": e.created_at,
        "updatedAt": e.updated_at,
        "inputTokens": e.input_tokens,
        "outputTokens": e.output_tokens,
        "totalTokens": e.total_tokens,
    });
    let optional = [
        ("label", e.label.clone().map(Value::from)),
        ("displayName", e.display_name.clone().map(Value::from)),
        ("chatType", e.chat_type.map(|c| Value::from(c.as_str()))),
        ("channel", e.channel.clone().map(Value::from)),
        ("lastChannel", e.last_channel.clone().map(Value::from)),
        ("lastTo", e.last_to.clone().map(Value::from)),
        ("lastAccountId", e.last_account_id.clone().map(Value::from)),
        (
            "model",
            e.last_model.clone().or(e.model.clone()).map(Value::from),
        ),
        ("modelOverride", e.model.clone().map(Value::from)),
        ("thinkingLevel", e.thinking_level.clone().map(Value::from)),
        ("verboseLevel", e.verbose_level.clone().map(Value::from)),
        ("sendPolicy", e.send_policy.clone().map(Value::from)),
        (
            "spawnedBy",
            e.spawned_by.as_ref().map(|k| Value::from(k.as_str())),
        ),
        ("archivedAt", e.archived_at.map(Value::from)),
        ("systemSent", e.system_sent.then_some(Value::Bool(true))),
        (
            "abortedLastRun",
            e.aborted_last_run.then_some(Value::Bool(true)),
        ),
        (
            "deliveryContext",
            e.delivery_context
                .as_ref()
                .and_then(|d| serde_json::to_value(d).ok()),
        ),
    ];
    if let Value::Object(map) = &mut entry {
        for (name, value) in optional {
            if let Some(value) = value {
                map.insert(name.to_string(), value);
            }
        }
    }
    entry
}

fn write_atomically(path: &Path, value: &Value) -> Result<(), StoreError> {
    if let Some(dir) = path.parent() {
        private::create_dir(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    let mut file = private::options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)?;
    let text = serde_json::to_vec_pretty(value)
        .map_err(|e| StoreError::Backend(format!("could not encode the session index: {e}")))?;
    file.write_all(&text)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
