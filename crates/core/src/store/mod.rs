//! Storage of session entries, transcripts and run records (SPEC §4).
//!
//! `Store` is the only door to persistence, in the parts its callers need (`parts.rs`): nothing
//! outside this module knows which backend runs (SQLite, or PostgreSQL shared by several
//! gateways). The domain rules are written once (`rules/`) over a small dialect layer
//! (`dialect.rs`); a backend adds only its SQL, transactions, locks and fences. Every write is
//! committed before its future resolves, so a caller acknowledges nothing that a `kill -9`
//! could lose.
//!
//! A session key points at its current transcript (`sessionId`); `sessions.reset` starts a new
//! transcript and keeps the old one. Messages carry a `seq` that starts at 1 in every transcript
//! and has no gaps.

pub mod bound;
pub mod bus;
mod cluster;
mod cron;
mod dialect;
mod exchanges;
mod health;
mod index;
mod listed;
mod mirror;
mod outbox;
mod pairing;
mod parts;
mod patch;
pub mod postgres;
pub(crate) mod private;
mod rules;
mod runs;
pub mod sqlite;
mod subagents;

pub use index::{index_label, index_path, write_indexes};

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use switchboard_protocol::message::TranscriptMessage;
use switchboard_protocol::sessions::{DeliveryContext, Patch};

use crate::ids::RunId;
use crate::keys::{ChatType, SessionKey, SessionKind};

pub use bound::Bound;
pub use bus::Bus;
pub use cluster::{Alone, Cluster};
pub use cron::CronJobRecord;
pub use exchanges::{ExchangeRecord, ExchangeState};
pub use health::{StoreHealth, StoreState};
pub use listed::{EntrySink, EntryView};
pub use mirror::{iso8601, message_id, transcript_path};
pub use outbox::{DeliveryQuery, DeliveryRecord, DeliveryStatus, DeliveryUpdate};
pub use pairing::{PairingAdmission, PairingAsk, PairingRecord};
pub use parts::{
    ClusterStore, CronStore, OutboxStore, PairingStore, RunStore, SessionReads, SessionStore, Store,
};
pub use postgres::{PgOptions, PgStore};
pub use runs::{DeliverInput, RunInput, RunQuery};
pub use sqlite::SqliteStore;
pub use subagents::{SubagentRecord, SubagentState};

/// The `provenance.kind` of a compaction summary: a user-role message that stands for the
/// messages before its `coversUntilSeq` in what the model is sent.
pub const COMPACTION: &str = "compaction";

/// Whether `message` is a compaction summary.
pub fn is_summary(message: &TranscriptMessage) -> bool {
    matches!(message, TranscriptMessage::User(u)
        if u.provenance.as_ref().is_some_and(|p| p.kind == COMPACTION))
}

/// Opens the store `config` names: the SQLite file under `home` (with its transcript mirrors),
/// or the PostgreSQL database at `store.url`. Times written come from `clock`.
pub async fn open(
    home: &std::path::Path,
    config: &crate::config::StoreConfig,
    clock: std::sync::Arc<dyn crate::clock::Clock>,
) -> Result<std::sync::Arc<dyn Store>, StoreError> {
    use crate::config::StoreKind;
    Ok(match (config.kind, &config.url) {
        (StoreKind::Postgres, Some(url)) => {
            let options = PgOptions {
                url: url.clone(),
                schema: config.schema.clone(),
                gateway_id: postgres::gateway_id(home)?,
                timeout: config.timeout(),
            };
            std::sync::Arc::new(PgStore::open(&options, clock).await?)
        }
        (StoreKind::Postgres, None) => {
            return Err(StoreError::Backend(
                "store.kind is postgres but store.url is not set".into(),
            ));
        }
        (StoreKind::Sqlite, _) => {
            std::sync::Arc::new(SqliteStore::open_bounded(home, clock, config.timeout())?)
        }
    })
}

/// The future every store method returns: boxed so `dyn Store` works.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// What [`Store::write_end`] answers: the batch's outcome, and the session's lock when it was
/// not let go with the batch's commit.
pub type EndFuture<'a> = Pin<
    Box<
        dyn Future<Output = (Result<Vec<WriteOutcome>, StoreError>, Option<SessionLock>)>
            + Send
            + 'a,
    >,
>;

/// Failures of the store. Callers map them onto wire errors in one place (`crate::error`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No session (or transcript, or run) by that name; the caller asked for something absent.
    #[error("{0}")]
    NotFound(String),
    /// The change conflicts with stored state (a label already in use, a field set once); the
    /// message says which.
    #[error("{0}")]
    Conflict(String),
    /// SQLite or the file system failed; not the caller's fault.
    #[error("storage failure: {0}")]
    Backend(String),
    /// The store is shutting down.
    #[error("the store is closed")]
    Closed,
    /// The database cannot be reached (a refused or timed-out connection, a TLS failure): not
    /// the caller's fault, and the same call may succeed later.
    #[error("storage unavailable: {0}")]
    Unreachable(String),
    /// A concurrent write won (a deadlock or a serialization failure on a shared database):
    /// the same write tried again may succeed. The store retries before it answers this.
    #[error("storage busy: {0}")]
    Busy(String),
    /// The write was for work this gateway no longer owns (SPEC §4.3): another gateway took it
    /// up while this one could not renew its lease. Nothing was written; the caller drops the
    /// work (the new owner carries it on) and must not retry.
    #[error("not written: {0}")]
    Fenced(String),
    /// A message's start found its session changed (or run by another gateway) since the
    /// entry it was judged on was read: nothing was written and no lock is held. The caller
    /// reads the session again and judges the message again
    /// ([`crate::sessions::submit_checked`]).
    #[error("not written: {0}")]
    Stale(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Backend(e.to_string())
    }
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        Self::Backend(e.to_string())
    }
}

/// A session entry (SPEC §4.1).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEntry {
    pub key: SessionKey,
    pub session_id: String,
    pub agent_id: String,
    pub kind: SessionKind,
    pub created_at: i64,
    pub updated_at: i64,
    pub channel: Option<String>,
    pub chat_type: Option<ChatType>,
    pub display_name: Option<String>,
    pub label: Option<String>,
    pub spawned_by: Option<SessionKey>,
    pub model: Option<String>,
    pub thinking_level: Option<String>,
    pub verbose_level: Option<String>,
    pub system_sent: bool,
    pub aborted_last_run: bool,
    pub send_policy: Option<String>,
    pub last_channel: Option<String>,
    pub last_to: Option<String>,
    pub last_account_id: Option<String>,
    pub last_thread_id: Option<String>,
    pub delivery_context: Option<DeliveryContext>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub context_tokens: Option<u64>,
    pub archived_at: Option<i64>,
    /// `seq` of the newest message in the current transcript (0 when empty).
    pub last_seq: i64,
    /// `provider/model` of the session's last model call.
    pub last_model: Option<String>,
    /// What the current transcript's model calls cost (USD), each priced with the model that
    /// answered it; 0 where no prices are configured.
    pub cost_usd: f64,
}

/// What a new session starts with; everything else takes its default.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSession {
    pub key: SessionKey,
    pub agent_id: String,
    pub kind: SessionKind,
    pub channel: Option<String>,
    pub chat_type: Option<ChatType>,
    pub label: Option<String>,
    pub display_name: Option<String>,
    pub spawned_by: Option<SessionKey>,
}

impl NewSession {
    /// What a new session at `key` starts with: its agent (`default_agent` for `global`), kind,
    /// channel and chat type read from the key; no label, display name or parent.
    pub fn for_key(key: &SessionKey, default_agent: &str, main_key: &str) -> Self {
        Self {
            key: key.clone(),
            agent_id: key.agent_id().unwrap_or(default_agent).to_string(),
            kind: key.kind(main_key),
            channel: key.channel().map(str::to_string),
            chat_type: key.chat_type(main_key),
            label: None,
            display_name: None,
            spawned_by: None,
        }
    }
}

/// A merge of changed fields: `Keep` leaves a field as stored (SPEC §4.1: updates merge).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EntryPatch {
    pub label: Patch<String>,
    pub display_name: Patch<String>,
    pub model: Patch<String>,
    pub thinking_level: Patch<String>,
    pub verbose_level: Patch<String>,
    pub send_policy: Patch<String>,
    /// Set once on a sub-agent session; a second different value is a conflict.
    pub spawned_by: Patch<SessionKey>,
    pub system_sent: Option<bool>,
    pub aborted_last_run: Option<bool>,
    pub channel: Patch<String>,
    pub last_channel: Patch<String>,
    pub last_to: Patch<String>,
    pub last_account_id: Patch<String>,
    pub last_thread_id: Patch<String>,
    pub delivery_context: Patch<DeliveryContext>,
    /// Added to the stored counters.
    pub add_tokens: Option<TokenDelta>,
    /// Added to the stored cost (USD).
    pub add_cost: Option<f64>,
    pub context_tokens: Patch<u64>,
    pub archived_at: Patch<i64>,
    pub last_model: Patch<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenDelta {
    pub input: u64,
    pub output: u64,
}

/// Where a list page starts: after the row with this `updatedAt` and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub updated_at: i64,
    pub key: SessionKey,
}

impl Cursor {
    /// The opaque string handed to clients.
    pub fn encode(&self) -> String {
        format!("{}:{}", self.updated_at, self.key)
    }

    pub fn decode(s: &str) -> Option<Self> {
        let (at, key) = s.split_once(':')?;
        Some(Self {
            updated_at: at.parse().ok()?,
            key: SessionKey::from_canonical(key.to_string()),
        })
    }
}

/// Filters of a list query. All of them apply before `limit`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListQuery {
    pub agent_id: Option<String>,
    /// Empty = every kind.
    pub kinds: Vec<SessionKind>,
    pub updated_since: Option<i64>,
    /// Case-insensitive substring of key, label or display name.
    pub search: Option<String>,
    pub spawned_by: Option<SessionKey>,
    pub label: Option<String>,
    pub include_archived: bool,
    /// Keys never listed (`global`/`unknown` under the per-sender scope).
    pub exclude_keys: Vec<String>,
    pub cursor: Option<Cursor>,
    /// Rows skipped (after the cursor, when there is one): the reference's offset paging.
    pub offset: usize,
    pub limit: usize,
    /// Only these store rows, when not empty: the rows [`Store::sessions_touched`] named (no
    /// other store names its rows).
    pub rows: Vec<i64>,
}

impl ListQuery {
    /// Every session (archived ones too), a page of `limit` from `cursor`, newest first.
    pub fn every(cursor: Option<Cursor>, limit: usize) -> Self {
        Self {
            agent_id: None,
            kinds: Vec::new(),
            updated_since: None,
            search: None,
            spawned_by: None,
            label: None,
            include_archived: true,
            exclude_keys: Vec::new(),
            cursor,
            offset: 0,
            limit,
            rows: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListPage {
    /// The entries without their transcript's end: `last_seq` is 0 (no list reader uses it;
    /// `SessionReads::get` reads it).
    pub entries: Vec<SessionEntry>,
    pub next_cursor: Option<Cursor>,
}

/// A message as stored: its `seq` and its transcript JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub seq: i64,
    pub message: Value,
}

/// A message of some transcript, for counting usage (`sessions.usage`, `usage.cost`): where and
/// when it was written, its role, and its JSON text when it is an assistant's (the others' text
/// is not read: empty).
#[derive(Debug, Clone, PartialEq)]
pub struct DatedMessage {
    pub session_key: String,
    pub session_id: String,
    pub agent_id: String,
    pub role: String,
    pub ts: i64,
    pub body: String,
}

/// A message as stored, undecoded: its `seq` and its transcript JSON's text (for an answer that
/// decodes it once, straight into its own types).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredText {
    pub seq: i64,
    pub body: String,
}

impl StoredText {
    /// The message decoded as [`SessionReads::history`] reads it.
    pub fn into_stored(self) -> Result<StoredMessage, StoreError> {
        rules::transcript::parse_message(self.seq, &self.body)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPage<M = StoredMessage> {
    /// Oldest first.
    pub messages: Vec<M>,
    /// Pass as `before` to read older messages; `None` when the page reached the first one.
    pub next_before: Option<i64>,
}

/// What `append` did.
#[derive(Debug, Clone, PartialEq)]
pub struct Appended {
    pub entry: SessionEntry,
    /// `seq` of each appended message, in order.
    pub seqs: Vec<i64>,
    pub created: bool,
}

/// Lifecycle of a run (SPEC §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Queued,
    Running,
    Ok,
    Error,
    Timeout,
    Aborted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Timeout => "timeout",
            Self::Aborted => "aborted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "ok" => Self::Ok,
            "error" => Self::Error,
            "timeout" => Self::Timeout,
            "aborted" => Self::Aborted,
            _ => return None,
        })
    }

    pub fn is_final(self) -> bool {
        !matches!(self, Self::Queued | Self::Running)
    }
}

/// A durable run record: `agent.wait` answers from it however long ago the run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub run_id: RunId,
    pub session_key: SessionKey,
    pub session_id: Option<String>,
    pub status: RunStatus,
    pub lane: String,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
    /// The run's final assistant text.
    pub result: Option<String>,
    pub error: Option<String>,
    pub idempotency_key: Option<String>,
    /// The model that gave the run's last answer (`provider/model`; a fallback when the
    /// primary failed); `None` until a model answered.
    pub model: Option<String>,
    /// What the run's model calls cost in USD, priced as they were answered; `None` when no
    /// answer was priced.
    pub cost_usd: Option<f64>,
    /// The ownership epoch the run is held under (SPEC §4.3): a write of the run commits only
    /// while the stored record still carries it. `0` on a store of one gateway.
    pub epoch: i64,
}

impl RunRecord {
    /// A run just submitted: queued, nothing of it done yet, held under epoch 0.
    pub fn queued(run_id: RunId, session_key: SessionKey, lane: &str, created_at: i64) -> Self {
        Self {
            run_id,
            session_key,
            session_id: None,
            status: RunStatus::Queued,
            lane: lane.to_string(),
            created_at,
            started_at: None,
            ended_at: None,
            result: None,
            error: None,
            idempotency_key: None,
            model: None,
            cost_usd: None,
            epoch: 0,
        }
    }

    /// The error of a run the gateway's stop cut off (not anyone's abort).
    pub const INTERRUPTED: &'static str =
        "interrupted: the gateway stopped while this run was running";

    /// How the error of every run the gateway's stop ended begins.
    const STOPPED: &'static str = "interrupted: the gateway stopped";

    /// The error of a run the gateway's stop cut off for good (SPEC §6.3): `how` goes on the
    /// sentence "the gateway stopped …".
    pub fn lost(how: &str) -> String {
        format!("{} {how}", Self::STOPPED)
    }

    /// True when the gateway's stop ended the run, not its work or anyone's abort.
    pub fn interrupted(&self) -> bool {
        self.status == RunStatus::Aborted
            && self
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with(Self::STOPPED))
    }

    /// Why the answer of a run the gateway's stop cut off for good was lost (what the chat it
    /// answered is told), when it was.
    pub fn answer_lost(&self) -> Option<&str> {
        let error = self.error.as_deref().filter(|_| self.interrupted())?;
        error.strip_prefix("interrupted: ")
    }
}

/// One write of a [`Store::write_batch`]: all of a batch commit together or not at all.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    /// Creates the session unless its key exists (as [`SessionStore::create`]).
    Create(Box<NewSession>),
    /// Stores a run record; a stored run's input is cleared (it has started).
    PutRun(RunRecord),
    /// Stores a queued run with what it needs to start after a restart (a run put back in its
    /// queue; a new run is a [`WriteOp::NewRun`]).
    QueueRun(RunRecord, Box<RunInput>),
    /// Stores a run not stored before (a submit's), with its input when it is queued. Refused
    /// ([`StoreError::Conflict`]) when its run id or idempotency key names a stored run: a
    /// repeated request, whose caller answers the first run. No read for the key comes first.
    /// A record without a session id takes the id of its session as an earlier write of the
    /// batch created it or appended to it (`rules::work::take_session`): a run whose commit
    /// creates its session.
    NewRun(RunRecord, Option<Box<RunInput>>),
    /// Lets the batch commit only while the run is still held under `epoch`: a gateway that
    /// lost the run to another writes nothing of it ([`StoreError::Fenced`]). A no-op on a
    /// store of one gateway.
    Fence {
        run_id: RunId,
        epoch: i64,
    },
    /// Lets the batch commit only when the run is stored ended with `status`
    /// ([`StoreError::Conflict`] otherwise): a tool result that quotes a run's end told before
    /// it committed (`runtime/told.rs`) lands only with that end.
    Ended {
        run_id: RunId,
        status: RunStatus,
    },
    Append {
        key: SessionKey,
        create: Option<NewSession>,
        messages: Vec<TranscriptMessage>,
    },
    /// Boxed: an entry patch is much larger than the other ops.
    Patch {
        key: SessionKey,
        patch: Box<EntryPatch>,
    },
    /// Stores an outbox record (idempotent on its key).
    Enqueue(Box<DeliveryRecord>),
    /// Records the outcome of a delivery attempt.
    UpdateDelivery {
        id: String,
        update: DeliveryUpdate,
    },
    PutSubagent(Box<SubagentRecord>),
    PutExchange(Box<ExchangeRecord>),
    /// Sets a channel account's cursor (`channel_cursors`); it only moves forward.
    SetCursor {
        name: String,
        position: i64,
    },
    /// Sets a channel account's token (`channel_tokens`): an opaque position in its source
    /// that is not a number (Matrix's `next_batch`). The last write wins.
    SetToken {
        name: String,
        token: String,
    },
    /// Records how many parts of a delivery's text the channel took (a long text goes in
    /// parts; a retry starts after them). It only moves forward.
    DeliveryProgress {
        id: String,
        parts_sent: u32,
    },
}

/// What each op of a batch did, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOutcome {
    /// The entry, and whether it was created.
    Created(Box<SessionEntry>, bool),
    PutRun,
    Appended(Appended),
    Patched(SessionEntry),
    /// The stored record (the first one when its idempotency key was seen before).
    Enqueued(Box<DeliveryRecord>),
    DeliveryUpdated(Box<DeliveryRecord>),
    PutSubagent,
    PutExchange,
    SetCursor,
    SetToken,
    DeliveryProgress,
    /// The run is still held under the epoch a [`WriteOp::Fence`] named.
    Fenced,
    /// The run is stored ended as a [`WriteOp::Ended`] said.
    Ended,
}

impl WriteOutcome {
    /// The session the write created or appended to, as the write left it.
    pub fn session(&self) -> Option<&SessionEntry> {
        match self {
            Self::Created(entry, _) => Some(entry),
            Self::Appended(appended) => Some(&appended.entry),
            _ => None,
        }
    }
}

/// Work another gateway sharing the store left when it stopped, now this gateway's.
#[derive(Debug, Default)]
pub struct Orphans {
    /// As [`RunStore::live_runs`] answers them.
    pub runs: Vec<(RunRecord, Option<RunInput>)>,
    pub subagents: Vec<SubagentRecord>,
    pub exchanges: Vec<ExchangeRecord>,
}

impl Orphans {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.subagents.is_empty() && self.exchanges.is_empty()
    }
}

/// Held while a run works on a session no other gateway may run meanwhile; dropping it lets the
/// next one in.
pub type SessionLock = Box<dyn std::any::Any + Send + Sync>;

/// What asking for a session's lock without waiting found
/// ([`ClusterStore::try_lock_session`]).
pub enum TryLock {
    /// The session is this gateway's now (with the lock a shared store gave).
    Held(Option<SessionLock>),
    /// Another gateway's run holds it.
    Busy,
    /// Not asked yet: the run's start asks for it, writing only while the session is as the
    /// entry answered with it (a shared store's entry kept from the session's last run,
    /// `postgres/kept.rs`). A run that does not start at once reads the session again
    /// ([`StoreError::Stale`]).
    Unasked(SessionLock),
}
