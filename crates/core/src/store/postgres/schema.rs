//! The PostgreSQL schema and its migrations, and a row read through [`Columns`] (rows become
//! records in `rules::rows`, the same on every backend).
//!
//! The tables are SQLite's, with PostgreSQL's types: every integer is `BIGINT` (read as `i64`),
//! flags are `BOOLEAN`, JSON is kept as the text it was written as, and keys compare byte by
//! byte (`COLLATE "C"`, as SQLite does) so lists come in the same order on both stores. Versions are counted on
//! their own (`schema_version`): a database of a newer version than this build is refused.

use tokio_postgres::Row;

use super::db::{Db, backend};
use crate::store::dialect::Columns;
use crate::store::rules::rows;
use crate::store::{RunRecord, StoreError};

/// Bumped whenever the schema changes; [`migrate`] brings older databases forward.
pub(super) const SCHEMA_VERSION: i64 = 4;

/// Held while a gateway migrates, so gateways starting at once migrate one after another.
const MIGRATION_LOCK: i64 = 0x5357_4254_4348_0001;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS sessions (
    key TEXT COLLATE "C" PRIMARY KEY,
    -- Unique through its transcript's row (`transcripts`' key), by which it is also found: an
    -- index of its own would be written again at each update of the row (docs/decisions.md).
    session_id TEXT NOT NULL,
    agent_id TEXT COLLATE "C" NOT NULL,
    kind TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    channel TEXT,
    chat_type TEXT,
    display_name TEXT,
    label TEXT,
    spawned_by TEXT,
    model TEXT,
    thinking_level TEXT,
    verbose_level TEXT,
    system_sent BOOLEAN NOT NULL DEFAULT FALSE,
    aborted_last_run BOOLEAN NOT NULL DEFAULT FALSE,
    send_policy TEXT,
    last_channel TEXT,
    last_to TEXT,
    last_account_id TEXT,
    last_thread_id TEXT,
    delivery_context TEXT,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    total_tokens BIGINT NOT NULL DEFAULT 0,
    context_tokens BIGINT,
    archived_at BIGINT,
    last_model TEXT,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions (updated_at DESC, key);
CREATE INDEX IF NOT EXISTS sessions_by_agent ON sessions (agent_id, updated_at DESC, key);
CREATE UNIQUE INDEX IF NOT EXISTS sessions_by_label ON sessions (agent_id, label) WHERE label IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions (spawned_by) WHERE spawned_by IS NOT NULL;

CREATE TABLE IF NOT EXISTS transcripts (
    session_id TEXT COLLATE "C" PRIMARY KEY,
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_seq BIGINT NOT NULL DEFAULT 0,
    summary_seq BIGINT
);

CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    role TEXT NOT NULL,
    ts BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE IF NOT EXISTS deleted_sessions (
    key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    deleted_at BIGINT NOT NULL,
    label TEXT,
    display_name TEXT
);

CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT COLLATE "C" PRIMARY KEY,
    -- Submission order (`live_runs`), as SQLite's rowid.
    submitted BIGINT GENERATED ALWAYS AS IDENTITY,
    session_key TEXT NOT NULL,
    session_id TEXT,
    status TEXT NOT NULL,
    lane TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    ended_at BIGINT,
    result TEXT,
    error TEXT,
    idempotency_key TEXT,
    model TEXT,
    cost_usd DOUBLE PRECISION,
    input TEXT,
    -- The gateway that runs it (or will): another takes it up when that one's heartbeat stops.
    owner TEXT
);
CREATE INDEX IF NOT EXISTS runs_to_recover ON runs (submitted) WHERE status IN ('queued', 'running') OR input IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_idempotency ON runs (idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS deliveries (
    id TEXT COLLATE "C" PRIMARY KEY,
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
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    detail TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    delivered_at BIGINT,
    parts_sent BIGINT NOT NULL DEFAULT 0,
    -- The gateway attempting it, until when: no other attempts it meanwhile.
    claimed_by TEXT,
    claimed_until BIGINT
);
CREATE UNIQUE INDEX IF NOT EXISTS deliveries_by_idempotency ON deliveries (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_by_session ON deliveries (session_key, created_at DESC) WHERE session_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS subagents (
    child_key TEXT COLLATE "C" PRIMARY KEY,
    requester_key TEXT NOT NULL,
    run_id TEXT NOT NULL,
    task TEXT NOT NULL,
    label TEXT,
    model TEXT NOT NULL,
    delete_after BOOLEAN NOT NULL,
    state TEXT NOT NULL,
    outcome TEXT,
    created_at BIGINT NOT NULL,
    ended_at BIGINT,
    delivery_id TEXT,
    archive_at BIGINT,
    archived_at BIGINT,
    owner TEXT
);
CREATE INDEX IF NOT EXISTS subagents_unfinished ON subagents (created_at) WHERE state != 'done';
CREATE INDEX IF NOT EXISTS subagents_archive ON subagents (archive_at) WHERE archive_at IS NOT NULL AND archived_at IS NULL;

CREATE TABLE IF NOT EXISTS exchanges (
    id TEXT COLLATE "C" PRIMARY KEY,
    requester_key TEXT NOT NULL,
    requester_run TEXT NOT NULL,
    target_key TEXT NOT NULL,
    message TEXT NOT NULL,
    chain TEXT NOT NULL,
    state TEXT NOT NULL,
    turn BIGINT NOT NULL DEFAULT 0,
    step_run TEXT NOT NULL,
    attempt BIGINT NOT NULL DEFAULT 1,
    round1 TEXT,
    latest TEXT,
    previous_run TEXT,
    detail TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    owner TEXT
);
CREATE INDEX IF NOT EXISTS exchanges_unfinished ON exchanges (created_at) WHERE state NOT IN ('done', 'failed');
CREATE INDEX IF NOT EXISTS exchanges_by_requester ON exchanges (requester_key, created_at DESC);
CREATE INDEX IF NOT EXISTS exchanges_by_target ON exchanges (target_key, created_at DESC);

CREATE TABLE IF NOT EXISTS cron_jobs (
    id TEXT COLLATE "C" PRIMARY KEY,
    agent_id TEXT NOT NULL,
    schedule TEXT NOT NULL,
    message TEXT NOT NULL,
    deliver BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL,
    last_slot BIGINT,
    last_run_id TEXT,
    last_fired_at BIGINT,
    name TEXT,
    enabled BOOLEAN NOT NULL DEFAULT TRUE
);

-- The gateways sharing the database, each with the time (the database's, in ms) it last said
-- it is alive. Work owned by a gateway whose heartbeat is older than the lease is taken up by
-- another (docs/scale-out.md).
CREATE TABLE IF NOT EXISTS gateways (
    id TEXT COLLATE "C" PRIMARY KEY,
    started_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);

-- Version 2, fenced ownership (docs/scale-out.md): each start of a gateway takes a new epoch,
-- and the work it drives carries it; a write for owned work commits only while the record
-- still carries the writer's epoch. `streak_since` is when the gateway's heartbeats last
-- started to come without a gap: only a gateway that kept beating through a whole lease may
-- declare another stopped.
CREATE SEQUENCE IF NOT EXISTS gateway_epochs;
ALTER TABLE gateways ADD COLUMN IF NOT EXISTS epoch BIGINT;
ALTER TABLE gateways ADD COLUMN IF NOT EXISTS streak_since BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS epoch BIGINT;
ALTER TABLE subagents ADD COLUMN IF NOT EXISTS epoch BIGINT;
ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS epoch BIGINT;
-- The W3C traceparent of the span that made the record (SPEC §10b), when traces are on.
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS trace TEXT;
ALTER TABLE subagents ADD COLUMN IF NOT EXISTS trace TEXT;
-- The route of the chat a sub-agent's spawn came from: its announce goes there.
ALTER TABLE subagents ADD COLUMN IF NOT EXISTS origin TEXT;
ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS trace TEXT;

CREATE TABLE IF NOT EXISTS channel_cursors (
    name TEXT COLLATE "C" PRIMARY KEY,
    position BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS channel_tokens (
    name TEXT COLLATE "C" PRIMARY KEY,
    token TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS channel_pairings (
    channel TEXT NOT NULL,
    account_id TEXT NOT NULL,
    sender_id TEXT NOT NULL,
    username TEXT,
    code TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    approved_at BIGINT,
    source TEXT NOT NULL,
    PRIMARY KEY (channel, account_id, sender_id)
);

-- Version 4: a session's id has no index of its own (see `sessions`).
ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_session_id_key;
"#;

/// Creates or upgrades the schema in `schema` (one transaction, under an advisory lock so that
/// gateways starting together do it once). A newer schema than this build's is refused.
pub(super) async fn migrate(db: Db<'_>, schema: &str) -> Result<(), StoreError> {
    db.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    db.batch(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema}; SET LOCAL search_path TO {schema};
         CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)"
    ))
    .await?;
    let version: i64 = db
        .query_opt("SELECT version FROM schema_version", &[])
        .await?
        .map(|row| row.get(0))
        .unwrap_or(0);
    if version > SCHEMA_VERSION {
        return Err(StoreError::Backend(format!(
            "the database has schema version {version}, newer than this build's {SCHEMA_VERSION}; upgrade switchboard"
        )));
    }
    if version < SCHEMA_VERSION {
        db.batch(SCHEMA).await?;
        db.execute("DELETE FROM schema_version", &[]).await?;
        db.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[&SCHEMA_VERSION],
        )
        .await?;
    }
    db.commit().await
}

/// A run's columns on PostgreSQL: the neutral ones, then the epoch it is held under.
pub(super) fn run_columns() -> String {
    format!("{}, epoch", rows::RUN_COLUMNS)
}

/// A row of [`run_columns`] as a run record, with its epoch.
pub(super) fn run_from_row(row: &Row) -> Result<RunRecord, StoreError> {
    let mut run = rows::run(row)?;
    run.epoch = rows::epoch(row.int(rows::RUN_COLUMN_COUNT)?);
    Ok(run)
}

impl Columns for Row {
    fn int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        get(self, i)
    }

    fn real(&self, i: usize) -> Result<Option<f64>, StoreError> {
        get(self, i)
    }

    fn flag(&self, i: usize) -> Result<Option<bool>, StoreError> {
        get(self, i)
    }

    fn text_ref(&self, i: usize) -> Result<Option<&str>, StoreError> {
        get(self, i)
    }
}

/// Column `i` of `row` as `T`; a type that does not match is a backend error naming the column.
pub(super) fn get<'r, T: tokio_postgres::types::FromSql<'r>>(
    row: &'r Row,
    i: usize,
) -> Result<T, StoreError> {
    row.try_get(i).map_err(backend)
}
