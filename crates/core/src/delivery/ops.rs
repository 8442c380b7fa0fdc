//! The outbox's gateway methods: `send` (deliver a text to a channel target) and
//! `deliveries.list` (what became of outbound messages).

use switchboard_protocol::delivery::{
    DeliveriesListParams, DeliveriesListResult, DeliveryInfo, DeliveryKind, SendParams,
};
use switchboard_protocol::sessions::DeliveryContext;

use super::{Outbound, Outbox};
use crate::channel;
use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys::SessionKey;
use crate::store::{DeliveryQuery, DeliveryRecord, DeliveryStatus};

const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 500;

impl Outbox {
    /// `send`: stores the delivery (answered once committed) and lets the outbox send it; a
    /// repeated `idempotencyKey` answers the first record.
    pub async fn send(&self, p: SendParams) -> CoreResult<DeliveryInfo> {
        if p.idempotency_key.trim().is_empty() {
            return Err(CoreError::invalid(
                "send: idempotencyKey must not be empty (it makes a retried send harmless)",
            ));
        }
        let route = self.route_of("send", &p).await?;
        let record = self
            .deliver(Outbound {
                kind: DeliveryKind::Send,
                session_key: None,
                source_key: None,
                run_id: None,
                route: Some(route),
                text: p.message,
                idempotency_key: Some(format!("send:{}", p.idempotency_key.trim())),
            })
            .await?;
        Ok(info(record))
    }

    /// The `message` tool's send: as `send`, for the session `from` (its send policy decides)
    /// in its run `run_id`.
    pub async fn send_from(
        &self,
        p: SendParams,
        from: SessionKey,
        run_id: RunId,
    ) -> CoreResult<DeliveryInfo> {
        let route = self.route_of("message", &p).await?;
        let record = self
            .deliver(Outbound {
                kind: DeliveryKind::Message,
                session_key: Some(from),
                source_key: None,
                run_id: Some(run_id),
                route: Some(route),
                text: p.message,
                idempotency_key: Some(format!("message:{}", p.idempotency_key.trim())),
            })
            .await?;
        Ok(info(record))
    }

    /// Where `p` goes: a connected channel, an account it has, a target (a session that
    /// exists, for `webchat` and `internal`), a text; the error, `what`'s, says which is not.
    async fn route_of(&self, what: &str, p: &SendParams) -> CoreResult<DeliveryContext> {
        let channel = p.channel.trim().to_lowercase();
        let Some(connected) = self.channels.get(&channel) else {
            return Err(CoreError::invalid(format!(
                "{what}: channel {channel:?} is not connected to this gateway; expected one of: {}",
                self.channels.names().join(", ")
            )));
        };
        if p.message.trim().is_empty() {
            return Err(CoreError::invalid(format!(
                "{what}: the text must not be empty"
            )));
        }
        let mut to = p.to.trim().to_string();
        if to.is_empty() {
            return Err(CoreError::invalid(format!(
                "{what}: to must name the chat or session to deliver to"
            )));
        }
        let account = p.account_id.as_deref().map(|a| a.trim().to_lowercase());
        if let Err(why) = connected.check_account(account.as_deref()) {
            return Err(CoreError::invalid(format!("{what}: {why}")));
        }
        if !channel::is_route(&channel) {
            // webchat and internal deliver into a session: it must exist (checked now, not later).
            to = self.resolver.find(&to, None).await?.key.into_string();
        }
        Ok(DeliveryContext {
            channel,
            to,
            account_id: account,
            thread_id: p.thread_id.clone(),
        })
    }

    /// `deliveries.list`: records newest first, filtered by session and status.
    pub async fn list(&self, p: DeliveriesListParams) -> CoreResult<DeliveriesListResult> {
        let status = match p.status.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(name) => Some(DeliveryStatus::parse(name).ok_or_else(|| {
                CoreError::invalid(format!(
                    "deliveries.list: status {name:?} is not a delivery status; expected one of: {}",
                    DeliveryStatus::ALL.map(DeliveryStatus::as_str).join(", ")
                ))
            })?),
        };
        let session_key = match p.session_key.as_deref() {
            Some(key) => Some(self.resolver.canonical(key, None)?),
            None => None,
        };
        let limit = p.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
        let records = self
            .store
            .list_deliveries(DeliveryQuery {
                session_key,
                status,
                limit,
            })
            .await?;
        Ok(DeliveriesListResult {
            deliveries: records.into_iter().map(info).collect(),
        })
    }
}

/// A record as the wire shows it.
pub fn info(r: DeliveryRecord) -> DeliveryInfo {
    DeliveryInfo {
        id: r.id,
        kind: r.kind.into(),
        status: r.status.into(),
        channel: r.channel,
        to: r.to,
        account_id: r.account_id,
        thread_id: r.thread_id,
        session_key: r.session_key.map(|k| k.display().to_string()),
        run_id: r.run_id.map(String::from),
        text: r.text,
        attempts: r.attempts,
        next_attempt_at: (r.status == DeliveryStatus::Pending).then_some(r.next_attempt_at),
        detail: r.detail,
        created_at: r.created_at,
        updated_at: r.updated_at,
        delivered_at: r.delivered_at,
    }
}
