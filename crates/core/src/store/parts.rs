//! The store's interface, in the parts its callers need (docs/architecture.md, "The store
//! seam"): sessions and their transcripts, runs and the work they drive (sub-agents,
//! exchanges), the outbox and channel cursors, cron jobs, DM pairing, and the cluster of
//! gateways sharing the store. [`Store`] is their sum, what the composition root holds; a
//! component that needs one part can be handed that part alone (`Arc<dyn Store>` coerces to
//! `Arc<dyn SessionStore>`), as tools are ([`SessionReads`]).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use switchboard_protocol::message::TranscriptMessage;

use super::{
    Alone, Appended, Bus, Cluster, CronJobRecord, Cursor, DatedMessage, DeliveryQuery,
    DeliveryRecord, DeliveryUpdate, EndFuture, EntryPatch, EntrySink, ExchangeRecord, HistoryPage,
    ListPage, ListQuery, NewSession, Orphans, PairingAdmission, PairingAsk, PairingRecord,
    RunInput, RunQuery, RunRecord, SessionEntry, SessionLock, StoreFuture, StoreHealth,
    StoredMessage, StoredText, SubagentRecord, TryLock, WriteOp, WriteOutcome,
};
use crate::ids::RunId;
use crate::keys::SessionKey;

/// What a session tool reads: sessions, their transcripts and where those are mirrored. Tools
/// get this part alone ([`crate::runtime::ToolContext::store`]); they write through the
/// runtime.
pub trait SessionReads: Send + Sync {
    /// Where a transcript is mirrored as JSONL; `None` when the store keeps no mirror.
    fn transcript_path(&self, agent_id: &str, session_id: &str) -> Option<PathBuf>;

    fn get(&self, key: &SessionKey) -> StoreFuture<'_, Option<SessionEntry>>;
    fn get_by_session_id(&self, session_id: &str) -> StoreFuture<'_, Option<SessionEntry>>;
    fn get_by_label(&self, agent_id: &str, label: &str) -> StoreFuture<'_, Option<SessionEntry>>;
    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage>;
    /// [`list`](Self::list), each entry of the page handed to `sink` as it is read, its text
    /// borrowed from the row (no entry built); answers the sink back and the next page's cursor.
    fn list_into(
        &self,
        query: ListQuery,
        mut sink: Box<dyn EntrySink>,
    ) -> StoreFuture<'_, (Box<dyn EntrySink>, Option<Cursor>)> {
        let page = self.list(query);
        Box::pin(async move {
            let page = page.await?;
            for e in &page.entries {
                let transcript = self.transcript_path(&e.agent_id, &e.session_id);
                let transcript = transcript.as_deref().map(std::path::Path::to_string_lossy);
                sink.entry(&e.view(), transcript.as_deref())?;
            }
            Ok((sink, page.next_cursor))
        })
    }
    fn count(&self) -> StoreFuture<'_, u64>;
    /// How many sessions `query` lists over all its pages (its cursor, offset and limit aside).
    fn count_listed(&self, query: ListQuery) -> StoreFuture<'_, u64>;
    /// Sessions per agent id (archived ones included, as `count`).
    fn count_by_agent(&self) -> StoreFuture<'_, Vec<(String, u64)>>;

    /// A page of a transcript, newest `limit` messages below `before`, oldest first, each
    /// message as the text it is stored as. Reads only the rows it returns.
    fn history_text(
        &self,
        session_id: &str,
        limit: usize,
        before: Option<i64>,
    ) -> StoreFuture<'_, HistoryPage<StoredText>>;
    /// [`history_text`](Self::history_text) with each message decoded.
    fn history(
        &self,
        session_id: &str,
        limit: usize,
        before: Option<i64>,
    ) -> StoreFuture<'_, HistoryPage> {
        let page = self.history_text(session_id, limit, before);
        Box::pin(async move {
            let page = page.await?;
            Ok(HistoryPage {
                messages: page
                    .messages
                    .into_iter()
                    .map(StoredText::into_stored)
                    .collect::<Result<_, _>>()?,
                next_before: page.next_before,
            })
        })
    }
    /// The transcript's newest compaction summary ([`super::is_summary`]), when its seq is below
    /// `before`: the model's view starts from it however long ago it was written.
    fn summary(&self, session_id: &str, before: i64) -> StoreFuture<'_, Option<StoredMessage>>;
    /// Every message written at or after `from` and before `to` (ms), of any transcript, oldest
    /// first ([`DatedMessage`]).
    fn messages_between(&self, from: i64, to: i64) -> StoreFuture<'_, Vec<DatedMessage>>;
    /// The last `limit` non-tool-result messages of each transcript, in one query.
    fn last_messages(
        &self,
        session_ids: Vec<String>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<(String, Vec<StoredMessage>)>>;
}

/// Sessions and transcripts: the reads, and the writes that change them.
pub trait SessionStore: SessionReads {
    /// Creates the session unless its key exists; answers the entry and whether it was created.
    fn create(&self, new: NewSession) -> StoreFuture<'_, (SessionEntry, bool)>;
    fn patch(&self, key: &SessionKey, patch: EntryPatch) -> StoreFuture<'_, SessionEntry>;
    /// Starts a new transcript (new sessionId); the old one stays stored and mirrored.
    fn reset(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry>;
    /// Removes the entry; its transcripts stay stored and mirrored (archived, never lost).
    fn delete(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry>;
    /// Appends messages to the session's current transcript, creating the session from `create`
    /// when the key is new (an error when it is new and `create` is `None`).
    fn append(
        &self,
        key: &SessionKey,
        create: Option<NewSession>,
        messages: Vec<TranscriptMessage>,
    ) -> StoreFuture<'_, Appended>;
}

/// Runs, and the work they drive that outlives them: sub-agents and agent-to-agent exchanges.
/// On a shared store each is held under an epoch and its writes are fenced (SPEC §4.3).
pub trait RunStore: Send + Sync {
    fn put_run(&self, run: RunRecord) -> StoreFuture<'_, ()>;
    fn get_run(&self, run_id: &RunId) -> StoreFuture<'_, Option<RunRecord>>;
    /// The run submitted with this idempotency key, if any.
    fn get_run_by_idempotency(&self, key: &str) -> StoreFuture<'_, Option<RunRecord>>;
    /// Runs left `queued` or `running` (by a stopped process), and runs aborted while queued
    /// whose message has not reached the transcript yet, in the order they were submitted, each
    /// with its stored input (`None` once it started).
    fn live_runs(&self) -> StoreFuture<'_, Vec<(RunRecord, Option<RunInput>)>>;
    /// A page of the runs of some sessions, newest first ([`RunQuery`]).
    fn list_runs(&self, query: RunQuery) -> StoreFuture<'_, Vec<RunRecord>>;

    /// Stores a sub-agent record (insert or replace by child key).
    fn put_subagent(&self, record: SubagentRecord) -> StoreFuture<'_, ()>;
    fn get_subagent(&self, child_key: &SessionKey) -> StoreFuture<'_, Option<SubagentRecord>>;
    /// The records of those of `child_keys` that are sub-agents, in one read.
    fn get_subagents(&self, child_keys: Vec<SessionKey>) -> StoreFuture<'_, Vec<SubagentRecord>>;
    /// Records whose announce or cleanup is not finished, oldest first.
    fn unfinished_subagents(&self) -> StoreFuture<'_, Vec<SubagentRecord>>;
    /// Kept children whose `archive_at` is at or before `now` and that are not archived yet.
    fn subagents_to_archive(&self, now: i64) -> StoreFuture<'_, Vec<SubagentRecord>>;

    /// Stores an exchange record (insert or replace by id).
    fn put_exchange(&self, record: ExchangeRecord) -> StoreFuture<'_, ()>;
    fn get_exchange(&self, id: &str) -> StoreFuture<'_, Option<ExchangeRecord>>;
    /// Exchanges not done nor failed, oldest first.
    fn unfinished_exchanges(&self) -> StoreFuture<'_, Vec<ExchangeRecord>>;
    /// Exchanges where `session` is the requester or the target (all when `None`), newest
    /// first, at most `limit`.
    fn list_exchanges(
        &self,
        session: Option<SessionKey>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<ExchangeRecord>>;
}

/// The delivery outbox, and the channel cursors written with it.
pub trait OutboxStore: Send + Sync {
    /// Stores an outbox record unless its idempotency key names one already; answers the stored
    /// record and whether it is new.
    fn enqueue_delivery(&self, record: DeliveryRecord) -> StoreFuture<'_, (DeliveryRecord, bool)>;
    /// Pending records, soonest `next_attempt_at` first: those due at the store's now
    /// (claimed for this gateway when gateways share the store), then the soonest not yet due,
    /// unclaimed, which say when to call again. A record of the second kind is attempted only
    /// once a later call answers it as due, even when it falls due meanwhile.
    fn pending_deliveries(&self, limit: usize) -> StoreFuture<'_, Vec<DeliveryRecord>>;
    /// How many records wait (`pending`) on each channel, counted by the store (a metric).
    fn pending_by_channel(&self) -> StoreFuture<'_, Vec<(String, u64)>>;
    fn update_delivery(&self, id: &str, update: DeliveryUpdate) -> StoreFuture<'_, DeliveryRecord>;
    fn get_delivery(&self, id: &str) -> StoreFuture<'_, Option<DeliveryRecord>>;
    fn list_deliveries(&self, query: DeliveryQuery) -> StoreFuture<'_, Vec<DeliveryRecord>>;
    /// A channel account's cursor ([`WriteOp::SetCursor`]), if it has one.
    fn cursor(&self, name: &str) -> StoreFuture<'_, Option<i64>>;
    /// Every cursor whose name starts with `prefix`, with its position, by name (a channel's
    /// cursors per chat: the chats it knows).
    fn cursors(&self, prefix: &str) -> StoreFuture<'_, Vec<(String, i64)>>;
    /// A channel account's token ([`WriteOp::SetToken`]), if it has one.
    fn token(&self, name: &str) -> StoreFuture<'_, Option<String>>;
}

/// Cron jobs.
pub trait CronStore: Send + Sync {
    /// Stores a new cron job; an id already in use is a `Conflict` and changes nothing.
    fn cron_insert(&self, job: CronJobRecord) -> StoreFuture<'_, ()>;
    /// Every cron job, by id.
    fn cron_list(&self) -> StoreFuture<'_, Vec<CronJobRecord>>;
    fn cron_get(&self, id: &str) -> StoreFuture<'_, Option<CronJobRecord>>;
    /// Removes a cron job and answers it; an unknown id is `NotFound`.
    fn cron_remove(&self, id: &str) -> StoreFuture<'_, CronJobRecord>;
    /// Stores a job's name, `enabled`, schedule, message and `deliver` (its firings stay as
    /// they are); answers false when the job no longer exists.
    fn cron_update(&self, job: CronJobRecord) -> StoreFuture<'_, bool>;
    /// Records a firing of a job: its run and time, and for a scheduled firing its `slot`
    /// (`last_slot` only ever rises). Answers false when the job no longer exists.
    fn cron_record_firing(
        &self,
        id: &str,
        slot: Option<i64>,
        run_id: &RunId,
        at: i64,
    ) -> StoreFuture<'_, bool>;
}

/// DM pairing (`dmPolicy: "pairing"`).
pub trait PairingStore: Send + Sync {
    /// Whether the sender (`channel`, `account`, `sender`) was approved by pairing.
    fn pairing_approved(&self, channel: &str, account: &str, sender: &str)
    -> StoreFuture<'_, bool>;
    /// A request of a sender the policy does not know: see [`PairingAdmission`].
    fn pairing_admit(&self, ask: PairingAsk) -> StoreFuture<'_, PairingAdmission>;
    /// Requests of `channel` (one account's, or all) made after `since` and not approved.
    fn pairing_pending(
        &self,
        channel: &str,
        account: Option<&str>,
        since: i64,
    ) -> StoreFuture<'_, Vec<PairingRecord>>;
    /// Approves the pending request with `code` made after `since`; `NotFound` when none is.
    fn pairing_approve(
        &self,
        channel: &str,
        account: Option<&str>,
        code: &str,
        since: i64,
    ) -> StoreFuture<'_, PairingRecord>;
}

/// The gateways sharing the store: who they are, the work of those that stop, the runs of a
/// session across gateways, and the bus between them. A store of one gateway is [`Alone`] and
/// keeps every default.
pub trait ClusterStore: Send + Sync {
    /// The gateways sharing this store ([`Alone`] by default): when it is shared the engine
    /// takes up the work of those that stop ([`ClusterStore::orphans`]), runs of a session
    /// wait for each other across gateways ([`ClusterStore::lock_session`]) and run events
    /// travel on the [`ClusterStore::bus`].
    fn cluster(&self) -> Arc<dyn Cluster> {
        Arc::new(Alone)
    }
    /// Claims the work of gateways that stopped (a shared store; none otherwise).
    fn orphans(&self) -> StoreFuture<'_, Orphans> {
        Box::pin(async { Ok(Orphans::default()) })
    }
    /// Waits until no other gateway runs `key`, and keeps it so until the lock drops (`None`:
    /// the store is this gateway's alone, its own queues order the runs).
    fn lock_session(&self, _key: &SessionKey) -> StoreFuture<'_, Option<SessionLock>> {
        Box::pin(async { Ok(None) })
    }
    /// [`ClusterStore::lock_session`] without waiting: [`TryLock::Busy`] when another
    /// gateway's run holds `key` now. A store that overrides `lock_session` overrides this too.
    fn try_lock_session(&self, _key: &SessionKey) -> StoreFuture<'_, TryLock> {
        Box::pin(async { Ok(TryLock::Held(None)) })
    }
    /// The bus to the other gateways, when the store is shared.
    fn bus(&self) -> Option<Arc<dyn Bus>> {
        None
    }
    /// How many gateways share the store now, this one included (a metric).
    fn members(&self) -> StoreFuture<'_, u64> {
        Box::pin(async { Ok(1) })
    }
}

/// The whole store: every part, and what spans them — a batch of writes of several parts in
/// one transaction, health, closing.
pub trait Store:
    SessionStore + RunStore + OutboxStore + CronStore + PairingStore + ClusterStore
{
    /// Whether the store answers now, and which backend it is.
    fn health(&self) -> StoreHealth;
    /// Finishes the writes it holds and closes; later calls answer
    /// [`super::StoreError::Closed`].
    fn close(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
    /// Reads served since the store opened (a metric; tests use it to prove a request costs a
    /// fixed number of queries whatever the number of rows).
    fn reads(&self) -> u64;
    /// Statements sent to a database server for requests and runs ([`super::PgStore`]
    /// counts them; a test bounds what a turn costs): none for an embedded store.
    fn statements(&self) -> u64 {
        0
    }
    /// A number that moves on whenever a write may have changed what a read answers, when this
    /// process sees every write ([`super::SqliteStore`]); `None` when others write too (a
    /// shared database): a page read from the store is then never kept for a later request.
    fn version(&self) -> Option<u64> {
        None
    }
    /// The store rows of the sessions that the writes after [`Store::version`] `since` changed,
    /// up to version `to` ([`ListQuery::rows`](super::ListQuery::rows) reads them again), each
    /// once; `None` when the store cannot tell (it keeps no versions, or no longer remembers
    /// that far back).
    fn sessions_touched(&self, _since: u64, _to: u64) -> Option<Vec<i64>> {
        None
    }
    /// Several writes in one transaction (one commit instead of one per write: the run loop's
    /// hot path). The first failing op rolls the whole batch back.
    fn write_batch(&self, ops: Vec<WriteOp>) -> StoreFuture<'_, Vec<WriteOutcome>>;
    /// [`Store::write_batch`] for a caller that goes on beside the commit (a run's tool
    /// result, while its next model call is made), where the store can: sent at once, it is
    /// committed off the caller's thread, and before any write sent after it. A store that
    /// cannot promise that order gives `ops` back, to be written as usual.
    fn write_batch_beside(
        &self,
        ops: Vec<WriteOp>,
    ) -> Result<StoreFuture<'_, Vec<WriteOutcome>>, Vec<WriteOp>> {
        Err(ops)
    }
    /// Whether writes commit one after another in the order they were sent, each sent one
    /// committing (or failing) even when nobody awaits its answer: a write sent after another
    /// commits after it. A tool call's reply may then wait for the call's own write
    /// (`runtime/joined.rs`).
    fn commits_in_order(&self) -> bool {
        false
    }
    /// A run's end ([`Store::write_batch`]), written while `held`, the session's lock the run
    /// kept, is held. A shared store lets the lock go with the batch's commit where it can: no
    /// other gateway finds the session free before the end is visible, and no unlock of its
    /// own follows. Otherwise the lock comes back, to be let go once the end is settled.
    fn write_end(&self, ops: Vec<WriteOp>, held: Option<SessionLock>) -> EndFuture<'_> {
        Box::pin(async move { (self.write_batch(ops).await, held) })
    }
    /// A run's start ([`Store::write_batch`]), written while `held`, the session's lock the run
    /// took, is held. A shared store writes it on the lock's own connection where it can, so
    /// that a turn's statements meet one server process, not two. The lock comes back as it
    /// went in, whatever the outcome.
    fn write_start(&self, ops: Vec<WriteOp>, held: Option<SessionLock>) -> EndFuture<'_> {
        Box::pin(async move { (self.write_batch(ops).await, held) })
    }
    /// The session's entry for a run about to be submitted into it, and what asking for its
    /// lock without waiting found ([`ClusterStore::try_lock_session`]): a run that starts at
    /// once keeps the lock, any other lets it go. A shared store may answer the entry the
    /// session's last run left, with its lock [`TryLock::Unasked`]; else [`Store::read_for_run`].
    fn get_for_run(&self, key: &SessionKey) -> StoreFuture<'_, (Option<SessionEntry>, TryLock)> {
        self.read_for_run(key)
    }
    /// [`Store::get_for_run`] with the entry read now, never a kept one. A shared store reads
    /// and asks for the lock in one statement.
    fn read_for_run(&self, key: &SessionKey) -> StoreFuture<'_, (Option<SessionEntry>, TryLock)> {
        let key = key.clone();
        Box::pin(async move {
            let entry = self.get(&key).await?;
            Ok((entry, self.try_lock_session(&key).await?))
        })
    }
}
