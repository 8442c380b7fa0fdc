//! The SQL of sessions, transcripts and runs on PostgreSQL. Writes run inside the caller's
//! transaction; a session changed by read-modify-write is locked first (`FOR UPDATE`), so two
//! gateways changing one session at once take turns and neither change is lost.

use switchboard_protocol::message::TranscriptMessage;
use switchboard_protocol::sessions::Patch;
use tokio_postgres::types::ToSql;

use super::db::Db;
use super::schema::{ENTRY_COLUMNS, ENTRY_FROM, RUN_COLUMNS, entry_from_row, get, run_from_row};
use crate::store::{
    Appended, Cursor, EntryPatch, HistoryPage, ListPage, ListQuery, NewSession, RunInput,
    RunRecord, SessionEntry, StoreError, StoredMessage, is_summary,
};

pub(super) async fn get_entry(db: &Db<'_>, key: &str) -> Result<Option<SessionEntry>, StoreError> {
    let sql = format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.key = $1");
    db.query_opt(&sql, &[&key])
        .await?
        .map(|row| entry_from_row(&row))
        .transpose()
}

/// The entry, its session row locked until the transaction ends. The lock is taken on the
/// session alone first, then the entry read: a join locked at once could miss a row a
/// concurrent reset moved to a new transcript, and answer "not found".
async fn lock_entry(db: &Db<'_>, key: &str) -> Result<SessionEntry, StoreError> {
    let locked = db
        .query_opt("SELECT 1 FROM sessions WHERE key = $1 FOR UPDATE", &[&key])
        .await?;
    match locked {
        Some(_) => get_entry(db, key).await?.ok_or_else(|| not_found(key)),
        None => Err(not_found(key)),
    }
}

pub(super) async fn get_by_session_id(
    db: &Db<'_>,
    session_id: &str,
) -> Result<Option<SessionEntry>, StoreError> {
    let sql = format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.session_id = $1");
    db.query_opt(&sql, &[&session_id])
        .await?
        .map(|row| entry_from_row(&row))
        .transpose()
}

pub(super) async fn get_by_label(
    db: &Db<'_>,
    agent_id: &str,
    label: &str,
) -> Result<Option<SessionEntry>, StoreError> {
    let sql =
        format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.agent_id = $1 AND s.label = $2");
    db.query_opt(&sql, &[&agent_id, &label])
        .await?
        .map(|row| entry_from_row(&row))
        .transpose()
}

/// The conflict of a label another session of the agent uses. The other session is not named:
/// the caller may be a sandboxed agent that must not learn a key it cannot see.
fn label_taken(agent_id: &str, label: &str) -> StoreError {
    StoreError::Conflict(format!(
        "label \"{label}\" is already used by another session of agent {agent_id}; labels are unique per agent, choose another"
    ))
}

async fn check_label_free(
    db: &Db<'_>,
    agent_id: &str,
    label: &str,
    key: &str,
) -> Result<(), StoreError> {
    match get_by_label(db, agent_id, label).await? {
        Some(other) if other.key.as_str() != key => Err(label_taken(agent_id, label)),
        _ => Ok(()),
    }
}

async fn new_transcript(
    db: &Db<'_>,
    key: &str,
    agent_id: &str,
    now: i64,
) -> Result<String, StoreError> {
    let session_id = uuid::Uuid::new_v4().to_string();
    db.execute(
        "INSERT INTO transcripts (session_id, session_key, agent_id, created_at) VALUES ($1, $2, $3, $4)",
        &[&session_id, &key, &agent_id, &now],
    )
    .await?;
    Ok(session_id)
}

/// Inserts a session unless the key exists (also when another gateway inserts it at the same
/// moment). Answers the entry and whether it was created.
pub(super) async fn create(
    db: &Db<'_>,
    new: NewSession,
    now: i64,
) -> Result<(SessionEntry, bool), StoreError> {
    let key = new.key.as_str();
    if let Some(existing) = get_entry(db, key).await? {
        return Ok((existing, false));
    }
    if let Some(label) = &new.label {
        check_label_free(db, &new.agent_id, label, key).await?;
    }
    let session_id = uuid::Uuid::new_v4().to_string();
    let inserted = db
        .execute(
            "INSERT INTO sessions (key, session_id, agent_id, kind, created_at, updated_at, channel, \
             chat_type, display_name, label, spawned_by) VALUES ($1, $2, $3, $4, $5, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (key) DO NOTHING",
            &[
                &key,
                &session_id,
                &new.agent_id,
                &new.kind.as_str(),
                &now,
                &new.channel,
                &new.chat_type.map(|c| c.as_str()),
                &new.display_name,
                &new.label,
                &new.spawned_by.as_ref().map(|k| k.as_str()),
            ],
        )
        .await
        .map_err(|e| match (e, &new.label) {
            (StoreError::Conflict(_), Some(label)) => label_taken(&new.agent_id, label),
            (e, _) => e,
        })?;
    if inserted == 1 {
        db.execute(
            "INSERT INTO transcripts (session_id, session_key, agent_id, created_at) VALUES ($1, $2, $3, $4)",
            &[&session_id, &key, &new.agent_id, &now],
        )
        .await?;
    }
    let entry = get_entry(db, key).await?.ok_or_else(|| {
        StoreError::Backend("a session vanished inside its own transaction".into())
    })?;
    Ok((entry, inserted == 1))
}

/// Merges the changed fields into the stored entry, its row locked: no concurrent change is
/// lost.
pub(super) async fn patch(
    db: &Db<'_>,
    key: &str,
    patch: &EntryPatch,
    now: i64,
) -> Result<SessionEntry, StoreError> {
    let mut e = lock_entry(db, key).await?;
    if let Patch::Set(label) = &patch.label {
        check_label_free(db, &e.agent_id, label, key).await?;
    }
    patch.apply(&mut e)?;
    e.updated_at = now.max(e.updated_at);
    write_entry(db, &e)
        .await
        .map_err(|err| match (err, &patch.label) {
            (StoreError::Conflict(_), Patch::Set(label)) => label_taken(&e.agent_id, label),
            (err, _) => err,
        })?;
    Ok(e)
}

async fn write_entry(db: &Db<'_>, e: &SessionEntry) -> Result<(), StoreError> {
    let delivery = e
        .delivery_context
        .as_ref()
        .and_then(|d| serde_json::to_string(d).ok());
    let count = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    db.execute(
        "UPDATE sessions SET session_id = $2, updated_at = $3, channel = $4, display_name = $5, \
         label = $6, spawned_by = $7, model = $8, thinking_level = $9, verbose_level = $10, \
         system_sent = $11, aborted_last_run = $12, send_policy = $13, last_channel = $14, \
         last_to = $15, last_account_id = $16, last_thread_id = $17, delivery_context = $18, \
         input_tokens = $19, output_tokens = $20, total_tokens = $21, context_tokens = $22, \
         archived_at = $23, last_model = $24, cost_usd = $25 WHERE key = $1",
        &[
            &e.key.as_str(),
            &e.session_id,
            &e.updated_at,
            &e.channel,
            &e.display_name,
            &e.label,
            &e.spawned_by.as_ref().map(|k| k.as_str()),
            &e.model,
            &e.thinking_level,
            &e.verbose_level,
            &e.system_sent,
            &e.aborted_last_run,
            &e.send_policy,
            &e.last_channel,
            &e.last_to,
            &e.last_account_id,
            &e.last_thread_id,
            &delivery,
            &count(e.input_tokens),
            &count(e.output_tokens),
            &count(e.total_tokens),
            &e.context_tokens.map(count),
            &e.archived_at,
            &e.last_model,
            &e.cost_usd,
        ],
    )
    .await?;
    Ok(())
}

/// New transcript for the key; counters and run flags start over, settings stay.
pub(super) async fn reset(db: &Db<'_>, key: &str, now: i64) -> Result<SessionEntry, StoreError> {
    let mut e = lock_entry(db, key).await?;
    e.session_id = new_transcript(db, key, &e.agent_id, now).await?;
    e.updated_at = now.max(e.updated_at);
    e.input_tokens = 0;
    e.output_tokens = 0;
    e.total_tokens = 0;
    e.cost_usd = 0.0;
    e.context_tokens = None;
    e.system_sent = false;
    e.aborted_last_run = false;
    write_entry(db, &e).await?;
    get_entry(db, key).await?.ok_or_else(|| not_found(key))
}

pub(super) async fn delete(db: &Db<'_>, key: &str, now: i64) -> Result<SessionEntry, StoreError> {
    let e = lock_entry(db, key).await?;
    db.execute(
        "INSERT INTO deleted_sessions (key, session_id, agent_id, deleted_at, label, display_name) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &e.key.as_str(),
            &e.session_id,
            &e.agent_id,
            &now,
            &e.label,
            &e.display_name,
        ],
    )
    .await?;
    db.execute("DELETE FROM sessions WHERE key = $1", &[&key])
        .await?;
    Ok(e)
}

/// Appends to the session's current transcript, its rows locked: appends from several
/// gateways get consecutive seqs.
pub(super) async fn append(
    db: &Db<'_>,
    key: &str,
    create_with: Option<NewSession>,
    messages: Vec<TranscriptMessage>,
    now: i64,
) -> Result<Appended, StoreError> {
    let created = match create_with {
        Some(new) if get_entry(db, key).await?.is_none() => create(db, new, now).await?.1,
        _ => false,
    };
    let mut entry = lock_entry(db, key).await?;
    let mut seq = entry.last_seq;
    let mut summary_seq = None;
    let mut seqs = Vec::with_capacity(messages.len());
    for message in messages {
        seq += 1;
        if is_summary(&message) {
            summary_seq = Some(seq);
        }
        // The store's edge: the typed message becomes its transcript JSON here.
        let body = serde_json::to_string(&message)
            .map_err(|e| StoreError::Backend(format!("message {seq} could not be encoded: {e}")))?;
        db.execute(
            "INSERT INTO messages (session_id, seq, role, ts, body) VALUES ($1, $2, $3, $4, $5)",
            &[
                &entry.session_id,
                &seq,
                &message.role(),
                &message.timestamp(),
                &body,
            ],
        )
        .await?;
        seqs.push(seq);
    }
    db.execute(
        "UPDATE transcripts SET last_seq = $2, summary_seq = coalesce($3, summary_seq) \
         WHERE session_id = $1",
        &[&entry.session_id, &seq, &summary_seq],
    )
    .await?;
    entry.updated_at = now.max(entry.updated_at);
    db.execute(
        "UPDATE sessions SET updated_at = $2 WHERE key = $1",
        &[&key, &entry.updated_at],
    )
    .await?;
    entry.last_seq = seq;
    Ok(Appended {
        entry,
        seqs,
        created,
    })
}

pub(super) async fn list(db: &Db<'_>, q: &ListQuery) -> Result<ListPage, StoreError> {
    let (sql, values) = list_sql(q);
    let params: Vec<&(dyn ToSql + Sync)> = values
        .iter()
        .map(|v| v.as_ref() as &(dyn ToSql + Sync))
        .collect();
    let mut entries = db
        .query(&sql, &params)
        .await?
        .iter()
        .map(entry_from_row)
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

type Value = Box<dyn ToSql + Sync + Send>;

/// A statement built clause by clause: `$` in a clause becomes the number of its value.
#[derive(Default)]
struct Args {
    sql: String,
    values: Vec<Value>,
}

impl Args {
    fn push(&mut self, clause: &str, value: Value) -> usize {
        self.values.push(value);
        let n = self.values.len();
        self.sql.push_str(&clause.replace('$', &format!("${n}")));
        n
    }
}

/// The list's statement and its parameters: the filters, then the cursor and the limit.
fn list_sql(q: &ListQuery) -> (String, Vec<Value>) {
    let mut a = Args {
        sql: format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE TRUE"),
        ..Args::default()
    };
    if !q.include_archived {
        a.sql.push_str(" AND s.archived_at IS NULL");
    }
    if let Some(agent) = &q.agent_id {
        a.push(" AND s.agent_id = $", Box::new(agent.clone()));
    }
    if !q.kinds.is_empty() {
        let kinds: Vec<String> = q.kinds.iter().map(|k| k.as_str().to_string()).collect();
        a.push(" AND s.kind = ANY($)", Box::new(kinds));
    }
    if let Some(since) = q.updated_since {
        a.push(" AND s.updated_at >= $", Box::new(since));
    }
    if let Some(parent) = &q.spawned_by {
        a.push(
            " AND s.spawned_by = $",
            Box::new(parent.as_str().to_string()),
        );
    }
    if let Some(label) = &q.label {
        a.push(" AND s.label = $", Box::new(label.clone()));
    }
    if let Some(search) = q
        .search
        .as_deref()
        .map(str::to_lowercase)
        .filter(|s| !s.is_empty())
    {
        // The three `$` become one parameter.
        a.push(
            " AND (strpos(lower(s.key), $) > 0 OR strpos(lower(coalesce(s.label, '')), $) > 0 OR \
             strpos(lower(coalesce(s.display_name, '')), $) > 0)",
            Box::new(search),
        );
    }
    if !q.exclude_keys.is_empty() {
        a.push(" AND s.key <> ALL($)", Box::new(q.exclude_keys.clone()));
    }
    if let Some(c) = &q.cursor {
        // Newest first, then by key: the rows after the cursor.
        let at = a.push(" AND (s.updated_at < $", Box::new(c.updated_at));
        a.sql
            .push_str(&format!(" OR (s.updated_at = ${at} AND s.key > "));
        a.push("$))", Box::new(c.key.as_str().to_string()));
    }
    let limit = i64::try_from(q.limit).unwrap_or(i64::MAX - 1) + 1;
    a.push(
        " ORDER BY s.updated_at DESC, s.key ASC LIMIT $",
        Box::new(limit),
    );
    (a.sql, a.values)
}

/// A history page: newest `limit` below `before`, oldest first; an index range read.
pub(super) async fn history(
    db: &Db<'_>,
    session_id: &str,
    limit: usize,
    before: Option<i64>,
) -> Result<HistoryPage, StoreError> {
    let before = before.unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = db
        .query(
            "SELECT seq, body FROM messages WHERE session_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
            &[&session_id, &before, &limit],
        )
        .await?;
    let mut messages = rows
        .iter()
        .map(|r| parse_message(get(r, 0)?, &get::<String>(r, 1)?))
        .collect::<Result<Vec<_>, _>>()?;
    messages.reverse();
    let next_before = messages.first().map(|m| m.seq).filter(|seq| *seq > 1);
    Ok(HistoryPage {
        messages,
        next_before,
    })
}

/// The transcript's newest compaction summary, when it is before `before`.
pub(super) async fn summary(
    db: &Db<'_>,
    session_id: &str,
    before: i64,
) -> Result<Option<StoredMessage>, StoreError> {
    let row = db
        .query_opt(
            "SELECT m.seq, m.body FROM transcripts t JOIN messages m \
             ON m.session_id = t.session_id AND m.seq = t.summary_seq \
             WHERE t.session_id = $1 AND t.summary_seq < $2",
            &[&session_id, &before],
        )
        .await?;
    row.map(|r| parse_message(get(&r, 0)?, &get::<String>(&r, 1)?))
        .transpose()
}

fn parse_message(seq: i64, body: &str) -> Result<StoredMessage, StoreError> {
    let message = serde_json::from_str(body)
        .map_err(|e| StoreError::Backend(format!("stored message {seq} is not JSON: {e}")))?;
    Ok(StoredMessage { seq, message })
}

/// The last `limit` non-tool-result messages of each transcript: one statement, an index range
/// read per transcript.
pub(super) async fn last_messages(
    db: &Db<'_>,
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
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = db
        .query(
            "SELECT t.id, m.seq, m.body FROM unnest($1::text[]) AS t(id) CROSS JOIN LATERAL \
             (SELECT seq, body FROM messages WHERE session_id = t.id AND role <> 'toolResult' \
              ORDER BY seq DESC LIMIT $2) m",
            &[&session_ids, &limit],
        )
        .await?;
    for row in &rows {
        let id: String = get(row, 0)?;
        if let Some(i) = index.get(id.as_str()) {
            out[*i]
                .1
                .push(parse_message(get(row, 1)?, &get::<String>(row, 2)?)?);
        }
    }
    for (_, messages) in &mut out {
        messages.sort_by_key(|m| m.seq);
    }
    Ok(out)
}

pub(super) async fn count(db: &Db<'_>) -> Result<u64, StoreError> {
    let row = db.query_one("SELECT count(*) FROM sessions", &[]).await?;
    Ok(get::<i64>(&row, 0)?.max(0) as u64)
}

pub(super) async fn count_by_agent(db: &Db<'_>) -> Result<Vec<(String, u64)>, StoreError> {
    db.query(
        "SELECT agent_id, count(*) FROM sessions GROUP BY agent_id ORDER BY agent_id",
        &[],
    )
    .await?
    .iter()
    .map(|r| Ok((get(r, 0)?, get::<i64>(r, 1)?.max(0) as u64)))
    .collect()
}

/// Stores a run record with its input (`None` clears a stored one: the run started).
pub(super) async fn put_run(
    db: &Db<'_>,
    run: &RunRecord,
    input: Option<&RunInput>,
) -> Result<(), StoreError> {
    let input = input
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| StoreError::Backend(format!("could not encode a run's input: {e}")))?;
    // A new run is this gateway's, under the epoch it was queued with; a stored one is
    // written only while it still carries the writer's epoch (fenced, SPEC §4.3).
    let sql = format!(
        "INSERT INTO runs ({RUN_COLUMNS}, input, owner) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
         ON CONFLICT (run_id) DO UPDATE SET session_id = excluded.session_id, status = excluded.status, \
         lane = excluded.lane, started_at = excluded.started_at, ended_at = excluded.ended_at, \
         result = excluded.result, error = excluded.error, model = excluded.model, \
         cost_usd = excluded.cost_usd, input = excluded.input \
         WHERE runs.epoch IS NOT DISTINCT FROM excluded.epoch"
    );
    let written = db
        .execute(
            &sql,
            &[
                &run.run_id.as_str(),
                &run.session_key.as_str(),
                &run.session_id,
                &run.status.as_str(),
                &run.lane,
                &run.created_at,
                &run.started_at,
                &run.ended_at,
                &run.result,
                &run.error,
                &run.idempotency_key,
                &run.model,
                &run.cost_usd,
                &run.epoch,
                &input,
                &db.gateway(),
            ],
        )
        .await
        .map_err(|e| match e {
            StoreError::Conflict(_) => StoreError::Conflict(format!(
                "idempotencyKey {:?} already names another run",
                run.idempotency_key.as_deref().unwrap_or("")
            )),
            other => other,
        })?;
    super::cluster::held(written, || format!("run {}", run.run_id))
}

pub(super) async fn get_run(db: &Db<'_>, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE run_id = $1");
    db.query_opt(&sql, &[&run_id])
        .await?
        .map(|row| run_from_row(&row))
        .transpose()
}

pub(super) async fn get_run_by_idempotency(
    db: &Db<'_>,
    key: &str,
) -> Result<Option<RunRecord>, StoreError> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE idempotency_key = $1");
    db.query_opt(&sql, &[&key])
        .await?
        .map(|row| run_from_row(&row))
        .transpose()
}

fn not_found(key: &str) -> StoreError {
    StoreError::NotFound(format!("Session not found: {key}"))
}
