//! A2A tasks (SPEC §10a, server direction): each agent answers A2A 1.0's methods, and an A2A
//! task is a run of the agent in a session. A conversation (`contextId`) is the session
//! `agent:<agentId>:a2a:<contextId>` (created by its first message); a task is the run its
//! message started (task id = run id), its state the run's, its reply an artifact and the final
//! status's message (`task.rs`), its history the client's message and that final message
//! (`history.rs`). Push-notification configs are stored with the task, and every push goes
//! through the outbox (`push.rs`). What A2A requires of a request's values is checked before
//! anything is stored (`checks.rs`); `ListTasks` is `list.rs`.
//!
//! Durable as the rest: a task is acknowledged only once its run is committed; the push config
//! named in `SendMessage` and the `SUBMITTED` push commit with it, and the end push commits with
//! the run's end (the reply handler's path), so no acknowledged push is lost to a crash.
//!
//! The door reaches only the agent's own A2A conversations: a task id of any other run is
//! unknown here. The send policy applies as to `sessions_send`. Must not: know HTTP or SSE
//! (the server's `a2a` module does), or decide what becomes of a reply beyond the push.

mod card;
mod checks;
mod configs;
mod history;
mod list;
pub mod push;
mod stream;
pub mod task;

use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::a2a::{
    A2aError, A2aErrorCode, GetTaskRequest, SendMessageRequest, StreamResponse, Task,
    TaskIdRequest, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use switchboard_protocol::delivery::DeliveryKind;
use switchboard_protocol::sessions::DeliveryContext;
use tokio::sync::broadcast;

pub use stream::TaskEvents;

use crate::clock::Clock;
use crate::config::Config;
use crate::delivery::{Outbound, Outbox};
use crate::error::CoreError;
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::resolve::Resolver;
use crate::runtime::lanes::Lane;
use crate::runtime::{Deliver, RunEvent, RunRequest, Runtime};
use crate::store::{RunRecord, Store, StoreError, WriteOp, iso8601};
use push::PUSH_CHANNEL;
use task::{context_of, key_prefix, task_of};

/// An answer of this component, or the A2A error to send.
pub type A2aResult<T> = Result<T, A2aError>;

/// How long `CancelTask` waits for the run to record its end.
const CANCEL_WAIT: Duration = Duration::from_secs(30);
/// The longest context id taken (it becomes part of a session key).
const MAX_CONTEXT_ID: usize = 128;

/// A task just acknowledged, with what its stream needs.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub task: Task,
    pub run_id: RunId,
    /// How many of the task's most recent history messages the answer carries
    /// (`configuration.historyLength`; `None`: all), for [`A2aTasks::finished`].
    pub history: Option<usize>,
}

/// What the A2A tasks component is built from.
pub struct A2aParts {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub runtime: Runtime,
    pub resolver: Arc<Resolver>,
    pub outbox: Arc<Outbox>,
    pub clock: Arc<dyn Clock>,
}

/// The A2A tasks component.
pub struct A2aTasks {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    runtime: Runtime,
    resolver: Arc<Resolver>,
    outbox: Arc<Outbox>,
    clock: Arc<dyn Clock>,
    /// Held while a task's push configs are read, changed and written back.
    push_lock: tokio::sync::Mutex<()>,
}

impl A2aTasks {
    pub fn new(parts: A2aParts) -> Arc<Self> {
        Arc::new(Self {
            config: parts.config,
            store: parts.store,
            runtime: parts.runtime,
            resolver: parts.resolver,
            outbox: parts.outbox,
            clock: parts.clock,
            push_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// The agent a path names (normalised), or why not.
    pub fn agent(&self, raw: &str) -> A2aResult<String> {
        self.resolver
            .known_agent(raw)
            .map_err(|e| A2aError::new(A2aErrorCode::InvalidRequest, e.to_string()))
    }

    /// The default agent's id (`/.well-known/agent-card.json` describes it).
    pub fn default_agent(&self) -> String {
        self.config.default_agent_id()
    }

    /// `SendMessage` / `SendStreamingMessage`: the message's text starts a run in the
    /// conversation's session; answered once the run (with the push config and the
    /// `SUBMITTED` push, when one is named) is committed.
    pub async fn send(&self, agent: &str, req: SendMessageRequest) -> A2aResult<Submitted> {
        let message = req.message;
        let text = checks::message_text(&message)?;
        let configuration = req.configuration.unwrap_or_default();
        let history =
            checks::history_length("configuration.historyLength", configuration.history_length)?;
        if let Some(task_id) = message.task_id.as_deref().filter(|t| !t.is_empty()) {
            return Err(self.continuation(agent, task_id).await);
        }
        let context_id = match message.context_id.as_deref().filter(|c| !c.is_empty()) {
            Some(context) => context.to_string(),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let key = self.context_key(agent, &context_id)?;
        self.resolver.check_send(&key).await.map_err(core_error)?;
        let run_id = RunId::new();
        let mut request = RunRequest::new(key.clone(), Lane::Main).with_message(text, None);
        request.create = Some(self.resolver.new_session(&key));
        request.run_id = Some(run_id.clone());
        request.idempotency_key = Some(format!("a2a:{agent}:{}", message.message_id));
        request.deliver = Some(Deliver {
            kind: DeliveryKind::A2aPush,
            route: Some(push_route(&run_id)),
        });
        let first = history::first(&message, run_id.as_str(), &context_id);
        request
            .commit_with
            .push(history::save(&first, run_id.as_str())?);
        if let Some(config) = configuration.task_push_notification_config {
            let config = configs::checked_config(config, run_id.as_str())?;
            request
                .commit_with
                .push(push::save(run_id.as_str(), &[config]).map_err(store_error)?);
            request
                .commit_with
                .push(self.submitted_push(&key, &run_id, &context_id)?);
        }
        let accepted = self.runtime.submit(request).await.map_err(core_error)?;
        self.outbox.wake();
        // A new task is answered as it was acknowledged (its run may have started since: the
        // stream tells that next); a repeated message's task as it stands.
        let task = match accepted.deduplicated {
            false => Task {
                history: history::cut(vec![first], history),
                ..submitted_task(&accepted.run_id, &context_id, accepted.accepted_at)
            },
            true => {
                let record = self.record(&accepted.run_id).await?;
                let context = context_of(agent, &record.session_key).unwrap_or(&context_id);
                let task = task_of(&record, context);
                history::with_history(self.store.as_ref(), task, history).await?
            }
        };
        Ok(Submitted {
            task,
            run_id: accepted.run_id,
            history,
        })
    }

    /// The refusal of a message that names a task: tasks here end with their run, so a
    /// message continues the conversation (its `contextId`) as a new task instead.
    async fn continuation(&self, agent: &str, task_id: &str) -> A2aError {
        match self.task_record(agent, task_id).await {
            Err(e) => e,
            Ok((record, _)) => A2aError::new(
                A2aErrorCode::UnsupportedOperation,
                format!(
                    "task {task_id} is {}: a task here takes one message and ends with its \
                     reply; send the message without taskId (with the same contextId) to \
                     continue the conversation as a new task",
                    state_name(task::state_of(&record))
                ),
            ),
        }
    }

    /// The `SUBMITTED` push of a new task, committed with it.
    fn submitted_push(
        &self,
        key: &SessionKey,
        run_id: &RunId,
        context_id: &str,
    ) -> A2aResult<WriteOp> {
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: run_id.as_str().to_string(),
            context_id: context_id.to_string(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(iso8601(self.clock.now_ms())),
            },
            metadata: None,
        });
        let text = serde_json::to_string(&event)
            .map_err(|e| A2aError::new(A2aErrorCode::Internal, e.to_string()))?;
        let out = Outbound {
            kind: DeliveryKind::A2aPush,
            session_key: Some(key.clone()),
            source_key: None,
            run_id: Some(run_id.clone()),
            route: Some(push_route(run_id)),
            text,
            idempotency_key: Some(push::submitted_key(run_id.as_str())),
        };
        Ok(WriteOp::Enqueue(Box::new(self.outbox.record(out, None))))
    }

    /// The session of `agent`'s conversation `context_id`; refused when the id would not
    /// survive as part of a session key unchanged.
    fn context_key(&self, agent: &str, context_id: &str) -> A2aResult<SessionKey> {
        let wanted = format!("{}{context_id}", key_prefix(agent));
        let fits = context_id.len() <= MAX_CONTEXT_ID
            && context_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        let key = match fits {
            true => self.resolver.canonical(&wanted, Some(agent)).ok(),
            false => None,
        };
        match key {
            Some(key) if key.as_str() == wanted => Ok(key),
            _ => Err(invalid_params(format!(
                "contextId {context_id:?} cannot name a conversation here: use up to \
                 {MAX_CONTEXT_ID} lower-case letters, digits, '-', '_' or '.' (or leave it out \
                 and the agent starts a new one)"
            ))),
        }
    }

    /// The run of `agent`'s task `task_id` and its context id; `TaskNotFound` for any run
    /// that is not one of the agent's A2A tasks.
    async fn task_record(&self, agent: &str, task_id: &str) -> A2aResult<(RunRecord, String)> {
        let not_found = || {
            A2aError::new(
                A2aErrorCode::TaskNotFound,
                format!(
                    "no task {task_id:?} for agent {agent}: task ids are the ids SendMessage \
                     answered (ListTasks lists them)"
                ),
            )
        };
        let found = match task_id.trim() {
            "" => None,
            id => self
                .runtime
                .record(&RunId::from_string(id))
                .await
                .map_err(core_error)?,
        };
        let record = found.ok_or_else(not_found)?;
        let context = context_of(agent, &record.session_key)
            .ok_or_else(not_found)?
            .to_string();
        Ok((record, context))
    }

    async fn record(&self, run_id: &RunId) -> A2aResult<RunRecord> {
        self.runtime
            .record(run_id)
            .await
            .map_err(core_error)?
            .ok_or_else(|| {
                A2aError::new(
                    A2aErrorCode::Internal,
                    format!("run {run_id} is not stored"),
                )
            })
    }

    /// The task once its run ended (`SendMessage` without `returnImmediately`), with the
    /// history [`Submitted::history`] asks for.
    pub async fn finished(&self, agent: &str, sent: &Submitted) -> A2aResult<Task> {
        let outcome = self
            .runtime
            .wait(&sent.run_id, Duration::MAX)
            .await
            .map_err(core_error)?;
        let record = outcome.record;
        let context = context_of(agent, &record.session_key).unwrap_or_default();
        history::with_history(self.store.as_ref(), task_of(&record, context), sent.history).await
    }

    /// `GetTask`: the task with the last `historyLength` messages of its history (all when
    /// unset).
    pub async fn get(&self, agent: &str, req: GetTaskRequest) -> A2aResult<Task> {
        let history = checks::history_length("historyLength", req.history_length)?;
        let (record, context) = self.task_record(agent, &req.id).await?;
        history::with_history(self.store.as_ref(), task_of(&record, &context), history).await
    }

    /// `CancelTask`: aborts the run (queued or running) and answers the task once its end is
    /// recorded; a task that already ended is not cancelable.
    pub async fn cancel(&self, agent: &str, req: TaskIdRequest) -> A2aResult<Task> {
        let (record, context) = self.task_record(agent, &req.id).await?;
        let state = task::state_of(&record);
        if state.is_terminal() {
            return Err(A2aError::new(
                A2aErrorCode::TaskNotCancelable,
                format!(
                    "task {} is already {}: only a submitted or working task can be canceled",
                    req.id,
                    state_name(state)
                ),
            ));
        }
        self.runtime
            .abort(&record.session_key, Some(&record.run_id))
            .await
            .map_err(core_error)?;
        let outcome = self
            .runtime
            .wait(&record.run_id, CANCEL_WAIT)
            .await
            .map_err(core_error)?;
        Ok(task_of(&outcome.record, &context))
    }

    /// `SubscribeToTask`: the task now, then its events until it ends; a task that already
    /// ended has nothing to follow.
    pub async fn subscribe(&self, agent: &str, req: TaskIdRequest) -> A2aResult<TaskEvents> {
        // Subscribed before the task is read: an event between the two is not missed.
        let events = self.runtime.subscribe();
        let (record, context) = self.task_record(agent, &req.id).await?;
        let state = task::state_of(&record);
        if state.is_terminal() {
            return Err(A2aError::new(
                A2aErrorCode::UnsupportedOperation,
                format!(
                    "task {} is already {}: there is nothing to subscribe to; GetTask answers \
                     its final state",
                    req.id,
                    state_name(state)
                ),
            ));
        }
        Ok(TaskEvents::new(
            self.runtime.clone(),
            self.clock.clone(),
            events,
            record.run_id,
            context,
        ))
    }

    /// A stream of a task about to be sent: subscribe first, then [`A2aTasks::send`], then
    /// [`TaskEvents::start`] with the task's id.
    pub fn events_from_now(
        &self,
    ) -> tokio::sync::broadcast::Receiver<Arc<crate::runtime::RunEvent>> {
        self.runtime.subscribe()
    }

    /// The follower of a just-sent task's events (`events` subscribed before it was sent).
    pub fn follow(
        &self,
        events: broadcast::Receiver<Arc<RunEvent>>,
        sent: &Submitted,
    ) -> TaskEvents {
        TaskEvents::new(
            self.runtime.clone(),
            self.clock.clone(),
            events,
            sent.run_id.clone(),
            sent.task.context_id.clone(),
        )
    }
}

/// A task just acknowledged: `SUBMITTED` at `at`.
fn submitted_task(run_id: &RunId, context_id: &str, at: i64) -> Task {
    Task {
        id: run_id.as_str().to_string(),
        context_id: context_id.to_string(),
        status: TaskStatus {
            state: TaskState::Submitted,
            message: None,
            timestamp: Some(iso8601(at)),
        },
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: None,
    }
}

/// The route of a task's pushes: the push channel, to the task.
fn push_route(run_id: &RunId) -> DeliveryContext {
    DeliveryContext {
        channel: PUSH_CHANNEL.to_string(),
        to: run_id.as_str().to_string(),
        account_id: None,
        thread_id: None,
    }
}

/// A state as a caller reads it (`completed`).
fn state_name(state: TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .map(|s| s.trim_start_matches("TASK_STATE_").to_lowercase())
        .unwrap_or_default()
}

fn invalid_params(message: impl Into<String>) -> A2aError {
    A2aError::new(A2aErrorCode::InvalidParams, message)
}

/// The A2A error of an engine error, mapped in one place.
fn core_error(e: CoreError) -> A2aError {
    let code = match &e {
        CoreError::Invalid(_) | CoreError::Key(_) | CoreError::TooLarge(_) => {
            A2aErrorCode::InvalidParams
        }
        CoreError::Forbidden(_) | CoreError::Unauthorized(_) | CoreError::NotFound(_) => {
            A2aErrorCode::InvalidRequest
        }
        _ => A2aErrorCode::Internal,
    };
    A2aError::new(code, e.to_string())
}

fn store_error(e: StoreError) -> A2aError {
    core_error(CoreError::Store(e))
}
