//! The SQL of sessions, transcripts and runs on PostgreSQL. Writes run inside the caller's
//! transaction; a session changed by read-modify-write is locked first (`FOR UPDATE`), so two
//! gateways changing one session at once take turns and neither change is lost.

use switchboard_protocol::message::TranscriptMessage;

use super::db::Db;
use super::schema::{get, run_columns, run_from_row};
use crate::store::dialect::POSTGRES;
use crate::store::rules::rows::{self, ENTRY_COLUMNS, ENTRY_FROM, WRITE_ENTRY};
use crate::store::rules::sessions::{self as rules, not_found};
use crate::store::rules::{list as listing, transcript, work};
use crate::store::{
    Appended, Cursor, DatedMessage, EntryPatch, EntrySink, HistoryPage, ListPage, ListQuery,
    NewSession, RunInput, RunQuery, RunRecord, SessionEntry, StoreError, StoredMessage, StoredText,
};

pub(super) async fn get_entry(db: &Db<'_>, key: &str) -> Result<Option<SessionEntry>, StoreError> {
    let sql = format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.key = $1");
    db.query_opt(&sql, &[&key])
        .await?
        .map(|row| rows::entry(&row))
        .transpose()
}

/// Takes the session lock of the key `$1` if it is free: whether it did.
pub(super) const TRY_LOCK: &str = "pg_try_advisory_lock(hashtextextended($1, 0))";

/// [`TRY_LOCK`] of the key `key` (a placeholder).
pub(super) fn try_lock(key: &str) -> String {
    format!("pg_try_advisory_lock(hashtextextended({key}, 0))")
}

/// Lets the session lock of the key `key` (a placeholder) go with the commit of the statement
/// that evaluates it: taken again for the transaction first (a lock held at both levels is
/// held until both let go), then let go at the session level. Waiting gateways find the
/// session free only once what the statement wrote is visible.
pub(super) fn release_at_commit(key: &str) -> String {
    format!(
        "CASE WHEN pg_try_advisory_xact_lock(hashtextextended({key}, 0)) \
         THEN pg_advisory_unlock(hashtextextended({key}, 0)) END"
    )
}

/// Whether this connection holds the session lock of the key `$1` at the session level after
/// a failed [`release_at_commit`]: it still does (the statement failed before the unlock), or
/// it takes it again ([`TRY_LOCK`], asked only then, so the lock is never held twice).
pub(super) static HOLD_AGAIN: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT CASE WHEN {HELD} THEN true ELSE {TRY_LOCK} END"));

/// Whether this connection holds the session lock of the key `$1` at the session level.
const HELD: &str = "EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' \
     AND pid = pg_backend_pid() AND granted AND objsubid = 1 \
     AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0))";

/// [`HELD`] as a statement.
pub(super) static HOLDS: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("SELECT {HELD}"));

/// The session lock of the key `$1` taken while its row is at the version `$2` (its `xmin`):
/// true when taken, false when another connection holds it, NULL when the row moved on.
pub(super) static LOCK_AT_VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM sessions WHERE key = $1 AND xmin::text = $2) \
         THEN {TRY_LOCK} END"
    )
});

/// The entry of the key `$1` (a row of NULLs when there is none), then [`TRY_LOCK`]
/// (`PgStore::get_for_run`).
pub(super) static ENTRY_AND_LOCK: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT e.*, {TRY_LOCK} FROM (SELECT 1) AS one \
         LEFT JOIN (SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.key = $1) AS e ON true"
    )
});

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
    // Found through its transcript (`session_id` has no index in `sessions`, schema.rs); the
    // session's key on the transcript's row leads to it, and it is found only while that
    // transcript is the session's current one (the join).
    let sql = format!(
        "SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE t.session_id = $1 AND s.key = t.session_key"
    );
    db.query_opt(&sql, &[&session_id])
        .await?
        .map(|row| rows::entry(&row))
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
        .map(|row| rows::entry(&row))
        .transpose()
}

async fn check_label_free(
    db: &Db<'_>,
    agent_id: &str,
    label: &str,
    key: &str,
) -> Result<(), StoreError> {
    let holder = get_by_label(db, agent_id, label).await?;
    rules::check_label(holder.as_ref(), agent_id, label, key)
}

async fn new_transcript(
    db: &Db<'_>,
    key: &str,
    agent_id: &str,
    now: i64,
) -> Result<String, StoreError> {
    let session_id = rules::new_session_id();
    let values = rules::transcript_params(&session_id, key, agent_id, now);
    db.execute_with(rules::INSERT_TRANSCRIPT, &values).await?;
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
    // The session first, so of two gateways creating it one inserts and the other waits, then
    // finds it; its transcript only when it was inserted here.
    let session_id = rules::new_session_id();
    let sql = format!("{} ON CONFLICT (key) DO NOTHING", rules::INSERT_SESSION);
    let inserted = db
        .execute_with(&sql, &rules::session_params(&new, &session_id, now))
        .await
        .map_err(|e| rules::label_conflict(e, &new.agent_id, new.label.as_deref()))?;
    if inserted == 1 {
        let values = rules::transcript_params(&session_id, key, &new.agent_id, now);
        db.execute_with(rules::INSERT_TRANSCRIPT, &values).await?;
    }
    let entry = get_entry(db, key).await?.ok_or_else(rules::vanished)?;
    Ok((entry, inserted == 1))
}

/// Merges the changed fields into the stored entry, its row locked: no concurrent change is
/// lost. `held`: the entry as this transaction already locked and wrote it (an append just
/// before, in the same batch), so one statement; else two: the entry read as it is locked, and
/// the write.
pub(super) async fn patch(
    db: &Db<'_>,
    key: &str,
    patch: &EntryPatch,
    now: i64,
    held: Option<SessionEntry>,
) -> Result<SessionEntry, StoreError> {
    let fresh = held.is_some();
    let mut e = match held {
        Some(entry) => entry,
        None => lock_session_entry(db, key).await?,
    };
    let label = rules::label_set(patch);
    if let Some(label) = label {
        check_label_free(db, &e.agent_id, label, key).await?;
    }
    rules::patched(&mut e, patch, now)?;
    let conflict = |err| rules::label_conflict(err, &e.agent_id, label);
    if fresh {
        write_entry(db, &e).await.map_err(conflict)?;
        return Ok(e);
    }
    // The transcript's end as this write sees it: the lock's read may have joined the
    // transcript's row as it was before the lock was granted.
    let sql = format!(
        "{WRITE_ENTRY} RETURNING (SELECT last_seq FROM transcripts t \
         WHERE t.session_id = sessions.session_id)"
    );
    let written = db
        .query_opt_with(&sql, &rows::entry_params(&e)?)
        .await
        .map_err(conflict)?;
    let last_seq = written.map(|row| get::<Option<i64>>(&row, 0)).transpose()?;
    e.last_seq = last_seq.flatten().ok_or_else(rules::vanished)?;
    Ok(e)
}

/// The entry, its session row locked until the transaction ends, in one statement when it can:
/// locked with its transcript joined. That join answers nothing when a concurrent reset moved
/// the session to a new transcript while this waited for the lock; then [`lock_entry`] does it
/// in two. The entry's `last_seq` may be older than the lock (the joined row is not read again).
async fn lock_session_entry(db: &Db<'_>, key: &str) -> Result<SessionEntry, StoreError> {
    let sql = format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.key = $1 FOR UPDATE OF s");
    match db.query_opt(&sql, &[&key]).await? {
        Some(row) => rows::entry(&row),
        None => lock_entry(db, key).await,
    }
}

async fn write_entry(db: &Db<'_>, e: &SessionEntry) -> Result<(), StoreError> {
    db.execute_with(WRITE_ENTRY, &rows::entry_params(e)?)
        .await?;
    Ok(())
}

/// A new transcript for the key ([`rules::reset`] says what starts over), its row locked.
pub(super) async fn reset(db: &Db<'_>, key: &str, now: i64) -> Result<SessionEntry, StoreError> {
    let mut e = lock_entry(db, key).await?;
    let session_id = new_transcript(db, key, &e.agent_id, now).await?;
    rules::reset(&mut e, session_id, now);
    write_entry(db, &e).await?;
    get_entry(db, key).await?.ok_or_else(|| not_found(key))
}

pub(super) async fn delete(db: &Db<'_>, key: &str, now: i64) -> Result<SessionEntry, StoreError> {
    let e = lock_entry(db, key).await?;
    db.execute_with(rules::INSERT_DELETED, &rules::deleted_params(&e, now))
        .await?;
    db.execute("DELETE FROM sessions WHERE key = $1", &[&key])
        .await?;
    Ok(e)
}

/// Appends to the session's current transcript, its rows locked: appends from several
/// gateways get consecutive seqs. Two statements whatever the number of messages: the touch,
/// then the messages with the transcript's new end.
pub(super) async fn append(
    db: &Db<'_>,
    key: &str,
    create_with: Option<NewSession>,
    messages: Vec<TranscriptMessage>,
    now: i64,
) -> Result<Appended, StoreError> {
    // Touching the session first locks its row (as `FOR UPDATE` would) for the appends to
    // come, in the one statement that moves its `updated_at` anyway, and answers its entry.
    let touch = touch_entry();
    let mut created = false;
    let mut touched = db.query_opt(touch, &[&key, &now]).await?;
    if touched.is_none() {
        let Some(new) = create_with else {
            return Err(not_found(key));
        };
        created = create(db, new, now).await?.1;
        touched = db.query_opt(touch, &[&key, &now]).await?;
    }
    let entry = rows::entry(&touched.ok_or_else(|| not_found(key))?)?;
    let numbered = transcript::number(0, messages)?;
    let base = store_messages(db, &entry.session_id, &numbered).await?;
    let numbered = numbered.after(base);
    Ok(transcript::appended(entry, &numbered, now, created))
}

/// [`transcript::touch_session`] answering the session's entry (its transcript's end left at
/// 0: [`store_messages`] reads it).
fn touch_entry() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        format!(
            "UPDATE sessions s SET updated_at = GREATEST(s.updated_at, $2) WHERE s.key = $1 \
             RETURNING {}",
            ENTRY_COLUMNS.replace("t.last_seq", "0::bigint")
        )
    })
}

/// Stores `numbered` (numbered from 1) after the transcript's end and moves the end, in one
/// statement; answers the end they were stored after. The update reads the end as the last
/// commit left it (the session's lock, held, keeps other appends out until this one commits).
async fn store_messages(
    db: &Db<'_>,
    session_id: &str,
    numbered: &transcript::Numbered,
) -> Result<i64, StoreError> {
    const SQL: &str = "WITH mark AS (UPDATE transcripts SET last_seq = last_seq + $2, \
         summary_seq = coalesce(last_seq + $3, summary_seq) WHERE session_id = $1 \
         RETURNING last_seq - $2 AS base), \
         stored AS (INSERT INTO messages (session_id, seq, role, ts, body) \
         SELECT $1, mark.base + m.i, m.role, m.ts, m.body FROM mark, \
         unnest($4::text[], $5::bigint[], $6::text[]) WITH ORDINALITY AS m(role, ts, body, i)) \
         SELECT base FROM mark";
    let roles: Vec<&str> = numbered.rows.iter().map(|r| r.role).collect();
    let times: Vec<i64> = numbered.rows.iter().map(|r| r.ts).collect();
    let bodies: Vec<String> = numbered.rows.iter().map(|r| r.body.clone()).collect();
    let count = numbered.last_seq;
    let row = db
        .query_opt(
            SQL,
            &[
                &session_id,
                &count,
                &numbered.summary_seq,
                &roles,
                &times,
                &bodies,
            ],
        )
        .await?
        .ok_or_else(rules::vanished)?;
    get(&row, 0)
}

pub(super) async fn list(db: &Db<'_>, q: &ListQuery) -> Result<ListPage, StoreError> {
    let statement = listing::statement(q, POSTGRES);
    let entries = db
        .query_with(&statement.sql, &statement.params)
        .await?
        .iter()
        .map(rows::entry)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(listing::page(entries, q.limit))
}

/// How many rows `q` lists over all its pages.
pub(super) async fn count_listed(db: &Db<'_>, q: &ListQuery) -> Result<u64, StoreError> {
    let statement = listing::count_statement(q, POSTGRES);
    let rows = db.query_with(&statement.sql, &statement.params).await?;
    let row = rows.first().ok_or_else(rules::vanished)?;
    Ok(get::<i64>(row, 0)?.max(0) as u64)
}

/// [`list`], each entry handed to `sink` as it is decoded (no mirror: no transcript path).
pub(super) async fn list_into(
    db: &Db<'_>,
    q: &ListQuery,
    mut sink: Box<dyn EntrySink>,
) -> Result<(Box<dyn EntrySink>, Option<Cursor>), StoreError> {
    let statement = listing::row_statement(q, POSTGRES);
    let mut page = listing::SinkPage::new(q.limit);
    for row in db.query_with(&statement.sql, &statement.params).await? {
        if page.full() {
            break;
        }
        page.hand(sink.as_mut(), &rows::entry_view(&row)?, None)?;
    }
    Ok((sink, page.next_cursor()))
}

/// A history page: newest `limit` below `before`, oldest first, as stored text; an index range
/// read.
pub(super) async fn history_text(
    db: &Db<'_>,
    session_id: &str,
    limit: usize,
    before: Option<i64>,
) -> Result<HistoryPage<StoredText>, StoreError> {
    let values = transcript::history_params(session_id, limit, before);
    let messages = db
        .query_with(transcript::HISTORY, &values)
        .await?
        .iter()
        .map(|r| {
            Ok(StoredText {
                seq: get(r, 0)?,
                body: get(r, 1)?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok(transcript::history_page(messages))
}

/// The transcript's newest compaction summary, when it is before `before`.
pub(super) async fn summary(
    db: &Db<'_>,
    session_id: &str,
    before: i64,
) -> Result<Option<StoredMessage>, StoreError> {
    let row = db
        .query_opt_with(transcript::SUMMARY, &[session_id.into(), before.into()])
        .await?;
    row.map(|r| transcript::parse_message(get(&r, 0)?, &get::<String>(&r, 1)?))
        .transpose()
}

/// The last `limit` non-tool-result messages of each transcript: one statement, an index range
/// read per transcript.
pub(super) async fn last_messages(
    db: &Db<'_>,
    session_ids: &[String],
    limit: usize,
) -> Result<Vec<(String, Vec<StoredMessage>)>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = db
        .query(
            "SELECT t.id, m.seq, m.body FROM unnest($1::text[]) AS t(id) CROSS JOIN LATERAL \
             (SELECT seq, body FROM messages WHERE session_id = t.id AND role <> 'toolResult' \
              ORDER BY seq DESC LIMIT $2) m",
            &[&session_ids, &limit],
        )
        .await?
        .iter()
        .map(|row| {
            let message = transcript::parse_message(get(row, 1)?, &get::<String>(row, 2)?)?;
            Ok((get::<String>(row, 0)?, message))
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok(transcript::gather_last(session_ids, rows))
}

/// Every message in `[from, to)` with its transcript's key and agent; only an assistant's body.
pub(super) async fn messages_between(
    db: &Db<'_>,
    from: i64,
    to: i64,
) -> Result<Vec<DatedMessage>, StoreError> {
    db.query(
        "SELECT t.session_key, m.session_id, t.agent_id, m.role, m.ts, \
         CASE WHEN m.role = 'assistant' THEN m.body ELSE '' END \
         FROM messages m JOIN transcripts t ON t.session_id = m.session_id \
         WHERE m.ts >= $1 AND m.ts < $2 ORDER BY m.ts, m.session_id, m.seq",
        &[&from, &to],
    )
    .await?
    .iter()
    .map(|r| {
        Ok(DatedMessage {
            session_key: get(r, 0)?,
            session_id: get(r, 1)?,
            agent_id: get(r, 2)?,
            role: get(r, 3)?,
            ts: get(r, 4)?,
            body: get(r, 5)?,
        })
    })
    .collect()
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
    write_run(db, run, input, false).await
}

/// A run not stored before: refused when its id or idempotency key is taken.
pub(super) async fn new_run(
    db: &Db<'_>,
    run: &RunRecord,
    input: Option<&RunInput>,
) -> Result<(), StoreError> {
    write_run(db, run, input, true).await
}

/// Inserts the run, or (unless it is `new`) replaces its stored record.
async fn write_run(
    db: &Db<'_>,
    run: &RunRecord,
    input: Option<&RunInput>,
    new: bool,
) -> Result<(), StoreError> {
    let mut values = rows::run_params(run);
    values.push(run.epoch.into());
    values.push(work::encode_input(input)?.into());
    values.push(db.gateway().into());
    // A new run is this gateway's, under the epoch it was queued with; a stored one is
    // written only while it still carries the writer's epoch (fenced, SPEC §4.3).
    let sql = format!(
        "INSERT INTO runs ({}, input, owner) VALUES ({}){}",
        run_columns(),
        rows::placeholders(POSTGRES, 1, values.len()),
        work::run_conflict(new),
    );
    let written = db.execute_with(&sql, &values).await.map_err(|e| match e {
        StoreError::Conflict(_) => work::run_taken(run, new),
        other => other,
    })?;
    super::cluster::held(written, || format!("run {}", run.run_id))
}

pub(super) async fn get_run(db: &Db<'_>, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    let sql = format!("SELECT {} FROM runs WHERE run_id = $1", run_columns());
    db.query_opt(&sql, &[&run_id])
        .await?
        .map(|row| run_from_row(&row))
        .transpose()
}

/// A page of the runs of some sessions ([`RunQuery`]).
pub(super) async fn list_runs(db: &Db<'_>, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
    let (page, values) = work::runs_page(query);
    let sql = format!("SELECT {} FROM runs {page}", run_columns());
    db.query_with(&sql, &values)
        .await?
        .iter()
        .map(run_from_row)
        .collect()
}

pub(super) async fn get_run_by_idempotency(
    db: &Db<'_>,
    key: &str,
) -> Result<Option<RunRecord>, StoreError> {
    let sql = format!(
        "SELECT {} FROM runs WHERE idempotency_key = $1",
        run_columns()
    );
    db.query_opt(&sql, &[&key])
        .await?
        .map(|row| run_from_row(&row))
        .transpose()
}
