//! The reference's cron jobs and pairing allowlists. Both live in its shared database
//! `state/openclaw.sqlite` (`cron_jobs`, whose rows with a `declaration_key` the reference made
//! for itself; `channel_pairing_allow_entries`), or, before it, in files: `cron/jobs.json` and
//! `credentials/<channel>[-<account>]-allowFrom.json`.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

/// A sender the reference let in by pairing.
pub(super) struct Allowed {
    pub channel: String,
    pub account: String,
    pub sender: String,
}

fn database(from: &Path) -> Option<Connection> {
    let path = from.join("state").join("openclaw.sqlite");
    path.is_file()
        .then(|| Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok())
        .flatten()
}

/// The jobs people made (the reference's own ones left out), as its `job_json`.
pub(super) fn cron_jobs(from: &Path) -> Vec<Value> {
    let mut jobs = Vec::new();
    if let Some(db) = database(from)
        && let Ok(mut rows) = db
            .prepare("SELECT job_json FROM cron_jobs WHERE declaration_key IS NULL ORDER BY job_id")
    {
        let read = rows.query_map([], |row| row.get::<_, String>(0));
        jobs.extend(
            read.into_iter()
                .flatten()
                .flatten()
                .filter_map(|text| serde_json::from_str(&text).ok()),
        );
    }
    let file = from.join("cron").join("jobs.json");
    if let Some(listed) = std::fs::read_to_string(file)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
    {
        let listed = match listed {
            Value::Array(jobs) => jobs,
            other => other["jobs"].as_array().cloned().unwrap_or_default(),
        };
        jobs.extend(listed.into_iter().filter(|j| j["declarationKey"].is_null()));
    }
    jobs
}

/// The senders let in by pairing, by channel and account (`default` when a file names none).
pub(super) fn allowed(from: &Path) -> Vec<Allowed> {
    let mut allowed = Vec::new();
    if let Some(db) = database(from)
        && let Ok(mut rows) = db.prepare(
            "SELECT channel_key, account_id, entry FROM channel_pairing_allow_entries ORDER BY channel_key, account_id, sort_order",
        )
    {
        let read = rows.query_map([], |row| {
            Ok(Allowed {
                channel: row.get(0)?,
                account: row.get(1)?,
                sender: row.get(2)?,
            })
        });
        allowed.extend(read.into_iter().flatten().flatten());
    }
    let Ok(files) = std::fs::read_dir(from.join("credentials")) else {
        return allowed;
    };
    let mut files: Vec<_> = files.filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    for file in files {
        let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix("-allowFrom.json") else {
            continue;
        };
        let (channel, account) = stem.split_once('-').unwrap_or((stem, "default"));
        let Some(text) = std::fs::read_to_string(&file).ok() else {
            continue;
        };
        let listed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        for sender in listed["allowFrom"].as_array().into_iter().flatten() {
            if let Some(sender) = sender.as_str().filter(|s| *s != "*") {
                allowed.push(Allowed {
                    channel: channel.to_owned(),
                    account: account.to_owned(),
                    sender: sender.to_owned(),
                });
            }
        }
    }
    allowed
}

/// The sub-agents the reference spawned (`subagent_runs`), as its `payload_json`.
pub(super) fn subagent_runs(from: &Path) -> Vec<Value> {
    let Some(db) = database(from) else {
        return Vec::new();
    };
    let Ok(mut rows) = db.prepare("SELECT payload_json FROM subagent_runs ORDER BY created_at")
    else {
        return Vec::new();
    };
    let read = rows.query_map([], |row| row.get::<_, String>(0));
    read.into_iter()
        .flatten()
        .flatten()
        .filter_map(|text| serde_json::from_str(&text).ok())
        .collect()
}
