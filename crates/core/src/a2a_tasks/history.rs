//! A task's history (A2A 1.0 §3.7, "The agent is responsible to determine which Messages are
//! persisted in the Task History"): the client's message that started it, then the agent's
//! message of its final status (the reply, or why it failed or was canceled) once it has one.
//! Streamed pieces of the reply are not history.
//!
//! The client's message is kept as it was sent (its `contextId` and `taskId` filled in) in the
//! store's named-token table under `a2a-message:<taskId>`, committed with the task itself, so a
//! task never exists without it; the agent's message is read from the run's record. A task
//! stored before the message was kept has only the agent's message.
//!
//! `historyLength` (A2A 1.0 §3.2.4) cuts it to the most recent messages: unset is all of it, 0
//! none (the field is omitted), n the last n.

use switchboard_protocol::a2a::{A2aError, A2aErrorCode, Message, Task};

use super::A2aResult;
use crate::store::{Store, WriteOp};

/// The name a task's first message is stored under.
fn stored_name(task_id: &str) -> String {
    format!("a2a-message:{task_id}")
}

/// The client's `message` as the first message of task `task_id` in `context_id`.
pub(super) fn first(message: &Message, task_id: &str, context_id: &str) -> Message {
    Message {
        task_id: Some(task_id.to_string()),
        context_id: Some(context_id.to_string()),
        ..message.clone()
    }
}

/// The write that keeps `first` (see [`first`]) as its task's first message.
pub(super) fn save(first: &Message, task_id: &str) -> A2aResult<WriteOp> {
    let token = serde_json::to_string(first).map_err(|e| internal(task_id, &e))?;
    Ok(WriteOp::SetToken {
        name: stored_name(task_id),
        token,
    })
}

/// The last `limit` messages of `history` (`None`: all).
pub(super) fn cut(mut history: Vec<Message>, limit: Option<usize>) -> Vec<Message> {
    if let Some(limit) = limit {
        let cut = history.len().saturating_sub(limit);
        history.drain(..cut);
    }
    history
}

/// `task` with its history, the last `limit` messages of it (`None`: all). The store is read
/// only when some history is asked for.
pub(super) async fn with_history(
    store: &dyn Store,
    mut task: Task,
    limit: Option<usize>,
) -> A2aResult<Task> {
    if limit == Some(0) {
        task.history.clear();
        return Ok(task);
    }
    let stored = store
        .token(&stored_name(&task.id))
        .await
        .map_err(super::store_error)?;
    let first = match stored {
        Some(json) => {
            Some(serde_json::from_str::<Message>(&json).map_err(|e| internal(&task.id, &e))?)
        }
        None => None,
    };
    let last = match task.status.state.is_terminal() {
        true => task.status.message.clone(),
        false => None,
    };
    task.history = cut(first.into_iter().chain(last).collect(), limit);
    Ok(task)
}

fn internal(task_id: &str, e: &serde_json::Error) -> A2aError {
    A2aError::new(
        A2aErrorCode::Internal,
        format!("the first message of task {task_id}: {e}"),
    )
}
