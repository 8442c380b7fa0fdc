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
mod state;
mod transcript;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys::{self, SessionKey};
use crate::store::{
    EntryPatch, NewSession, PairingAdmission, PairingAsk, PairingRecord, Store, SubagentRecord,
    SubagentState, TokenDelta, WriteOp,
};
use switchboard_protocol::sessions::{DeliveryContext, Patch};

/// What an import did (or would do, on a dry run): sessions, cron jobs, paired senders.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportReport {
    /// Sessions written.
    pub imported: Vec<String>,
    /// Sessions the store held already (left as they are).
    pub present: Vec<String>,
    /// Messages written.
    pub messages: usize,
    /// What was not carried over, with why (`<key>: …`).
    pub left_out: Vec<String>,
    /// Cron jobs written, and those here already.
    pub cron_jobs: Vec<String>,
    pub cron_present: usize,
    /// Senders let in by pairing, written (`<channel>/<account>: <sender>`); already here.
    pub paired: Vec<String>,
    pub paired_present: usize,
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
) -> CoreResult<ImportReport> {
    let mut report = ImportReport::default();
    for (agent, found) in agents(from)? {
        for one in found {
            let key = one.key.clone();
            let mut notes = Vec::new();
            let Some(mut session) = Session::read(&agent, one, &mut notes) else {
                report.left_out.append(&mut notes);
                continue;
            };
            if store.get(&session.key).await?.is_some() {
                report.present.push(key);
                continue;
            }
            report.left_out.append(&mut notes);
            report.messages += session.messages.len();
            report.imported.push(key.clone());
            if dry_run {
                continue;
            }
            // A label another session here holds already (labels are unique per agent): the
            // session comes in without it.
            match store.write_batch(session.ops()).await {
                Err(crate::store::StoreError::Conflict(why)) if session.new.label.is_some() => {
                    report
                        .left_out
                        .push(format!("{key}: its label, because {why}"));
                    session.new.label = None;
                    store.write_batch(session.ops()).await?;
                }
                written => {
                    written?;
                }
            }
        }
    }
    if !dry_run {
        import_subagents(from, store, &report.imported).await?;
    }
    import_cron(from, store, dry_run, &mut report).await?;
    import_pairing(from, store, dry_run, &mut report).await?;
    Ok(report)
}

/// The records of the sub-agents whose sessions came in now: who spawned each, its task,
/// label, model and outcome, ended (the reference finished them).
async fn import_subagents(
    from: &Path,
    store: &Arc<dyn Store>,
    imported: &[String],
) -> CoreResult<()> {
    for run in state::subagent_runs(from) {
        let text = |field: &str| run[field].as_str().map(str::to_owned);
        let (Some(child), Some(requester), Some(run_id)) = (
            text("childSessionKey"),
            text("requesterSessionKey"),
            text("runId"),
        ) else {
            continue;
        };
        if !imported.contains(&child) {
            continue;
        }
        let execution = &run["execution"];
        let record = SubagentRecord {
            child_key: SessionKey::from_canonical(child.to_ascii_lowercase()),
            requester_key: SessionKey::from_canonical(requester.to_ascii_lowercase()),
            run_id: RunId::from_string(run_id),
            task: text("task").unwrap_or_default(),
            label: text("label"),
            model: text("model").unwrap_or_default(),
            delete_after: run["cleanup"] == "delete",
            state: SubagentState::Done,
            outcome: execution["outcome"]["status"].as_str().map(str::to_owned),
            trace: None,
            origin: None,
            created_at: run["createdAt"].as_i64().unwrap_or_default(),
            ended_at: execution["endedAt"].as_i64(),
            delivery_id: None,
            archive_at: None,
            archived_at: None,
            epoch: 0,
        };
        store
            .write_batch(vec![WriteOp::PutSubagent(Box::new(record))])
            .await?;
    }
    Ok(())
}

/// The reference's cron jobs, each as `cron.add` would take it (what this gateway cannot do
/// as asked is left out, with why); a job whose id is here already is left as it is.
async fn import_cron(
    from: &Path,
    store: &Arc<dyn Store>,
    dry_run: bool,
    report: &mut ImportReport,
) -> CoreResult<()> {
    let now = chrono::Utc::now().timestamp_millis();
    for job in state::cron_jobs(from) {
        let name = job["name"]
            .as_str()
            .or(job["id"].as_str())
            .unwrap_or("?")
            .to_owned();
        let record = match crate::cron::reference_record(&job, "main", now) {
            Ok(record) => record,
            Err(e) => {
                report.left_out.push(format!("cron job {name:?}: {e}"));
                continue;
            }
        };
        if store.cron_get(&record.id).await?.is_some() {
            report.cron_present += 1;
            continue;
        }
        report.cron_jobs.push(name);
        if !dry_run {
            store.cron_insert(record).await?;
        }
    }
    Ok(())
}

/// The senders the reference let in by pairing, let in here too.
async fn import_pairing(
    from: &Path,
    store: &Arc<dyn Store>,
    dry_run: bool,
    report: &mut ImportReport,
) -> CoreResult<()> {
    for allowed in state::allowed(from) {
        let (channel, account) = (
            allowed.channel.to_ascii_lowercase(),
            allowed.account.to_ascii_lowercase(),
        );
        let sender = allowed.sender.trim().to_owned();
        if store.pairing_approved(&channel, &account, &sender).await? {
            report.paired_present += 1;
            continue;
        }
        report.paired.push(format!("{channel}/{account}: {sender}"));
        if dry_run {
            continue;
        }
        let ask = PairingAsk {
            record: PairingRecord {
                channel: channel.clone(),
                account_id: account.clone(),
                sender_id: sender,
                username: None,
                code: uuid::Uuid::new_v4().simple().to_string()[..8].to_ascii_uppercase(),
                created_at: 0,
                approved_at: None,
                source: "import openclaw".into(),
            },
            ttl_ms: i64::MAX / 4,
            max_pending: usize::MAX,
        };
        let code = match store.pairing_admit(ask).await? {
            PairingAdmission::Created(record) | PairingAdmission::Pending(record) => record.code,
            PairingAdmission::Approved | PairingAdmission::Full => continue,
        };
        store
            .pairing_approve(&channel, Some(&account), &code, 0)
            .await?;
    }
    Ok(())
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
    if let Some((line, column)) = crate::config::too_deep(&text) {
        let why = format!(
            "{}: nests too deep at line {line}, column {column}",
            index.display()
        );
        return Err(CoreError::Invalid(why));
    }
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
            // Only a session id names a file: `../../x` must not reach beyond the directory.
            let file = entry["sessionId"]
                .as_str()
                .filter(|id| keys::looks_like_session_id(id))
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
        // A key the grammar refuses (`agent:main:../../etc`) is never taken in.
        let context = keys::KeyContext {
            agent_id: agent,
            ..keys::KeyContext::default()
        };
        if let Err(e) = keys::canonicalize(&lowered, &context) {
            left_out.push(format!("{written}: {e}"));
            return None;
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
    fn ops(&self) -> Vec<WriteOp> {
        vec![
            WriteOp::Append {
                key: self.key.clone(),
                create: Some(self.new.clone()),
                messages: self.messages.clone(),
            },
            WriteOp::Patch {
                key: self.key.clone(),
                patch: Box::new(self.patch.clone()),
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
