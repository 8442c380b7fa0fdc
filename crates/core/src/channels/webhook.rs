//! The generic HTTP channel (SPEC §9.2): inbound `POST /channels/webhook/<accountId>` payloads
//! are routed to session keys; outbound messages are `POST`ed as JSON to the account's `url`.
//!
//! Inbound: `{from, chatType, chatId?, text, threadId?}` with the account's token (`Authorization:
//! Bearer …`). Group and channel chats go to `agent:<agentId>:webhook:<group|channel>:<chatId>`
//! (`:thread:<threadId>` inside a thread); direct chats follow `session.dmScope`. The message
//! records the route (`deliveryContext`, `lastChannel`, `lastTo`, …) and starts a run whose reply
//! goes back to that route through the outbox (see `inbound.rs`).
//!
//! Outbound body: `{id, kind, accountId, to, threadId?, text, sessionKey?, runId?}`, with the
//! record id also in an `Idempotency-Key` header: an attempt repeated after a crash carries the
//! same id.

use switchboard_protocol::delivery::WebhookOutbound;
use switchboard_protocol::inbound::{HookAgentParams, WebhookInbound};
use switchboard_protocol::sessions::{DeliveryContext, Patch};

use std::sync::Arc;

use crate::channel::{self, AccountStatus, Channel, ChannelError, ChannelStatus, Sent};
use crate::config::{Config, WebhookAccount};
use crate::error::CoreError;
use crate::keys::{self, ChatType, SessionKey};
use crate::store::{DeliveryRecord, EntryPatch};

/// The channel's name in keys, routes and records.
pub const WEBHOOK: &str = "webhook";

/// The webhook channel: its outbound sender and its state (`channels.webhook`).
pub struct Webhook {
    config: Arc<Config>,
    http: reqwest::Client,
}

impl Webhook {
    /// `http` bounds each attempt by `delivery.timeoutSeconds`.
    pub fn new(config: Arc<Config>, http: reqwest::Client) -> Self {
        Self { config, http }
    }
}

impl Channel for Webhook {
    fn name(&self) -> &'static str {
        WEBHOOK
    }

    fn send<'a>(&'a self, record: &'a DeliveryRecord) -> Sent<'a> {
        Box::pin(async move {
            send(&self.config, &self.http, record)
                .await
                .map(|()| Vec::new())
        })
    }

    /// A named account must be configured: a send to one that is not is refused, not stored
    /// to fail at each attempt.
    fn check_account(&self, account_id: Option<&str>) -> Result<(), String> {
        match account_id {
            Some(id) => account(&self.config, id)
                .map(drop)
                .map_err(|e| format!("accountId: {e}")),
            None => Ok(()),
        }
    }

    fn status(&self) -> Option<ChannelStatus> {
        let webhook = &self.config.channels.webhook;
        let accounts = webhook.accounts.keys().map(|id| AccountStatus {
            account_id: id.clone(),
            enabled: webhook.enabled,
            link: None,
        });
        Some(ChannelStatus {
            name: WEBHOOK,
            label: "Webhook",
            enabled: webhook.enabled,
            link: None,
            accounts: accounts.collect(),
        })
    }
}

pub(super) const PAYLOAD_EXPECTED: &str = "expected a JSON object {\"from\": string, \"chatType\": \"direct\"|\"group\"|\"channel\", \"chatId\"?: string (required for group and channel), \"text\": string, \"threadId\"?: string}";

/// The account `account_id` names (trimmed, lower-cased), if the channel is on; the error says
/// what to configure.
pub(super) fn account<'a>(
    config: &'a Config,
    account_id: &str,
) -> Result<(String, &'a WebhookAccount), CoreError> {
    let webhook = &config.channels.webhook;
    if !webhook.enabled {
        return Err(CoreError::NotFound(
            "the webhook channel is off (set channels.webhook.enabled to true)".into(),
        ));
    }
    let account_id = account_id.trim().to_lowercase();
    let Some(account) = webhook.accounts.get(&account_id) else {
        let known: Vec<&str> = webhook.accounts.keys().map(String::as_str).collect();
        return Err(CoreError::NotFound(format!(
            "unknown webhook account {account_id:?} (configured: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    Ok((account_id, account))
}

/// Decodes an inbound JSON body; an `Invalid` error names the field at fault and what is
/// `expected`.
pub fn parse_body<T: serde::de::DeserializeOwned>(
    body: &[u8],
    expected: &str,
) -> Result<T, CoreError> {
    let invalid = |at: &str, why: &dyn std::fmt::Display| {
        CoreError::Invalid(format!("invalid payload{at}: {why}; {expected}"))
    };
    let text = std::str::from_utf8(body).map_err(|e| invalid("", &e))?;
    // One key twice is refused, and so is a field the payload does not have (SPEC §12).
    let value = switchboard_protocol::strict::value(text).map_err(|e| invalid("", &e))?;
    switchboard_protocol::checked::from_value(&value)
        .map_err(|refusal| invalid(&refusal.at(), &refusal.message))
}

/// The fuzz targets' door (docs/testing.md): a `POST /channels/webhook/<accountId>` body decoded
/// and checked as the door does before it reads the account's settings. Not an API.
#[doc(hidden)]
pub fn fuzz_inbound(body: &[u8]) -> Result<WebhookInbound, CoreError> {
    let payload: WebhookInbound = parse_body(body, PAYLOAD_EXPECTED)?;
    Message::check(payload.clone())?;
    Ok(payload)
}

/// The fuzz targets' door for `POST /hooks/agent`: its body decoded as the door decodes it.
#[doc(hidden)]
pub fn fuzz_hook(body: &[u8]) -> Result<HookAgentParams, CoreError> {
    parse_body(body, super::hooks::HOOK_EXPECTED)
}

pub(super) fn check_token(
    account: &WebhookAccount,
    account_id: &str,
    presented: Option<&str>,
) -> Result<(), CoreError> {
    let expected = account.token.as_deref().unwrap_or_default();
    let Some(given) = presented else {
        return Err(CoreError::Unauthorized(format!(
            "missing token: send Authorization: Bearer <channels.webhook.accounts.{account_id}.token>"
        )));
    };
    if crate::access::token_matches(expected, given) {
        Ok(())
    } else {
        Err(CoreError::Unauthorized(format!(
            "wrong token for webhook account {account_id}"
        )))
    }
}

/// The fields of the route an inbound message records on its session.
pub(super) fn route_patch(route: &DeliveryContext) -> EntryPatch {
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
pub(super) struct Message {
    pub from: String,
    pub chat_type: ChatType,
    pub chat_id: Option<String>,
    pub text: String,
    pub thread_id: Option<String>,
}

impl Message {
    pub(super) fn check(p: WebhookInbound) -> Result<Self, CoreError> {
        let from = p.from.into_string();
        if from.is_empty() {
            return Err(CoreError::invalid(
                "from: must name the sender (a non-empty string or number)",
            ));
        }
        let chat_type = ChatType::parse(&p.chat_type).ok_or_else(|| {
            CoreError::invalid(format!(
                "chatType: {:?} is not a chat type; expected \"direct\" (or \"dm\"), \"group\" or \"channel\"",
                p.chat_type
            ))
        })?;
        let chat_id = p.chat_id.map(|c| c.into_string()).filter(|s| !s.is_empty());
        if chat_type != ChatType::Direct && chat_id.is_none() {
            return Err(CoreError::invalid(format!(
                "chatId: required when chatType is {:?} (the id of the chat)",
                chat_type.as_str()
            )));
        }
        if p.text.trim().is_empty() {
            return Err(CoreError::invalid(
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
                .map(|t| t.into_string())
                .filter(|s| !s.is_empty()),
        })
    }

    /// The session of this chat: group and channel chats by chat id (and thread); direct chats
    /// per `session.dmScope`.
    pub(super) fn session_key(
        &self,
        config: &Config,
        agent_id: &str,
        account_id: &str,
    ) -> Result<SessionKey, CoreError> {
        let thread = self.thread_id.as_deref();
        let key = match (self.chat_type, config.session.dm_scope) {
            (ChatType::Group | ChatType::Channel, _) => keys::group_key(
                agent_id,
                WEBHOOK,
                self.chat_type,
                self.chat_id.as_deref().unwrap_or_default(),
                thread,
            ),
            (ChatType::Direct, _) => {
                super::direct_key(config, agent_id, WEBHOOK, account_id, &self.from, thread)?
            }
        };
        Ok(key)
    }

    /// Where the reply to this message goes.
    pub(super) fn route(&self, account_id: &str) -> DeliveryContext {
        DeliveryContext {
            channel: WEBHOOK.into(),
            to: self.chat_id.clone().unwrap_or_else(|| self.from.clone()),
            account_id: Some(account_id.to_string()),
            thread_id: self.thread_id.clone(),
        }
    }

    /// What the agent reads: in group and channel chats the sender comes first, on its own line.
    pub(super) fn text_for_model(&self) -> String {
        match self.chat_type {
            ChatType::Direct => self.text.clone(),
            _ => format!("[from {}]\n{}", self.from, self.text),
        }
    }
}

/// A peer or account id as one key segment: lower case, no `:` or whitespace.
pub(super) fn peer_segment(raw: &str) -> String {
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
async fn send(
    config: &Config,
    http: &reqwest::Client,
    record: &DeliveryRecord,
) -> Result<(), ChannelError> {
    let accounts = &config.channels.webhook.accounts;
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
    let body = WebhookOutbound {
        id: record.id.clone(),
        kind: record.kind.clone().into(),
        account_id,
        to: record.to.clone(),
        thread_id: record.thread_id.clone(),
        text: record.text.clone(),
        session_key: record.session_key.as_ref().map(|k| k.display().to_string()),
        run_id: record.run_id.as_ref().map(|r| r.as_str().to_string()),
    };
    let mut request = http
        .post(url)
        .header("Idempotency-Key", &record.id)
        .json(&body);
    if let Some(token) = &account.token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.map_err(|e| {
        ChannelError::Retry(format!(
            "could not reach {url}: {}",
            channel::describe_http_error(&e)
        ))
    })?;
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
