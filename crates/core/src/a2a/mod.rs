//! The client side of A2A 1.0 (SPEC §10a, docs/a2a.md): an agent messages the remote
//! A2A agents its config names (`agents.list[].a2a.remotes`) through `sessions_send` with
//! `sessionKey: "a2a:<remote>[:<contextId>]"`. The reply-back loop and announce do not cross
//! the boundary: the remote's reply is the result.
//!
//! Each conversation with a remote is a local session row, `agent:<agentId>:a2a-remote:<remote>`
//! (the agent's default conversation with it) or `…:a2a-remote:<remote>:<contextId>` (a context
//! the caller named), with channel `a2a`: `sessions_list` lists it, `sessions_history` reads
//! what was sent and answered, and the remote's `contextId` is kept per row so the next send
//! continues the conversation.
//!
//! Durable and once: a send is an outbox record (channel `a2a`) committed before it is
//! acknowledged or attempted; the outbox retries it with backoff and resumes it after a
//! restart, and the channel (`channel.rs`) makes each attempt of one send carry the same A2A
//! `messageId` (the record's id) and never send again once the remote took it. The tool side
//! ([`Remotes`]) waits for the record's outcome.
//!
//! Owns: the remote session keys, the `a2a` channel, the JSON-RPC client. Must not: start runs
//! (nothing runs locally), or be reached by anything but `sessions_send` and the outbox.

mod channel;
mod client;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::delivery::DeliveryKind;
use switchboard_protocol::session_tools::{PendingRun, PendingState, SendResult};
use switchboard_protocol::sessions::DeliveryContext;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

pub use channel::A2aChannel;

use crate::config::Config;
use crate::delivery::{Outbound, Outbox};
use crate::ids::RunId;
use crate::keys::{SessionKey, SessionKind};
use crate::store::{DeliveryRecord, DeliveryStatus, NewSession, Store, WriteOp};

/// The channel of remote conversations: their rows' `channel` and their deliveries'.
pub const CHANNEL: &str = "a2a";
/// The segment after `agent:<agentId>:` that starts a remote conversation's key (the server
/// side's sessions are `agent:<agentId>:a2a:<contextId>`; this keeps the two apart).
const ROW_SEGMENT: &str = "a2a-remote";
/// The short form `sessions_send` accepts (SPEC §10a).
const SHORT_PREFIX: &str = "a2a:";
const MAX_CONTEXT_ID: usize = 256;

/// The store token that keeps a conversation's remote `contextId`.
fn context_token(row: &SessionKey) -> String {
    format!("a2a:context:{}", row.as_str())
}

/// The store token that keeps the remote task a send created (its id).
fn task_token(delivery: &str) -> String {
    format!("a2a:task:{delivery}")
}

/// The store token that keeps the remote's reply to a send.
fn reply_token(delivery: &str) -> String {
    format!("a2a:reply:{delivery}")
}

/// One conversation with a remote, as its row key says.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub agent_id: String,
    pub remote: String,
    /// The context the key names (`None`: the agent's default conversation with the remote),
    /// lower-cased when read from a row key (keys are lower-case).
    pub context_id: Option<String>,
    /// The context as the caller wrote it in `a2a:<remote>:<contextId>`: sent as it is.
    pub written_context: Option<String>,
    pub row: SessionKey,
}

impl Conversation {
    fn new(agent_id: &str, remote: &str, context_id: Option<&str>) -> Self {
        let mut row = format!("agent:{agent_id}:{ROW_SEGMENT}:{remote}");
        if let Some(id) = context_id {
            row.push(':');
            row.push_str(&id.to_lowercase());
        }
        Self {
            agent_id: agent_id.to_string(),
            remote: remote.to_string(),
            context_id: context_id.map(str::to_lowercase),
            written_context: None,
            row: SessionKey::from_canonical(row),
        }
    }

    /// The conversation a row key names, if it is one.
    pub fn of_row(key: &SessionKey) -> Option<Self> {
        let rest = key.as_str().strip_prefix("agent:")?;
        let (agent_id, rest) = rest.split_once(':')?;
        let rest = rest.strip_prefix(ROW_SEGMENT)?.strip_prefix(':')?;
        let (remote, context_id) = match rest.split_once(':') {
            Some((remote, id)) => (remote, Some(id)),
            None => (rest, None),
        };
        Some(Self::new(agent_id, remote, context_id))
    }
}

/// The conversation `key` names when it is a remote one — `a2a:<remote>[:<contextId>]`, or a
/// row key of the caller's (`agent:<agentId>:a2a-remote:…`, as `sessions_list` shows it) —
/// or why it cannot be sent to; `None` for every other key.
pub fn target(config: &Config, agent_id: &str, key: &str) -> Option<Result<Conversation, String>> {
    let key = key.trim();
    let lower = key.to_ascii_lowercase();
    let conversation = if lower.starts_with(SHORT_PREFIX) {
        let rest = &key[SHORT_PREFIX.len()..];
        let (remote, context_id) = match rest.split_once(':') {
            Some((remote, id)) => (remote, Some(id)),
            None => (rest, None),
        };
        if let Some(id) = context_id
            && (id.is_empty()
                || id.len() > MAX_CONTEXT_ID
                || id.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            return Some(Err(format!(
                "{key:?}: a contextId is 1-{MAX_CONTEXT_ID} characters without spaces \
                 (accepted: a2a:<remote> or a2a:<remote>:<contextId>)"
            )));
        }
        Conversation {
            written_context: context_id.map(str::to_string),
            ..Conversation::new(agent_id, &remote.to_ascii_lowercase(), context_id)
        }
    } else {
        let conversation = Conversation::of_row(&SessionKey::from_canonical(lower))?;
        if conversation.agent_id != agent_id {
            return Some(Err(format!(
                "{key} is agent {}'s conversation with an A2A remote; only that agent sends \
                 into it (yours: a2a:<remote> with your agent's remotes)",
                conversation.agent_id
            )));
        }
        conversation
    };
    if config.a2a_remote(agent_id, &conversation.remote).is_none() {
        let names = config.a2a_remote_names(agent_id);
        let known = match names.is_empty() {
            true => "none".to_string(),
            false => names.join(", "),
        };
        return Some(Err(format!(
            "unknown A2A remote {:?} for agent {agent_id} (its remotes: {known}; a remote is \
             configured as agents.list[].a2a.remotes.<name> {{url, token?}})",
            conversation.remote
        )));
    }
    Some(Ok(conversation))
}

/// What a send to a remote needs of its caller.
pub struct RemoteSend {
    pub conversation: Conversation,
    pub requester: SessionKey,
    pub requester_run: RunId,
    pub message: String,
    /// 0: answer `accepted` at once.
    pub timeout: Duration,
    /// The name of the tool call that sends it: the outbox record's idempotency key, so the call
    /// made again after a stop finds the send it stored.
    pub call: Option<String>,
}

/// The tool side of the client: stores a send and waits for its outcome.
pub struct Remotes {
    store: Arc<dyn Store>,
    outbox: Arc<Outbox>,
}

impl Remotes {
    pub fn new(store: Arc<dyn Store>, outbox: Arc<Outbox>) -> Self {
        Self { store, outbox }
    }

    /// `sessions_send` to a remote: the conversation's row (created when new) and the send's
    /// outbox record are committed before anything is answered or sent.
    /// Waiting ends early, as a timeout, when `stop_waiting` is cancelled (the caller went).
    pub async fn send(&self, send: RemoteSend, stop_waiting: &CancellationToken) -> SendResult {
        let shown = send.conversation.row.display().to_string();
        let failed = |error: String| SendResult::Error {
            error,
            run_id: None,
            session_key: Some(shown.clone()),
        };
        let record = match self.commit(&send).await {
            Ok(record) => record,
            Err(e) => return failed(format!("the send could not be stored: {e}")),
        };
        if record.status == DeliveryStatus::Denied {
            return SendResult::Forbidden {
                error: record.detail.unwrap_or_default(),
                session_key: Some(shown),
            };
        }
        if send.timeout.is_zero() {
            return SendResult::Accepted {
                run_id: record.id,
                session_key: shown,
            };
        }
        match self.wait(&record.id, send.timeout, stop_waiting).await {
            Ok(record) => self.outcome(record, &send, shown).await,
            Err(e) => failed(format!(
                "the send is stored, but its outcome could not be read: {e}"
            )),
        }
    }

    async fn commit(&self, send: &RemoteSend) -> Result<DeliveryRecord, String> {
        let c = &send.conversation;
        let row = NewSession {
            key: c.row.clone(),
            agent_id: c.agent_id.clone(),
            kind: SessionKind::Other,
            channel: Some(CHANNEL.to_string()),
            chat_type: None,
            label: None,
            display_name: Some(format!("A2A remote {}", c.remote)),
            spawned_by: None,
        };
        self.store
            .write_batch(vec![WriteOp::Create(Box::new(row))])
            .await
            .map_err(|e| e.to_string())?;
        let out = Outbound {
            kind: DeliveryKind::Other(CHANNEL.to_string()),
            session_key: Some(c.row.clone()),
            source_key: Some(send.requester.clone()),
            run_id: Some(send.requester_run.clone()),
            route: Some(DeliveryContext {
                channel: CHANNEL.to_string(),
                to: c.remote.clone(),
                account_id: None,
                thread_id: c.written_context.clone(),
            }),
            text: send.message.clone(),
            idempotency_key: send.call.clone(),
        };
        self.outbox.deliver(out).await.map_err(|e| e.to_string())
    }

    /// The record once it is no longer pending, or as it stands when `timeout` is up.
    async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        stop_waiting: &CancellationToken,
    ) -> Result<DeliveryRecord, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        // Subscribed before each read, so an outcome between the two is not missed.
        let mut events = self.outbox.subscribe();
        loop {
            let record = self
                .store
                .get_delivery(id)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("the delivery {id} is gone"))?;
            if record.status != DeliveryStatus::Pending {
                return Ok(record);
            }
            loop {
                let event = tokio::select! {
                    event = tokio::time::timeout_at(deadline, events.recv()) => event,
                    () = stop_waiting.cancelled() => return Ok(record),
                };
                match event {
                    Err(_) => return Ok(record),
                    Ok(Ok(event)) if event.record.id != id => continue,
                    Ok(Ok(_) | Err(RecvError::Lagged(_))) => break,
                    Ok(Err(RecvError::Closed)) => {
                        tokio::time::sleep_until(deadline).await;
                        break;
                    }
                }
            }
        }
    }

    async fn outcome(
        &self,
        record: DeliveryRecord,
        send: &RemoteSend,
        shown: String,
    ) -> SendResult {
        let remote = &send.conversation.remote;
        match record.status {
            DeliveryStatus::Delivered => match self.store.token(&reply_token(&record.id)).await {
                Ok(reply) => SendResult::Ok {
                    run_id: record.id,
                    reply: reply.unwrap_or_default(),
                    session_key: shown,
                },
                Err(e) => SendResult::Error {
                    error: format!("the remote answered, but its reply could not be read: {e}"),
                    run_id: Some(record.id),
                    session_key: Some(shown),
                },
            },
            DeliveryStatus::Pending => {
                let task = self
                    .store
                    .token(&task_token(&record.id))
                    .await
                    .ok()
                    .flatten();
                let (state, now) = match &task {
                    Some(task) => (
                        PendingState::Running,
                        format!("the remote {remote} is working on it (task {task})"),
                    ),
                    None => (
                        PendingState::Queued,
                        format!(
                            "it is stored and not yet taken by the remote {remote}{}",
                            record
                                .detail
                                .as_deref()
                                .map(|d| format!(" (last attempt: {d})"))
                                .unwrap_or_default()
                        ),
                    ),
                };
                SendResult::Timeout {
                    error: format!(
                        "the reply did not arrive within {}s; {now} and goes on — read the \
                         reply later with sessions_history on {shown}",
                        send.timeout.as_secs()
                    ),
                    run_id: record.id,
                    session_key: shown,
                    run: PendingRun { state },
                }
            }
            _ => SendResult::Error {
                error: format!(
                    "the A2A remote {remote} did not take the message: {}",
                    record.detail.unwrap_or_default()
                ),
                run_id: Some(record.id),
                session_key: Some(shown),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::{Conversation, target};
    use crate::config::{A2aRemote, AgentEntry, Config};

    fn config() -> Config {
        let mut main = AgentEntry {
            id: "main".into(),
            ..AgentEntry::default()
        };
        main.a2a.remotes.insert("peer".into(), A2aRemote::default());
        let mut config = Config::default();
        config.agents.list = vec![main];
        config
    }

    fn row(key: &str) -> Option<String> {
        match target(&config(), "main", key)? {
            Ok(c) => Some(format!(
                "{} {:?} {:?}",
                c.row.as_str(),
                c.context_id,
                c.written_context
            )),
            Err(e) => Some(format!("error: {e}")),
        }
    }

    #[test]
    fn keys_name_conversations_and_every_other_key_is_left_alone() {
        assert_eq!(
            row("a2a:peer").unwrap(),
            "agent:main:a2a-remote:peer None None"
        );
        assert_eq!(
            row(" A2A:Peer:Ctx-1 ").unwrap(),
            "agent:main:a2a-remote:peer:ctx-1 Some(\"ctx-1\") Some(\"Ctx-1\")"
        );
        assert_eq!(
            row("agent:main:a2a-remote:peer:ctx-1").unwrap(),
            "agent:main:a2a-remote:peer:ctx-1 Some(\"ctx-1\") None"
        );
        for other in [
            "main",
            "agent:main:a2a:ctx-1",
            "a2a",
            "discord:group:1",
            "agent:main:peer",
        ] {
            assert_eq!(row(other), None, "{other}");
        }
        for (bad, says) in [
            ("a2a:peer:", "a contextId is 1-256 characters"),
            ("a2a:peer:two words", "without spaces"),
            (
                "a2a:nobody",
                "unknown A2A remote \"nobody\" for agent main (its remotes: peer;",
            ),
            ("agent:ops:a2a-remote:peer", "agent ops's conversation"),
        ] {
            let answer = row(bad).unwrap();
            assert!(
                answer.starts_with("error: ") && answer.contains(says),
                "{bad}: {answer}"
            );
        }
    }

    #[test]
    fn a_row_key_reads_back_as_its_conversation() {
        let c = Conversation::new("main", "peer", Some("Ctx-9"));
        let back = Conversation::of_row(&c.row).unwrap();
        assert_eq!(
            (back.agent_id, back.remote, back.context_id, back.row),
            ("main".into(), "peer".into(), Some("ctx-9".into()), c.row)
        );
    }
}
