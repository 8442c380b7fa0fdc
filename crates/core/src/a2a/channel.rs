//! The `a2a` channel: one outbox attempt of a `sessions_send` to a remote A2A agent. The
//! outbox decides whether and when (retries with backoff, resumption after a restart); this
//! file decides how, and makes the send happen once:
//!
//! - the A2A `messageId` is the delivery record's id, so every attempt of one send, before or
//!   after a restart, carries the same id (a remote may drop a repeat by it);
//! - `SendMessage` asks for the task at once (`returnImmediately`), and its id is committed
//!   (`a2a:task:<deliveryId>`) before any wait: an attempt that finds it polls `GetTask` and
//!   never sends again, so a stop while the remote works costs no second send;
//! - the remote's answer is committed with the `delivered` mark: the conversation row's
//!   transcript gets the message and the reply, the reply is kept for the waiting tool
//!   (`a2a:reply:<deliveryId>`), and the conversation keeps the remote's `contextId`
//!   (`a2a:context:<row key>`) so the next send continues it.

use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::message::{
    AssistantMessage, ContentBlock, Provenance, StopReason, TranscriptMessage, Usage, UserContent,
    UserMessage,
};
use tokio_util::sync::CancellationToken;

use super::client::{Client, Endpoint};
use super::wire::{Message, Part, Phase, ROLE_USER, Task};
use super::{CHANNEL, Conversation, context_token, reply_token, task_token};
use crate::channel::{Channel, ChannelError, Sent};
use crate::clock::Clock;
use crate::config::Config;
use crate::store::{DeliveryRecord, Store, WriteOp};

/// The first wait between two `GetTask` polls; it doubles up to [`POLL_MAX`].
const POLL_FIRST: Duration = Duration::from_millis(100);
const POLL_MAX: Duration = Duration::from_secs(2);
/// How long one attempt polls a working task before it gives the outbox back the record (the
/// next attempt polls on; it never sends again).
const ATTEMPT_MAX: Duration = Duration::from_secs(600);

/// The channel the composition root registers.
pub struct A2aChannel {
    config: Arc<Config>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    client: Client,
    /// Cancelled when the engine stops: a poll in progress ends, and the record stays pending.
    stop: CancellationToken,
}

impl A2aChannel {
    pub fn new(
        config: Arc<Config>,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        http: reqwest::Client,
        stop: CancellationToken,
    ) -> Self {
        Self {
            config,
            store,
            clock,
            client: Client::new(http),
            stop,
        }
    }
}

impl Channel for A2aChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    fn send<'a>(&'a self, record: &'a DeliveryRecord) -> Sent<'a> {
        Box::pin(self.attempt(record))
    }

    /// An attempt waits until the remote's task ends: a slow task must not hold the next send.
    fn in_order(&self) -> bool {
        false
    }
}

impl A2aChannel {
    async fn attempt(&self, record: &DeliveryRecord) -> Result<Vec<WriteOp>, ChannelError> {
        let conversation = record
            .session_key
            .as_ref()
            .and_then(Conversation::of_row)
            .ok_or_else(|| {
                ChannelError::Permanent(
                    "an a2a delivery is made by sessions_send to a2a:<remote>; it names no \
                     remote conversation"
                        .into(),
                )
            })?;
        let remote = self
            .config
            .a2a_remote(&conversation.agent_id, &conversation.remote)
            .ok_or_else(|| {
                ChannelError::Permanent(format!(
                    "agent {} has no A2A remote {} any more (agents.list[].a2a.remotes)",
                    conversation.agent_id, conversation.remote
                ))
            })?;
        let endpoint = self.client.endpoint(remote).await?;
        let task_name = task_token(&record.id);
        let task = match self.token(&task_name).await? {
            // Sent before: only its task is asked about.
            Some(id) => self.client.get_task(&endpoint, &id).await?,
            None => {
                // The context the caller named (as written), else the one the remote gave
                // this conversation, else the one in its key (lower-cased, as keys are).
                let context_id = match &record.thread_id {
                    Some(id) => Some(id.clone()),
                    None => self
                        .token(&context_token(&conversation.row))
                        .await?
                        .or_else(|| conversation.context_id.clone()),
                };
                let message = Message {
                    message_id: record.id.clone(),
                    context_id,
                    task_id: None,
                    role: ROLE_USER.into(),
                    parts: vec![Part {
                        text: Some(record.text.clone()),
                    }],
                };
                let sent = self.client.send_message(&endpoint, message).await?;
                match (sent.task, sent.message) {
                    (Some(task), _) => {
                        self.remember_task(&task_name, &task).await;
                        task
                    }
                    (None, Some(reply)) => {
                        let text = reply.text().unwrap_or_default();
                        return Ok(self.answered(record, &conversation, reply.context_id, text));
                    }
                    (None, None) => {
                        return Err(ChannelError::Permanent(
                            "the remote answered SendMessage with neither a task nor a message"
                                .into(),
                        ));
                    }
                }
            }
        };
        let task = self.until_done(&endpoint, task).await?;
        match task.phase() {
            Phase::Answered => {
                let reply = task.reply();
                Ok(self.answered(record, &conversation, task.context_id, reply))
            }
            Phase::Refused | Phase::Working => {
                let why = task
                    .status
                    .message
                    .as_ref()
                    .and_then(Message::text)
                    .unwrap_or_else(|| "no reason given".into());
                Err(ChannelError::Permanent(format!(
                    "the remote's task {} ended {}: {why}",
                    task.id, task.status.state
                )))
            }
        }
    }

    /// Commits the task id before any wait; a failure to do so is logged and the attempt goes
    /// on (the send happened; only a restart during this attempt would then send again).
    async fn remember_task(&self, name: &str, task: &Task) {
        let op = WriteOp::SetToken {
            name: name.to_string(),
            token: task.id.clone(),
        };
        if let Err(e) = self.store.write_batch(vec![op]).await {
            tracing::warn!(task = %task.id, error = %e, "a2a: could not record a remote task's id");
        }
    }

    /// Polls `GetTask` until the task's turn is over, the attempt has polled long enough, or
    /// the engine stops (both: a retry, which polls on).
    async fn until_done(
        &self,
        endpoint: &Endpoint<'_>,
        mut task: Task,
    ) -> Result<Task, ChannelError> {
        let started = self.clock.now_ms();
        let mut wait = POLL_FIRST;
        while task.phase() == Phase::Working {
            if self.clock.now_ms() - started > ATTEMPT_MAX.as_millis() as i64 {
                return Err(ChannelError::Retry(format!(
                    "the remote's task {} is still {} after {}s; polled again later",
                    task.id,
                    task.status.state,
                    ATTEMPT_MAX.as_secs()
                )));
            }
            let until = self.clock.now_ms() + wait.as_millis() as i64;
            tokio::select! {
                () = self.clock.sleep_until(until) => {}
                () = self.stop.cancelled() => {
                    return Err(ChannelError::Retry(format!(
                        "the gateway stopped while the remote's task {} was {}; it is polled \
                         again after the restart",
                        task.id, task.status.state
                    )));
                }
            }
            wait = (wait * 2).min(POLL_MAX);
            task = self.client.get_task(endpoint, &task.id).await?;
        }
        Ok(task)
    }

    async fn token(&self, name: &str) -> Result<Option<String>, ChannelError> {
        self.store
            .token(name)
            .await
            .map_err(|e| ChannelError::Retry(format!("the store could not be read: {e}")))
    }

    /// The writes of a send the remote answered: the transcript, the reply, the context.
    fn answered(
        &self,
        record: &DeliveryRecord,
        conversation: &Conversation,
        context_id: Option<String>,
        reply: String,
    ) -> Vec<WriteOp> {
        let now = self.clock.now_ms();
        let provenance = Provenance {
            kind: "agent".into(),
            from_session_key: record.source_key.as_ref().map(|k| k.display().to_string()),
            run_id: record.run_id.as_ref().map(|r| r.as_str().to_string()),
            ..Provenance::default()
        };
        let sent = TranscriptMessage::User(UserMessage {
            content: UserContent::Text(record.text.clone()),
            timestamp: now,
            provenance: Some(provenance),
            origin: None,
        });
        let answer = TranscriptMessage::Assistant(AssistantMessage {
            content: vec![ContentBlock::text(&reply)],
            provider: "a2a".into(),
            model: conversation.remote.clone(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp: now,
            origin: None,
        });
        let mut writes = vec![
            WriteOp::Append {
                key: conversation.row.clone(),
                create: None,
                messages: vec![sent, answer],
            },
            WriteOp::SetToken {
                name: reply_token(&record.id),
                token: reply,
            },
        ];
        if let Some(context_id) = context_id {
            writes.push(WriteOp::SetToken {
                name: context_token(&conversation.row),
                token: context_id,
            });
        }
        writes
    }
}
