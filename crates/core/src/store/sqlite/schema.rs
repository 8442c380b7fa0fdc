//! The SQLite schema and its migrations (rows become records in `rules::rows`, the same on
//! every backend).

use rusqlite::Connection;

use crate::store::StoreError;

/// Bumped whenever the schema changes; `migrate` brings older files forward.
const SCHEMA_VERSION: i64 = 14;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    key TEXT PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    channel TEXT,
    chat_type TEXT,
    display_name TEXT,
    label TEXT,
    spawned_by TEXT,
    model TEXT,
    thinking_level TEXT,
    verbose_level TEXT,
    system_sent INTEGER NOT NULL DEFAULT 0,
    aborted_last_run INTEGER NOT NULL DEFAULT 0,
    send_policy TEXT,
    last_channel TEXT,
    last_to TEXT,
    last_account_id TEXT,
    last_thread_id TEXT,
    delivery_context TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens INTEGER NOT NULL DEFAULT 0,
    context_tokens INTEGER,
    archived_at INTEGER,
    -- `provider/model` of the session's last model call.
    last_model TEXT,
    cost_usd REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions (updated_at DESC, key);
CREATE INDEX IF NOT EXISTS sessions_by_agent ON sessions (agent_id, updated_at DESC, key);
CREATE UNIQUE INDEX IF NOT EXISTS sessions_by_label ON sessions (agent_id, label) WHERE label IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions (spawned_by) WHERE spawned_by IS NOT NULL;

-- Sessions per agent (schema 12), kept by the triggers below: `health` answers them without
-- walking an index of every session (about 0.3 s at a million, at each start's first health).
CREATE TABLE IF NOT EXISTS session_counts (
    agent_id TEXT PRIMARY KEY,
    n INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS sessions_counted AFTER INSERT ON sessions BEGIN
    INSERT INTO session_counts (agent_id, n) VALUES (NEW.agent_id, 1)
        ON CONFLICT (agent_id) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS sessions_uncounted AFTER DELETE ON sessions BEGIN
    UPDATE session_counts SET n = n - 1 WHERE agent_id = OLD.agent_id;
END;
CREATE TRIGGER IF NOT EXISTS sessions_recounted AFTER UPDATE OF agent_id ON sessions
    WHEN NEW.agent_id <> OLD.agent_id BEGIN
    UPDATE session_counts SET n = n - 1 WHERE agent_id = OLD.agent_id;
    INSERT INTO session_counts (agent_id, n) VALUES (NEW.agent_id, 1)
        ON CONFLICT (agent_id) DO UPDATE SET n = n + 1;
END;

-- One row per transcript (sessionId). mirrored_seq is the last seq known to be in the JSONL
-- mirror (-1: not even the header yet). mirror_behind (schema 13) is set in the commit that
-- puts mirrored_seq behind last_seq, and cleared by the writer once the mark caught up; rows
-- with it set are checked at start.
CREATE TABLE IF NOT EXISTS transcripts (
    session_id TEXT PRIMARY KEY,
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_seq INTEGER NOT NULL DEFAULT 0,
    mirrored_seq INTEGER NOT NULL DEFAULT -1,
    -- The seq of the newest compaction summary (schema 8): the model's view starts there.
    summary_seq INTEGER,
    mirror_behind INTEGER NOT NULL DEFAULT 0
);
-- The index read the seqs that every commit writes, so each commit rewrote its entry; the flag
-- stays set under steady writes, and an update that leaves it alone leaves the index alone.
DROP INDEX IF EXISTS transcripts_unmirrored;
CREATE INDEX IF NOT EXISTS transcripts_behind ON transcripts (session_id) WHERE mirror_behind = 1;

-- The agents' mirror directories as the last clean stop left them, when it could vouch that
-- every transcript's file existed (schema 14): a start that finds them so skips its sweep.
CREATE TABLE IF NOT EXISTS mirror_checked (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    dirs TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    ts INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS deleted_sessions (
    key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    deleted_at INTEGER NOT NULL,
    label TEXT,
    display_name TEXT
);

-- `input`: a queued run's input (JSON), so it starts after a restart; NULL once it started.
-- `model`: the model that answered (schema 8); `cost_usd`: what the run's calls cost. (Comments
-- stay out of the column list: SQLite 3.50 leaves one before the closing parenthesis when it
-- drops the last column after it, and the table no longer reads.)
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    session_key TEXT NOT NULL,
    session_id TEXT,
    status TEXT NOT NULL,
    lane TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    ended_at INTEGER,
    result TEXT,
    error TEXT,
    idempotency_key TEXT,
    input TEXT,
    model TEXT,
    cost_usd REAL
);
-- No query read `runs_live` (status of live runs), and every run's start and end wrote it.
DROP INDEX IF EXISTS runs_live;
-- What a start takes up again (`live_runs`): the same condition as its query.
CREATE INDEX IF NOT EXISTS runs_to_recover ON runs (created_at) WHERE status IN ('queued', 'running') OR input IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_idempotency ON runs (idempotency_key) WHERE idempotency_key IS NOT NULL;

-- The delivery outbox (SPEC §9.1): stored before the first attempt, outcome kept.
CREATE TABLE IF NOT EXISTS deliveries (
    id TEXT PRIMARY KEY,
    idempotency_key TEXT,
    kind TEXT NOT NULL,
    session_key TEXT,
    source_key TEXT,
    run_id TEXT,
    channel TEXT NOT NULL,
    recipient TEXT NOT NULL,
    account_id TEXT,
    thread_id TEXT,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    detail TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    delivered_at INTEGER,
    parts_sent INTEGER NOT NULL DEFAULT 0,
    -- The W3C traceparent of the span that made it (SPEC §10b), when traces are on.
    trace TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS deliveries_by_idempotency ON deliveries (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_by_session ON deliveries (session_key, created_at DESC) WHERE session_key IS NOT NULL;

-- Sub-agents (SPEC §7.4): durable so a restart resumes every unfinished announce.
CREATE TABLE IF NOT EXISTS subagents (
    child_key TEXT PRIMARY KEY,
    requester_key TEXT NOT NULL,
    run_id TEXT NOT NULL,
    task TEXT NOT NULL,
    label TEXT,
    model TEXT NOT NULL,
    delete_after INTEGER NOT NULL,
    state TEXT NOT NULL,
    outcome TEXT,
    created_at INTEGER NOT NULL,
    ended_at INTEGER,
    delivery_id TEXT,
    archive_at INTEGER,
    archived_at INTEGER,
    trace TEXT,
    origin TEXT
);
CREATE INDEX IF NOT EXISTS subagents_unfinished ON subagents (created_at) WHERE state != 'done';
CREATE INDEX IF NOT EXISTS subagents_archive ON subagents (archive_at) WHERE archive_at IS NOT NULL AND archived_at IS NULL;

-- Agent-to-agent exchanges (SPEC §7.3): durable so a restart resumes every unfinished one.
CREATE TABLE IF NOT EXISTS exchanges (
    id TEXT PRIMARY KEY,
    requester_key TEXT NOT NULL,
    requester_run TEXT NOT NULL,
    target_key TEXT NOT NULL,
    message TEXT NOT NULL,
    chain TEXT NOT NULL,
    state TEXT NOT NULL,
    turn INTEGER NOT NULL DEFAULT 0,
    step_run TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 1,
    round1 TEXT,
    latest TEXT,
    previous_run TEXT,
    detail TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    trace TEXT
);
CREATE INDEX IF NOT EXISTS exchanges_unfinished ON exchanges (created_at) WHERE state NOT IN ('done', 'failed');
CREATE INDEX IF NOT EXISTS exchanges_by_requester ON exchanges (requester_key, created_at DESC);
CREATE INDEX IF NOT EXISTS exchanges_by_target ON exchanges (target_key, created_at DESC);

-- Cron jobs (SPEC §9.3). last_slot: the newest schedule slot fired (ms); slots at or before it
-- never fire again, across restarts.
CREATE TABLE IF NOT EXISTS cron_jobs (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    schedule TEXT NOT NULL,
    message TEXT NOT NULL,
    deliver INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    last_slot INTEGER,
    last_run_id TEXT,
    last_fired_at INTEGER,
    name TEXT,
    enabled INTEGER NOT NULL DEFAULT 1
);

-- Where each polling channel account is in its source (schema 5): Telegram's next update offset.
-- Advanced in the same commit as the run (or the reply) its last update made.
CREATE TABLE IF NOT EXISTS channel_cursors (
    name TEXT PRIMARY KEY,
    position INTEGER NOT NULL
);

-- Where a channel account is in a source whose positions are opaque strings (schema 9):
-- Matrix's `next_batch`. Written in the same commit as the run its last event made.
CREATE TABLE IF NOT EXISTS channel_tokens (
    name TEXT PRIMARY KEY,
    token TEXT NOT NULL
);

-- DM pairing (schema 6): who asked to talk to a bot with which one-time code, and whom an owner
-- approved (`approved_at`).
CREATE TABLE IF NOT EXISTS channel_pairings (
    channel TEXT NOT NULL,
    account_id TEXT NOT NULL,
    sender_id TEXT NOT NULL,
    username TEXT,
    code TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    approved_at INTEGER,
    source TEXT NOT NULL,
    PRIMARY KEY (channel, account_id, sender_id)
);
";

/// Opens pragmas every connection needs.
pub(super) fn configure(conn: &Connection) -> Result<(), StoreError> {
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // NORMAL in WAL mode: a commit survives a process kill (the WAL is written before the
    // commit returns); only an OS crash or power loss can drop the last commits.
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF; PRAGMA temp_store = MEMORY;",
    )?;
    // Plans must not depend on bound values: otherwise SQLite re-prepares a cached statement
    // whenever a parameter changes, which cost half of the writer's CPU.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// The page size of a new database. A turn's commits write about 18 whole pages to the WAL for
/// a few hundred bytes of rows, so the page's size is what a turn copies, checksums and writes
/// back; half SQLite's default cut a warm echo turn's CPU by about 5%. A database made before
/// keeps its own (docs/decisions.md, "A new SQLite store has 2,048-byte pages").
pub(super) const PAGE_SIZE: u32 = 2048;

/// Creates or upgrades the schema on the writer connection.
pub(super) fn migrate(conn: &Connection) -> Result<(), StoreError> {
    // Before WAL mode and the first table: only then does a new file take it.
    conn.pragma_update(None, "page_size", PAGE_SIZE)?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Backend(format!(
            "SQLite refused WAL mode (got {mode})"
        )));
    }
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::Backend(format!(
            "the database has schema version {version}, newer than this build's {SCHEMA_VERSION}; upgrade switchboard"
        )));
    }
    // One transaction: a crash half way leaves the old version whole, to be migrated again.
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let migrated = (|| {
        if version == 1 {
            // Version 2 keeps a queued run's input with its record (before the schema's indexes
            // that read it).
            conn.execute_batch("ALTER TABLE runs ADD COLUMN input TEXT")?;
        }
        if (1..3).contains(&version) {
            // Version 3 remembers the model of a session's last model call (its rows show it).
            conn.execute_batch("ALTER TABLE sessions ADD COLUMN last_model TEXT")?;
        }
        if (1..4).contains(&version) {
            // Version 4 keeps a cron job's name and whether it is enabled (the reference's).
            conn.execute_batch(
                "ALTER TABLE cron_jobs ADD COLUMN name TEXT;
                 ALTER TABLE cron_jobs ADD COLUMN enabled INTEGER NOT NULL DEFAULT 1",
            )?;
        }
        if (1..7).contains(&version) {
            // Version 7 keeps what a session's model calls cost, priced as they were answered.
            conn.execute_batch("ALTER TABLE sessions ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0")?;
        }
        if (1..8).contains(&version) {
            // Version 8 records which model answered a run and what its calls cost, and where a
            // transcript's newest summary is.
            conn.execute_batch(
                "ALTER TABLE runs ADD COLUMN model TEXT; ALTER TABLE runs ADD COLUMN cost_usd REAL;
                 ALTER TABLE transcripts ADD COLUMN summary_seq INTEGER",
            )?;
        }
        if (1..6).contains(&version) {
            // Version 6 counts the parts of a long text a channel already took.
            conn.execute_batch(
                "ALTER TABLE deliveries ADD COLUMN parts_sent INTEGER NOT NULL DEFAULT 0",
            )?;
        }
        if (1..10).contains(&version) {
            // Version 10 keeps the trace context of waiting work (SPEC §10b).
            conn.execute_batch(
                "ALTER TABLE deliveries ADD COLUMN trace TEXT;
                 ALTER TABLE subagents ADD COLUMN trace TEXT;
                 ALTER TABLE exchanges ADD COLUMN trace TEXT",
            )?;
        }
        if (1..11).contains(&version) {
            // Version 11 keeps the chat a sub-agent's spawn came from (its announce goes there).
            conn.execute_batch("ALTER TABLE subagents ADD COLUMN origin TEXT")?;
        }
        if (1..13).contains(&version) {
            // Version 13 flags the transcripts whose mirror is behind (read through the old
            // index, which the schema then drops).
            conn.execute_batch(
                "ALTER TABLE transcripts ADD COLUMN mirror_behind INTEGER NOT NULL DEFAULT 0;
                 UPDATE transcripts SET mirror_behind = 1 WHERE mirrored_seq < last_seq",
            )?;
        }
        conn.execute_batch(SCHEMA)?;
        if version < 12 {
            // Version 12 keeps sessions per agent: counted once here, then by its triggers.
            conn.execute_batch(
                "DELETE FROM session_counts;
                 INSERT INTO session_counts (agent_id, n)
                     SELECT agent_id, count(*) FROM sessions GROUP BY agent_id",
            )?;
        }
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
    })();
    match migrated {
        Ok(()) => conn.execute_batch("COMMIT")?,
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e.into());
        }
    }
    Ok(())
}
