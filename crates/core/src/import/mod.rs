//! The sessions half of `switchboard import openclaw` (SPEC §11a): every agent's sessions and
//! transcripts of a reference state dir written into this gateway's store, each with its key
//! as the reference wrote it, its kind (read from the key, as the reference does), label,
//! model, counters, route and transcript (order, tool calls and results, provenance).
//!
//! Read here: the reference's on-disk form (`agents/<id>/sessions/sessions.json` and one JSONL
//! transcript per session, before 2026.8). A session already in the store is left as it is,
//! so a second import writes nothing twice.

mod transcript;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::{CoreError, CoreResult};
use crate::keys::SessionKey;
use crate::store::{EntryPatch, NewSession, Store, TokenDelta, WriteOp};
use switchboard_protocol::sessions::{DeliveryContext, Patch};

/// What an import did (or would do, on a dry run).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionsReport {
    /// Sessions written.
    pub imported: Vec<String>,
    /// Sessions the store held already (left as they are).
    pub present: Vec<String>,
    /// Messages written.
    pub messages: usize,
    /// What was not carried over, with why (`<key>: …`).
    pub left_out: Vec<String>,
}

/// The main key the reference uses (`agent:<id>:main`).
const MAIN_KEY: &str = "main";

/// Imports every agent's sessions under `from` (a reference state dir) into `store`.
pub async fn import_sessions(
    from: &Path,
    store: &Arc<dyn Store>,
    dry_run: bool,
) -> CoreResult<SessionsReport> {
    let mut report = SessionsReport::default();
    for (agent, dir) in agent_session_dirs(from)? {
        let index = dir.join("sessions.json");
        let entries = read_index(&index)?;
        for (key, entry) in entries {
            let one = Session::read(&agent, &dir, &key, &entry, &mut report.left_out);
            let Some(one) = one else { continue };
            if store.get(&one.key).await?.is_some() {
                report.present.push(key);
                continue;
            }
            report.messages += one.messages.len();
            report.imported.push(key);
            if !dry_run {
                store.write_batch(one.ops()).await?;
            }
        }
    }
    Ok(report)
}

/// `agents/<id>/sessions` folders that hold a `sessions.json`, by agent id.
fn agent_session_dirs(from: &Path) -> CoreResult<Vec<(String, PathBuf)>> {
    let agents = from.join("agents");
    let Ok(read) = std::fs::read_dir(&agents) else {
        return Ok(Vec::new());
    };
    let mut dirs: Vec<(String, PathBuf)> = read
        .filter_map(Result::ok)
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path().join("sessions"),
            )
        })
        .filter(|(_, dir)| dir.join("sessions.json").is_file())
        .collect();
    dirs.sort();
    Ok(dirs)
}

fn read_index(path: &Path) -> CoreResult<Map<String, Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CoreError::Invalid(format!("reading {}: {e}", path.display())))?;
    match json5::from_str::<Value>(&text) {
        Ok(Value::Object(entries)) => Ok(entries),
        Ok(_) => Err(CoreError::Invalid(format!(
            "{}: expected an object of sessions by key",
            path.display()
        ))),
        Err(e) => Err(CoreError::Invalid(format!("{}: {e}", path.display()))),
    }
}

/// One reference session, read.
struct Session {
    key: SessionKey,
    new: NewSession,
    patch: EntryPatch,
    messages: Vec<switchboard_protocol::message::TranscriptMessage>,
}

impl Session {
    fn read(
        agent: &str,
        dir: &Path,
        key: &str,
        entry: &Value,
        left_out: &mut Vec<String>,
    ) -> Option<Self> {
        let written = key.trim().to_ascii_lowercase();
        if !written.starts_with("agent:") {
            left_out.push(format!("{key}: not an agent's session key (agent:<id>:…)"));
            return None;
        }
        let key = SessionKey::from_canonical(written);
        let mut new = NewSession::for_key(&key, agent, MAIN_KEY);
        new.label = text(entry, "label");
        new.display_name = text(entry, "displayName");
        new.spawned_by =
            text(entry, "spawnedBy").map(|k| SessionKey::from_canonical(k.to_ascii_lowercase()));
        let messages = match text(entry, "sessionId") {
            Some(id) => transcript::read(&dir.join(format!("{id}.jsonl")), key.as_str(), left_out),
            None => Vec::new(),
        };
        let patch = patch_of(entry);
        Some(Self {
            key,
            new,
            patch,
            messages,
        })
    }

    /// The session created with its transcript, then its model, counters and route.
    fn ops(self) -> Vec<WriteOp> {
        vec![
            WriteOp::Append {
                key: self.key.clone(),
                create: Some(self.new),
                messages: self.messages,
            },
            WriteOp::Patch {
                key: self.key,
                patch: Box::new(self.patch),
            },
        ]
    }
}

fn text(entry: &Value, field: &str) -> Option<String> {
    entry[field]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn set(value: Option<String>) -> Patch<String> {
    value.map_or(Patch::Keep, Patch::Set)
}

/// The entry's model, thinking level, counters and last route.
fn patch_of(entry: &Value) -> EntryPatch {
    let model = match (text(entry, "modelProvider"), text(entry, "model")) {
        (Some(provider), Some(model)) if !model.contains('/') => {
            Some(format!("{provider}/{model}"))
        }
        (_, model) => model,
    };
    let route = &entry["deliveryContext"];
    // A route names a chat: without `to` it is the reference's webchat or internal marker.
    let delivery = text(route, "channel")
        .zip(text(route, "to"))
        .map(|(channel, to)| DeliveryContext {
            channel,
            to,
            account_id: text(route, "accountId"),
            thread_id: text(route, "threadId")
                .or_else(|| route["threadId"].as_i64().map(|n| n.to_string())),
        });
    let counter = |field: &str| entry[field].as_u64().unwrap_or(0);
    EntryPatch {
        last_model: set(model),
        thinking_level: set(text(entry, "thinkingLevel")),
        last_channel: set(text(entry, "lastChannel")),
        last_to: set(text(entry, "lastTo")),
        last_account_id: set(text(entry, "lastAccountId")),
        delivery_context: delivery.map_or(Patch::Keep, Patch::Set),
        add_tokens: Some(TokenDelta {
            input: counter("inputTokens"),
            output: counter("outputTokens"),
        }),
        add_cost: entry["estimatedCostUsd"].as_f64().filter(|c| *c > 0.0),
        context_tokens: entry["totalTokens"]
            .as_u64()
            .map_or(Patch::Keep, Patch::Set),
        ..EntryPatch::default()
    }
}
