//! A batch statement's text, written once per shape (issue 59 point 3): the text of a run's
//! start or end depends only on which parts the batch has (a session, its messages, the
//! patch's fields, the run's fence and record, a lock to let go), never on their values. It is
//! written the first time a shape is seen and kept; later batches of that shape only bind their
//! values, in the order the text numbers them ([`OneStatement::values`]). In a build with debug
//! assertions (the tests') every kept text and its values are checked against the ones written
//! the long way.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use switchboard_protocol::sessions::Patch;

use super::OneStatement;
use crate::store::dialect::count;
use crate::store::postgres::db::{Value, bind};
use crate::store::rules::{rows, transcript, work};
use crate::store::{EntryPatch, StoreError};

/// Shapes kept at most; past that the texts are written again (a patch of another kind of
/// field set makes a new shape, and there are few).
const MAX_SHAPES: usize = 256;

/// The kept texts, by shape.
static TEXTS: LazyLock<Mutex<HashMap<Shape, Arc<str>>>> = LazyLock::new(Default::default);

/// What a batch statement's text depends on.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct Shape {
    /// The session's part: whether it appends, and each patched column with how.
    session: Option<(bool, Vec<(&'static str, Kind)>)>,
    /// The run's part: fenced, with a record, a new run's.
    run: Option<(bool, bool, bool)>,
    release: bool,
    /// Gated on the session row's version, taking the session's lock.
    asked: bool,
}

/// How a patch sets one column (or group of columns).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Value,
    Null,
    Added,
}

/// One change a patch makes to the session's row, with its values.
pub(super) enum Assign {
    /// `column = $n`
    Value(&'static str, Value),
    /// `column = NULL`
    Null(&'static str),
    /// The token counts, each added to: input, output, total.
    Tokens(Value, Value, Value),
    /// The cost, added to.
    Cost(Value),
}

impl Assign {
    fn shape(&self) -> (&'static str, Kind) {
        match self {
            Assign::Value(column, _) => (column, Kind::Value),
            Assign::Null(column) => (column, Kind::Null),
            Assign::Tokens(..) => ("tokens", Kind::Added),
            Assign::Cost(_) => ("cost_usd", Kind::Added),
        }
    }

    fn values(self, v: &mut Vec<Value>) {
        match self {
            Assign::Value(_, value) | Assign::Cost(value) => v.push(value),
            Assign::Null(_) => {}
            Assign::Tokens(input, output, total) => v.extend([input, output, total]),
        }
    }
}

/// The patch's changes, in the order the statement writes them: what [`EntryPatch::apply`]
/// does to an entry, done by the database (a label and `spawnedBy`, which are checked first,
/// are never here).
pub(super) fn assignments(patch: &EntryPatch) -> Result<Vec<Assign>, StoreError> {
    let EntryPatch {
        label: _,
        spawned_by: _,
        display_name,
        model,
        thinking_level,
        verbose_level,
        send_policy,
        system_sent,
        aborted_last_run,
        channel,
        last_channel,
        last_to,
        last_account_id,
        last_thread_id,
        delivery_context,
        add_tokens,
        add_cost,
        context_tokens,
        archived_at,
        last_model,
    } = patch;
    let mut out = Vec::new();
    let texts = [
        ("display_name", display_name),
        ("model", model),
        ("thinking_level", thinking_level),
        ("verbose_level", verbose_level),
        ("send_policy", send_policy),
        ("channel", channel),
        ("last_channel", last_channel),
        ("last_to", last_to),
        ("last_account_id", last_account_id),
        ("last_thread_id", last_thread_id),
        ("last_model", last_model),
    ];
    for (column, value) in texts {
        set(&mut out, column, value.clone());
    }
    let route = match delivery_context {
        Patch::Set(route) => Patch::Set(serde_json::to_string(route).map_err(|e| {
            StoreError::Backend(format!("a session's route could not be encoded: {e}"))
        })?),
        Patch::Clear => Patch::Clear,
        Patch::Keep => Patch::Keep,
    };
    set(&mut out, "delivery_context", route);
    set(
        &mut out,
        "context_tokens",
        map(context_tokens, |t| count(*t)),
    );
    set(&mut out, "archived_at", archived_at.clone());
    for (column, flag) in [
        ("system_sent", system_sent),
        ("aborted_last_run", aborted_last_run),
    ] {
        if let Some(flag) = flag {
            out.push(Assign::Value(column, Box::new(*flag)));
        }
    }
    if let Some(d) = add_tokens {
        let (input, output) = (count(d.input), count(d.output));
        let total = count(d.input + d.output);
        out.push(Assign::Tokens(
            Box::new(input),
            Box::new(output),
            Box::new(total),
        ));
    }
    if let Some(usd) = add_cost {
        out.push(Assign::Cost(Box::new(*usd)));
    }
    Ok(out)
}

fn map<T, U>(patch: &Patch<T>, f: impl FnOnce(&T) -> U) -> Patch<U> {
    match patch {
        Patch::Keep => Patch::Keep,
        Patch::Clear => Patch::Clear,
        Patch::Set(value) => Patch::Set(f(value)),
    }
}

fn set<T: tokio_postgres::types::ToSql + Sync + Send + 'static>(
    out: &mut Vec<Assign>,
    column: &'static str,
    value: Patch<T>,
) {
    match value {
        Patch::Keep => {}
        Patch::Clear => out.push(Assign::Null(column)),
        Patch::Set(value) => out.push(Assign::Value(column, Box::new(value))),
    }
}

impl OneStatement {
    /// The statement's text and its values: the kept text of the batch's shape and its values
    /// bound in that text's order, or both written the long way ([`OneStatement::written`])
    /// and the text kept.
    pub(super) fn statement(
        &self,
        gateway: &str,
        numbered: Option<&transcript::Numbered>,
        now: i64,
        release: Option<&str>,
    ) -> Result<(Arc<str>, Vec<Value>), StoreError> {
        let patch = self.session.as_ref().and_then(|s| s.patch.as_ref());
        let assigns = patch.map(assignments).transpose()?.unwrap_or_default();
        let shape = Shape {
            session: self.session.as_ref().map(|s| {
                let columns = assigns.iter().map(Assign::shape).collect();
                (s.messages.is_some(), columns)
            }),
            run: self
                .run
                .as_ref()
                .map(|r| (r.fenced, r.record.is_some(), r.new)),
            release: release.is_some(),
            asked: self.asked.is_some(),
        };
        let kept = TEXTS.lock().ok().and_then(|t| t.get(&shape).cloned());
        if let Some(sql) = kept {
            let values = self.values(assigns, gateway, numbered, now, release)?;
            if cfg!(debug_assertions) {
                let (text, written) = self.written(gateway, numbered, now, release)?;
                assert_eq!(*sql, *text, "a kept batch text differs from its shape's");
                assert_eq!(format!("{values:?}"), format!("{written:?}"));
            }
            return Ok((sql, values));
        }
        let (sql, values) = self.written(gateway, numbered, now, release)?;
        let sql: Arc<str> = sql.into();
        if let Ok(mut texts) = TEXTS.lock() {
            if texts.len() >= MAX_SHAPES {
                texts.clear();
            }
            texts.insert(shape, sql.clone());
        }
        Ok((sql, values))
    }

    /// The statement's values in the order [`OneStatement::written`] numbers them.
    fn values(
        &self,
        assigns: Vec<Assign>,
        gateway: &str,
        numbered: Option<&transcript::Numbered>,
        now: i64,
        release: Option<&str>,
    ) -> Result<Vec<Value>, StoreError> {
        let mut v: Vec<Value> = Vec::with_capacity(32);
        if let Some(part) = &self.session {
            v.push(Box::new(part.key.as_str().to_string()));
            if let Some(version) = &self.asked {
                v.push(Box::new(version.clone()));
            }
        }
        if let Some(run) = self.run.as_ref().filter(|r| r.owns()) {
            v.push(Box::new(run.run_id.clone()));
            v.push(Box::new(run.epoch));
        }
        if let Some(run) = &self.run
            && let Some((record, input)) = &run.record
        {
            match run.updates() {
                true => v.extend(super::run_update_values(record, input.as_ref())?),
                false => {
                    v.extend(bind(&rows::run_params(record)));
                    v.push(Box::new(record.epoch));
                    v.push(Box::new(work::encode_input(input.as_ref())?));
                    v.push(Box::new(gateway.to_string()));
                }
            }
        }
        if let Some(part) = &self.session {
            v.push(Box::new(now));
            for assign in assigns {
                assign.values(&mut v);
            }
            v.push(Box::new(part.key.as_str().to_string()));
            if let Some(numbered) = numbered {
                v.extend(super::append_values(numbered));
            }
        }
        if let Some(key) = release {
            v.push(Box::new(key.to_string()));
        }
        Ok(v)
    }
}
