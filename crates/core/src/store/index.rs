//! The session index next to the JSONL mirror: `agents/<agentId>/sessions/sessions.json`, the
//! reference's legacy session store (an object keyed by session key, each entry with its
//! `sessionId`, `sessionFile`, `updatedAt`, label and counters). Its importer (`openclaw doctor
//! --session-sqlite import`) reads it to give transcripts their original keys and labels.
//!
//! Like the mirror it is derived data: rebuilt from the database when the gateway stops (the
//! importer runs on a stopped gateway), streamed page by page into a temp file renamed over the
//! old one, so a reader never sees half a file and memory stays bounded. It is not rewritten on
//! every turn, nor at start: both would put O(sessions) work on a measured path (a turn, the cold
//! start).

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::{ListQuery, SessionEntry, Store, StoreError, private};

/// Sessions read per page while rebuilding.
const PAGE: usize = 1_000;

/// Rewrites every agent's `sessions.json`; answers how many sessions they list. Memory stays
/// bounded by a page: each agent's file is streamed, one page of that agent's sessions at a time.
pub async fn write_indexes(store: &dyn Store, agent_ids: &[String]) -> Result<usize, StoreError> {
    let mut count = 0;
    for agent_id in agent_ids {
        // A store without transcript files (PostgreSQL) has no index beside them either.
        let Some(path) = index_path(store, agent_id) else {
            return Ok(0);
        };
        let mut out = IndexWriter::create(&path)?;
        let mut cursor = None;
        loop {
            let query = ListQuery {
                agent_id: Some(agent_id.clone()),
                ..ListQuery::every(cursor, PAGE)
            };
            let page = store.list(query).await?;
            for entry in &page.entries {
                let file = store
                    .transcript_path(&entry.agent_id, &entry.session_id)
                    .unwrap_or_default();
                out.entry(entry.key.as_str(), &index_entry(entry, &file))?;
                count += 1;
            }
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        out.finish(&path)?;
    }
    Ok(count)
}

/// `agents/<agentId>/sessions/sessions.json`: next to the agent's transcript mirror files
/// (`None` when the store keeps none).
pub fn index_path(store: &dyn Store, agent_id: &str) -> Option<std::path::PathBuf> {
    let transcript = store.transcript_path(agent_id, "index")?;
    Some(transcript.with_file_name("sessions.json"))
}

/// What health and status show as `sessions.path` (where an agent's sessions are): the index
/// file once a stop has written it; before that, the SQLite database file it is rebuilt from (a
/// path that exists, never a file still to come); `(database)` for a store without files.
pub fn index_label(store: &dyn Store, agent_id: &str) -> String {
    let Some(index) = index_path(store, agent_id) else {
        return "(database)".to_string();
    };
    if index.exists() {
        return index.display().to_string();
    }
    // `<home>/agents/<agentId>/sessions/sessions.json` → `<home>/switchboard.db`.
    match index.ancestors().nth(4) {
        Some(home) => home
            .join(super::sqlite::DATABASE_FILE)
            .display()
            .to_string(),
        None => index.display().to_string(),
    }
}

/// One index file being written: a JSON object, entry by entry, into a temp file that replaces
/// the old index when complete.
struct IndexWriter {
    tmp: std::path::PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    first: bool,
}

impl IndexWriter {
    fn create(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent() {
            private::create_dir(dir)?;
        }
        let tmp = path.with_extension("json.tmp");
        let file = private::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        let mut out = std::io::BufWriter::new(file);
        out.write_all(b"{")?;
        Ok(Self {
            tmp,
            out,
            first: true,
        })
    }

    fn entry(&mut self, key: &str, entry: &Value) -> Result<(), StoreError> {
        let sep: &[u8] = if self.first { b"\n  " } else { b",\n  " };
        self.first = false;
        self.out.write_all(sep)?;
        let encode = |e: serde_json::Error| {
            StoreError::Backend(format!("could not encode the session index: {e}"))
        };
        serde_json::to_writer(&mut self.out, key).map_err(encode)?;
        self.out.write_all(b": ")?;
        serde_json::to_writer(&mut self.out, entry).map_err(encode)?;
        Ok(())
    }

    fn finish(mut self, path: &Path) -> Result<(), StoreError> {
        self.out.write_all(b"\n}\n")?;
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&self.tmp, path)?;
        Ok(())
    }
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
