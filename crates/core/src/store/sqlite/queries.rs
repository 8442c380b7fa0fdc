//! The SQL of the store. Writes run on the writer thread inside its transaction; reads run on
//! pooled read-only connections.

use rusqlite::{Connection, OptionalExtension, ToSql, params, params_from_iter};
use serde_json::Value;
use switchboard_protocol::message::TranscriptMessage;

use super::schema::{ENTRY_COLUMNS, ENTRY_FROM, RUN_COLUMNS, entry_from_row, run_from_row};
use super::writer::MirrorOp;
use crate::store::{
    Appended, Cursor, EntryPatch, HistoryPage, ListPage, ListQuery, NewSession, RunInput,
    RunRecord, SessionEntry, StoreError, StoredMessage,
};
use switchboard_protocol::sessions::Patch;

/// A history page: index range on (session_id, seq), newest first. Reads only returned rows.
pub(crate) const HISTORY_SQL: &str =
    "SELECT seq, body FROM messages WHERE session_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3";

pub(super) fn get_entry(conn: &Connection, key: &str) -> Result<Option<SessionEntry>, StoreError> {
    let sql = format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.key = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([key], entry_from_row)
        .optional()?)
}

pub(super) fn get_by_session_id(
    conn: &Connection,
    session_id: &str,
) -> Result<Option<SessionEntry>, StoreError> {
    let sql = format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.session_id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([session_id], entry_from_row)
        .optional()?)
}

pub(super) fn get_by_label(
    conn: &Connection,
    agent_id: &str,
    label: &str,
) -> Result<Option<SessionEntry>, StoreError> {
    let sql =
        format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.agent_id = ?1 AND s.label = ?2");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([agent_id, label], entry_from_row)
        .optional()?)
}

fn check_label_free(
    conn: &Connection,
    agent_id: &str,
    label: &str,
    key: &str,
) -> Result<(), StoreError> {
    match get_by_label(conn, agent_id, label)? {
        // The other session is not named: the caller may be a sandboxed agent that must not
        // learn a key it cannot see.
        Some(other) if other.key != key => Err(StoreError::Conflict(format!(
            "label \"{label}\" is already used by another session of agent {agent_id}; labels are unique per agent, choose another"
        ))),
        _ => Ok(()),
    }
}

fn new_transcript(
    conn: &Connection,
    key: &str,
    agent_id: &str,
    now: i64,
    mirror: &mut Vec<MirrorOp>,
) -> Result<String, StoreError> {
    let session_id = uuid::Uuid::new_v4().to_string();
    conn.prepare_cached(
        "INSERT INTO transcripts (session_id, session_key, agent_id, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![session_id, key, agent_id, now])?;
    mirror.push(MirrorOp::Create {
        agent_id: agent_id.to_string(),
        session_id: session_id.clone(),
        created_at: now,
    });
    Ok(session_id)
}

/// Inserts a session unless the key exists. Answers the entry and whether it was created.
pub(super) fn create(
    conn: &Connection,
    new: NewSession,
    now: i64,
    mirror: &mut Vec<MirrorOp>,
) -> Result<(SessionEntry, bool), StoreError> {
    if let Some(existing) = get_entry(conn, new.key.as_str())? {
        return Ok((existing, false));
    }
    if let Some(label) = &new.label {
        check_label_free(conn, &new.agent_id, label, new.key.as_str())?;
    }
    let session_id = new_transcript(conn, new.key.as_str(), &new.agent_id, now, mirror)?;
    conn.prepare_cached(
        "INSERT INTO sessions (key, session_id, agent_id, kind, created_at, updated_at, channel, \
         chat_type, display_name, label, spawned_by) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        new.key,
        session_id,
        new.agent_id,
        new.kind.as_str(),
        now,
        new.channel,
        new.chat_type.map(|c| c.as_str()),
        new.display_name,
        new.label,
        new.spawned_by,
    ])?;
    let entry = get_entry(conn, new.key.as_str())?.ok_or_else(|| {
        StoreError::Backend("a session vanished inside its own transaction".into())
    })?;
    Ok((entry, true))
}

/// Merges the changed fields into the stored entry (read-modify-write on the single writer, so
/// no concurrent change is lost).
pub(super) fn patch(
    conn: &Connection,
    key: &str,
    patch: &EntryPatch,
    now: i64,
) -> Result<SessionEntry, StoreError> {
    let mut e = get_entry(conn, key)?.ok_or_else(|| not_found(key))?;
    if let Patch::Set(label) = &patch.label {
        check_label_free(conn, &e.agent_id, label, key)?;
    }
    patch.apply(&mut e)?;
    e.updated_at = now.max(e.updated_at);
    write_entry(conn, &e)?;
    Ok(e)
}

fn write_entry(conn: &Connection, e: &SessionEntry) -> Result<(), StoreError> {
    let delivery = e
        .delivery_context
        .as_ref()
        .and_then(|d| serde_json::to_string(d).ok());
    conn.prepare_cached(
        "UPDATE sessions SET session_id = ?2, updated_at = ?3, channel = ?4, display_name = ?5, \
         label = ?6, spawned_by = ?7, model = ?8, thinking_level = ?9, verbose_level = ?10, \
         system_sent = ?11, aborted_last_run = ?12, send_policy = ?13, last_channel = ?14, \
         last_to = ?15, last_account_id = ?16, last_thread_id = ?17, delivery_context = ?18, \
         input_tokens = ?19, output_tokens = ?20, total_tokens = ?21, context_tokens = ?22, \
         archived_at = ?23, last_model = ?24, cost_usd = ?25 WHERE key = ?1",
    )?
    .execute(params![
        e.key,
        e.session_id,
        e.updated_at,
        e.channel,
        e.display_name,
        e.label,
        e.spawned_by,
        e.model,
        e.thinking_level,
        e.verbose_level,
        e.system_sent,
        e.aborted_last_run,
        e.send_policy,
        e.last_channel,
        e.last_to,
        e.last_account_id,
        e.last_thread_id,
        delivery,
        e.input_tokens as i64,
        e.output_tokens as i64,
        e.total_tokens as i64,
        e.context_tokens.map(|v| v as i64),
        e.archived_at,
        e.last_model,
        e.cost_usd,
    ])?;
    Ok(())
}

/// New transcript for the key; counters and run flags start over, settings stay.
pub(super) fn reset(
    conn: &Connection,
    key: &str,
    now: i64,
    mirror: &mut Vec<MirrorOp>,
) -> Result<SessionEntry, StoreError> {
    let mut e = get_entry(conn, key)?.ok_or_else(|| not_found(key))?;
    e.session_id = new_transcript(conn, key, &e.agent_id, now, mirror)?;
    e.updated_at = now.max(e.updated_at);
    e.input_tokens = 0;
    e.output_tokens = 0;
    e.total_tokens = 0;
    e.cost_usd = 0.0;
    e.context_tokens = None;
    e.system_sent = false;
    e.aborted_last_run = false;
    write_entry(conn, &e)?;
    get_entry(conn, key)?.ok_or_else(|| not_found(key))
}

pub(super) fn delete(conn: &Connection, key: &str, now: i64) -> Result<SessionEntry, StoreError> {
    let e = get_entry(conn, key)?.ok_or_else(|| not_found(key))?;
    conn.prepare_cached(
        "INSERT INTO deleted_sessions (key, session_id, agent_id, deleted_at, label, display_name) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        e.key,
        e.session_id,
        e.agent_id,
        now,
        e.label,
        e.display_name
    ])?;
    conn.prepare_cached("DELETE FROM sessions WHERE key = ?1")?
        .execute([key])?;
    Ok(e)
}

pub(super) fn append(
    conn: &Connection,
    key: &str,
    create_with: Option<NewSession>,
    messages: Vec<TranscriptMessage>,
    now: i64,
    mirror: &mut Vec<MirrorOp>,
) -> Result<Appended, StoreError> {
    let (mut entry, created) = match (get_entry(conn, key)?, create_with) {
        (Some(e), _) => (e, false),
        (None, Some(new)) => create(conn, new, now, mirror)?,
        (None, None) => return Err(not_found(key)),
    };
    let mut seq = entry.last_seq;
    let mut summary_seq = None;
    let mut seqs = Vec::with_capacity(messages.len());
    let mut lines = Vec::with_capacity(messages.len());
    {
        let mut insert = conn.prepare_cached(
            "INSERT INTO messages (session_id, seq, role, ts, body) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for message in messages {
            seq += 1;
            if super::super::is_summary(&message) {
                summary_seq = Some(seq);
            }
            // The store's edge: the typed message becomes its transcript JSON here.
            let body = serde_json::to_value(&message).map_err(|e| {
                StoreError::Backend(format!("message {seq} could not be encoded: {e}"))
            })?;
            insert.execute(params![
                entry.session_id,
                seq,
                message.role(),
                message.timestamp(),
                body.to_string()
            ])?;
            seqs.push(seq);
            lines.push((seq, body));
        }
    }
    conn.prepare_cached(
        "UPDATE transcripts SET last_seq = ?2, summary_seq = coalesce(?3, summary_seq) \
         WHERE session_id = ?1",
    )?
    .execute(params![entry.session_id, seq, summary_seq])?;
    entry.updated_at = now.max(entry.updated_at);
    conn.prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE key = ?1")?
        .execute(params![key, entry.updated_at])?;
    entry.last_seq = seq;
    let created_at = transcript_created_at(conn, &entry.session_id)?;
    mirror.push(MirrorOp::Append {
        agent_id: entry.agent_id.clone(),
        session_id: entry.session_id.clone(),
        created_at,
        messages: lines,
    });
    Ok(Appended {
        entry,
        seqs,
        created,
    })
}

fn transcript_created_at(conn: &Connection, session_id: &str) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached("SELECT created_at FROM transcripts WHERE session_id = ?1")?
        .query_row([session_id], |r| r.get(0))?)
}

/// Numbered SQL parameters: each `?` in a clause becomes `?N` of the value pushed with it.
#[derive(Default)]
struct Args {
    sql: String,
    values: Vec<Box<dyn ToSql>>,
}

impl Args {
    fn push(&mut self, clause: &str, value: Box<dyn ToSql>) -> usize {
        self.values.push(value);
        let n = self.values.len();
        self.sql.push_str(&clause.replace('?', &format!("?{n}")));
        n
    }
}

pub(super) fn list(conn: &Connection, q: &ListQuery) -> Result<ListPage, StoreError> {
    let mut a = Args {
        sql: format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE 1 = 1"),
        ..Args::default()
    };
    if !q.include_archived {
        a.sql.push_str(" AND s.archived_at IS NULL");
    }
    if let Some(agent) = &q.agent_id {
        a.push(" AND s.agent_id = ?", Box::new(agent.clone()));
    }
    if !q.kinds.is_empty() {
        a.sql.push_str(" AND s.kind IN (");
        for (i, kind) in q.kinds.iter().enumerate() {
            a.push(if i == 0 { "?" } else { ", ?" }, Box::new(kind.as_str()));
        }
        a.sql.push(')');
    }
    if let Some(since) = q.updated_since {
        a.push(" AND s.updated_at >= ?", Box::new(since));
    }
    if let Some(parent) = &q.spawned_by {
        a.push(" AND s.spawned_by = ?", Box::new(parent.clone()));
    }
    if let Some(label) = &q.label {
        a.push(" AND s.label = ?", Box::new(label.clone()));
    }
    if let Some(search) = q
        .search
        .as_deref()
        .map(str::to_lowercase)
        .filter(|s| !s.is_empty())
    {
        // The three `?` become one parameter.
        a.push(
            " AND (instr(lower(s.key), ?) > 0 OR instr(lower(ifnull(s.label, '')), ?) > 0 OR \
             instr(lower(ifnull(s.display_name, '')), ?) > 0)",
            Box::new(search),
        );
    }
    for key in &q.exclude_keys {
        a.push(" AND s.key <> ?", Box::new(key.clone()));
    }
    if let Some(c) = &q.cursor {
        let at = a.push(" AND (s.updated_at < ?", Box::new(c.updated_at));
        a.sql
            .push_str(&format!(" OR (s.updated_at = ?{at} AND s.key > "));
        a.push("?))", Box::new(c.key.clone()));
    }
    a.push(
        " ORDER BY s.updated_at DESC, s.key ASC LIMIT ?",
        Box::new(q.limit as i64 + 1),
    );
    let mut stmt = conn.prepare_cached(&a.sql)?;
    let mut entries = stmt
        .query_map(
            params_from_iter(a.values.iter().map(|v| v.as_ref())),
            entry_from_row,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    let next_cursor = if entries.len() > q.limit {
        entries.truncate(q.limit);
        entries.last().map(|e| Cursor {
            updated_at: e.updated_at,
            key: e.key.clone(),
        })
    } else {
        None
    };
    Ok(ListPage {
        entries,
        next_cursor,
    })
}

pub(super) fn history(
    conn: &Connection,
    session_id: &str,
    limit: usize,
    before: Option<i64>,
) -> Result<HistoryPage, StoreError> {
    let mut stmt = conn.prepare_cached(HISTORY_SQL)?;
    let before = before.unwrap_or(i64::MAX);
    let mut messages = stmt
        .query_map(params![session_id, before, limit as i64], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?
        .map(|r| {
            r.map_err(StoreError::from)
                .and_then(|(seq, body)| parse_message(seq, &body))
        })
        .collect::<Result<Vec<_>, _>>()?;
    messages.reverse();
    let next_before = messages.first().map(|m| m.seq).filter(|seq| *seq > 1);
    Ok(HistoryPage {
        messages,
        next_before,
    })
}

/// The transcript's newest compaction summary, when it is before `before`.
pub(super) fn summary(
    conn: &Connection,
    session_id: &str,
    before: i64,
) -> Result<Option<StoredMessage>, StoreError> {
    let row = conn
        .prepare_cached(
            "SELECT m.seq, m.body FROM transcripts t JOIN messages m \
             ON m.session_id = t.session_id AND m.seq = t.summary_seq \
             WHERE t.session_id = ?1 AND t.summary_seq < ?2",
        )?
        .query_row(params![session_id, before], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .optional()?;
    row.map(|(seq, body)| parse_message(seq, &body)).transpose()
}

fn parse_message(seq: i64, body: &str) -> Result<StoredMessage, StoreError> {
    let message = serde_json::from_str(body)
        .map_err(|e| StoreError::Backend(format!("stored message {seq} is not JSON: {e}")))?;
    Ok(StoredMessage { seq, message })
}

/// Every message of a transcript, oldest first (mirror rebuilds).
pub(super) fn all_messages(
    conn: &Connection,
    session_id: &str,
) -> Result<Vec<(i64, Value)>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT seq, body FROM messages WHERE session_id = ?1 ORDER BY seq")?;
    let rows = stmt
        .query_map([session_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?
        .map(|r| {
            r.map_err(StoreError::from)
                .and_then(|(seq, body)| parse_message(seq, &body).map(|m| (m.seq, m.message)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// SQLite allows at most 500 terms in a compound SELECT.
const LAST_MESSAGES_CHUNK: usize = 200;

/// The last `limit` non-tool-result messages of each transcript: one `UNION ALL` statement per
/// 200 transcripts, each branch an index range read.
pub(super) fn last_messages(
    conn: &Connection,
    session_ids: &[String],
    limit: usize,
) -> Result<Vec<(String, Vec<StoredMessage>)>, StoreError> {
    let mut out: Vec<(String, Vec<StoredMessage>)> = session_ids
        .iter()
        .map(|id| (id.clone(), Vec::new()))
        .collect();
    let index: std::collections::HashMap<&str, usize> = session_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut rows = Vec::new();
    for chunk in session_ids.chunks(LAST_MESSAGES_CHUNK) {
        let branch = "SELECT * FROM (SELECT session_id, seq, body FROM messages WHERE session_id = ? \
                      AND role <> 'toolResult' ORDER BY seq DESC LIMIT ?)";
        let sql = vec![branch; chunk.len()].join(" UNION ALL ");
        let mut args: Vec<Box<dyn ToSql>> = Vec::with_capacity(chunk.len() * 2);
        for id in chunk {
            args.push(Box::new(id.clone()));
            args.push(Box::new(limit as i64));
        }
        let mut stmt = conn.prepare_cached(&sql)?;
        let found = stmt.query_map(params_from_iter(args.iter().map(|a| a.as_ref())), |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        for row in found {
            rows.push(row?);
        }
    }
    for (session_id, seq, body) in rows {
        if let Some(i) = index.get(session_id.as_str()) {
            out[*i].1.push(parse_message(seq, &body)?);
        }
    }
    for (_, messages) in &mut out {
        messages.sort_by_key(|m| m.seq);
    }
    Ok(out)
}

pub(super) fn count(conn: &Connection) -> Result<u64, StoreError> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM sessions")?
        .query_row([], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

pub(super) fn count_by_agent(conn: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT agent_id, count(*) FROM sessions GROUP BY agent_id ORDER BY agent_id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Stores a run record with its input (`None` clears a stored one: the run started).
pub(super) fn put_run(
    conn: &Connection,
    run: &RunRecord,
    input: Option<&RunInput>,
) -> Result<(), StoreError> {
    let input = input
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| StoreError::Backend(format!("could not encode a run's input: {e}")))?;
    let sql = format!(
        "INSERT INTO runs ({RUN_COLUMNS}, input) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) \
         ON CONFLICT (run_id) DO UPDATE SET session_id = excluded.session_id, status = excluded.status, \
         lane = excluded.lane, started_at = excluded.started_at, ended_at = excluded.ended_at, \
         result = excluded.result, error = excluded.error, model = excluded.model, \
         cost_usd = excluded.cost_usd, input = excluded.input"
    );
    conn.prepare_cached(&sql)?
        .execute(params![
            run.run_id,
            run.session_key,
            run.session_id,
            run.status.as_str(),
            run.lane,
            run.created_at,
            run.started_at,
            run.ended_at,
            run.result,
            run.error,
            run.idempotency_key,
            run.model,
            run.cost_usd,
            input,
        ])
        .map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _)
                if f.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                StoreError::Conflict(format!(
                    "idempotencyKey {:?} already names another run",
                    run.idempotency_key.as_deref().unwrap_or("")
                ))
            }
            other => other.into(),
        })?;
    Ok(())
}

pub(super) fn get_run(conn: &Connection, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([run_id], run_from_row)
        .optional()?)
}

pub(super) fn get_run_by_idempotency(
    conn: &Connection,
    key: &str,
) -> Result<Option<RunRecord>, StoreError> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE idempotency_key = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([key], run_from_row)
        .optional()?)
}

/// Runs still `queued` or `running`, and runs aborted while queued whose message is still only
/// in their input, in submission order, with their stored input. An input that no longer
/// decodes is `None` (the run cannot start again).
pub(super) fn live_runs(
    conn: &Connection,
) -> Result<Vec<(RunRecord, Option<RunInput>)>, StoreError> {
    let sql = format!(
        "SELECT {RUN_COLUMNS}, input FROM runs WHERE status IN ('queued', 'running') \
         OR input IS NOT NULL ORDER BY rowid"
    );
    let rows = conn
        .prepare_cached(&sql)?
        .query_map([], |r| {
            let input: Option<String> = r.get(13)?;
            Ok((run_from_row(r)?, input))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows
        .into_iter()
        .map(|(run, input)| {
            let input = input.and_then(|json| match serde_json::from_str(&json) {
                Ok(input) => Some(input),
                Err(e) => {
                    tracing::warn!(run_id = %run.run_id, error = %e, "a queued run's stored input does not decode");
                    None
                }
            });
            (run, input)
        })
        .collect())
}

/// Every transcript, for the start-up check of its mirror.
pub(super) struct MirrorRow {
    pub session_id: String,
    pub agent_id: String,
    pub created_at: i64,
    pub last_seq: i64,
    /// The last seq known to be in the file (-1: not even the header).
    pub mirrored_seq: i64,
}

pub(super) fn mirror_rows(conn: &Connection) -> Result<Vec<MirrorRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT session_id, agent_id, created_at, last_seq, mirrored_seq FROM transcripts",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(MirrorRow {
                session_id: r.get(0)?,
                agent_id: r.get(1)?,
                created_at: r.get(2)?,
                last_seq: r.get(3)?,
                mirrored_seq: r.get(4)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub(super) fn mark_mirrored(
    conn: &Connection,
    session_id: &str,
    seq: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE transcripts SET mirrored_seq = ?2 WHERE session_id = ?1")?
        .execute(params![session_id, seq])?;
    Ok(())
}

fn not_found(key: &str) -> StoreError {
    StoreError::NotFound(format!("Session not found: {key}"))
}
