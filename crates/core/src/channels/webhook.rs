//! The generic HTTP channel (SPEC §9.2): inbound `POST /channels/webhook/<accountId>` payloads
//! are routed to session keys; outbound messages are `POST`ed as JSON to the account's `url`.
//!
//! Inbound: `{from, chatType, chatId?, text, threadId?}` with the account's token (`Authorization:
//! Bearer …`). Group and channel chats go to `agent:<agentId>:webhook:<group|channel>:<chatId>`
//! (`:thread:<threadId>` inside a thread); direct chats follow `session.dmScope`. The message
//! records the route (`deliveryContext`, `lastChannel`, `lastTo`, …) and starts a run whose reply
//! goes back to that route through the outbox.
//!
//! Outbound body: `{id, kind, accountId, to, threadId?, text, sessionKey?, runId?}`, with the
//! record id also in an `Idempotency-Key` header: an attempt repeated after a crash carries the
//! same id.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use switchboard_protocol::sessions::{DeliveryContext, Patch};

use super::{ChannelError, WEBHOOK};
use crate::config::{DmScope, WebhookAccount};
use crate::engine::Engine;
use crate::keys::{self, ChatType, SessionKey};
use crate::runtime::lanes::Lane;
use crate::runtime::{Deliver, RunRequest, user_message};
use crate::store::{DeliveryRecord, EntryPatch, WriteOp};

/// Why an inbound request was refused: an HTTP status and a message that says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InboundError {
    pub status: u16,
    pub message: String,
}

impl InboundError {
    fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

/// What an accepted inbound message started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundAccepted {
    pub run_id: String,
    pub session_key: String,
}

/// The inbound payload.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InboundPayload {
    from: IdValue,
    chat_type: String,
    #[serde(default)]
    chat_id: Option<IdValue>,
    text: String,
    #[serde(default)]
    thread_id: Option<IdValue>,
}

/// Ids arrive as strings or numbers (chat APIs use both).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum IdValue {
    Text(String),
    Number(i64),
}

impl IdValue {
    fn into_string(self) -> String {
        match self {
            Self::Text(s) => s.trim().to_string(),
            Self::Number(n) => n.to_string(),
        }
    }
}

const PAYLOAD_EXPECTED: &str = "expected a JSON object {\"from\": string, \"chatType\": \"direct\"|\"group\"|\"channel\", \"chatId\"?: string (required for group and channel), \"text\": string, \"threadId\"?: string}";

/// Checks an inbound request and starts the run it asks for. Nothing is stored unless every
/// check passed.
pub async fn receive(
    engine: &Arc<Engine>,
    account_id: &str,
    token: Option<&str>,
    body: &[u8],
) -> Result<InboundAccepted, InboundError> {
    let webhook = &engine.config().channels.webhook;
    if !webhook.enabled {
        return Err(InboundError::new(
            404,
            "the webhook channel is off (set channels.webhook.enabled to true)",
        ));
    }
    let account_id = account_id.trim().to_lowercase();
    let Some(account) = webhook.accounts.get(&account_id) else {
        let known: Vec<&str> = webhook.accounts.keys().map(String::as_str).collect();
        return Err(InboundError::new(
            404,
            format!(
                "unknown webhook account {account_id:?} (configured: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        ));
    };
    check_token(account, &account_id, token)?;
    let payload: InboundPayload = parse_body(body, PAYLOAD_EXPECTED)?;
    let inbound = Inbound::check(payload)?;
    let agent_id = account
        .agent_id
        .clone()
        .unwrap_or_else(|| engine.default_agent_id().to_string());
    let key = inbound.session_key(engine, &agent_id, &account_id)?;
    let route = DeliveryContext {
        channel: WEBHOOK.into(),
        to: inbound
            .chat_id
            .clone()
            .unwrap_or_else(|| inbound.from.clone()),
        account_id: Some(account_id.clone()),
        thread_id: inbound.thread_id.clone(),
    };

    engine
        .store()
        .write_batch(vec![
            WriteOp::Create(Box::new(engine.new_session(&key))),
            WriteOp::Patch {
                key: key.as_str().to_string(),
                patch: Box::new(route_patch(&route)),
            },
        ])
        .await
        .map_err(|e| InboundError::new(500, e.to_string()))?;
    let mut request = RunRequest::new(key.as_str(), Lane::Main);
    request.message = Some(user_message(&inbound.text_for_model(), None));
    request.deliver = Some(Deliver {
        kind: "reply",
        route: Some(route),
    });
    let accepted = engine
        .submit_run(request)
        .await
        .map_err(|e| InboundError::new(500, e.to_string()))?;
    Ok(InboundAccepted {
        run_id: accepted.run_id,
        session_key: accepted.session_key,
    })
}

/// Decodes an inbound JSON body; a 400 names the field at fault and what is `expected`.
pub fn parse_body<T: serde::de::DeserializeOwned>(
    body: &[u8],
    expected: &str,
) -> Result<T, InboundError> {
    let mut json = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(" at {path}")
        };
        InboundError::new(
            400,
            format!("invalid payload{at}: {}; {expected}", e.inner()),
        )
    })
}

fn check_token(
    account: &WebhookAccount,
    account_id: &str,
    presented: Option<&str>,
) -> Result<(), InboundError> {
    let expected = account.token.as_deref().unwrap_or_default();
    let Some(given) = presented else {
        return Err(InboundError::new(
            401,
            format!(
                "missing token: send Authorization: Bearer <channels.webhook.accounts.{account_id}.token>"
            ),
        ));
    };
    if crate::access::token_matches(expected, given) {
        Ok(())
    } else {
        Err(InboundError::new(
            401,
            format!("wrong token for webhook account {account_id}"),
        ))
    }
}

/// The fields of the route an inbound message records on its session.
fn route_patch(route: &DeliveryContext) -> EntryPatch {
    EntryPatch {
        last_channel: Patch::Set(route.channel.clone()),
        last_to: Patch::Set(route.to.clone()),
        last_account_id: route.account_id.clone().map_or(Patch::Keep, Patch::Set),
        last_thread_id: route.thread_id.clone().map_or(Patch::Clear, Patch::Set),
        delivery_context: Patch::Set(route.clone()),
        ..EntryPatch::default()
    }
}

/// A checked inbound message.
struct Inbound {
    from: String,
    chat_type: ChatType,
    chat_id: Option<String>,
    text: String,
    thread_id: Option<String>,
}

impl Inbound {
    fn check(p: InboundPayload) -> Result<Self, InboundError> {
        let from = p.from.into_string();
        if from.is_empty() {
            return Err(InboundError::new(
                400,
                "from: must name the sender (a non-empty string or number)",
            ));
        }
        let chat_type = ChatType::parse(&p.chat_type).ok_or_else(|| {
            InboundError::new(
                400,
                format!(
                    "chatType: {:?} is not a chat type; expected \"direct\" (or \"dm\"), \"group\" or \"channel\"",
                    p.chat_type
                ),
            )
        })?;
        let chat_id = p
            .chat_id
            .map(IdValue::into_string)
            .filter(|s| !s.is_empty());
        if chat_type != ChatType::Direct && chat_id.is_none() {
            return Err(InboundError::new(
                400,
                format!(
                    "chatId: required when chatType is {:?} (the id of the chat)",
                    chat_type.as_str()
                ),
            ));
        }
        if p.text.trim().is_empty() {
            return Err(InboundError::new(
                400,
                "text: must not be empty (the message to the agent)",
            ));
        }
        Ok(Self {
            from,
            chat_type,
            chat_id,
            text: p.text,
            thread_id: p
                .thread_id
                .map(IdValue::into_string)
                .filter(|s| !s.is_empty()),
        })
    }

    /// The session of this chat: group and channel chats by chat id (and thread); direct chats
    /// per `session.dmScope`.
    fn session_key(
        &self,
        engine: &Engine,
        agent_id: &str,
        account_id: &str,
    ) -> Result<SessionKey, InboundError> {
        let thread = self.thread_id.as_deref();
        let key = match (self.chat_type, engine.config().session.dm_scope) {
            (ChatType::Group | ChatType::Channel, _) => keys::group_key(
                agent_id,
                WEBHOOK,
                self.chat_type,
                self.chat_id.as_deref().unwrap_or_default(),
                thread,
            ),
            (ChatType::Direct, DmScope::Main) => {
                keys::main_session_key(agent_id, &engine.key_context(agent_id))
            }
            (ChatType::Direct, DmScope::PerChannelPeer) => {
                keys::group_key(agent_id, WEBHOOK, ChatType::Direct, &self.from, thread)
            }
            (ChatType::Direct, scope) => {
                let peer = peer_segment(&self.from);
                let rest = match scope {
                    DmScope::PerAccountChannelPeer => {
                        format!("{WEBHOOK}:{}:direct:{peer}", peer_segment(account_id))
                    }
                    _ => format!("direct:{peer}"),
                };
                keys::canonicalize(
                    &format!("agent:{agent_id}:{rest}"),
                    &engine.key_context(agent_id),
                )
                .map_err(|e| InboundError::new(400, format!("from: {e}")))?
            }
        };
        Ok(key)
    }

    /// What the agent reads: in group and channel chats the sender comes first, on its own line.
    fn text_for_model(&self) -> String {
        match self.chat_type {
            ChatType::Direct => self.text.clone(),
            _ => format!("[from {}]\n{}", self.from, self.text),
        }
    }
}

/// A peer or account id as one key segment: lower case, no `:` or whitespace.
fn peer_segment(raw: &str) -> String {
    let cleaned: String = raw
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| {
            if c == ':' || c.is_whitespace() || c.is_control() {
                '-'
            } else {
                c
            }
        })
        .collect();
    if cleaned.is_empty() {
        "unknown".into()
    } else {
        cleaned
    }
}

/// One outbound attempt: `POST` to the account's `url`.
pub(super) async fn send(engine: &Engine, record: &DeliveryRecord) -> Result<(), ChannelError> {
    let accounts = &engine.config().channels.webhook.accounts;
    let (account_id, account) = match &record.account_id {
        Some(id) => match accounts.get(id) {
            Some(account) => (id.clone(), account),
            None => {
                return Err(ChannelError::Permanent(format!(
                    "unknown webhook account {id:?} (configured: {})",
                    accounts.keys().cloned().collect::<Vec<_>>().join(", ")
                )));
            }
        },
        None => match accounts.iter().next() {
            Some((id, account)) if accounts.len() == 1 => (id.clone(), account),
            _ => {
                return Err(ChannelError::Permanent(format!(
                    "the route names no webhook account and {} are configured; say which with accountId",
                    accounts.len()
                )));
            }
        },
    };
    let Some(url) = &account.url else {
        return Err(ChannelError::Permanent(format!(
            "channels.webhook.accounts.{account_id}.url is not set: the account only receives"
        )));
    };
    let mut body = json!({
        "id": record.id,
        "kind": record.kind,
        "accountId": account_id,
        "to": record.to,
        "text": record.text,
    });
    if let Value::Object(map) = &mut body {
        for (name, value) in [
            ("threadId", &record.thread_id),
            ("sessionKey", &record.session_key),
            ("runId", &record.run_id),
        ] {
            if let Some(v) = value {
                map.insert(name.into(), Value::from(v.as_str()));
            }
        }
    }
    let mut request = engine
        .outbox()
        .http
        .post(url)
        .header("Idempotency-Key", &record.id)
        .json(&body);
    if let Some(token) = &account.token {
        request = request.bearer_auth(token);
    }
    let response = request
        .send()
        .await
        .map_err(|e| ChannelError::Retry(format!("could not reach {url}: {}", describe(&e))))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let text = response.text().await.unwrap_or_default();
    let excerpt: String = text.chars().take(200).collect();
    let message = format!("{url} answered {status}: {excerpt}");
    if status.is_server_error() || matches!(status.as_u16(), 408 | 425 | 429) {
        Err(ChannelError::Retry(message))
    } else {
        Err(ChannelError::Permanent(message))
    }
}

/// A reqwest error, briefly (the URL is in the message already).
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection refused or unreachable".into()
    } else {
        let text = e.to_string();
        match e.url() {
            Some(url) => text.replace(url.as_str(), "").trim().to_string(),
            None => text,
        }
    }
}
