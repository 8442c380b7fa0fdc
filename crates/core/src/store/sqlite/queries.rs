//! The SQL of the store. Writes run on the writer thread inside its transaction; reads run on
//! pooled read-only connections.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, ToSql, params, params_from_iter};
use switchboard_protocol::message::TranscriptMessage;

use super::types::{all, bind, first, once};
use super::writer::MirrorOp;
use crate::store::dialect::SQLITE;
use crate::store::mirror;
use crate::store::rules::rows::{
    self, ENTRY_COLUMN_COUNT, ENTRY_COLUMNS, ENTRY_FROM, PATCH_ENTRY, RUN_COLUMNS, WRITE_ENTRY,
};
use crate::store::rules::sessions::{self as rules, not_found};
use crate::store::rules::{list as listing, transcript, work};
use crate::store::{
    Appended, Cursor, DatedMessage, EntryPatch, EntrySink, HistoryPage, ListPage, ListQuery,
    NewSession, RunInput, RunQuery, RunRecord, SessionEntry, StoreError, StoredMessage, StoredText,
};

/// A history page: index range on (session_id, seq), newest first. Reads only returned rows.
#[cfg(test)]
pub(crate) const HISTORY_SQL: &str = transcript::HISTORY;

/// A session's entry by key: read twice a turn, so its text is written once, not at each read.
static ENTRY_BY_KEY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.key = ?1")
});

pub(super) fn get_entry(conn: &Connection, key: &str) -> Result<Option<SessionEntry>, StoreError> {
    first(conn, &ENTRY_BY_KEY, [key], |r| rows::entry(r))
}

/// What an append reads before it writes: the session's entry, its transcript's `created_at`
/// (the mirror file's header) and whether the transcript is flagged as mirrored behind.
struct AppendRead {
    entry: SessionEntry,
    created_at: i64,
    behind: bool,
}

/// [`ENTRY_BY_KEY`] with the two transcript columns an append needs: in the read it makes
/// anyway, not in two statements of their own (a `RETURNING` on the transcript's update cost
/// more: SQLite gathers its rows in a temporary table).
pub(super) static APPEND_ENTRY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {ENTRY_COLUMNS}, t.created_at, t.mirror_behind FROM {ENTRY_FROM} WHERE s.key = ?1"
    )
});

fn append_entry(conn: &Connection, key: &str) -> Result<Option<AppendRead>, StoreError> {
    first(conn, &APPEND_ENTRY, [key], |r| {
        Ok(AppendRead {
            entry: rows::entry(r)?,
            created_at: r.get(ENTRY_COLUMN_COUNT)?,
            behind: r.get(ENTRY_COLUMN_COUNT + 1)?,
        })
    })
}

pub(super) fn get_by_session_id(
    conn: &Connection,
    session_id: &str,
) -> Result<Option<SessionEntry>, StoreError> {
    let sql = once!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.session_id = ?1");
    first(conn, sql, [session_id], |r| rows::entry(r))
}

pub(super) fn get_by_label(
    conn: &Connection,
    agent_id: &str,
    label: &str,
) -> Result<Option<SessionEntry>, StoreError> {
    let sql =
        once!("SELECT {ENTRY_COLUMNS} FROM {ENTRY_FROM} WHERE s.agent_id = ?1 AND s.label = ?2");
    first(conn, sql, [agent_id, label], |r| rows::entry(r))
}

fn check_label_free(
    conn: &Connection,
    agent_id: &str,
    label: &str,
    key: &str,
) -> Result<(), StoreError> {
    let holder = get_by_label(conn, agent_id, label)?;
    rules::check_label(holder.as_ref(), agent_id, label, key)
}

/// [`rules::INSERT_TRANSCRIPT`] with the mirror flag set: the file is not even created yet.
const INSERT_TRANSCRIPT: &str = "INSERT INTO transcripts \
     (session_id, session_key, agent_id, created_at, mirror_behind) VALUES (?1, ?2, ?3, ?4, 1)";

/// [`transcript::touch_session`] in SQLite's words, written once.
static TOUCH_SESSION: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| transcript::touch_session(SQLITE));

/// Flags a transcript whose mirror an append puts behind. Run only when the append read the
/// flag clear: under steady writes it is already set, the statement would match no row (its
/// own condition keeps it off the index), and not running it saves the statement.
const FLAG_BEHIND: &str =
    "UPDATE transcripts SET mirror_behind = 1 WHERE session_id = ?1 AND mirror_behind = 0";

fn new_transcript(
    conn: &Connection,
    key: &str,
    agent_id: &str,
    now: i64,
    mirror: &mut Vec<MirrorOp>,
) -> Result<String, StoreError> {
    let session_id = rules::new_session_id();
    conn.prepare_cached(INSERT_TRANSCRIPT)?
        .execute(bind(&rules::transcript_params(
            &session_id,
            key,
            agent_id,
            now,
        )))?;
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
    conn.prepare_cached(rules::INSERT_SESSION)?
        .execute(bind(&rules::session_params(&new, &session_id, now)))?;
    let entry = get_entry(conn, new.key.as_str())?.ok_or_else(rules::vanished)?;
    Ok((entry, true))
}

/// Merges the changed fields into the stored entry (read-modify-write on the single writer, so
/// no concurrent change is lost). `known`: the entry as this transaction's append left it
/// (`write_ops`), which is not read again.
pub(super) fn patch(
    conn: &Connection,
    key: &str,
    patch: &EntryPatch,
    now: i64,
    known: Option<SessionEntry>,
) -> Result<SessionEntry, StoreError> {
    let mut e = match known {
        Some(e) => e,
        None => get_entry(conn, key)?.ok_or_else(|| not_found(key))?,
    };
    if let Some(label) = rules::label_set(patch) {
        check_label_free(conn, &e.agent_id, label, key)?;
    }
    rules::patched(&mut e, patch, now)?;
    conn.prepare_cached(PATCH_ENTRY)?
        .execute(bind(&rows::entry_params(&e)?))?;
    Ok(e)
}

fn write_entry(conn: &Connection, e: &SessionEntry) -> Result<(), StoreError> {
    conn.prepare_cached(WRITE_ENTRY)?
        .execute(bind(&rows::entry_params(e)?))?;
    Ok(())
}

/// A new transcript for the key ([`rules::reset`] says what starts over).
pub(super) fn reset(
    conn: &Connection,
    key: &str,
    now: i64,
    mirror: &mut Vec<MirrorOp>,
) -> Result<SessionEntry, StoreError> {
    let mut e = get_entry(conn, key)?.ok_or_else(|| not_found(key))?;
    let session_id = new_transcript(conn, key, &e.agent_id, now, mirror)?;
    rules::reset(&mut e, session_id, now);
    write_entry(conn, &e)?;
    get_entry(conn, key)?.ok_or_else(|| not_found(key))
}

pub(super) fn delete(conn: &Connection, key: &str, now: i64) -> Result<SessionEntry, StoreError> {
    let e = get_entry(conn, key)?.ok_or_else(|| not_found(key))?;
    conn.prepare_cached(rules::INSERT_DELETED)?
        .execute(bind(&rules::deleted_params(&e, now)))?;
    conn.prepare_cached("DELETE FROM sessions WHERE key = ?1")?
        .execute([key])?;
    Ok(e)
}

/// Stores `messages` after the transcript's end and moves the session's time.
pub(super) fn append(
    conn: &Connection,
    key: &str,
    create_with: Option<NewSession>,
    messages: Vec<TranscriptMessage>,
    now: i64,
    mirror: &mut Vec<MirrorOp>,
) -> Result<Appended, StoreError> {
    let appended = append_leaving_time(conn, key, create_with, messages, now, mirror)?;
    conn.prepare_cached(&TOUCH_SESSION)?
        .execute(params![key, appended.entry.updated_at])?;
    Ok(appended)
}

/// [`append`] without moving the session row's time: for a batch whose patch of the session
/// comes next and writes the time with the row's other fields (`write_ops`). The entry it
/// answers carries the new time all the same.
pub(super) fn append_leaving_time(
    conn: &Connection,
    key: &str,
    create_with: Option<NewSession>,
    messages: Vec<TranscriptMessage>,
    now: i64,
    mirror: &mut Vec<MirrorOp>,
) -> Result<Appended, StoreError> {
    let (entry, created, created_at, behind) = match append_entry(conn, key)? {
        Some(read) => (read.entry, false, read.created_at, read.behind),
        None => {
            let new = create_with.ok_or_else(|| not_found(key))?;
            let (_, created) = create(conn, new, now, mirror)?;
            let read = append_entry(conn, key)?.ok_or_else(rules::vanished)?;
            (read.entry, created, read.created_at, read.behind)
        }
    };
    let numbered = transcript::number(entry.last_seq, messages)?;
    {
        let mut insert = conn.prepare_cached(transcript::INSERT_MESSAGE)?;
        for row in &numbered.rows {
            insert.execute(params![
                entry.session_id,
                row.seq,
                row.role,
                row.ts,
                row.body
            ])?;
        }
    }
    conn.prepare_cached(transcript::MARK_TRANSCRIPT)?
        .execute(params![
            entry.session_id,
            numbered.last_seq,
            numbered.summary_seq
        ])?;
    if !behind {
        conn.prepare_cached(FLAG_BEHIND)?
            .execute([&entry.session_id])?;
    }
    let appended = transcript::appended(entry, &numbered, now, created);
    let entry = &appended.entry;
    mirror.push(MirrorOp::Append {
        agent_id: entry.agent_id.clone(),
        session_id: entry.session_id.clone(),
        created_at,
        messages: numbered.into_rows(),
    });
    Ok(appended)
}

pub(super) fn list(conn: &Connection, q: &ListQuery) -> Result<ListPage, StoreError> {
    let statement = listing::statement(q, SQLITE);
    let mut stmt = conn.prepare_cached(&statement.sql)?;
    let entries = stmt
        .query_and_then(bind(&statement.params), |r| rows::entry(r))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(listing::page(entries, q.limit))
}

/// How many rows `q` lists over all its pages.
pub(super) fn count_listed(conn: &Connection, q: &ListQuery) -> Result<u64, StoreError> {
    let statement = listing::count_statement(q, SQLITE);
    let mut stmt = conn.prepare_cached(&statement.sql)?;
    let count: i64 = stmt.query_row(bind(&statement.params), |r| r.get(0))?;
    Ok(count.max(0) as u64)
}

/// [`list`], each entry handed to `sink` as it is read, with where its transcript is mirrored
/// (one path buffer for the page).
pub(super) fn list_into(
    conn: &Connection,
    q: &ListQuery,
    home: &Path,
    mut sink: Box<dyn EntrySink>,
) -> Result<(Box<dyn EntrySink>, Option<Cursor>), StoreError> {
    let statement = listing::row_statement(q, SQLITE);
    let mut stmt = conn.prepare_cached(&statement.sql)?;
    let mut rows = stmt.query(bind(&statement.params))?;
    let mut page = listing::SinkPage::new(q.limit);
    let home = home.to_string_lossy();
    let mut path = String::new();
    while let Some(row) = rows.next()? {
        if page.full() {
            break;
        }
        let mut entry = rows::entry_view(row)?;
        entry.row = row.get(listing::ROW_COLUMN)?;
        mirror::transcript_text_into(&mut path, &home, entry.agent_id, entry.session_id);
        page.hand(sink.as_mut(), &entry, Some(&path))?;
    }
    Ok((sink, page.next_cursor()))
}

/// A history page: newest `limit` below `before`, oldest first, as stored text.
pub(super) fn history_text(
    conn: &Connection,
    session_id: &str,
    limit: usize,
    before: Option<i64>,
) -> Result<HistoryPage<StoredText>, StoreError> {
    let mut stmt = conn.prepare_cached(transcript::HISTORY)?;
    let messages = stmt
        .query_map(
            bind(&transcript::history_params(session_id, limit, before)),
            |r| {
                Ok(StoredText {
                    seq: r.get(0)?,
                    body: r.get(1)?,
                })
            },
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(transcript::history_page(messages))
}

/// The transcript's newest compaction summary, when it is before `before`.
pub(super) fn summary(
    conn: &Connection,
    session_id: &str,
    before: i64,
) -> Result<Option<StoredMessage>, StoreError> {
    let row = conn
        .prepare_cached(transcript::SUMMARY)?
        .query_row(params![session_id, before], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .optional()?;
    row.map(|(seq, body)| transcript::parse_message(seq, &body))
        .transpose()
}

/// Every message of a transcript, oldest first, as stored (mirror rebuilds).
pub(super) fn all_messages(
    conn: &Connection,
    session_id: &str,
) -> Result<Vec<(i64, String)>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT seq, body FROM messages WHERE session_id = ?1 ORDER BY seq")?;
    let rows = stmt
        .query_map([session_id], |r| Ok((r.get(0)?, r.get(1)?)))?
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
        let found =
            stmt.query_and_then(params_from_iter(args.iter().map(|a| a.as_ref())), |r| {
                let message = transcript::parse_message(r.get(1)?, &r.get::<_, String>(2)?)?;
                Ok::<_, StoreError>((r.get::<_, String>(0)?, message))
            })?;
        for row in found {
            rows.push(row?);
        }
    }
    Ok(transcript::gather_last(session_ids, rows))
}

pub(super) fn count(conn: &Connection) -> Result<u64, StoreError> {
    let n: i64 = conn
        .prepare_cached("SELECT ifnull(sum(n), 0) FROM session_counts")?
        .query_row([], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

/// Every message in `[from, to)` with its transcript's key and agent; only an assistant's body.
pub(super) fn messages_between(
    conn: &Connection,
    from: i64,
    to: i64,
) -> Result<Vec<DatedMessage>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT t.session_key, m.session_id, t.agent_id, m.role, m.ts, \
         CASE WHEN m.role = 'assistant' THEN m.body ELSE '' END \
         FROM messages m JOIN transcripts t ON t.session_id = m.session_id \
         WHERE m.ts >= ?1 AND m.ts < ?2 ORDER BY m.ts, m.session_id, m.seq",
    )?;
    let rows = stmt.query_map([from, to], |r| {
        Ok(DatedMessage {
            session_key: r.get(0)?,
            session_id: r.get(1)?,
            agent_id: r.get(2)?,
            role: r.get(3)?,
            ts: r.get(4)?,
            body: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn count_by_agent(conn: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT agent_id, n FROM session_counts WHERE n > 0 ORDER BY agent_id")?;
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
    write_run(conn, run, input, false)
}

/// A run not stored before: refused when its id or idempotency key is taken.
pub(super) fn new_run(
    conn: &Connection,
    run: &RunRecord,
    input: Option<&RunInput>,
) -> Result<(), StoreError> {
    write_run(conn, run, input, true)
}

/// The statement that inserts a run's record and input ([`write_run`]).
fn run_insert() -> String {
    let marks = rows::placeholders(SQLITE, 1, rows::RUN_COLUMN_COUNT + 1);
    format!("INSERT INTO runs ({RUN_COLUMNS}, input) VALUES ({marks})")
}

/// Inserts the run, or (unless it is `new`) replaces its stored record.
fn write_run(
    conn: &Connection,
    run: &RunRecord,
    input: Option<&RunInput>,
    new: bool,
) -> Result<(), StoreError> {
    let mut values = rows::run_params(run);
    values.push(work::encode_input(input)?.into());
    debug_assert_eq!(
        values.len(),
        rows::RUN_COLUMN_COUNT + 1,
        "one value a placeholder"
    );
    let sql = match new {
        true => once!("{}", run_insert()),
        false => once!(
            "{} ON CONFLICT (run_id) DO UPDATE SET {}",
            run_insert(),
            rows::RUN_UPDATE
        ),
    };
    conn.prepare_cached(sql)?
        .execute(bind(&values))
        .map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _)
                if f.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                work::run_taken(run, new)
            }
            other => other.into(),
        })?;
    Ok(())
}

pub(super) fn get_run(conn: &Connection, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    let sql = once!("SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?1");
    first(conn, sql, [run_id], |r| rows::run(r))
}

pub(super) fn get_run_by_idempotency(
    conn: &Connection,
    key: &str,
) -> Result<Option<RunRecord>, StoreError> {
    let sql = once!("SELECT {RUN_COLUMNS} FROM runs WHERE idempotency_key = ?1");
    first(conn, sql, [key], |r| rows::run(r))
}

/// A page of the runs of some sessions ([`RunQuery`]).
pub(super) fn list_runs(conn: &Connection, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
    let (page, values) = work::runs_page(query);
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs {page}");
    all(conn, &sql, bind(&values), |r| rows::run(r))
}

/// Runs still `queued` or `running`, and runs aborted while queued whose message is still only
/// in their input, in submission order, with their stored input.
pub(super) fn live_runs(
    conn: &Connection,
) -> Result<Vec<(RunRecord, Option<RunInput>)>, StoreError> {
    // Named: for `ORDER BY rowid` the planner would rather read every run than sort the few
    // the index holds (a start that grew with the number of runs ever made).
    let sql = format!(
        "SELECT {RUN_COLUMNS}, input FROM runs INDEXED BY runs_to_recover WHERE {} \
         ORDER BY rowid",
        work::LIVE_RUN
    );
    all(conn, &sql, [], |r| {
        let run = rows::run(r)?;
        let input = work::decode_input(&run, r.get(rows::RUN_COLUMN_COUNT)?);
        Ok((run, input))
    })
}

/// A transcript whose mirror is checked: the ones behind at start, and every one in the sweep.
pub(super) struct MirrorRow {
    /// The cursor of the sweep (the table's rowid).
    pub rowid: i64,
    pub session_id: String,
    pub agent_id: String,
    pub created_at: i64,
    pub last_seq: i64,
}

fn mirror_row(r: &rusqlite::Row<'_>) -> Result<MirrorRow, StoreError> {
    Ok(MirrorRow {
        rowid: r.get(0)?,
        session_id: r.get(1)?,
        agent_id: r.get(2)?,
        created_at: r.get(3)?,
        last_seq: r.get(4)?,
    })
}

/// The transcripts whose progress mark may be behind the database (a crash or a failed write
/// came between a commit and its mirror lines), flagged in the commit that put them behind.
/// Read through the partial index `transcripts_behind`, so it costs what the flagged ones
/// weigh, not every transcript.
pub(super) const BEHIND_SQL: &str = "SELECT rowid, session_id, agent_id, created_at, last_seq \
     FROM transcripts WHERE mirror_behind = 1";

pub(super) fn behind_mirrors(conn: &Connection) -> Result<Vec<MirrorRow>, StoreError> {
    all(conn, BEHIND_SQL, [], mirror_row)
}

/// Up to `limit` transcripts after `rowid`, in rowid order (one step of the mirror sweep).
pub(super) fn mirrors_after(
    conn: &Connection,
    rowid: i64,
    limit: i64,
) -> Result<Vec<MirrorRow>, StoreError> {
    let sql = "SELECT rowid, session_id, agent_id, created_at, last_seq \
         FROM transcripts WHERE rowid > ?1 ORDER BY rowid LIMIT ?2";
    all(conn, sql, params![rowid, limit], mirror_row)
}

pub(super) fn mark_mirrored(
    conn: &Connection,
    session_id: &str,
    seq: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE transcripts SET mirrored_seq = ?2, mirror_behind = 0 WHERE session_id = ?1",
    )?
    .execute(params![session_id, seq])?;
    Ok(())
}
