//! Push notifications of A2A tasks: the stored configs of a task, and the `a2a-push` channel
//! the outbox delivers a task's pushes through.
//!
//! A task's configs are stored as one JSON list in the store's named-token table under
//! `a2a-push:<taskId>` (a name no chat channel uses), so they are written in the same commit
//! as the task they belong to when `SendMessage` names one. A task's end push is made only when
//! it has configs then: a config created after its task ended gets no push.
//!
//! A task pushes `SUBMITTED` (committed with the task, when the config came with the message),
//! `WORKING` (committed with its run's start) and its end (committed with the run's end). A
//! push's record names the task (`to`) and the run; its idempotency key says which push it is.
//! The `SUBMITTED` push's text is its event, fixed when the record was made; the `WORKING` push
//! is built from the run's start; the end push sends the task as it is stored, final by then
//! (its text, the reply, is never read as an event). Each config is posted in turn and counted in the record's
//! progress (`partsSent`): a retry after a failure or a crash posts only to the configs not
//! yet done, so each receiver gets each push once.

use std::sync::Arc;

use switchboard_protocol::a2a::{
    NOTIFICATION_TOKEN_HEADER, StreamResponse, TaskPushNotificationConfig, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};

use super::task::{context_of, task_of};
use crate::channel::{Channel, ChannelError, Sent};
use crate::store::{DeliveryRecord, Store, StoreError, WriteOp, iso8601};

/// The channel's name in delivery records.
pub const PUSH_CHANNEL: &str = "a2a-push";

/// The most configs one task may have.
pub const MAX_CONFIGS: usize = 16;

/// The idempotency key of a task's `SUBMITTED` push, whose record holds the event to send.
pub fn submitted_key(task_id: &str) -> String {
    format!("{PUSH_CHANNEL}:{task_id}:submitted")
}

/// The name a task's configs are stored under (the reply handler looks for it too).
fn stored_name(task_id: &str) -> String {
    crate::delivery::replies::a2a_push_configs(task_id)
}

/// The configs of `task_id`, in the order they were made.
pub async fn configs(
    store: &dyn Store,
    task_id: &str,
) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
    match store.token(&stored_name(task_id)).await? {
        None => Ok(Vec::new()),
        Some(json) => serde_json::from_str(&json)
            .map_err(|e| StoreError::Backend(format!("the push configs of task {task_id}: {e}"))),
    }
}

/// The write that stores `configs` as the configs of `task_id`.
pub fn save(task_id: &str, configs: &[TaskPushNotificationConfig]) -> Result<WriteOp, StoreError> {
    let token = serde_json::to_string(configs)
        .map_err(|e| StoreError::Backend(format!("the push configs of task {task_id}: {e}")))?;
    Ok(WriteOp::SetToken {
        name: stored_name(task_id),
        token,
    })
}

/// The outbox's sender of A2A pushes.
pub struct PushChannel {
    store: Arc<dyn Store>,
    http: reqwest::Client,
}

impl PushChannel {
    /// `http` bounds each attempt by `delivery.timeoutSeconds`.
    pub fn new(store: Arc<dyn Store>, http: reqwest::Client) -> Self {
        Self { store, http }
    }

    /// The event a record pushes: the one fixed in its text for a task's `SUBMITTED` push,
    /// else the task as stored. (The end push's text is the reply, the model's words: never
    /// read as an event.)
    async fn event(&self, record: &DeliveryRecord) -> Result<StreamResponse, ChannelError> {
        let Some(run_id) = &record.run_id else {
            return Err(ChannelError::Permanent(
                "an A2A push names no task".to_string(),
            ));
        };
        if record.idempotency_key.as_deref() == Some(submitted_key(run_id.as_str()).as_str()) {
            return serde_json::from_str::<StreamResponse>(&record.text).map_err(|e| {
                ChannelError::Permanent(format!("the SUBMITTED push of task {run_id}: {e}"))
            });
        }
        let run = self
            .store
            .get_run(run_id)
            .await
            .map_err(|e| ChannelError::Retry(format!("could not read task {run_id}: {e}")))?
            .ok_or_else(|| ChannelError::Permanent(format!("task {run_id} is not stored")))?;
        let agent = run.session_key.agent_id().unwrap_or_default().to_string();
        let context = context_of(&agent, &run.session_key)
            .unwrap_or_default()
            .to_string();
        let working = crate::delivery::replies::a2a_push_working(run_id.as_str());
        if record.idempotency_key.as_deref() == Some(working.as_str()) {
            let status = TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: Some(iso8601(run.started_at.unwrap_or(run.created_at))),
            };
            return Ok(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: run_id.as_str().to_string(),
                context_id: context,
                status,
                metadata: None,
            }));
        }
        Ok(StreamResponse::Task(task_of(&run, &context)))
    }

    async fn send_all(&self, record: &DeliveryRecord) -> Result<(), ChannelError> {
        let configs = configs(self.store.as_ref(), &record.to)
            .await
            .map_err(|e| ChannelError::Retry(e.to_string()))?;
        if configs.len() <= record.parts_sent as usize {
            return Ok(());
        }
        let event = self.event(record).await?;
        let last = configs.len();
        for (done, config) in configs.iter().enumerate().skip(record.parts_sent as usize) {
            self.post(record, config, &event).await?;
            if done + 1 < last {
                let progress = WriteOp::DeliveryProgress {
                    id: record.id.clone(),
                    parts_sent: (done + 1) as u32,
                };
                self.store
                    .write_batch(vec![progress])
                    .await
                    .map_err(|e| ChannelError::Retry(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// One `POST` of `event` to one config's URL, with its token and credentials.
    async fn post(
        &self,
        record: &DeliveryRecord,
        config: &TaskPushNotificationConfig,
        event: &StreamResponse,
    ) -> Result<(), ChannelError> {
        let url = &config.url;
        let mut request = self
            .http
            .post(url)
            .header("Idempotency-Key", &record.id)
            .json(event);
        if let Some(token) = &config.token {
            request = request.header(NOTIFICATION_TOKEN_HEADER, token);
        }
        if let Some(auth) = &config.authentication
            && let Some(credentials) = &auth.credentials
        {
            request = request.header("Authorization", format!("{} {credentials}", auth.scheme));
        }
        let response = request.send().await.map_err(|e| {
            let why = if e.is_timeout() {
                "timed out"
            } else {
                "connection refused or unreachable"
            };
            ChannelError::Retry(format!("could not reach the push receiver {url}: {why}"))
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let message = format!("the push receiver {url} answered {status}");
        if status.is_server_error() || matches!(status.as_u16(), 408 | 425 | 429) {
            Err(ChannelError::Retry(message))
        } else {
            Err(ChannelError::Permanent(message))
        }
    }
}

impl Channel for PushChannel {
    fn name(&self) -> &'static str {
        PUSH_CHANNEL
    }

    fn send<'a>(&'a self, record: &'a DeliveryRecord) -> Sent<'a> {
        Box::pin(async move { self.send_all(record).await.map(|()| Vec::new()) })
    }

    /// Not a target of `send`: only a task's own pushes go here.
    fn offered(&self) -> bool {
        false
    }

    /// Each push stands alone (a client's URL, per task): none waits for another.
    fn in_order(&self) -> bool {
        false
    }
}
