//! The HTTP sources of sessions as core operations (SPEC §9.2, §9.3): a webhook channel message
//! and a hook. Each checks its token and its payload first — nothing is stored unless every
//! check passed — then starts a run. Errors are `CoreError`s; the server maps them onto HTTP
//! statuses in the one place that maps them all.

use std::sync::Arc;
use switchboard_protocol::delivery::DeliveryKind;

use switchboard_protocol::inbound::{InboundAccepted, WebhookInbound};
use switchboard_protocol::sessions::{DeliveryContext, Patch};

use super::webhook::{self, Message, PAYLOAD_EXPECTED};
use crate::config::Config;
use crate::delivery::{Outbound, Outbox};
use crate::error::{CoreError, CoreResult};
use crate::keys::SessionKey;
use crate::resolve::Resolver;
use crate::runtime::lanes::Lane;
use crate::runtime::{Accepted, Deliver, RunRequest, Runtime};
use crate::sessions::{Command, Sessions};
use crate::store::WriteOp;

/// The inbound doors' component.
pub struct Inbound {
    pub(super) config: Arc<Config>,
    pub(super) runtime: Runtime,
    pub(super) resolver: Arc<Resolver>,
    pub(super) outbox: Arc<Outbox>,
}

impl Inbound {
    pub fn new(
        config: Arc<Config>,
        runtime: Runtime,
        resolver: Arc<Resolver>,
        outbox: Arc<Outbox>,
    ) -> Self {
        Self {
            config,
            runtime,
            resolver,
            outbox,
        }
    }

    /// `POST /channels/webhook/<accountId>`: routes the chat message to its session, records
    /// the route on it, and starts a run whose reply goes back there. Errors, in the order they
    /// are checked: `TooLarge`, `NotFound` (the channel is off, unknown account), `Unauthorized`
    /// (token), `Invalid` (payload), `Unavailable` (shutting down).
    pub async fn webhook(
        &self,
        sessions: &Sessions,
        account_id: &str,
        token: Option<&str>,
        body: &[u8],
    ) -> CoreResult<InboundAccepted> {
        self.check_size(body)?;
        let (account_id, account) = webhook::account(&self.config, account_id)?;
        webhook::check_token(account, &account_id, token)?;
        let payload: WebhookInbound = webhook::parse_body(body, PAYLOAD_EXPECTED)?;
        let message = Message::check(payload)?;
        let agent_id = account
            .agent_id
            .clone()
            .unwrap_or_else(|| self.config.default_agent_id());
        let key = message.session_key(&self.config, &agent_id, &account_id)?;
        let route = message.route(&account_id);
        if let Some(command) = Command::of_text(&message.text) {
            let owner = account.owners.contains(&message.from);
            let session_key = key.display().to_string();
            let chat = Chat {
                key,
                route,
                setting: format!("channels.webhook.accounts.{account_id}.owners"),
                idempotency_key: None,
            };
            let reply = super::owner::answer((self, sessions), chat, owner, command).await?;
            return Ok(InboundAccepted {
                ok: true,
                run_id: None,
                session_key,
                reply: Some(reply),
            });
        }
        let turn = ChatTurn {
            key,
            route,
            text: message.text_for_model(),
            display_name: None,
            idempotency_key: None,
            commit_with: Vec::new(),
        };
        Ok(accepted(self.chat_turn(turn).await?))
    }
}

/// A chat message that starts a run whose reply goes back to the chat.
pub(crate) struct ChatTurn {
    pub key: SessionKey,
    pub route: DeliveryContext,
    /// What the agent reads.
    pub text: String,
    /// The chat's title, for the session's `displayName`.
    pub display_name: Option<String>,
    /// The same key twice starts one run (a channel's message id).
    pub idempotency_key: Option<String>,
    /// Written in the same commit as the run (a polling channel's cursor).
    pub commit_with: Vec<WriteOp>,
}

impl Inbound {
    /// Starts the run of a chat message: the session is created if new, and the chat's route
    /// (and title) is recorded on it in the same commit as the queued run. Errors:
    /// `Unavailable` once shutdown began (nothing is stored then); store failures.
    pub(super) async fn chat_turn(&self, turn: ChatTurn) -> CoreResult<Accepted> {
        if self.runtime.is_closing() {
            return Err(CoreError::Unavailable(
                "the gateway is shutting down; send the message again after it restarts".into(),
            ));
        }
        let mut patch = webhook::route_patch(&turn.route);
        let channel = turn.route.channel.clone();
        if let Some(title) = turn.display_name {
            patch.display_name = Patch::Set(title);
        }
        let mut request =
            RunRequest::new(turn.key.clone(), Lane::Main).with_message(turn.text, None);
        request.create = Some(self.resolver.new_session(&turn.key));
        request.idempotency_key = turn.idempotency_key;
        request.commit_with = vec![WriteOp::Patch {
            key: turn.key,
            patch: Box::new(patch),
        }];
        request.commit_with.extend(turn.commit_with);
        request.deliver = Some(Deliver {
            kind: DeliveryKind::Reply,
            route: Some(turn.route),
        });
        // A chat message starts a trace (or continues its webhook request's).
        let span = tracing::info_span!("channel_inbound", otel.name = %format_args!("receive {channel}"), otel.kind = "consumer");
        tracing::Instrument::instrument(self.runtime.submit(request), span).await
    }
}

impl Inbound {
    /// The account and token checks of [`Inbound::webhook`] alone (`NotFound`, `Unauthorized`),
    /// so the HTTP door can refuse a stranger before it reads a byte of the body.
    pub fn check_webhook_token(&self, account_id: &str, token: Option<&str>) -> CoreResult<()> {
        let (account_id, account) = webhook::account(&self.config, account_id)?;
        webhook::check_token(account, &account_id, token)
    }

    /// Refuses a body over `gateway.maxPayloadBytes` (413).
    pub(super) fn check_size(&self, body: &[u8]) -> CoreResult<()> {
        let max = self.config.gateway.max_payload_bytes;
        if body.len() > max {
            return Err(CoreError::TooLarge(format!(
                "body of {} bytes exceeds maxPayload ({max} bytes)",
                body.len()
            )));
        }
        Ok(())
    }
}

/// The chat a command came from.
pub(crate) struct Chat {
    pub key: SessionKey,
    pub route: DeliveryContext,
    /// The setting that names the chat's owners.
    pub setting: String,
    /// The same key twice answers once (a channel's message id).
    pub idempotency_key: Option<String>,
}

impl Inbound {
    /// A standalone `/send on|off|inherit` from a chat: an owner's sets the session's override
    /// (SPEC §8.2), anyone else's is refused; either way the answer goes back to the chat and no
    /// run starts. The confirmation is not the session's delivery, so its send policy (perhaps
    /// just set to deny) does not hold it back.
    /// A command's answer, back to the chat it came from. It is not the session's delivery, so
    /// the session's send policy does not hold it back.
    pub(super) async fn answer_command(&self, chat: Chat, text: String) -> CoreResult<()> {
        self.outbox
            .deliver(Outbound {
                kind: DeliveryKind::Command,
                session_key: None,
                source_key: Some(chat.key),
                run_id: None,
                route: Some(chat.route),
                text,
                idempotency_key: chat.idempotency_key,
            })
            .await?;
        Ok(())
    }
}

/// The 202 answer of an inbound door.
pub(super) fn accepted(run: Accepted) -> InboundAccepted {
    InboundAccepted::new(run.run_id.into_string(), run.session_key.display())
}
