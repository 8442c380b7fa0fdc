//! A run's batches as one statement each (issue 38 point 7): the start (its message and its
//! record), each model reply (the run's fence, the reply and the session's token counts) and the
//! end (the fence, the last reply, the record and the session's flag) commit as one statement of
//! data-modifying CTEs, atomic on its own, with no `BEGIN` and `COMMIT` around it.
//!
//! The statement takes its locks first and writes only when every one of them holds
//! (docs/decisions.md, "A run's batch as one PostgreSQL statement"):
//! - `ses`: the session's row, locked (`FOR NO KEY UPDATE`), as a transaction's first write
//!   would; `tra`: its transcript's row, found by the session's current transcript;
//! - `own`: the run's row, locked (`FOR SHARE` for a fence, `FOR NO KEY UPDATE` when the batch
//!   writes the record): a claim's `UPDATE` of the run waits for the statement, and a claim
//!   that committed first is seen, READ COMMITTED re-reading a locked row at its newest version;
//!   it holds while the run carries the writer's epoch. A fenced batch that writes the run's
//!   record (a run's end) has no `own`: its `run` is an `UPDATE` of the row while it carries
//!   the epoch, which locks and re-reads the row the same way, so the fence costs no lock of
//!   its own ([`RunPart::updates`]). A new run's record ([`WriteOp::NewRun`]) has no `own`
//!   either: its insert has no `ON CONFLICT`, and a stored run of the same id or idempotency
//!   key makes the statement fail whole;
//! - `ok`: one row when all of them hold. Every write reads `ok` (the run's record first, then
//!   the session and the transcript from `go`, `ok` once the record is written), so a statement
//!   whose locks do not all hold, or whose run's `UPDATE` found no row of its epoch, writes
//!   nothing and answers no row.
//!
//! No row does not say why: the session is gone, the run is another gateway's, or a reset moved
//! the session to a transcript the statement's snapshot cannot see (it committed while the
//! statement waited for the session's lock). The batch is then written again the long way
//! ([`super::write_op`] in a transaction), which answers the same error or writes it with a new
//! snapshot. Any other batch (a session created, a label set, a delivery) is written that way at
//! once.
//!
//! The statement's text depends only on the batch's shape, and is written once per shape
//! (`batch/shape.rs`).

mod shape;

use switchboard_protocol::message::TranscriptMessage;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::db::{Db, Value, bind, refs};
use super::kept::Kept;
use super::queries;
use super::schema::{get, run_columns};
use crate::keys::SessionKey;
use crate::store::rules::rows::{self, ENTRY_COLUMN_COUNT, ENTRY_COLUMNS};
use crate::store::rules::{transcript, work};
use crate::store::{
    EntryPatch, RunInput, RunRecord, SessionEntry, StoreError, WriteOp, WriteOutcome,
};
use shape::Assign;

/// A batch that is written as one statement.
pub(super) struct OneStatement {
    /// What each op answers, in the batch's order.
    answers: Vec<Answer>,
    session: Option<SessionPart>,
    run: Option<RunPart>,
    /// The version of the session's row the batch was made from, when the statement also takes
    /// the session's lock ([`OneStatement::asking`]).
    asked: Option<String>,
}

/// What a statement that wrote answers: each op's outcome, and the session row's version it
/// left, when it wrote the session.
pub(super) struct Written {
    pub outcomes: Vec<WriteOutcome>,
    pub version: Option<String>,
}

impl Written {
    /// The session's entry as the statement left it, with its row's version: cloned from the
    /// outcome that carries it, only for the batch whose entry is kept (a run's end).
    pub(super) fn kept(&self) -> Option<Kept> {
        let entry = self.outcomes.iter().find_map(|outcome| match outcome {
            WriteOutcome::Patched(entry) => Some(entry),
            WriteOutcome::Appended(appended) => Some(&appended.entry),
            _ => None,
        })?;
        Some(Kept {
            entry: entry.clone(),
            version: self.version.clone()?,
        })
    }
}

#[derive(Clone, Copy)]
enum Answer {
    Fenced,
    Appended,
    PutRun,
    Patched,
}

/// The batch's writes to one session: messages appended, fields patched.
struct SessionPart {
    key: SessionKey,
    messages: Option<Vec<TranscriptMessage>>,
    patch: Option<EntryPatch>,
}

/// The batch's run: fenced, written, or both.
struct RunPart {
    run_id: String,
    epoch: i64,
    fenced: bool,
    record: Option<(RunRecord, Option<RunInput>)>,
    /// The record is a new run's ([`WriteOp::NewRun`]): no stored run holds it, so none is
    /// read first, and the insert is refused when its id or idempotency key is taken.
    new: bool,
}

impl RunPart {
    /// Whether the batch writes the record over the stored run while it carries the writer's
    /// epoch (a fenced batch's record, not a new run's): one `UPDATE`, which is the fence too.
    fn updates(&self) -> bool {
        self.fenced && !self.new && self.record.is_some()
    }

    /// Whether the batch reads and locks the run's row first (`own`).
    fn owns(&self) -> bool {
        (self.fenced || !self.new) && !self.updates()
    }
}

/// The columns a run's `UPDATE` sets ([`rows::RUN_UPDATE`]'s, but `input`), each with its
/// value's place in [`rows::run_params`].
const RUN_SET: [(&str, usize); 9] = [
    ("session_id", 2),
    ("status", 3),
    ("lane", 4),
    ("started_at", 6),
    ("ended_at", 7),
    ("result", 8),
    ("error", 9),
    ("model", 11),
    ("cost_usd", 12),
];

/// The values of a run's `UPDATE`, in its text's order: [`RUN_SET`]'s, the input, the run's id
/// and its epoch.
fn run_update_values(
    record: &RunRecord,
    input: Option<&RunInput>,
) -> Result<Vec<Value>, StoreError> {
    let params = rows::run_params(record);
    let mut values = bind(&RUN_SET.map(|(_, at)| params[at].clone()));
    values.push(Box::new(work::encode_input(input)?));
    values.push(Box::new(record.run_id.as_str().to_string()));
    values.push(Box::new(record.epoch));
    Ok(values)
}

/// The statement's values, each named by its placeholder.
#[derive(Default)]
struct Values(Vec<Value>);

impl Values {
    fn add(&mut self, value: impl ToSql + Sync + Send + 'static) -> String {
        self.push(Box::new(value))
    }

    fn push(&mut self, value: Value) -> String {
        self.0.push(value);
        format!("${}", self.0.len())
    }
}

impl OneStatement {
    /// The batch as one statement, when it is made of what a run commits: fences and a record
    /// of one run, an append (to an existing session) and a patch of one session.
    pub(super) fn of(ops: &[WriteOp]) -> Option<Self> {
        let mut batch = Self {
            answers: Vec::with_capacity(ops.len()),
            session: None,
            run: None,
            asked: None,
        };
        for op in ops {
            let answer = match op {
                WriteOp::Fence { run_id, epoch } => {
                    let run = batch.run_part(run_id.as_str(), *epoch)?;
                    (!run.fenced).then_some(())?;
                    run.fenced = true;
                    Answer::Fenced
                }
                WriteOp::PutRun(record) => batch.record(record, None, false)?,
                WriteOp::QueueRun(record, input) => batch.record(record, Some(input), false)?,
                WriteOp::NewRun(record, input) => batch.record(record, input.as_deref(), true)?,
                WriteOp::Append {
                    key,
                    create: None,
                    messages,
                } => {
                    let part = batch.session_part(key)?;
                    part.messages.is_none().then_some(())?;
                    part.messages = Some(messages.clone());
                    Answer::Appended
                }
                WriteOp::Patch { key, patch } => {
                    (patch.label.is_keep() && patch.spawned_by.is_keep()).then_some(())?;
                    let part = batch.session_part(key)?;
                    part.patch.is_none().then_some(())?;
                    part.patch = Some((**patch).clone());
                    Answer::Patched
                }
                _ => return None,
            };
            batch.answers.push(answer);
        }
        (!batch.answers.is_empty()).then_some(batch)
    }

    /// The batch written only while its session's row is at `version` (its `xmin`), taking the
    /// session's lock when it is: `None` when the batch writes no session.
    pub(super) fn asking(mut self, version: String) -> Option<Self> {
        self.session.as_ref()?;
        self.asked = Some(version);
        Some(self)
    }

    /// The session the batch writes.
    pub(super) fn session_key(&self) -> Option<&SessionKey> {
        self.session.as_ref().map(|s| &s.key)
    }

    fn run_part(&mut self, run_id: &str, epoch: i64) -> Option<&mut RunPart> {
        let run = self.run.get_or_insert_with(|| RunPart {
            run_id: run_id.to_string(),
            epoch,
            fenced: false,
            record: None,
            new: false,
        });
        (run.run_id == run_id && run.epoch == epoch).then_some(run)
    }

    fn record(
        &mut self,
        record: &RunRecord,
        input: Option<&RunInput>,
        new: bool,
    ) -> Option<Answer> {
        // A new run's record that takes its session's id from the batch's other writes is
        // not one statement's (its batch creates the session).
        if new {
            record.session_id.as_ref()?;
        }
        let run = self.run_part(record.run_id.as_str(), record.epoch)?;
        run.record.is_none().then_some(())?;
        run.record = Some((record.clone(), input.cloned()));
        run.new = new;
        Some(Answer::PutRun)
    }

    fn session_part(&mut self, key: &SessionKey) -> Option<&mut SessionPart> {
        let part = self.session.get_or_insert_with(|| SessionPart {
            key: key.clone(),
            messages: None,
            patch: None,
        });
        (part.key == *key).then_some(part)
    }

    /// Writes the batch; `None` when one of its locks did not hold and nothing was written.
    /// With `release` (a session's key, whose lock `db`'s connection holds), the statement lets
    /// that lock go with its commit when it writes ([`queries::release_at_commit`]).
    pub(super) async fn write(
        &self,
        db: &Db<'_>,
        now: i64,
        release: Option<&str>,
    ) -> Result<Option<Written>, StoreError> {
        let numbered = match self.session.as_ref().and_then(|s| s.messages.clone()) {
            Some(messages) => Some(transcript::number(0, messages)?),
            None => None,
        };
        let (sql, values) = self.statement(db.gateway(), numbered.as_ref(), now, release)?;
        let row = db.query_opt(&sql, &refs(&values)).await;
        let row = match (row, &self.run) {
            (
                Err(StoreError::Conflict(_)),
                Some(RunPart {
                    record: Some((record, _)),
                    new,
                    ..
                }),
            ) => {
                return Err(work::run_taken(record, *new));
            }
            (row, _) => row?,
        };
        let Some(row) = row else {
            return Ok(None);
        };
        // Numbered from 1 until now: after the transcript's end the statement read.
        let numbered = match numbered {
            Some(numbered) => Some(numbered.after(get(&row, ENTRY_COLUMN_COUNT + 1)?)),
            None => None,
        };
        let entry = match &self.session {
            Some(_) => Some(entry(&row, numbered.as_ref())?),
            None => None,
        };
        let version = match &entry {
            Some(_) => Some(get(&row, ENTRY_COLUMN_COUNT)?),
            None => None,
        };
        let outcomes =
            self.answers.iter().map(|answer| match answer {
                Answer::Fenced => Ok(WriteOutcome::Fenced),
                Answer::PutRun => Ok(WriteOutcome::PutRun),
                Answer::Appended => match (&entry, &numbered) {
                    (Some(entry), Some(numbered)) => Ok(WriteOutcome::Appended(
                        transcript::appended(entry.clone(), numbered, now, false),
                    )),
                    _ => Err(answered_without(&sql)),
                },
                Answer::Patched => match &entry {
                    Some(entry) => Ok(WriteOutcome::Patched(entry.clone())),
                    None => Err(answered_without(&sql)),
                },
            });
        let outcomes = outcomes.collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Written { outcomes, version }))
    }

    /// The statement and its values, written the long way (see `shape.rs`).
    fn written(
        &self,
        gateway: &str,
        numbered: Option<&transcript::Numbered>,
        now: i64,
        release: Option<&str>,
    ) -> Result<(String, Vec<Value>), StoreError> {
        let mut v = Values::default();
        let mut ctes = Vec::with_capacity(9);
        let mut held = Vec::with_capacity(2);
        if let Some(part) = &self.session {
            let key = v.add(part.key.as_str().to_string());
            let version = match &self.asked {
                Some(version) => format!(" AND xmin::text = {}", v.add(version.clone())),
                None => String::new(),
            };
            ctes.push(format!(
                "ses AS (SELECT session_id FROM sessions WHERE key = {key}{version} \
                 FOR NO KEY UPDATE)"
            ));
            // Asked once the row is locked at the version the batch was made from; a lock
            // taken by a statement that then writes nothing is found by `PgStore::holds`.
            if self.asked.is_some() {
                ctes.push(format!(
                    "lk AS (SELECT {} AS got FROM ses)",
                    queries::try_lock(&key)
                ));
                held.push("EXISTS (SELECT 1 FROM lk WHERE got)".to_string());
            }
            // Without an append, the transcript's end is answered: locked, it is read as the
            // last commit left it (its writers hold the session's lock, held here).
            let lock = match part.messages {
                Some(_) => "",
                None => " FOR KEY SHARE OF t",
            };
            ctes.push(format!(
                "tra AS (SELECT t.session_id, t.last_seq FROM transcripts t \
                 JOIN ses ON t.session_id = ses.session_id{lock})"
            ));
        }
        if let Some(run) = self.run.as_ref().filter(|r| r.owns()) {
            let (id, epoch) = (v.add(run.run_id.clone()), v.add(run.epoch));
            let lock = match run.record {
                Some(_) => "NO KEY UPDATE",
                None => "SHARE",
            };
            ctes.push(format!(
                "own AS (SELECT epoch FROM runs WHERE run_id = {id} FOR {lock})"
            ));
            held.push(match run.fenced {
                true => {
                    format!("EXISTS (SELECT 1 FROM own WHERE epoch IS NOT DISTINCT FROM {epoch})")
                }
                false => {
                    format!("NOT EXISTS (SELECT 1 FROM own WHERE epoch IS DISTINCT FROM {epoch})")
                }
            });
        }
        let condition = match held.is_empty() {
            true => String::new(),
            false => format!(" WHERE {}", held.join(" AND ")),
        };
        ctes.push(match self.session {
            Some(_) => format!("ok AS (SELECT tra.session_id, tra.last_seq FROM tra{condition})"),
            None => format!("ok AS (SELECT 1 AS held{condition})"),
        });
        let mut gate = "ok";
        if let Some(run) = &self.run
            && let Some((record, input)) = &run.record
        {
            ctes.push(match run.updates() {
                true => update_run(&mut v, record, input.as_ref())?,
                false => put_run(&mut v, record, input.as_ref(), run.new, gateway)?,
            });
            ctes.push("go AS (SELECT ok.* FROM ok WHERE EXISTS (SELECT 1 FROM run))".into());
            gate = "go";
        }
        let (mut columns, mut from) = (vec!["1"], gate.to_string());
        if let Some(part) = &self.session {
            ctes.push(write_session(&mut v, part, gate, now)?);
            (columns, from) = (vec!["sw.*"], format!("{gate} JOIN sw ON true"));
            if let Some(numbered) = numbered {
                ctes.extend(append(&mut v, numbered, gate));
                columns.push("mark.base");
                from.push_str(" JOIN mark ON true");
            }
        }
        // Evaluated as the answer's row is made: only when every lock held. A write the answer
        // does not read (the messages') runs after it; should it fail, the lock may be let go
        // already (`PgStore::end_releasing` then holds it again).
        let released = release.map(|key| queries::release_at_commit(&v.add(key.to_string())));
        columns.extend(released.as_deref());
        let sql = format!(
            "WITH {} SELECT {} FROM {from}",
            ctes.join(", "),
            columns.join(", ")
        );
        Ok((sql, v.0))
    }
}

/// The session's entry as the statement left it: its columns, its transcript's end moved past
/// the messages `numbered` when it appended them.
fn entry(row: &Row, numbered: Option<&transcript::Numbered>) -> Result<SessionEntry, StoreError> {
    let mut entry = rows::entry(row)?;
    if let Some(numbered) = numbered {
        entry.last_seq = numbered.last_seq;
    }
    Ok(entry)
}

fn answered_without(sql: &str) -> StoreError {
    StoreError::Backend(format!("a batch's statement answered no entry: {sql}"))
}

/// The run's record, written when the locks hold (as `queries::put_run`, fenced by its epoch).
fn put_run(
    v: &mut Values,
    record: &RunRecord,
    input: Option<&RunInput>,
    new: bool,
    gateway: &str,
) -> Result<String, StoreError> {
    let mut values = bind(&rows::run_params(record));
    values.push(Box::new(record.epoch));
    values.push(Box::new(work::encode_input(input)?));
    values.push(Box::new(gateway.to_string()));
    let placeholders: Vec<String> = values
        .into_iter()
        .map(|value| {
            v.0.push(value);
            format!("${}", v.0.len())
        })
        .collect();
    Ok(format!(
        "run AS (INSERT INTO runs ({}, input, owner) SELECT {} FROM ok{} RETURNING 1)",
        run_columns(),
        placeholders.join(", "),
        work::run_conflict(new),
    ))
}

/// The run's record written over its row while the row carries the record's epoch: no row
/// when another gateway claimed the run (its epoch moved) or it is gone.
fn update_run(
    v: &mut Values,
    record: &RunRecord,
    input: Option<&RunInput>,
) -> Result<String, StoreError> {
    let first = v.0.len() + 1;
    v.0.extend(run_update_values(record, input)?);
    let columns = RUN_SET.iter().map(|(column, _)| *column).chain(["input"]);
    let sets: Vec<String> = (columns.enumerate())
        .map(|(i, column)| format!("{column} = ${}", first + i))
        .collect();
    let (id, epoch) = (first + sets.len(), first + sets.len() + 1);
    Ok(format!(
        "run AS (UPDATE runs SET {} FROM ok WHERE runs.run_id = ${id} \
         AND runs.epoch IS NOT DISTINCT FROM ${epoch} RETURNING 1)",
        sets.join(", ")
    ))
}

/// The session's row: touched (its `updated_at` moves forward, never back) and patched, once.
fn write_session(
    v: &mut Values,
    part: &SessionPart,
    gate: &str,
    now: i64,
) -> Result<String, StoreError> {
    let mut sets = vec![format!(
        "updated_at = GREATEST(s.updated_at, {})",
        v.add(now)
    )];
    if let Some(patch) = &part.patch {
        patch_sets(v, patch, &mut sets)?;
    }
    let key = v.add(part.key.as_str().to_string());
    let columns = ENTRY_COLUMNS.replace("t.last_seq", &format!("{gate}.last_seq"));
    Ok(format!(
        "sw AS (UPDATE sessions s SET {} FROM {gate} WHERE s.key = {key} \
         RETURNING {columns}, s.xmin::text)",
        sets.join(", ")
    ))
}

/// The messages stored after the transcript's end, and the end moved (as
/// `queries::store_messages`).
fn append(v: &mut Values, numbered: &transcript::Numbered, gate: &str) -> [String; 2] {
    let [n, summary, roles, times, bodies] = append_values(numbered).map(|value| v.push(value));
    [
        format!(
            "mark AS (UPDATE transcripts t SET last_seq = t.last_seq + {n}, \
             summary_seq = coalesce(t.last_seq + {summary}, t.summary_seq) FROM {gate} \
             WHERE t.session_id = {gate}.session_id RETURNING t.last_seq - {n} AS base)"
        ),
        format!(
            "stored AS (INSERT INTO messages (session_id, seq, role, ts, body) \
             SELECT {gate}.session_id, mark.base + m.i, m.role, m.ts, m.body FROM {gate}, mark, \
             unnest({roles}::text[], {times}::bigint[], {bodies}::text[]) \
             WITH ORDINALITY AS m(role, ts, body, i))"
        ),
    ]
}

/// The values an append binds: the new end, the summary's, and the messages' roles, times and
/// bodies.
fn append_values(numbered: &transcript::Numbered) -> [Value; 5] {
    let roles: Vec<String> = numbered.rows.iter().map(|r| r.role.to_string()).collect();
    let times: Vec<i64> = numbered.rows.iter().map(|r| r.ts).collect();
    let bodies: Vec<String> = numbered.rows.iter().map(|r| r.body.clone()).collect();
    [
        Box::new(numbered.last_seq),
        Box::new(numbered.summary_seq),
        Box::new(roles),
        Box::new(times),
        Box::new(bodies),
    ]
}

/// The patch's changes as `SET` clauses ([`shape::assignments`]).
fn patch_sets(
    v: &mut Values,
    patch: &EntryPatch,
    sets: &mut Vec<String>,
) -> Result<(), StoreError> {
    for assign in shape::assignments(patch)? {
        sets.push(match assign {
            Assign::Value(column, value) => format!("{column} = {}", v.push(value)),
            Assign::Null(column) => format!("{column} = NULL"),
            Assign::Tokens(input, output, total) => {
                let (input, output, total) = (v.push(input), v.push(output), v.push(total));
                format!(
                    "input_tokens = s.input_tokens + {input}, output_tokens = s.output_tokens + \
                     {output}, total_tokens = s.total_tokens + {total}"
                )
            }
            Assign::Cost(usd) => format!("cost_usd = s.cost_usd + {}", v.push(usd)),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::RUN_SET;
    use crate::store::rules::rows::{RUN_COLUMNS, RUN_UPDATE};

    /// A run's `UPDATE` sets the columns an upsert of it updates, each from its own value.
    #[test]
    fn a_runs_update_sets_what_its_upsert_would_each_from_its_own_value() {
        let columns: Vec<&str> = RUN_COLUMNS.split(',').map(str::trim).collect();
        for (column, at) in RUN_SET {
            assert_eq!(columns.get(at), Some(&column), "{column} is not value {at}");
        }
        let updated: Vec<&str> = RUN_UPDATE
            .split(',')
            .filter_map(|set| set.split('=').next().map(str::trim))
            .collect();
        let set: Vec<&str> = RUN_SET.iter().map(|(column, _)| *column).collect();
        assert_eq!(updated, [set.as_slice(), &["input"]].concat());
    }
}
