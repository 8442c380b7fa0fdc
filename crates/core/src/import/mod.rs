//! The sessions half of `switchboard import openclaw` (SPEC §11a): every agent's sessions and
//! transcripts of a reference state dir written into this gateway's store, each with its key
//! as the reference wrote it, its kind (read from the key, as the reference does), label,
//! model, counters, route and transcript (order, tool calls and results, provenance).
//!
//! Read here: the reference's SQLite session store (2026.8 and later,
//! `agents/<id>/agent/openclaw-agent.sqlite`) and, for an agent without one, its on-disk form
//! (`agents/<id>/sessions/sessions.json` and one JSONL transcript per session). A session already
//! in the store is left as it is, so a second import writes nothing twice.

mod sqlite;
mod transcript;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

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

/// One session as the reference stored it: its key, its entry, and its transcript's events
/// in order (with how many could not be read).
pub(super) struct Found {
    pub key: String,
    pub entry: Value,
    pub events: Vec<Value>,
    pub unread: usize,
}

/// Imports every agent's sessions under `from` (a reference state dir) into `store`.
pub async fn import_sessions(
    from: &Path,
    store: &Arc<dyn Store>,
    dry_run: bool,
) -> CoreResult<SessionsReport> {
    let mut report = SessionsReport::default();
    for (agent, found) in agents(from)? {
        for one in found {
            let key = one.key.clone();
            let mut notes = Vec::new();
            let Some(session) = Session::read(&agent, one, &mut notes) else {
                report.left_out.append(&mut notes);
                continue;
            };
            if store.get(&session.key).await?.is_some() {
                report.present.push(key);
                continue;
            }
            report.left_out.append(&mut notes);
            report.messages += session.messages.len();
            report.imported.push(key);
            if !dry_run {
                store.write_batch(session.ops()).await?;
            }
        }
    }
    Ok(report)
}

/// Each agent's sessions: from its SQLite store when it has one, else from `sessions.json`.
fn agents(from: &Path) -> CoreResult<Vec<(String, Vec<Found>)>> {
    let Ok(read) = std::fs::read_dir(from.join("agents")) else {
        return Ok(Vec::new());
    };
    let mut dirs: Vec<(String, PathBuf)> = read
        .filter_map(Result::ok)
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    dirs.sort();
    let mut agents = Vec::new();
    for (agent, dir) in dirs {
        let database = dir.join("agent").join("openclaw-agent.sqlite");
        let sessions = dir.join("sessions");
        let found = match (database.is_file(), sessions.join("sessions.json").is_file()) {
            (true, _) => sqlite::read(&database)?,
            (false, true) => on_disk(&sessions)?,
            (false, false) => continue,
        };
        agents.push((agent, found));
    }
    Ok(agents)
}

/// The on-disk form: `sessions.json`, and `<sessionId>.jsonl` beside it for each entry.
fn on_disk(dir: &Path) -> CoreResult<Vec<Found>> {
    let index = dir.join("sessions.json");
    let text = std::fs::read_to_string(&index)
        .map_err(|e| CoreError::Invalid(format!("reading {}: {e}", index.display())))?;
    let entries = match json5::from_str::<Value>(&text) {
        Ok(Value::Object(entries)) => entries,
        Ok(_) => {
            let why = format!("{}: expected an object of sessions by key", index.display());
            return Err(CoreError::Invalid(why));
        }
        Err(e) => return Err(CoreError::Invalid(format!("{}: {e}", index.display()))),
    };
    Ok(entries
        .into_iter()
        .map(|(key, entry)| {
            let file = entry["sessionId"]
                .as_str()
                .map(|id| dir.join(format!("{id}.jsonl")));
            let (events, unread) = file.map(|f| transcript::events(&f)).unwrap_or_default();
            Found {
                key,
                entry,
                events,
                unread,
            }
        })
        .collect())
}

/// One reference session, read.
struct Session {
    key: SessionKey,
    new: NewSession,
    patch: EntryPatch,
    messages: Vec<switchboard_protocol::message::TranscriptMessage>,
}

impl Session {
    fn read(agent: &str, found: Found, left_out: &mut Vec<String>) -> Option<Self> {
        let Found {
            key: written,
            entry,
            events,
            unread,
        } = found;
        let lowered = written.trim().to_ascii_lowercase();
        if !lowered.starts_with("agent:") {
            left_out.push(format!(
                "{written}: not an agent's session key (agent:<id>:…)"
            ));
            return None;
        }
        if unread > 0 {
            left_out.push(format!(
                "{written}: {unread} transcript events that could not be read"
            ));
        }
        let key = SessionKey::from_canonical(lowered);
        let mut new = NewSession::for_key(&key, agent, MAIN_KEY);
        new.label = text(&entry, "label");
        new.display_name = text(&entry, "displayName");
        new.spawned_by =
            text(&entry, "spawnedBy").map(|k| SessionKey::from_canonical(k.to_ascii_lowercase()));
        let messages = transcript::messages(&events, &written, left_out);
        Some(Self {
            key,
            new,
            patch: patch_of(&entry),
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
    // 2026.8 and later keep the route in `delivery.context` (`kind: "external"`), earlier
    // releases in `deliveryContext`. A route names a chat: without `to` it is the reference's
    // webchat or internal marker.
    let route = match &entry["delivery"]["context"] {
        Value::Object(_) => &entry["delivery"]["context"],
        _ => &entry["deliveryContext"],
    };
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
