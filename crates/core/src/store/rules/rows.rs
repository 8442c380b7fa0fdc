//! Records as rows, the same on every backend: the columns each record is read from and
//! written to, how a row becomes a record (what an unknown status or a broken JSON column
//! becomes), and the values a record binds.
//!
//! A backend adds only what is its own: PostgreSQL's `epoch` and `owner` columns of owned work
//! come after these.

use switchboard_protocol::sessions::DeliveryContext;

use crate::ids::RunId;
use crate::keys::{ChatType, SessionKey, SessionKind};
use crate::store::dialect::{Columns, Dialect, Param, Required, count};
use crate::store::{
    CronJobRecord, DeliveryRecord, DeliveryStatus, EntryView, ExchangeRecord, ExchangeState,
    PairingRecord, RunRecord, RunStatus, SessionEntry, StoreError, SubagentRecord, SubagentState,
};

/// `n` placeholders from parameter `first` on (`?3, ?4` / `$3, $4`), in one string.
pub(crate) fn placeholders(d: Dialect, first: usize, n: usize) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(n * 5);
    for i in first..first + n {
        if i > first {
            out.push_str(", ");
        }
        // Writing to a `String` cannot fail.
        let _ = write!(out, "{}{i}", d.mark);
    }
    out
}

/// The epoch of a record read back: a record from before epochs is held by nobody (the next
/// claim takes it); on a store of one gateway every record is held under 0.
pub(crate) fn epoch(stored: Option<i64>) -> i64 {
    stored.unwrap_or(0)
}

/// The columns [`entry`] reads, in order (`s` = sessions, `t` = transcripts).
pub(crate) const ENTRY_COLUMNS: &str = "s.key, s.session_id, s.agent_id, s.kind, s.created_at, s.updated_at, \
    s.channel, s.chat_type, s.display_name, s.label, s.spawned_by, s.model, s.thinking_level, \
    s.verbose_level, s.system_sent, s.aborted_last_run, s.send_policy, s.last_channel, s.last_to, \
    s.last_account_id, s.last_thread_id, s.delivery_context, s.input_tokens, s.output_tokens, \
    s.total_tokens, s.context_tokens, s.archived_at, t.last_seq, s.last_model, s.cost_usd";

/// How many columns [`ENTRY_COLUMNS`] names (a backend's or a statement's own columns come
/// after them).
pub(crate) const ENTRY_COLUMN_COUNT: usize = 30;

/// Where [`ENTRY_COLUMNS`] are read from.
pub(crate) const ENTRY_FROM: &str = "sessions s JOIN transcripts t ON t.session_id = s.session_id";

/// A row of [`ENTRY_COLUMNS`] as an entry.
pub(crate) fn entry(row: &(impl Columns + ?Sized)) -> Result<SessionEntry, StoreError> {
    entry_view(row).map(EntryView::into_entry)
}

/// A row of [`ENTRY_COLUMNS`] as an entry whose text is borrowed from the row.
pub(crate) fn entry_view(row: &(impl Columns + ?Sized)) -> Result<EntryView<'_>, StoreError> {
    let key = row.req_text_ref(0)?;
    let tokens = |i| row.req_int(i).map(|v| v.max(0) as u64);
    let delivery_context = match row.text_ref(21)? {
        Some(json) => match serde_json::from_str::<DeliveryContext>(json) {
            Ok(route) => Some(route),
            Err(e) => {
                // A route a newer build wrote: the session has none here rather than no row.
                tracing::warn!(%key, error = %e, "a session's stored route does not decode");
                None
            }
        },
        None => None,
    };
    Ok(EntryView {
        key,
        session_id: row.req_text_ref(1)?,
        agent_id: row.req_text_ref(2)?,
        kind: SessionKind::parse(row.req_text_ref(3)?).unwrap_or(SessionKind::Other),
        created_at: row.req_int(4)?,
        updated_at: row.req_int(5)?,
        channel: row.text_ref(6)?,
        chat_type: row.text_ref(7)?.and_then(ChatType::parse),
        display_name: row.text_ref(8)?,
        label: row.text_ref(9)?,
        spawned_by: row.text_ref(10)?,
        model: row.text_ref(11)?,
        thinking_level: row.text_ref(12)?,
        verbose_level: row.text_ref(13)?,
        system_sent: row.req_flag(14)?,
        aborted_last_run: row.req_flag(15)?,
        send_policy: row.text_ref(16)?,
        last_channel: row.text_ref(17)?,
        last_to: row.text_ref(18)?,
        last_account_id: row.text_ref(19)?,
        last_thread_id: row.text_ref(20)?,
        delivery_context,
        input_tokens: tokens(22)?,
        output_tokens: tokens(23)?,
        total_tokens: tokens(24)?,
        context_tokens: row.int(25)?.map(|v| v.max(0) as u64),
        archived_at: row.int(26)?,
        last_seq: row.req_int(27)?,
        last_model: row.text_ref(28)?,
        cost_usd: row.req_real(29)?,
        row: 0,
    })
}

/// Every field of a stored entry but `session_id`, set from [`entry_params`] (`?1` is its key):
/// the end of [`WRITE_ENTRY`] and [`PATCH_ENTRY`].
macro_rules! entry_fields {
    () => {
        "updated_at = ?3, channel = ?4, display_name = ?5, label = ?6, spawned_by = ?7, \
         model = ?8, thinking_level = ?9, verbose_level = ?10, system_sent = ?11, \
         aborted_last_run = ?12, send_policy = ?13, last_channel = ?14, last_to = ?15, \
         last_account_id = ?16, last_thread_id = ?17, delivery_context = ?18, \
         input_tokens = ?19, output_tokens = ?20, total_tokens = ?21, context_tokens = ?22, \
         archived_at = ?23, last_model = ?24, cost_usd = ?25 WHERE key = ?1"
    };
}

/// The statement that writes every field of a stored entry (`?1` is its key).
pub(crate) const WRITE_ENTRY: &str =
    concat!("UPDATE sessions SET session_id = ?2, ", entry_fields!());

/// [`WRITE_ENTRY`] for a patch, which never changes the transcript: `session_id` is not set
/// (`?2` is bound and unused), so its unique index is not rewritten with the same value (SQLite
/// rewrites every index whose column an UPDATE sets, one WAL page more a turn).
pub(crate) const PATCH_ENTRY: &str = concat!("UPDATE sessions SET ", entry_fields!());

/// The values of [`WRITE_ENTRY`] and [`PATCH_ENTRY`].
pub(crate) fn entry_params(e: &SessionEntry) -> Result<Vec<Param>, StoreError> {
    let route = e
        .delivery_context
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|err| {
            StoreError::Backend(format!(
                "the route of {} could not be encoded: {err}",
                e.key
            ))
        })?;
    Ok(vec![
        e.key.as_str().into(),
        e.session_id.clone().into(),
        e.updated_at.into(),
        e.channel.clone().into(),
        e.display_name.clone().into(),
        e.label.clone().into(),
        e.spawned_by.as_ref().map(SessionKey::as_str).into(),
        e.model.clone().into(),
        e.thinking_level.clone().into(),
        e.verbose_level.clone().into(),
        e.system_sent.into(),
        e.aborted_last_run.into(),
        e.send_policy.clone().into(),
        e.last_channel.clone().into(),
        e.last_to.clone().into(),
        e.last_account_id.clone().into(),
        e.last_thread_id.clone().into(),
        route.into(),
        count(e.input_tokens).into(),
        count(e.output_tokens).into(),
        count(e.total_tokens).into(),
        e.context_tokens.map(count).into(),
        e.archived_at.into(),
        e.last_model.clone().into(),
        e.cost_usd.into(),
    ])
}

/// The columns [`run`] reads, in order.
pub(crate) const RUN_COLUMNS: &str = "run_id, session_key, session_id, status, lane, created_at, \
    started_at, ended_at, result, error, idempotency_key, model, cost_usd";
/// How many columns [`RUN_COLUMNS`] names (a backend's own columns come after them).
pub(crate) const RUN_COLUMN_COUNT: usize = 13;

/// A row of [`RUN_COLUMNS`] as a run record, held under epoch 0 (a backend that fences sets it).
pub(crate) fn run(row: &(impl Columns + ?Sized)) -> Result<RunRecord, StoreError> {
    Ok(RunRecord {
        run_id: RunId::from_string(row.req_text(0)?),
        session_key: SessionKey::from_canonical(row.req_text(1)?),
        session_id: row.text(2)?,
        // A status a newer build wrote: the run is over as far as this one knows.
        status: RunStatus::parse(&row.req_text(3)?).unwrap_or(RunStatus::Aborted),
        lane: row.req_text(4)?,
        created_at: row.req_int(5)?,
        started_at: row.int(6)?,
        ended_at: row.int(7)?,
        result: row.text(8)?,
        error: row.text(9)?,
        idempotency_key: row.text(10)?,
        model: row.text(11)?,
        cost_usd: row.real(12)?,
        epoch: 0,
    })
}

/// The values of [`RUN_COLUMNS`] for `run`.
pub(crate) fn run_params(run: &RunRecord) -> Vec<Param> {
    vec![
        run.run_id.as_str().into(),
        run.session_key.as_str().into(),
        run.session_id.clone().into(),
        run.status.as_str().into(),
        run.lane.clone().into(),
        run.created_at.into(),
        run.started_at.into(),
        run.ended_at.into(),
        run.result.clone().into(),
        run.error.clone().into(),
        run.idempotency_key.clone().into(),
        run.model.clone().into(),
        run.cost_usd.into(),
    ]
}

/// What a stored run's update changes (its submission fields stay as first stored).
pub(crate) const RUN_UPDATE: &str = "session_id = excluded.session_id, status = excluded.status, \
     lane = excluded.lane, started_at = excluded.started_at, ended_at = excluded.ended_at, \
     result = excluded.result, error = excluded.error, model = excluded.model, \
     cost_usd = excluded.cost_usd, input = excluded.input";

/// The columns [`delivery`] reads, in order.
pub(crate) const DELIVERY_COLUMNS: &str = "id, idempotency_key, kind, session_key, run_id, channel, recipient, \
    account_id, thread_id, body, status, attempts, next_attempt_at, detail, created_at, \
    updated_at, delivered_at, source_key, parts_sent, trace";
/// How many columns [`DELIVERY_COLUMNS`] names (a query's extra column comes after them).
pub(crate) const DELIVERY_COLUMN_COUNT: usize = 20;

/// A row of [`DELIVERY_COLUMNS`] as an outbox record.
pub(crate) fn delivery(row: &(impl Columns + ?Sized)) -> Result<DeliveryRecord, StoreError> {
    Ok(DeliveryRecord {
        id: row.req_text(0)?,
        idempotency_key: row.text(1)?,
        kind: row.req_text(2)?,
        session_key: row.text(3)?.map(SessionKey::from_canonical),
        run_id: row.text(4)?.map(RunId::from_string),
        channel: row.req_text(5)?,
        to: row.req_text(6)?,
        account_id: row.text(7)?,
        thread_id: row.text(8)?,
        text: row.req_text(9)?,
        // A status a newer build wrote is not attempted again here.
        status: DeliveryStatus::parse(&row.req_text(10)?).unwrap_or(DeliveryStatus::Failed),
        attempts: row.req_u32(11)?,
        next_attempt_at: row.req_int(12)?,
        detail: row.text(13)?,
        created_at: row.req_int(14)?,
        updated_at: row.req_int(15)?,
        delivered_at: row.int(16)?,
        source_key: row.text(17)?.map(SessionKey::from_canonical),
        parts_sent: row.req_u32(18)?,
        trace: row.text(19)?,
    })
}

/// The values of [`DELIVERY_COLUMNS`] for `r`.
pub(crate) fn delivery_params(r: &DeliveryRecord) -> Vec<Param> {
    vec![
        r.id.clone().into(),
        r.idempotency_key.clone().into(),
        r.kind.clone().into(),
        r.session_key.as_deref().into(),
        r.run_id.as_deref().into(),
        r.channel.clone().into(),
        r.to.clone().into(),
        r.account_id.clone().into(),
        r.thread_id.clone().into(),
        r.text.clone().into(),
        r.status.as_str().into(),
        i64::from(r.attempts).into(),
        r.next_attempt_at.into(),
        r.detail.clone().into(),
        r.created_at.into(),
        r.updated_at.into(),
        r.delivered_at.into(),
        r.source_key.as_deref().into(),
        i64::from(r.parts_sent).into(),
        r.trace.clone().into(),
    ]
}

/// The columns [`cron_job`] reads, in order.
pub(crate) const CRON_COLUMNS: &str = "id, agent_id, schedule, message, deliver, created_at, last_slot, \
    last_run_id, last_fired_at, name, enabled";

/// A row of [`CRON_COLUMNS`] as a cron job.
pub(crate) fn cron_job(row: &(impl Columns + ?Sized)) -> Result<CronJobRecord, StoreError> {
    Ok(CronJobRecord {
        id: row.req_text(0)?,
        agent_id: row.req_text(1)?,
        schedule: row.req_text(2)?,
        message: row.req_text(3)?,
        deliver: row.req_flag(4)?,
        created_at: row.req_int(5)?,
        last_slot: row.int(6)?,
        last_run_id: row.text(7)?.map(RunId::from_string),
        last_fired_at: row.int(8)?,
        name: row.text(9)?,
        enabled: row.req_flag(10)?,
    })
}

/// The values of [`CRON_COLUMNS`] for `job`.
pub(crate) fn cron_params(job: &CronJobRecord) -> Vec<Param> {
    vec![
        job.id.clone().into(),
        job.agent_id.clone().into(),
        job.schedule.clone().into(),
        job.message.clone().into(),
        job.deliver.into(),
        job.created_at.into(),
        job.last_slot.into(),
        job.last_run_id.as_deref().into(),
        job.last_fired_at.into(),
        job.name.clone().into(),
        job.enabled.into(),
    ]
}

/// The columns [`pairing`] reads, in order.
pub(crate) const PAIRING_COLUMNS: &str =
    "channel, account_id, sender_id, username, code, created_at, approved_at, source";

/// A row of [`PAIRING_COLUMNS`] as a pairing request.
pub(crate) fn pairing(row: &(impl Columns + ?Sized)) -> Result<PairingRecord, StoreError> {
    Ok(PairingRecord {
        channel: row.req_text(0)?,
        account_id: row.req_text(1)?,
        sender_id: row.req_text(2)?,
        username: row.text(3)?,
        code: row.req_text(4)?,
        created_at: row.req_int(5)?,
        approved_at: row.int(6)?,
        source: row.req_text(7)?,
    })
}

/// The columns [`exchange`] reads, in order.
pub(crate) const EXCHANGE_COLUMNS: &str = "id, requester_key, requester_run, target_key, message, chain, state, turn, \
    step_run, attempt, round1, latest, previous_run, detail, created_at, updated_at, trace";
/// What storing an exchange again sets: the columns its steps change. Its parties, message and
/// creation stay, so an update leaves its key and its two by-session indexes alone (a replace
/// rewrote all of them at every step).
pub(crate) const EXCHANGE_UPDATE: &str = "state = excluded.state, turn = excluded.turn, \
    step_run = excluded.step_run, attempt = excluded.attempt, round1 = excluded.round1, \
    latest = excluded.latest, previous_run = excluded.previous_run, detail = excluded.detail, \
    updated_at = excluded.updated_at";
/// How many columns [`EXCHANGE_COLUMNS`] names.
pub(crate) const EXCHANGE_COLUMN_COUNT: usize = 17;

/// A row of [`EXCHANGE_COLUMNS`] as an exchange, held under epoch 0.
pub(crate) fn exchange(row: &(impl Columns + ?Sized)) -> Result<ExchangeRecord, StoreError> {
    let id = row.req_text(0)?;
    let chain = row.req_text(5)?;
    let chain: Vec<String> = match serde_json::from_str(&chain) {
        Ok(chain) => chain,
        Err(e) => {
            tracing::warn!(exchange = %id, error = %e, "an exchange's stored chain does not decode");
            Vec::new()
        }
    };
    Ok(ExchangeRecord {
        requester_key: SessionKey::from_canonical(row.req_text(1)?),
        requester_run: RunId::from_string(row.req_text(2)?),
        target_key: SessionKey::from_canonical(row.req_text(3)?),
        message: row.req_text(4)?,
        chain: chain.into_iter().map(SessionKey::from_canonical).collect(),
        // An unknown state (a newer build's) is left alone rather than resumed.
        state: ExchangeState::parse(&row.req_text(6)?).unwrap_or(ExchangeState::Failed),
        turn: row.req_u32(7)?,
        step_run: RunId::from_string(row.req_text(8)?),
        attempt: row.req_u32(9)?,
        round1: row.text(10)?,
        latest: row.text(11)?,
        previous_run: row.text(12)?.map(RunId::from_string),
        detail: row.text(13)?,
        created_at: row.req_int(14)?,
        updated_at: row.req_int(15)?,
        trace: row.text(16)?,
        epoch: 0,
        id,
    })
}

/// The values of [`EXCHANGE_COLUMNS`] for `r`.
pub(crate) fn exchange_params(r: &ExchangeRecord) -> Result<Vec<Param>, StoreError> {
    let chain: Vec<&str> = r.chain.iter().map(SessionKey::as_str).collect();
    let chain = serde_json::to_string(&chain)
        .map_err(|e| StoreError::Backend(format!("could not encode a chain: {e}")))?;
    Ok(vec![
        r.id.clone().into(),
        r.requester_key.as_str().into(),
        r.requester_run.as_str().into(),
        r.target_key.as_str().into(),
        r.message.clone().into(),
        chain.into(),
        r.state.as_str().into(),
        i64::from(r.turn).into(),
        r.step_run.as_str().into(),
        i64::from(r.attempt).into(),
        r.round1.clone().into(),
        r.latest.clone().into(),
        r.previous_run.as_deref().into(),
        r.detail.clone().into(),
        r.created_at.into(),
        r.updated_at.into(),
        r.trace.clone().into(),
    ])
}

/// The columns [`subagent`] reads, in order.
pub(crate) const SUBAGENT_COLUMNS: &str = "child_key, requester_key, run_id, task, label, model, delete_after, state, \
    outcome, created_at, ended_at, delivery_id, archive_at, archived_at, trace, origin";
/// What storing a sub-agent record again sets: every column but its key, its requester, its
/// creation, its trace and its origin, which stay (an update leaves its key's index alone).
pub(crate) const SUBAGENT_UPDATE: &str = "run_id = excluded.run_id, task = excluded.task, \
    label = excluded.label, model = excluded.model, delete_after = excluded.delete_after, \
    state = excluded.state, outcome = excluded.outcome, ended_at = excluded.ended_at, \
    delivery_id = excluded.delivery_id, archive_at = excluded.archive_at, \
    archived_at = excluded.archived_at";
/// How many columns [`SUBAGENT_COLUMNS`] names.
pub(crate) const SUBAGENT_COLUMN_COUNT: usize = 16;

/// A row of [`SUBAGENT_COLUMNS`] as a sub-agent record, held under epoch 0.
pub(crate) fn subagent(row: &(impl Columns + ?Sized)) -> Result<SubagentRecord, StoreError> {
    Ok(SubagentRecord {
        child_key: SessionKey::from_canonical(row.req_text(0)?),
        requester_key: SessionKey::from_canonical(row.req_text(1)?),
        run_id: RunId::from_string(row.req_text(2)?),
        task: row.req_text(3)?,
        label: row.text(4)?,
        model: row.req_text(5)?,
        delete_after: row.req_flag(6)?,
        // An unknown state (a newer build's) announces again rather than never.
        state: SubagentState::parse(&row.req_text(7)?).unwrap_or(SubagentState::Announcing),
        outcome: row.text(8)?,
        created_at: row.req_int(9)?,
        ended_at: row.int(10)?,
        delivery_id: row.text(11)?,
        archive_at: row.int(12)?,
        archived_at: row.int(13)?,
        trace: row.text(14)?,
        // A route a newer build wrote: announced into the requester session rather than lost.
        origin: row
            .text_ref(15)?
            .and_then(|json| serde_json::from_str(json).ok()),
        epoch: 0,
    })
}

/// The values of [`SUBAGENT_COLUMNS`] for `r`.
pub(crate) fn subagent_params(r: &SubagentRecord) -> Vec<Param> {
    vec![
        r.child_key.as_str().into(),
        r.requester_key.as_str().into(),
        r.run_id.as_str().into(),
        r.task.clone().into(),
        r.label.clone().into(),
        r.model.clone().into(),
        r.delete_after.into(),
        r.state.as_str().into(),
        r.outcome.clone().into(),
        r.created_at.into(),
        r.ended_at.into(),
        r.delivery_id.clone().into(),
        r.archive_at.into(),
        r.archived_at.into(),
        r.trace.clone().into(),
        r.origin
            .as_ref()
            .and_then(|route| serde_json::to_string(route).ok())
            .into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::placeholders;
    use crate::store::dialect::{POSTGRES, SQLITE};

    #[test]
    fn placeholders_are_numbered_from_the_first() {
        assert_eq!(placeholders(SQLITE, 1, 3), "?1, ?2, ?3");
        assert_eq!(placeholders(POSTGRES, 9, 2), "$9, $10");
        assert_eq!(placeholders(SQLITE, 4, 0), "");
    }
}
