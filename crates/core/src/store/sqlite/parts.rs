//! The parts of [`Store`] on SQLite: reads on the pooled connections, writes on the writer
//! thread (`SqliteStore::read`, `SqliteStore::write`).

use std::path::PathBuf;

use switchboard_protocol::message::TranscriptMessage;

use super::{SqliteStore, cron, exchanges, outbox, pairing, queries, subagents};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{
    Appended, ClusterStore, CronJobRecord, CronStore, Cursor, DeliveryQuery, DeliveryRecord,
    DeliveryUpdate, EntryPatch, EntrySink, ExchangeRecord, HistoryPage, ListPage, ListQuery,
    NewSession, OutboxStore, PairingAdmission, PairingAsk, PairingRecord, PairingStore, RunInput,
    RunQuery, RunRecord, RunStore, SessionEntry, SessionReads, SessionStore, Store, StoreFuture,
    StoredMessage, StoredText, SubagentRecord, WriteOp, WriteOutcome,
};
use crate::store::{DatedMessage, StoreHealth, mirror};

/// At most this many rows named by `rowid` are read as a point read: a turn names one, a send
/// two or three. More go to a pooled reader, as a page does.
const POINT_ROWS: usize = 16;

/// At most this many messages of one transcript are read as a point read, by the primary key:
/// the page of a short transcript (`chat.history` bounds a page by the transcript's
/// `last_seq`), most of it still in the writer's cache. Handed to a blocking thread, such a
/// page waited longer for the two wake-ups than for its rows. Longer pages go to a pooled
/// reader; a short page of large messages (images) holds the task's thread while its rows are
/// copied, as a large entry's read does.
const POINT_MESSAGES: usize = 8;

impl SessionReads for SqliteStore {
    fn transcript_path(&self, agent_id: &str, session_id: &str) -> Option<PathBuf> {
        Some(mirror::transcript_path(
            &self.inner.home,
            agent_id,
            session_id,
        ))
    }

    fn get(&self, key: &SessionKey) -> StoreFuture<'_, Option<SessionEntry>> {
        let key = key.clone();
        self.point_read(move |c| queries::get_entry(c, key.as_str()))
    }

    fn get_by_session_id(&self, session_id: &str) -> StoreFuture<'_, Option<SessionEntry>> {
        let id = session_id.to_string();
        self.point_read(move |c| queries::get_by_session_id(c, &id))
    }

    fn get_by_label(&self, agent_id: &str, label: &str) -> StoreFuture<'_, Option<SessionEntry>> {
        let (agent, label) = (agent_id.to_string(), label.to_string());
        self.point_read(move |c| queries::get_by_label(c, &agent, &label))
    }

    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage> {
        self.read(move |c| queries::list(c, &query))
    }

    fn list_into(
        &self,
        query: ListQuery,
        sink: Box<dyn EntrySink>,
    ) -> StoreFuture<'_, (Box<dyn EntrySink>, Option<Cursor>)> {
        let home = self.inner.home.clone();
        // The few rows a kept page is brought up to date with, each by its `rowid`: a point
        // read, where the writer's cache holds the rows it just wrote.
        if (1..=POINT_ROWS).contains(&query.rows.len()) {
            return self.point_read(move |c| queries::list_into(c, &query, &home, sink));
        }
        self.read(move |c| queries::list_into(c, &query, &home, sink))
    }

    fn count(&self) -> StoreFuture<'_, u64> {
        self.read(queries::count)
    }

    fn count_listed(&self, query: ListQuery) -> StoreFuture<'_, u64> {
        self.read(move |c| queries::count_listed(c, &query))
    }

    fn count_by_agent(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        self.read(queries::count_by_agent)
    }

    fn history_text(
        &self,
        session_id: &str,
        limit: usize,
        before: Option<i64>,
    ) -> StoreFuture<'_, HistoryPage<StoredText>> {
        let id = session_id.to_string();
        if limit <= POINT_MESSAGES {
            return self.point_read(move |c| queries::history_text(c, &id, limit, before));
        }
        self.read(move |c| queries::history_text(c, &id, limit, before))
    }

    fn summary(&self, session_id: &str, before: i64) -> StoreFuture<'_, Option<StoredMessage>> {
        let id = session_id.to_string();
        self.point_read(move |c| queries::summary(c, &id, before))
    }

    fn messages_between(&self, from: i64, to: i64) -> StoreFuture<'_, Vec<DatedMessage>> {
        self.read(move |c| queries::messages_between(c, from, to))
    }

    fn last_messages(
        &self,
        session_ids: Vec<String>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<(String, Vec<StoredMessage>)>> {
        self.read(move |c| queries::last_messages(c, &session_ids, limit))
    }
}

impl SessionStore for SqliteStore {
    fn create(&self, new: NewSession) -> StoreFuture<'_, (SessionEntry, bool)> {
        self.write(move |c, now, m| queries::create(c, new, now, m))
    }

    fn patch(&self, key: &SessionKey, patch: EntryPatch) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |c, now, _| queries::patch(c, key.as_str(), &patch, now, None))
    }

    fn reset(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |c, now, m| queries::reset(c, key.as_str(), now, m))
    }

    fn delete(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |c, now, _| queries::delete(c, key.as_str(), now))
    }

    fn append(
        &self,
        key: &SessionKey,
        create: Option<NewSession>,
        messages: Vec<TranscriptMessage>,
    ) -> StoreFuture<'_, Appended> {
        let key = key.clone();
        self.write(move |c, now, m| queries::append(c, key.as_str(), create, messages, now, m))
    }
}

impl RunStore for SqliteStore {
    fn put_run(&self, run: RunRecord) -> StoreFuture<'_, ()> {
        self.write(move |c, _, _| queries::put_run(c, &run, None))
    }

    fn get_run(&self, run_id: &RunId) -> StoreFuture<'_, Option<RunRecord>> {
        let id = run_id.clone();
        self.point_read(move |c| queries::get_run(c, id.as_str()))
    }

    fn get_run_by_idempotency(&self, key: &str) -> StoreFuture<'_, Option<RunRecord>> {
        let key = key.to_string();
        self.point_read(move |c| queries::get_run_by_idempotency(c, &key))
    }

    fn live_runs(&self) -> StoreFuture<'_, Vec<(RunRecord, Option<RunInput>)>> {
        self.read(queries::live_runs)
    }

    fn list_runs(&self, query: RunQuery) -> StoreFuture<'_, Vec<RunRecord>> {
        self.read(move |c| queries::list_runs(c, &query))
    }

    fn put_subagent(&self, record: SubagentRecord) -> StoreFuture<'_, ()> {
        self.write(move |c, _, _| subagents::put(c, &record))
    }

    fn get_subagent(&self, child_key: &SessionKey) -> StoreFuture<'_, Option<SubagentRecord>> {
        let key = child_key.clone();
        self.point_read(move |c| subagents::get(c, &key))
    }

    fn get_subagents(&self, child_keys: Vec<SessionKey>) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.read(move |c| {
            let mut found = Vec::with_capacity(child_keys.len());
            for key in &child_keys {
                found.extend(subagents::get(c, key)?);
            }
            Ok(found)
        })
    }

    fn unfinished_subagents(&self) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.read(subagents::unfinished)
    }

    fn subagents_to_archive(&self, now: i64) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.read(move |c| subagents::to_archive(c, now))
    }

    fn put_exchange(&self, record: ExchangeRecord) -> StoreFuture<'_, ()> {
        self.write(move |c, _, _| exchanges::put(c, &record))
    }

    fn get_exchange(&self, id: &str) -> StoreFuture<'_, Option<ExchangeRecord>> {
        let id = id.to_string();
        self.point_read(move |c| exchanges::get(c, &id))
    }

    fn unfinished_exchanges(&self) -> StoreFuture<'_, Vec<ExchangeRecord>> {
        self.read(exchanges::unfinished)
    }

    fn list_exchanges(
        &self,
        session: Option<SessionKey>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<ExchangeRecord>> {
        self.read(move |c| exchanges::list(c, session.as_ref(), limit))
    }
}

impl OutboxStore for SqliteStore {
    fn enqueue_delivery(&self, record: DeliveryRecord) -> StoreFuture<'_, (DeliveryRecord, bool)> {
        self.write(move |c, _, _| outbox::enqueue(c, &record))
    }

    fn pending_deliveries(&self, limit: usize) -> StoreFuture<'_, Vec<DeliveryRecord>> {
        self.read(move |c| outbox::pending(c, limit))
    }

    fn update_delivery(&self, id: &str, update: DeliveryUpdate) -> StoreFuture<'_, DeliveryRecord> {
        let id = id.to_string();
        self.write(move |c, now, _| outbox::update(c, &id, &update, now))
    }

    fn get_delivery(&self, id: &str) -> StoreFuture<'_, Option<DeliveryRecord>> {
        let id = id.to_string();
        self.point_read(move |c| outbox::get(c, &id))
    }

    fn list_deliveries(&self, query: DeliveryQuery) -> StoreFuture<'_, Vec<DeliveryRecord>> {
        self.read(move |c| outbox::list(c, &query))
    }

    fn pending_by_channel(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        self.read(outbox::pending_by_channel)
    }

    fn cursor(&self, name: &str) -> StoreFuture<'_, Option<i64>> {
        let name = name.to_string();
        self.point_read(move |c| outbox::cursor(c, &name))
    }

    fn cursors(&self, prefix: &str) -> StoreFuture<'_, Vec<(String, i64)>> {
        let prefix = prefix.to_string();
        self.read(move |c| outbox::cursors(c, &prefix))
    }

    fn token(&self, name: &str) -> StoreFuture<'_, Option<String>> {
        let name = name.to_string();
        self.point_read(move |c| outbox::token(c, &name))
    }
}

impl CronStore for SqliteStore {
    fn cron_insert(&self, job: CronJobRecord) -> StoreFuture<'_, ()> {
        self.write(move |c, _, _| cron::insert(c, &job))
    }

    fn cron_list(&self) -> StoreFuture<'_, Vec<CronJobRecord>> {
        self.read(cron::list)
    }

    fn cron_get(&self, id: &str) -> StoreFuture<'_, Option<CronJobRecord>> {
        let id = id.to_string();
        self.point_read(move |c| cron::get(c, &id))
    }

    fn cron_remove(&self, id: &str) -> StoreFuture<'_, CronJobRecord> {
        let id = id.to_string();
        self.write(move |c, _, _| cron::remove(c, &id))
    }

    fn cron_update(&self, job: CronJobRecord) -> StoreFuture<'_, bool> {
        self.write(move |c, _, _| cron::update(c, &job))
    }

    fn cron_record_firing(
        &self,
        id: &str,
        slot: Option<i64>,
        run_id: &RunId,
        at: i64,
    ) -> StoreFuture<'_, bool> {
        let (id, run_id) = (id.to_string(), run_id.clone());
        self.write(move |c, _, _| cron::record_firing(c, &id, slot, &run_id, at))
    }
}

impl PairingStore for SqliteStore {
    fn pairing_approved(
        &self,
        channel: &str,
        account: &str,
        sender: &str,
    ) -> StoreFuture<'_, bool> {
        let who = [channel, account, sender].map(str::to_string);
        self.point_read(move |c| pairing::approved(c, (&who[0], &who[1], &who[2])))
    }

    fn pairing_admit(&self, ask: PairingAsk) -> StoreFuture<'_, PairingAdmission> {
        self.write(move |c, now, _| pairing::admit(c, &ask, now))
    }

    fn pairing_pending(
        &self,
        channel: &str,
        account: Option<&str>,
        since: i64,
    ) -> StoreFuture<'_, Vec<PairingRecord>> {
        let (channel, account) = (channel.to_string(), account.map(str::to_string));
        self.read(move |c| pairing::pending(c, &channel, account.as_deref(), since))
    }

    fn pairing_approve(
        &self,
        channel: &str,
        account: Option<&str>,
        code: &str,
        since: i64,
    ) -> StoreFuture<'_, PairingRecord> {
        let (channel, code) = (channel.to_string(), code.to_string());
        let account = account.map(str::to_string);
        self.write(move |c, now, _| {
            pairing::approve(c, (&channel, account.as_deref(), &code), since, now)
        })
    }
}

impl ClusterStore for SqliteStore {}

impl Store for SqliteStore {
    /// A local file always answers; its failures are errors of the calls that meet them.
    fn health(&self) -> StoreHealth {
        StoreHealth::ok("sqlite")
    }

    fn close(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(SqliteStore::close(self))
    }

    fn reads(&self) -> u64 {
        SqliteStore::reads(self)
    }

    fn version(&self) -> Option<u64> {
        Some(SqliteStore::version(self))
    }

    fn sessions_touched(&self, since: u64, to: u64) -> Option<Vec<i64>> {
        SqliteStore::sessions_touched(self, since, to)
    }

    fn write_batch(&self, ops: Vec<WriteOp>) -> StoreFuture<'_, Vec<WriteOutcome>> {
        self.write(move |c, now, m| super::write_ops(c, ops, now, m))
    }

    /// Queued now and committed by the writer thread: the one writer commits in the order
    /// writes were queued.
    fn write_batch_beside(
        &self,
        ops: Vec<WriteOp>,
    ) -> Result<StoreFuture<'_, Vec<WriteOutcome>>, Vec<WriteOp>> {
        Ok(self.write_by(
            move |c, now, m| super::write_ops(c, ops, now, m),
            super::Committer::WriterThread,
        ))
    }

    /// The one writer commits jobs in the order they were queued (`writer.rs`).
    fn commits_in_order(&self) -> bool {
        true
    }
}
