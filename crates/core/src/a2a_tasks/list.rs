//! `ListTasks`: the agent's tasks (of one conversation, with `contextId`; in one state, with
//! `status`), newest first, a page at a time after `pageToken`, with `totalSize` every task that
//! matches (A2A 1.0 `ListTasksResponse`: "Total number of tasks available (before
//! pagination)").
//!
//! The store pages runs by (`createdAt`, id), newest first, and counts none: the runs of the
//! agent's conversations are read in chunks, every one that matches is counted, and those after
//! the page token fill the page. A list costs one read per [`CHUNK`] runs of the agent's
//! conversations (of one conversation, with `contextId`), whatever the page.

use switchboard_protocol::a2a::{ListTasksRequest, ListTasksResponse, Task};

use super::task::{self, context_of, key_prefix, task_of};
use super::{A2aResult, A2aTasks, checks, history, invalid_params, store_error};
use crate::store::{RunQuery, RunRecord};

/// How many runs one read of the store takes.
const CHUNK: usize = 500;

impl A2aTasks {
    /// `ListTasks`: the page after `pageToken`, its tasks without artifacts unless
    /// `includeArtifacts`, and with the last `historyLength` messages of their history when
    /// one is given (none otherwise: a page of history would cost a read per task).
    pub async fn list(&self, agent: &str, req: ListTasksRequest) -> A2aResult<ListTasksResponse> {
        let page = checks::page_size(req.page_size)?;
        let history = checks::history_length("historyLength", req.history_length)?;
        if req.status_timestamp_after.is_some() {
            return Err(invalid_params(
                "statusTimestampAfter is not supported here: filter by contextId or status, \
                 and page with pageToken",
            ));
        }
        let (key, prefix) = match req.context_id.as_deref().filter(|c| !c.is_empty()) {
            Some(context) => (self.context_key(agent, context)?.into_string(), false),
            None => (key_prefix(agent), true),
        };
        let after = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => Some(decode_token(token)?),
            None => None,
        };
        let matches = |r: &RunRecord| {
            req.status.is_none_or(|s| s == task::state_of(r))
                && context_of(agent, &r.session_key).is_some()
        };
        let mut total: usize = 0;
        // The page, and one more task that shows a next page exists.
        let mut found: Vec<RunRecord> = Vec::new();
        let mut before: Option<(i64, String)> = None;
        loop {
            let query = RunQuery {
                key: key.clone(),
                prefix,
                before: before.clone(),
                limit: CHUNK,
            };
            let runs = self.store.list_runs(query).await.map_err(store_error)?;
            let exhausted = runs.len() < CHUNK;
            before = runs
                .last()
                .map(|r| (r.created_at, r.run_id.as_str().to_string()));
            for run in runs.into_iter().filter(|r| matches(r)) {
                total += 1;
                if found.len() <= page && after.as_ref().is_none_or(|a| is_after(&run, a)) {
                    found.push(run);
                }
            }
            if exhausted {
                break;
            }
        }
        let more = found.len() > page;
        found.truncate(page);
        let next_page_token = match (more, found.last()) {
            (true, Some(last)) => format!("{}:{}", last.created_at, last.run_id),
            _ => String::new(),
        };
        let mut tasks = Vec::with_capacity(found.len());
        for run in &found {
            tasks.push(
                self.listed(agent, run, req.include_artifacts, history)
                    .await?,
            );
        }
        Ok(ListTasksResponse {
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
            page_size: i32::try_from(page).unwrap_or(i32::MAX),
            tasks,
            next_page_token,
        })
    }

    /// A task as a page lists it.
    async fn listed(
        &self,
        agent: &str,
        run: &RunRecord,
        artifacts: Option<bool>,
        history: Option<usize>,
    ) -> A2aResult<Task> {
        let mut task = task_of(run, context_of(agent, &run.session_key).unwrap_or_default());
        if !artifacts.unwrap_or(false) {
            task.artifacts.clear();
        }
        match history {
            None | Some(0) => Ok(task),
            limit => history::with_history(self.store.as_ref(), task, limit).await,
        }
    }
}

/// Whether `run` comes after the cursor `(createdAt, taskId)` in the store's order (newest
/// first, then by id, descending).
fn is_after(run: &RunRecord, (at, id): &(i64, String)) -> bool {
    (run.created_at, run.run_id.as_str()) < (*at, id.as_str())
}

/// A page token: `<createdAt>:<taskId>` of the previous page's last task.
fn decode_token(token: &str) -> A2aResult<(i64, String)> {
    token
        .split_once(':')
        .and_then(|(at, id)| Some((at.parse::<i64>().ok()?, id.to_string())))
        .filter(|(_, id)| !id.is_empty())
        .ok_or_else(|| {
            invalid_params(format!(
                "pageToken {token:?} is not one this agent gave: pass the nextPageToken of the \
                 previous ListTasks answer, or none for the first page"
            ))
        })
}
