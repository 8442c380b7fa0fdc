//! What a session's row shows of its runs: the one working or waiting now, else the last one
//! that ended since the start. A page of rows reads each map once. A session's last ended run
//! keeps the row's run fields as the first page wrote them ([`LastEnded::written`]), so the
//! pages after list most rows' run fields as they are instead of building them and writing
//! them again at every list.

use std::sync::{Arc, OnceLock};

use switchboard_protocol::runs::RunState;
use switchboard_protocol::sessions::RunActivity;

use super::{Runtime, lock};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{RunRecord, RunStatus};

/// A session's runs as its row shows them ([`Runtime::run_rows`]).
pub enum RunView {
    /// A run works or waits in the session: its state and its fields, built now.
    Live(RunState, RunActivity),
    /// None does: its last ended run since the start, or none when it had no run since.
    Idle(Option<Arc<LastEnded>>),
}

impl RunView {
    /// `running` or `queued` while a run works or waits; `None` when idle.
    pub fn state(&self) -> Option<RunState> {
        match self {
            RunView::Live(state, _) => Some(*state),
            RunView::Idle(_) => None,
        }
    }

    /// The row's run fields as a record ([`Runtime::run_activity`]).
    fn into_activity(self) -> RunActivity {
        match self {
            RunView::Live(_, activity) => activity,
            RunView::Idle(last) => row_activity(None, None, last.map(|l| l.ended.clone())),
        }
    }
}

/// A session's last ended run, and its row's run fields as a list page writes them while no
/// run is active: written by the first page that shows them, copied by the pages after (they
/// change only when another run ends, which replaces the whole entry).
pub struct LastEnded {
    ended: Ended,
    written: OnceLock<Box<[u8]>>,
}

impl LastEnded {
    pub(super) fn of(run: &RunRecord) -> Self {
        Self {
            ended: Ended::of(run),
            written: OnceLock::new(),
        }
    }

    /// The row's run fields as `write` writes their record, written at the first call.
    pub fn written(&self, write: impl FnOnce(&RunActivity) -> Vec<u8>) -> &[u8] {
        self.written.get_or_init(|| {
            let activity = row_activity(None, None, Some(self.ended.clone()));
            write(&activity).into_boxed_slice()
        })
    }
}

impl Runtime {
    /// What the session's runs are doing now: `running` (one is working), `queued` (runs wait
    /// for the session's worker or a lane), `None` when idle.
    pub fn run_state(&self, session_key: &SessionKey) -> Option<RunState> {
        self.run_rows(&[session_key.as_str()])
            .pop()
            .and_then(|view| view.state())
    }

    /// The session's current run, or its last one since start, as its row shows them.
    pub fn run_activity(&self, session_key: &SessionKey) -> Option<RunActivity> {
        self.run_rows(&[session_key.as_str()])
            .pop()
            .map(RunView::into_activity)
    }

    /// [`Runtime::run_state`] and [`Runtime::run_activity`] of each key.
    pub fn run_views(&self, keys: &[&str]) -> Vec<(Option<RunState>, Option<RunActivity>)> {
        self.run_rows(keys)
            .into_iter()
            .map(|view| (view.state(), Some(view.into_activity())))
            .collect()
    }

    /// What each key's row shows of its runs, for a page of rows: each map is locked once for
    /// the page (not three times a row), and the one of live runs only when a key has an
    /// active run.
    pub fn run_rows(&self, keys: &[&str]) -> Vec<RunView> {
        // Each session's active run, and whether runs wait in its queue.
        let queued: Vec<Option<(Option<RunId>, bool)>> = {
            let queues = lock(&self.inner.queues);
            keys.iter()
                .map(|key| {
                    let queue = queues.get(*key)?;
                    let active = queue.active.as_ref().map(|(id, _)| id.clone());
                    Some((active, !queue.pending.is_empty()))
                })
                .collect()
        };
        // The active runs' statuses; `None` once one ended (its worker clears `active` just after).
        let mut statuses: Vec<Option<RunStatus>> = vec![None; keys.len()];
        if queued.iter().flatten().any(|(active, _)| active.is_some()) {
            let live = lock(&self.inner.live);
            for (status, queue) in statuses.iter_mut().zip(&queued) {
                let active = queue.as_ref().and_then(|(active, _)| active.as_ref());
                *status = active
                    .and_then(|id| live.get(id))
                    .map(|run| run.state.borrow().status);
            }
        }
        let ended: Vec<Option<Arc<LastEnded>>> = {
            let last_ended = lock(&self.inner.last_ended);
            keys.iter()
                .map(|key| last_ended.get(*key).cloned())
                .collect()
        };
        queued
            .into_iter()
            .zip(statuses)
            .zip(ended)
            .map(|((queue, status), last)| {
                let (active, pending) = queue.unwrap_or((None, false));
                let state = match status {
                    Some(RunStatus::Running) => Some(RunState::Running),
                    Some(RunStatus::Queued) => Some(RunState::Queued),
                    _ => pending.then_some(RunState::Queued),
                };
                let Some(state) = state else {
                    return RunView::Idle(last);
                };
                let active = active.filter(|_| state == RunState::Running);
                let last = last.map(|l| l.ended.clone());
                RunView::Live(state, row_activity(Some(state), active, last))
            })
            .collect()
    }
}

/// What a row shows of a session's last ended run.
#[derive(Clone)]
struct Ended {
    run_id: String,
    status: RunStatus,
    started_at: Option<i64>,
    ended_at: Option<i64>,
}

impl Ended {
    fn of(run: &RunRecord) -> Self {
        Self {
            run_id: run.run_id.as_str().to_string(),
            status: run.status,
            started_at: run.started_at,
            ended_at: run.ended_at,
        }
    }
}

/// A row's run fields: its current run (`state`, the `active` one when running), else its
/// last ended one; only "no active run" when it had neither since start.
fn row_activity(
    state: Option<RunState>,
    active: Option<RunId>,
    last: Option<Ended>,
) -> RunActivity {
    let status = match (state, &last) {
        (Some(state), _) => Some(state.as_str()),
        (None, Some(last)) => Some(ended_status(last.status)),
        (None, None) => None,
    };
    let runtime_ms = last
        .as_ref()
        .and_then(|l| Some(l.ended_at? - l.started_at?));
    RunActivity {
        status: status.map(str::to_string),
        has_active_run: state.is_some(),
        active_run_ids: active
            .map(|id| id.as_str().to_string())
            .into_iter()
            .collect(),
        started_at: last.as_ref().and_then(|l| l.started_at),
        ended_at: last.as_ref().and_then(|l| l.ended_at),
        last_run_id: last.map(|l| l.run_id),
        runtime_ms,
    }
}

/// A last run's row status, in the reference's words.
fn ended_status(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Ok => "done",
        RunStatus::Aborted => "killed",
        RunStatus::Timeout => "timeout",
        RunStatus::Error | RunStatus::Queued | RunStatus::Running => "failed",
    }
}
