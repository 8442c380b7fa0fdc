//! How a run reads as an A2A task: its state, its reply as an artifact and a message, its
//! context id from its session key; and how a run's events read as a stream's events.

use switchboard_protocol::a2a::{
    Artifact, Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};

use crate::keys::SessionKey;
use crate::runtime::{RunEvent, RunEventData};
use crate::store::{RunRecord, RunStatus, iso8601};

/// The segment of an A2A conversation's session key: `agent:<agentId>:a2a:<contextId>`.
pub const CONTEXT_SEGMENT: &str = "a2a";

/// The session-key prefix of `agent_id`'s A2A conversations.
pub fn key_prefix(agent_id: &str) -> String {
    format!("agent:{agent_id}:{CONTEXT_SEGMENT}:")
}

/// The context id of a session key of `agent_id`'s A2A conversations; `None` for any other key
/// (its runs are not this agent's A2A tasks).
pub fn context_of<'k>(agent_id: &str, key: &'k SessionKey) -> Option<&'k str> {
    key.as_str()
        .strip_prefix(key_prefix(agent_id).as_str())
        .filter(|rest| !rest.is_empty())
}

/// The task state of a run's status. A run the gateway's stop cut off failed (nobody cancelled
/// it).
pub fn state_of(record: &RunRecord) -> TaskState {
    match record.status {
        RunStatus::Queued => TaskState::Submitted,
        RunStatus::Running => TaskState::Working,
        RunStatus::Ok => TaskState::Completed,
        RunStatus::Error | RunStatus::Timeout => TaskState::Failed,
        RunStatus::Aborted if record.interrupted() => TaskState::Failed,
        RunStatus::Aborted => TaskState::Canceled,
    }
}

/// The agent's message with `text`, in a task's context.
fn agent_message(message_id: String, task_id: &str, context_id: &str, text: &str) -> Message {
    Message {
        message_id,
        context_id: Some(context_id.to_string()),
        task_id: Some(task_id.to_string()),
        role: Role::Agent,
        parts: vec![Part::text(text)],
        ..Message::default()
    }
}

/// The artifact that carries a completed run's reply.
pub fn reply_artifact(task_id: &str, text: &str) -> Artifact {
    Artifact {
        artifact_id: format!("{task_id}-reply"),
        name: Some("reply".into()),
        parts: vec![Part::text(text)],
        ..Artifact::default()
    }
}

/// The status of a run now: its state, when it was reached, and the reply (completed) or the
/// reason (failed, canceled) as the agent's message.
pub fn status_of(record: &RunRecord, context_id: &str) -> TaskStatus {
    let task_id = record.run_id.as_str();
    let state = state_of(record);
    let text = match state {
        TaskState::Completed => record.result.clone(),
        TaskState::Failed | TaskState::Canceled => record.error.clone(),
        _ => None,
    };
    let at = record
        .ended_at
        .or(record.started_at)
        .unwrap_or(record.created_at);
    TaskStatus {
        state,
        message: text
            .map(|text| agent_message(format!("{task_id}-status"), task_id, context_id, &text)),
        timestamp: Some(iso8601(at)),
    }
}

/// The task a run of an A2A conversation is.
pub fn task_of(record: &RunRecord, context_id: &str) -> Task {
    let status = status_of(record, context_id);
    let artifacts = match (&status.state, &record.result) {
        (TaskState::Completed, Some(reply)) => {
            vec![reply_artifact(record.run_id.as_str(), reply)]
        }
        _ => Vec::new(),
    };
    Task {
        id: record.run_id.as_str().to_string(),
        context_id: context_id.to_string(),
        status,
        artifacts,
        history: Vec::new(),
        metadata: None,
    }
}

/// The stream events a run's end reads as: the reply as an artifact (when completed), then
/// the final status.
pub fn end_events(record: &RunRecord, context_id: &str) -> Vec<StreamResponse> {
    let task = task_of(record, context_id);
    let mut events: Vec<StreamResponse> = task
        .artifacts
        .into_iter()
        .map(|artifact| {
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                artifact,
                append: false,
                last_chunk: true,
                metadata: None,
            })
        })
        .collect();
    events.push(status_update(&task.id, &task.context_id, task.status));
    events
}

fn status_update(task_id: &str, context_id: &str, status: TaskStatus) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task_id.to_string(),
        context_id: context_id.to_string(),
        status,
        metadata: None,
    })
}

/// What a run's event reads as on a stream while the run goes: `WORKING` when it starts, and
/// `WORKING` with the new text as the agent's message for each piece of the reply. `None` for
/// the events a stream does not show (tool calls, usage) and for the end, which the caller
/// reads from the stored record ([`end_events`]).
pub fn progress_event(event: &RunEvent, context_id: &str, at: i64) -> Option<StreamResponse> {
    let task_id = event.run_id.as_str();
    let message = match &event.data {
        RunEventData::Started => None,
        RunEventData::Delta { text, seq, .. } => Some(agent_message(
            format!("{task_id}-delta-{seq}"),
            task_id,
            context_id,
            text,
        )),
        _ => return None,
    };
    let status = TaskStatus {
        state: TaskState::Working,
        message,
        timestamp: Some(iso8601(at)),
    };
    Some(status_update(task_id, context_id, status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::RunId;

    fn record(status: RunStatus, result: Option<&str>, error: Option<&str>) -> RunRecord {
        RunRecord {
            run_id: RunId::from_string("r1"),
            session_key: SessionKey::from_canonical("agent:main:a2a:c1".into()),
            session_id: None,
            status,
            lane: "main".into(),
            created_at: 0,
            started_at: Some(1),
            ended_at: Some(2),
            result: result.map(str::to_string),
            error: error.map(str::to_string),
            idempotency_key: None,
            model: None,
            cost_usd: None,
            epoch: 0,
        }
    }

    #[test]
    fn a_run_s_status_is_the_task_s_state() {
        let states: Vec<TaskState> = [
            record(RunStatus::Queued, None, None),
            record(RunStatus::Running, None, None),
            record(RunStatus::Ok, Some("pong"), None),
            record(RunStatus::Error, None, Some("boom")),
            record(RunStatus::Timeout, None, Some("timed out")),
            record(RunStatus::Aborted, None, Some("aborted")),
            record(RunStatus::Aborted, None, Some(RunRecord::INTERRUPTED)),
        ]
        .iter()
        .map(state_of)
        .collect();
        assert_eq!(
            states,
            [
                TaskState::Submitted,
                TaskState::Working,
                TaskState::Completed,
                TaskState::Failed,
                TaskState::Failed,
                TaskState::Canceled,
                TaskState::Failed,
            ]
        );
    }

    #[test]
    fn a_completed_run_s_reply_is_an_artifact_and_the_status_message() {
        let task = task_of(&record(RunStatus::Ok, Some("pong"), None), "c1");
        assert_eq!(task.id, "r1");
        assert_eq!(task.artifacts[0].parts, vec![Part::text("pong")]);
        let message = task.status.message.unwrap();
        assert_eq!(
            (message.role, message.text()),
            (Role::Agent, Some("pong".into()))
        );
        let failed = task_of(&record(RunStatus::Error, None, Some("boom")), "c1");
        assert!(failed.artifacts.is_empty());
        assert_eq!(
            failed.status.message.unwrap().text().as_deref(),
            Some("boom")
        );
    }

    #[test]
    fn only_the_agent_s_a2a_keys_have_a_context() {
        let key = |k: &str| SessionKey::from_canonical(k.to_string());
        assert_eq!(context_of("main", &key("agent:main:a2a:c1")), Some("c1"));
        assert_eq!(context_of("ops", &key("agent:main:a2a:c1")), None);
        assert_eq!(context_of("main", &key("agent:main:main")), None);
        assert_eq!(context_of("main", &key("agent:main:a2a:")), None);
    }
}
