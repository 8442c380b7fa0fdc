//! A store that fails chosen calls: [`Faults::fail`] makes the next calls of one method for one
//! key answer a backend error; everything else goes to the real store it wraps (SQLite, or the
//! matrix's PostgreSQL). For tests that prove a store error at a given moment is not taken for
//! an answer. [`Faults::slow_claims`] makes the outbox's claims take time on a manual clock
//! instead, and notes any delivery attempted without a claim.

use std::collections::HashSet;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use switchboard_core::clock::{Clock, ManualClock};
use switchboard_core::engine::StoreWrapper;
use switchboard_core::store::{
    Appended, Bus, Cluster, ClusterStore, CronJobRecord, CronStore, DatedMessage, DeliveryQuery,
    DeliveryRecord, DeliveryUpdate, EntryPatch, ExchangeRecord, HistoryPage, ListPage, ListQuery,
    NewSession, Orphans, OutboxStore, PairingAdmission, PairingAsk, PairingRecord, PairingStore,
    RunInput, RunRecord, RunStore, SessionEntry, SessionLock, SessionReads, SessionStore, Store,
    StoreError, StoreFuture, StoredMessage, StoredText, SubagentRecord, TryLock, WriteOp,
    WriteOutcome,
};
use switchboard_core::{RunId, SessionKey};

/// The store calls that can be made to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// [`Store::get`], by session key.
    Get,
    /// [`Store::get_run`], by run id.
    GetRun,
    /// [`Store::get_delivery`], by record id.
    GetDelivery,
}

#[derive(Debug)]
struct Fault {
    call: Call,
    key: String,
    left: u32,
    /// How many calls it failed so far.
    failed: u32,
}

/// The switch of a [`FailingStore`], kept by the test.
#[derive(Clone, Default)]
pub struct Faults(Arc<Mutex<Vec<Fault>>>, Arc<Mutex<Claims>>);

/// The outbox's claims made slow ([`Faults::slow_claims`]), and what they answered.
#[derive(Default)]
struct Claims {
    /// The clock each claim moves on, and by how many ms, while it is made.
    slow: Option<(Arc<ManualClock>, i64)>,
    /// Records a claim answered as due: the outbox may attempt them.
    due: HashSet<String>,
    /// Records read for an attempt that no claim had answered as due.
    unclaimed: Vec<String>,
}

impl Faults {
    /// The next `times` calls of `call` for `key` fail.
    pub fn fail(&self, call: Call, key: &str, times: u32) {
        self.0.lock().unwrap().push(Fault {
            call,
            key: key.to_string(),
            left: times,
            failed: 0,
        });
    }

    /// How many calls of `call` for `key` were failed so far.
    pub fn failed(&self, call: Call, key: &str) -> u32 {
        let faults = self.0.lock().unwrap();
        faults
            .iter()
            .filter(|f| f.call == call && f.key == key)
            .map(|f| f.failed)
            .sum()
    }

    /// Whether this call fails (and counts it).
    fn take(&self, call: Call, key: &str) -> bool {
        let mut faults = self.0.lock().unwrap();
        let fault = faults
            .iter_mut()
            .find(|f| f.call == call && f.key == key && f.left > 0);
        fault.is_some_and(|f| {
            f.left -= 1;
            f.failed += 1;
            true
        })
    }

    /// Each claim of due deliveries moves `clock` on by `ms` while it is made, as a claim does
    /// on a busy database; from now on every delivery read for an attempt is checked against
    /// what the claims answered as due.
    pub fn slow_claims(&self, clock: Arc<ManualClock>, ms: i64) {
        self.1.lock().unwrap().slow = Some((clock, ms));
    }

    /// Deliveries read for an attempt that no claim had answered as due (see
    /// [`Faults::slow_claims`]).
    pub fn unclaimed(&self) -> Vec<String> {
        self.1.lock().unwrap().unclaimed.clone()
    }

    /// The engine option that puts a [`FailingStore`] with these faults around the real store.
    pub fn wrapper(&self) -> StoreWrapper {
        let faults = self.clone();
        Box::new(move |inner| Arc::new(FailingStore { inner, faults }) as Arc<dyn Store>)
    }
}

/// The wrapper itself.
pub struct FailingStore {
    inner: Arc<dyn Store>,
    faults: Faults,
}

impl FailingStore {
    /// The real call unless the fault fires for (`call`, `key`).
    fn or_fail<'a, T: Send + 'a>(
        &self,
        call: Call,
        key: &str,
        then: impl FnOnce() -> StoreFuture<'a, T>,
    ) -> StoreFuture<'a, T> {
        if !self.faults.take(call, key) {
            return then();
        }
        let error = StoreError::Backend(format!("injected failure of {call:?} for {key}"));
        Box::pin(async move { Err(error) })
    }
}

impl SessionReads for FailingStore {
    fn transcript_path(&self, agent_id: &str, session_id: &str) -> Option<PathBuf> {
        self.inner.transcript_path(agent_id, session_id)
    }

    fn get(&self, key: &SessionKey) -> StoreFuture<'_, Option<SessionEntry>> {
        self.or_fail(Call::Get, key.as_str(), || self.inner.get(key))
    }

    fn count_listed(&self, query: ListQuery) -> StoreFuture<'_, u64> {
        self.inner.count_listed(query)
    }

    fn messages_between(&self, from: i64, to: i64) -> StoreFuture<'_, Vec<DatedMessage>> {
        self.inner.messages_between(from, to)
    }

    fn get_by_session_id(&self, session_id: &str) -> StoreFuture<'_, Option<SessionEntry>> {
        self.inner.get_by_session_id(session_id)
    }

    fn get_by_label(&self, agent_id: &str, label: &str) -> StoreFuture<'_, Option<SessionEntry>> {
        self.inner.get_by_label(agent_id, label)
    }

    fn list(&self, query: ListQuery) -> StoreFuture<'_, ListPage> {
        self.inner.list(query)
    }

    fn count(&self) -> StoreFuture<'_, u64> {
        self.inner.count()
    }

    fn count_by_agent(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        self.inner.count_by_agent()
    }

    fn history_text(
        &self,
        session_id: &str,
        limit: usize,
        before: Option<i64>,
    ) -> StoreFuture<'_, HistoryPage<StoredText>> {
        self.inner.history_text(session_id, limit, before)
    }

    fn summary(&self, session_id: &str, before: i64) -> StoreFuture<'_, Option<StoredMessage>> {
        self.inner.summary(session_id, before)
    }

    fn last_messages(
        &self,
        session_ids: Vec<String>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<(String, Vec<StoredMessage>)>> {
        self.inner.last_messages(session_ids, limit)
    }
}

impl SessionStore for FailingStore {
    fn create(&self, new: NewSession) -> StoreFuture<'_, (SessionEntry, bool)> {
        self.inner.create(new)
    }

    fn patch(&self, key: &SessionKey, patch: EntryPatch) -> StoreFuture<'_, SessionEntry> {
        self.inner.patch(key, patch)
    }

    fn reset(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry> {
        self.inner.reset(key)
    }

    fn delete(&self, key: &SessionKey) -> StoreFuture<'_, SessionEntry> {
        self.inner.delete(key)
    }

    fn append(
        &self,
        key: &SessionKey,
        create: Option<NewSession>,
        messages: Vec<switchboard_protocol::message::TranscriptMessage>,
    ) -> StoreFuture<'_, Appended> {
        self.inner.append(key, create, messages)
    }
}

impl RunStore for FailingStore {
    fn put_run(&self, run: RunRecord) -> StoreFuture<'_, ()> {
        self.inner.put_run(run)
    }

    fn get_run(&self, run_id: &RunId) -> StoreFuture<'_, Option<RunRecord>> {
        self.or_fail(Call::GetRun, run_id.as_str(), || self.inner.get_run(run_id))
    }

    fn get_run_by_idempotency(&self, key: &str) -> StoreFuture<'_, Option<RunRecord>> {
        self.inner.get_run_by_idempotency(key)
    }

    fn live_runs(&self) -> StoreFuture<'_, Vec<(RunRecord, Option<RunInput>)>> {
        self.inner.live_runs()
    }

    fn list_runs(
        &self,
        query: switchboard_core::store::RunQuery,
    ) -> StoreFuture<'_, Vec<RunRecord>> {
        self.inner.list_runs(query)
    }

    fn put_subagent(&self, record: SubagentRecord) -> StoreFuture<'_, ()> {
        self.inner.put_subagent(record)
    }

    fn get_subagent(&self, child_key: &SessionKey) -> StoreFuture<'_, Option<SubagentRecord>> {
        self.inner.get_subagent(child_key)
    }

    fn get_subagents(&self, child_keys: Vec<SessionKey>) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.inner.get_subagents(child_keys)
    }

    fn unfinished_subagents(&self) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.inner.unfinished_subagents()
    }

    fn subagents_to_archive(&self, now: i64) -> StoreFuture<'_, Vec<SubagentRecord>> {
        self.inner.subagents_to_archive(now)
    }

    fn put_exchange(&self, record: ExchangeRecord) -> StoreFuture<'_, ()> {
        self.inner.put_exchange(record)
    }

    fn get_exchange(&self, id: &str) -> StoreFuture<'_, Option<ExchangeRecord>> {
        self.inner.get_exchange(id)
    }

    fn unfinished_exchanges(&self) -> StoreFuture<'_, Vec<ExchangeRecord>> {
        self.inner.unfinished_exchanges()
    }

    fn list_exchanges(
        &self,
        session: Option<SessionKey>,
        limit: usize,
    ) -> StoreFuture<'_, Vec<ExchangeRecord>> {
        self.inner.list_exchanges(session, limit)
    }
}

impl OutboxStore for FailingStore {
    fn enqueue_delivery(&self, record: DeliveryRecord) -> StoreFuture<'_, (DeliveryRecord, bool)> {
        self.inner.enqueue_delivery(record)
    }

    fn pending_deliveries(&self, limit: usize) -> StoreFuture<'_, Vec<DeliveryRecord>> {
        let slow = self.faults.1.lock().unwrap().slow.clone();
        let Some((clock, ms)) = slow else {
            return self.inner.pending_deliveries(limit);
        };
        Box::pin(async move {
            let at = clock.now_ms();
            let pending = self.inner.pending_deliveries(limit).await?;
            let due = pending.iter().filter(|r| r.next_attempt_at <= at);
            let mut claims = self.faults.1.lock().unwrap();
            claims.due.extend(due.map(|r| r.id.clone()));
            clock.advance(ms);
            Ok(pending)
        })
    }

    fn update_delivery(&self, id: &str, update: DeliveryUpdate) -> StoreFuture<'_, DeliveryRecord> {
        self.inner.update_delivery(id, update)
    }

    fn pending_by_channel(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        self.inner.pending_by_channel()
    }

    fn get_delivery(&self, id: &str) -> StoreFuture<'_, Option<DeliveryRecord>> {
        let mut claims = self.faults.1.lock().unwrap();
        if claims.slow.is_some() && !claims.due.contains(id) {
            claims.unclaimed.push(id.to_string());
        }
        drop(claims);
        self.or_fail(Call::GetDelivery, id, || self.inner.get_delivery(id))
    }

    fn list_deliveries(&self, query: DeliveryQuery) -> StoreFuture<'_, Vec<DeliveryRecord>> {
        self.inner.list_deliveries(query)
    }

    fn cursor(&self, name: &str) -> StoreFuture<'_, Option<i64>> {
        self.inner.cursor(name)
    }

    fn cursors(&self, prefix: &str) -> StoreFuture<'_, Vec<(String, i64)>> {
        self.inner.cursors(prefix)
    }

    fn token(&self, name: &str) -> StoreFuture<'_, Option<String>> {
        self.inner.token(name)
    }
}

impl CronStore for FailingStore {
    fn cron_insert(&self, job: CronJobRecord) -> StoreFuture<'_, ()> {
        self.inner.cron_insert(job)
    }

    fn cron_list(&self) -> StoreFuture<'_, Vec<CronJobRecord>> {
        self.inner.cron_list()
    }

    fn cron_get(&self, id: &str) -> StoreFuture<'_, Option<CronJobRecord>> {
        self.inner.cron_get(id)
    }

    fn cron_remove(&self, id: &str) -> StoreFuture<'_, CronJobRecord> {
        self.inner.cron_remove(id)
    }

    fn cron_update(&self, job: CronJobRecord) -> StoreFuture<'_, bool> {
        self.inner.cron_update(job)
    }

    fn cron_record_firing(
        &self,
        id: &str,
        slot: Option<i64>,
        run_id: &RunId,
        at: i64,
    ) -> StoreFuture<'_, bool> {
        self.inner.cron_record_firing(id, slot, run_id, at)
    }
}

impl PairingStore for FailingStore {
    fn pairing_approved(
        &self,
        channel: &str,
        account: &str,
        sender: &str,
    ) -> StoreFuture<'_, bool> {
        self.inner.pairing_approved(channel, account, sender)
    }

    fn pairing_admit(&self, ask: PairingAsk) -> StoreFuture<'_, PairingAdmission> {
        self.inner.pairing_admit(ask)
    }

    fn pairing_pending(
        &self,
        channel: &str,
        account: Option<&str>,
        since: i64,
    ) -> StoreFuture<'_, Vec<PairingRecord>> {
        self.inner.pairing_pending(channel, account, since)
    }

    fn pairing_approve(
        &self,
        channel: &str,
        account: Option<&str>,
        code: &str,
        since: i64,
    ) -> StoreFuture<'_, PairingRecord> {
        self.inner.pairing_approve(channel, account, code, since)
    }
}

impl ClusterStore for FailingStore {
    fn cluster(&self) -> Arc<dyn Cluster> {
        self.inner.cluster()
    }

    fn orphans(&self) -> StoreFuture<'_, Orphans> {
        self.inner.orphans()
    }

    fn lock_session(&self, key: &SessionKey) -> StoreFuture<'_, Option<SessionLock>> {
        self.inner.lock_session(key)
    }

    fn try_lock_session(&self, key: &SessionKey) -> StoreFuture<'_, TryLock> {
        self.inner.try_lock_session(key)
    }

    fn bus(&self) -> Option<Arc<dyn Bus>> {
        self.inner.bus()
    }
}

impl Store for FailingStore {
    fn health(&self) -> switchboard_core::store::StoreHealth {
        self.inner.health()
    }

    fn close(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.inner.close()
    }

    fn reads(&self) -> u64 {
        self.inner.reads()
    }

    fn write_batch(&self, ops: Vec<WriteOp>) -> StoreFuture<'_, Vec<WriteOutcome>> {
        self.inner.write_batch(ops)
    }
}
