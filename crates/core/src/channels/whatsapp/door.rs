//! The WhatsApp channel's HTTP door, `/channels/whatsapp`: the verification handshake and the
//! signed notifications (see the module doc of `whatsapp`).

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::api::{self, Contact, Message, Messages, Notification};
use super::{WHATSAPP, WhatsApp, route, window};
use switchboard_protocol::ErrorCode;

use crate::channel::{HttpCall, HttpDoor, HttpReply, LinkState};
use crate::channels::kit::gate::Sender;
use crate::channels::kit::{BotDoor, Chat, DoorParts};
use crate::error::CoreResult;
use crate::store::WriteOp;

/// One served number, and what its messages are handed to.
type Number = BotDoor<WhatsApp>;

/// What a number's link is called while its webhook is served.
const SERVED: &str = "webhook";
/// The header the platform signs each notification with.
const SIGNATURE: &str = "x-hub-signature-256";

/// The webhook of every served number.
pub(super) struct Webhook {
    numbers: Vec<Number>,
}

impl Webhook {
    /// The webhook of every served number: while it is served, each number's link is up.
    pub fn new(chat: Arc<Chat<WhatsApp>>, parts: &DoorParts) -> Self {
        let numbers = chat.bots.iter().map(|bot| {
            bot.link.set(LinkState::Up(SERVED));
            BotDoor {
                chat: chat.clone(),
                bot: bot.clone(),
                parts: parts.clone(),
            }
        });
        Self {
            numbers: numbers.collect(),
        }
    }

    /// `GET`: the platform's check that the URL is ours — the challenge back when the verify
    /// token is a served number's.
    fn verify(&self, call: &HttpCall) -> HttpReply {
        let (Some(mode), Some(token), Some(challenge)) = (
            call.query("hub.mode"),
            call.query("hub.verify_token"),
            call.query("hub.challenge"),
        ) else {
            return HttpReply::refused(
                400,
                ErrorCode::InvalidRequest,
                "a verification request needs hub.mode, hub.verify_token and hub.challenge",
            );
        };
        let known = self.numbers.iter().any(|n| {
            n.settings()
                .verify_token
                .as_deref()
                .is_some_and(|t| same(t.as_bytes(), token.as_bytes()))
        });
        match (mode, known) {
            ("subscribe", true) => HttpReply::text(200, challenge).authenticated(),
            ("subscribe", false) => HttpReply::refused(
                403,
                ErrorCode::Forbidden,
                "hub.verify_token is not channels.whatsapp.verifyToken",
            ),
            _ => HttpReply::refused(
                400,
                ErrorCode::InvalidRequest,
                "hub.mode must be \"subscribe\"",
            ),
        }
    }

    /// `POST`: a notification, refused unless signed with a served number's app secret; 200
    /// once every message in it is committed.
    async fn notify(&self, call: &HttpCall) -> HttpReply {
        let Some(signature) = call.header(SIGNATURE) else {
            return HttpReply::refused(401, ErrorCode::Unauthorized, "missing X-Hub-Signature-256");
        };
        let signed: Vec<&Number> = self
            .numbers
            .iter()
            .filter(|n| {
                n.settings()
                    .app_secret
                    .as_deref()
                    .is_some_and(|secret| api::signed_by(secret, &call.body, signature))
            })
            .collect();
        if signed.is_empty() {
            return HttpReply::refused(
                401,
                ErrorCode::Unauthorized,
                "X-Hub-Signature-256 is not the body's HMAC-SHA256 with channels.whatsapp.appSecret",
            );
        }
        let notification: Notification = match serde_json::from_slice(&call.body) {
            Ok(n) => n,
            Err(e) => {
                let why = format!("the body is not a WhatsApp notification: {e}");
                return HttpReply::refused(400, ErrorCode::InvalidRequest, why).authenticated();
            }
        };
        if notification.object != "whatsapp_business_account" {
            let why = "object must be \"whatsapp_business_account\"";
            return HttpReply::refused(400, ErrorCode::InvalidRequest, why).authenticated();
        }
        match self.changes(&signed, notification).await {
            Ok(()) => HttpReply::text(200, "ok").authenticated(),
            Err(e) => {
                tracing::warn!(error = %e, "whatsapp: a notification could not be taken; the platform will send it again");
                HttpReply::refused(503, ErrorCode::Unavailable, e.to_string()).authenticated()
            }
        }
    }

    /// Every `messages` change for a number whose secret signed the body.
    async fn changes(&self, signed: &[&Number], notification: Notification) -> CoreResult<()> {
        let changes = notification.entry.into_iter().flat_map(|e| e.changes);
        for change in changes.filter(|c| c.field == "messages") {
            let value: Messages = match serde_json::from_value(change.value) {
                Ok(value) => value,
                Err(e) => {
                    tracing::warn!(error = %e, "whatsapp: a messages change of an unexpected shape; skipped");
                    continue;
                }
            };
            let to_number = signed.iter().find(|n| {
                n.settings().phone_number_id.as_deref() == Some(&value.metadata.phone_number_id)
            });
            let Some(number) = to_number else {
                tracing::warn!(
                    phone_number_id = %value.metadata.phone_number_id,
                    "whatsapp: messages for a number this gateway does not serve (or signed with another app's secret); skipped"
                );
                continue;
            };
            let phone = route::digits(&value.metadata.display_phone_number);
            for message in &value.messages {
                self.message(number, &phone, (message, &value.contacts))
                    .await?;
            }
        }
        Ok(())
    }

    /// One message: a run committed with the user's last-message time, an owner command
    /// answered, a pairing code, or nothing.
    async fn message(
        &self,
        number: &Number,
        phone: &str,
        (message, contacts): (&Message, &[Contact]),
    ) -> CoreResult<()> {
        let source = format!("{WHATSAPP}:{}:{}", number.account(), message.id);
        let name = contacts
            .iter()
            .find(|c| c.wa_id == message.from)
            .and_then(|c| c.profile.as_ref()?.name.as_deref());
        let window = WriteOp::SetCursor {
            name: window(number.account(), &message.from),
            position: message.sent_at(),
        };
        let sender = Sender {
            id: &message.from,
            username: None,
        };
        if message.group_id.is_none() && number.bot.gate.is_stranger(sender) {
            // A pairing code is answered at once: the user's window is open from their message on.
            number.parts.commit(vec![window.clone()]).await?;
        }
        let view = route::view(phone, (message, name));
        number.receive(view, source, vec![window]).await?;
        Ok(())
    }
}

impl HttpDoor for Webhook {
    fn handle(&self, call: HttpCall) -> BoxFuture<'_, HttpReply> {
        Box::pin(async move {
            match (call.method.as_str(), call.rest.as_str()) {
                ("GET", "" | "/") => self.verify(&call),
                ("POST", "" | "/") => self.notify(&call).await,
                (_, "" | "/") => HttpReply::refused(405, ErrorCode::InvalidRequest, "GET or POST"),
                _ => HttpReply::refused(
                    404,
                    ErrorCode::NotFound,
                    "the WhatsApp webhook is /channels/whatsapp",
                ),
            }
        })
    }
}

/// Equal bytes, compared in time that depends only on the lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
