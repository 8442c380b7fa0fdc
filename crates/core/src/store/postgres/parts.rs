//! The parts of [`Store`] on PostgreSQL: reads on a pooled connection, writes in a transaction
//! tried again when it loses to a concurrent one, claims after `cluster::begin_claim`.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use switchboard_protocol::message::TranscriptMessage;

use super::{
    DELIVERY_LEASE_MS, PgStore, SessionLock, cluster, cron, exchanges, outbox, pairing, queries,
    subagents, write_op,
};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{
    Appended, ClusterStore, CronJobRecord, CronStore, Cursor, DeliveryQuery, DeliveryRecord,
    DeliveryUpdate, EntryPatch, EntrySink, ExchangeRecord, HistoryPage, ListPage, ListQuery,
    NewSession, OutboxStore, PairingAdmission, PairingAsk, PairingRecord, PairingStore, RunInput,
    RunQuery, RunRecord, RunStore, SessionEntry, SessionReads, SessionStore, Store, StoreFuture,
    StoredMessage, StoredText, SubagentRecord, WriteOp, WriteOutcome,
};
use crate::store::{Cluster, DatedMessage, EndFuture, Orphans, StoreHealth, TryLock};

impl SessionReads for PgStore {
    fn transcript_path(&self, _agent_id: &str, _session_id: &str) -> Option<PathBuf> {
        None
    }

    fn get(&self, key: &SessionKey) -> StoreFuture<'_, Option<SessionEntry>> {
        let key = key.clone();
        self.read(move |db| Box::pin(async move { queries::get_entry(db, key.as_str()).await }))
    }

    fn get_by_session_id(&self, session_id: &str) -> StoreFuture<'_, Option<SessionEntry>> {
        let id = session_id.to_string();
        self.read(move |db| Box::pin(async move { queries::get_by_session_id(db, &id).await }))
    }

    fn get_by_label(&self, agent_id: &str, label: &str) -> StoreFuture<'_, Option<SessionEntry>> {
        let (agent, label) = (agent_id.to_string(), label.to_string());
        self.read(move |db| {
            Box::pin(async move { queries::get_by_label(db, &agent, &label).await })
        })
    }

    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage> {
        self.read(move |db| Box::pin(async move { queries::list(db, &query).await }))
    }

    fn list_into(
        &self,
        query: ListQuery,
        sink: Box<dyn EntrySink>,
    ) -> StoreFuture<'_, (Box<dyn EntrySink>, Option<Cursor>)> {
        self.read(move |db| Box::pin(async move { queries::list_into(db, &query, sink).await }))
    }

    fn count(&self) -> StoreFuture<'_, u64> {
        self.read(|db| Box::pin(queries::count(db)))
    }

    fn count_listed(&self, query: ListQuery) -> StoreFuture<'_, u64> {
        self.read(move |db| Box::pin(async move { queries::count_listed(db, &query).await }))
    }

    fn count_by_agent(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        self.read(|db| Box::pin(queries::count_by_agent(db)))
    }

    fn history_text(
        &self,
        session_id: &str,
        limit: usize,
        before: Option<i64>,
    ) -> StoreFuture<'_, HistoryPage<StoredText>> {
        let id = session_id.to_string();
        self.read(move |db| {
            Box::pin(async move { queries::history_text(db, &id, limit, before).await })
        })
    }

    fn summary(&self, session_id: &str, before: i64) -> StoreFuture<'_, Option<StoredMessage>> {
        let id = session_id.to_string();
        self.read(move |db| Box::pin(async move { queries::summary(db, &id, before).await }))
    }

    fn messages_between(&self, from: i64, to: i64) -> StoreFuture<'_, Vec<DatedMessage>> {
        self.read(move |db| Box::pin(async move { queries::messages_between(db, from, to).await }))
    }

    fn last_messages(
        &self,
        session_ids: Vec<String>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<(String, Vec<StoredMessage>)>> {
        self.read(move |db| {
            Box::pin(async move { queries::last_messages(db, &session_ids, limit).await })
        })
    }
}

impl SessionStore for PgStore {
    fn create(&self, new: NewSession) -> StoreFuture<'_, (SessionEntry, bool)> {
        self.write(move |db, now| {
            let new = new.clone();
            Box::pin(async move { queries::create(db, new, now).await })
        })
    }

    fn patch(&self, key: &SessionKey, patch: EntryPatch) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |db, now| {
            let (key, patch) = (key.clone(), patch.clone());
            Box::pin(async move { queries::patch(db, key.as_str(), &patch, now, None).await })
        })
    }

    fn reset(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |db, now| {
            let key = key.clone();
            Box::pin(async move { queries::reset(db, key.as_str(), now).await })
        })
    }

    fn delete(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry> {
        let key = key.clone();
        self.write(move |db, now| {
            let key = key.clone();
            Box::pin(async move { queries::delete(db, key.as_str(), now).await })
        })
    }

    fn append(
        &self,
        key: &SessionKey,
        create: Option<NewSession>,
        messages: Vec<TranscriptMessage>,
    ) -> StoreFuture<'_, Appended> {
        let key = key.clone();
        self.write(move |db, now| {
            let (key, create, messages) = (key.clone(), create.clone(), messages.clone());
            Box::pin(async move { queries::append(db, key.as_str(), create, messages, now).await })
        })
    }
}

impl RunStore for PgStore {
    fn put_run(&self, run: RunRecord) -> StoreFuture<'_, ()> {
        self.write(move |db, _| {
            let run = run.clone();
            Box::pin(async move { queries::put_run(db, &run, None).await })
        })
    }

    fn get_run(&self, run_id: &RunId) -> StoreFuture<'_, Option<RunRecord>> {
        let id = run_id.clone();
        self.read(move |db| Box::pin(async move { queries::get_run(db, id.as_str()).await }))
    }

    fn get_run_by_idempotency(&self, key: &str) -> StoreFuture<'_, Option<RunRecord>> {
        let key = key.to_string();
        self.read(move |db| {
            Box::pin(async move { queries::get_run_by_idempotency(db, &key).await })
        })
    }

    fn live_runs(&self) -> StoreFuture<'_, Vec<(RunRecord, Option<RunInput>)>> {
        self.claim(|db| Box::pin(cluster::claim_runs(db)))
    }

    fn list_runs(&self, query: RunQuery) -> StoreFuture<'_, Vec<RunRecord>> {
        self.read(move |db| {
            let query = query.clone();
            Box::pin(async move { queries::list_runs(db, &query).await })
        })
    }

    fn put_subagent(&self, record: SubagentRecord) -> StoreFuture<'_, ()> {
        self.write(move |db, _| {
            let record = record.clone();
            Box::pin(async move { subagents::put(db, &record).await })
        })
    }

    fn get_subagent(&self, child_key: &SessionKey) -> StoreFuture<'_, Option<SubagentRecord>> {
        let key = child_key.clone();
        self.read(move |db| Box::pin(async move { subagents::get(db, &key).await }))
    }

    fn get_subagents(&self, child_keys: Vec<SessionKey>) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.read(move |db| Box::pin(async move { subagents::get_many(db, &child_keys).await }))
    }

    fn unfinished_subagents(&self) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.claim(|db| Box::pin(subagents::claim(db)))
    }

    fn subagents_to_archive(&self, now: i64) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.read(move |db| Box::pin(subagents::to_archive(db, now)))
    }

    fn put_exchange(&self, record: ExchangeRecord) -> StoreFuture<'_, ()> {
        self.write(move |db, _| {
            let record = record.clone();
            Box::pin(async move { exchanges::put(db, &record).await })
        })
    }

    fn get_exchange(&self, id: &str) -> StoreFuture<'_, Option<ExchangeRecord>> {
        let id = id.to_string();
        self.read(move |db| Box::pin(async move { exchanges::get(db, &id).await }))
    }

    fn unfinished_exchanges(&self) -> StoreFuture<'_, Vec<ExchangeRecord>> {
        self.claim(|db| Box::pin(exchanges::claim(db)))
    }

    fn list_exchanges(
        &self,
        session: Option<SessionKey>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<ExchangeRecord>> {
        self.read(move |db| {
            Box::pin(async move { exchanges::list(db, session.as_ref(), limit).await })
        })
    }
}

impl OutboxStore for PgStore {
    fn enqueue_delivery(&self, record: DeliveryRecord) -> StoreFuture<'_, (DeliveryRecord, bool)> {
        self.write(move |db, _| {
            let record = record.clone();
            Box::pin(async move { outbox::enqueue(db, &record).await })
        })
    }

    fn pending_deliveries(&self, limit: usize) -> StoreFuture<'_, Vec<DeliveryRecord>> {
        self.write_as(super::Kind::Background, move |db, now| {
            Box::pin(outbox::claim(db, limit, now, DELIVERY_LEASE_MS))
        })
    }

    fn update_delivery(&self, id: &str, update: DeliveryUpdate) -> StoreFuture<'_, DeliveryRecord> {
        let id = id.to_string();
        self.write(move |db, now| {
            let (id, update) = (id.clone(), update.clone());
            Box::pin(async move { outbox::update(db, &id, &update, now).await })
        })
    }

    fn get_delivery(&self, id: &str) -> StoreFuture<'_, Option<DeliveryRecord>> {
        let id = id.to_string();
        self.read(move |db| Box::pin(async move { outbox::get(db, &id).await }))
    }

    fn list_deliveries(&self, query: DeliveryQuery) -> StoreFuture<'_, Vec<DeliveryRecord>> {
        self.read(move |db| Box::pin(async move { outbox::list(db, &query).await }))
    }

    fn pending_by_channel(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        self.read(|db| Box::pin(outbox::pending_by_channel(db)))
    }

    fn cursor(&self, name: &str) -> StoreFuture<'_, Option<i64>> {
        let name = name.to_string();
        self.read(move |db| Box::pin(async move { outbox::cursor(db, &name).await }))
    }

    fn cursors(&self, prefix: &str) -> StoreFuture<'_, Vec<(String, i64)>> {
        let prefix = prefix.to_string();
        self.read(move |db| {
            let prefix = prefix.clone();
            Box::pin(async move { outbox::cursors(db, &prefix).await })
        })
    }

    fn token(&self, name: &str) -> StoreFuture<'_, Option<String>> {
        let name = name.to_string();
        self.read(move |db| Box::pin(async move { outbox::token(db, &name).await }))
    }
}

impl CronStore for PgStore {
    fn cron_insert(&self, job: CronJobRecord) -> StoreFuture<'_, ()> {
        self.write(move |db, _| {
            let job = job.clone();
            Box::pin(async move { cron::insert(db, &job).await })
        })
    }

    fn cron_list(&self) -> StoreFuture<'_, Vec<CronJobRecord>> {
        self.read(|db| Box::pin(cron::list(db)))
    }

    fn cron_get(&self, id: &str) -> StoreFuture<'_, Option<CronJobRecord>> {
        let id = id.to_string();
        self.read(move |db| Box::pin(async move { cron::get(db, &id).await }))
    }

    fn cron_remove(&self, id: &str) -> StoreFuture<'_, CronJobRecord> {
        let id = id.to_string();
        self.write(move |db, _| {
            let id = id.clone();
            Box::pin(async move { cron::remove(db, &id).await })
        })
    }

    fn cron_update(&self, job: CronJobRecord) -> StoreFuture<'_, bool> {
        self.write(move |db, _| {
            let job = job.clone();
            Box::pin(async move { cron::update(db, &job).await })
        })
    }

    fn cron_record_firing(
        &self,
        id: &str,
        slot: Option<i64>,
        run_id: &RunId,
        at: i64,
    ) -> StoreFuture<'_, bool> {
        let (id, run_id) = (id.to_string(), run_id.clone());
        self.write(move |db, _| {
            let (id, run_id) = (id.clone(), run_id.clone());
            Box::pin(async move { cron::record_firing(db, &id, slot, &run_id, at).await })
        })
    }
}

impl PairingStore for PgStore {
    fn pairing_approved(
        &self,
        channel: &str,
        account: &str,
        sender: &str,
    ) -> StoreFuture<'_, bool> {
        let who = [channel, account, sender].map(str::to_string);
        self.read(move |db| {
            Box::pin(async move { pairing::approved(db, (&who[0], &who[1], &who[2])).await })
        })
    }

    fn pairing_admit(&self, ask: PairingAsk) -> StoreFuture<'_, PairingAdmission> {
        self.write(move |db, now| {
            let ask = ask.clone();
            Box::pin(async move { pairing::admit(db, &ask, now).await })
        })
    }

    fn pairing_pending(
        &self,
        channel: &str,
        account: Option<&str>,
        since: i64,
    ) -> StoreFuture<'_, Vec<PairingRecord>> {
        let (channel, account) = (channel.to_string(), account.map(str::to_string));
        self.read(move |db| {
            Box::pin(async move { pairing::pending(db, &channel, account.as_deref(), since).await })
        })
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
        self.write(move |db, now| {
            let (channel, account, code) = (channel.clone(), account.clone(), code.clone());
            Box::pin(async move {
                pairing::approve(db, (&channel, account.as_deref(), &code), since, now).await
            })
        })
    }
}

impl ClusterStore for PgStore {
    fn cluster(&self) -> Arc<dyn Cluster> {
        Arc::new(self.clone())
    }

    fn members(&self) -> StoreFuture<'_, u64> {
        self.read(|db| Box::pin(async move { cluster::members(db).await }))
    }

    fn orphans(&self) -> StoreFuture<'_, Orphans> {
        self.claim(|db| {
            Box::pin(async move {
                Ok(Orphans {
                    runs: cluster::claim_runs(db).await?,
                    subagents: subagents::claim(db).await?,
                    exchanges: exchanges::claim(db).await?,
                })
            })
        })
    }

    fn lock_session(&self, key: &SessionKey) -> StoreFuture<'_, Option<SessionLock>> {
        let key = key.as_str().to_string();
        Box::pin(async move {
            let conn = self.locker().await?;
            // Waits while another gateway's run holds it; the server lets it go if this
            // gateway's connection drops (a dead gateway holds nothing).
            self.inner.pool.count(1);
            conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", &[&key])
                .await?;
            Ok(Some(self.held_session(conn, key)))
        })
    }

    fn try_lock_session(&self, key: &SessionKey) -> StoreFuture<'_, TryLock> {
        let key = key.as_str().to_string();
        Box::pin(async move {
            let sql = format!("SELECT {}", queries::TRY_LOCK);
            Ok(self.ask_lock(key, &sql).await?.1)
        })
    }

    fn bus(&self) -> Option<Arc<dyn crate::store::Bus>> {
        let bus = self.inner.bus.get()?.clone();
        Some(bus)
    }
}

impl Store for PgStore {
    fn health(&self) -> StoreHealth {
        let quiet = self
            .inner
            .renewed
            .lock()
            .map(|renewed| renewed.elapsed())
            .unwrap_or_default();
        let last_error = self.inner.last_error.lock().ok().and_then(|e| e.clone());
        let place = self.inner.pool.place();
        StoreHealth::from_quiet("postgres", place, quiet, last_error.as_deref())
    }

    fn close(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(PgStore::close(self))
    }

    fn reads(&self) -> u64 {
        PgStore::reads(self)
    }

    fn statements(&self) -> u64 {
        PgStore::statements(self)
    }

    fn get_for_run(&self, key: &SessionKey) -> StoreFuture<'_, (Option<SessionEntry>, TryLock)> {
        match self.kept_for_run(key.as_str()) {
            Some(kept) => Box::pin(std::future::ready(Ok(kept))),
            None => self.entry_and_lock(key),
        }
    }

    fn read_for_run(&self, key: &SessionKey) -> StoreFuture<'_, (Option<SessionEntry>, TryLock)> {
        self.entry_and_lock(key)
    }

    fn write_end(&self, ops: Vec<WriteOp>, held: Option<SessionLock>) -> EndFuture<'_> {
        match held {
            Some(lock) => self.end_releasing(ops, lock),
            None => Box::pin(async move { (self.write_batch(ops).await, None) }),
        }
    }

    fn write_start(&self, ops: Vec<WriteOp>, held: Option<SessionLock>) -> EndFuture<'_> {
        match held {
            Some(lock) => self.start_asking(ops, lock),
            None => Box::pin(async move { (self.write_batch(ops).await, None) }),
        }
    }

    fn write_batch(&self, ops: Vec<WriteOp>) -> StoreFuture<'_, Vec<WriteOutcome>> {
        if let [op @ (WriteOp::PutRun(_) | WriteOp::QueueRun(..) | WriteOp::NewRun(..))] =
            ops.as_slice()
        {
            // A run's record is one statement (an upsert fenced by its own condition): it
            // commits whole without a transaction around it.
            let op = op.clone();
            return self.write_as(super::Kind::OneStatement, move |db, now| {
                let op = op.clone();
                Box::pin(async move { Ok(vec![write_op(db, op, now, &mut None).await?]) })
            });
        }
        self.write_ops(ops)
    }
}
