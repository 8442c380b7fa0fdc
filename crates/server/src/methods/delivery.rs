//! `send` and `deliveries.list`: the delivery outbox (SPEC §9.1). Sending and retrying are the
//! engine's (`switchboard_core::delivery`); this adapter checks params and shapes answers.

use switchboard_core::channels;
use switchboard_core::delivery::Outbound;
use switchboard_core::store::{DeliveryQuery, DeliveryRecord, DeliveryStatus};
use switchboard_core::{Engine, sessions};
use switchboard_protocol::delivery::{DeliveriesListParams, DeliveryInfo, SendParams};
use switchboard_protocol::sessions::DeliveryContext;
use switchboard_protocol::{ErrorCode, ErrorShape};

use super::{MethodResult, core_err, to_value};

const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 500;

fn invalid(message: impl Into<String>) -> ErrorShape {
    ErrorShape::new(ErrorCode::InvalidRequest, message)
}

/// Stores the delivery (answered once committed) and lets the outbox send it; a repeated
/// `idempotencyKey` answers the first record.
pub async fn send(engine: &Engine, p: SendParams) -> MethodResult {
    let channel = p.channel.trim().to_lowercase();
    if !channels::DELIVERABLE.contains(&channel.as_str()) {
        return Err(invalid(format!(
            "send: channel {channel:?} is not connected to this gateway; expected one of: {}",
            channels::DELIVERABLE.join(", ")
        )));
    }
    if p.idempotency_key.trim().is_empty() {
        return Err(invalid(
            "send: idempotencyKey must not be empty (it makes a retried send harmless)",
        ));
    }
    if p.message.trim().is_empty() {
        return Err(invalid("send: message must not be empty"));
    }
    let mut to = p.to.trim().to_string();
    if to.is_empty() {
        return Err(invalid(
            "send: to must name the chat or session to deliver to",
        ));
    }
    if channel != channels::WEBHOOK {
        // webchat and internal deliver into a session: it must exist (checked now, not later).
        to = sessions::find(engine, &to, None)
            .await
            .map_err(core_err)?
            .key;
    }
    let record = engine
        .deliver(Outbound {
            kind: "send",
            session_key: None,
            source_key: None,
            run_id: None,
            route: Some(DeliveryContext {
                channel,
                to,
                account_id: p.account_id.map(|a| a.trim().to_lowercase()),
                thread_id: p.thread_id,
            }),
            text: p.message,
            idempotency_key: Some(format!("send:{}", p.idempotency_key.trim())),
        })
        .await
        .map_err(core_err)?;
    to_value(info(record))
}

pub async fn list(engine: &Engine, p: DeliveriesListParams) -> MethodResult {
    let status = match p.status.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(name) => Some(DeliveryStatus::parse(name).ok_or_else(|| {
            invalid(format!(
                "deliveries.list: status {name:?} is not a delivery status; expected one of: {}",
                DeliveryStatus::ALL.map(DeliveryStatus::as_str).join(", ")
            ))
        })?),
    };
    let session_key = match p.session_key.as_deref() {
        Some(key) => Some(
            engine
                .canonical_key(key, None)
                .map_err(core_err)?
                .into_string(),
        ),
        None => None,
    };
    let limit = p.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
    let records = engine
        .store()
        .list_deliveries(DeliveryQuery {
            session_key,
            status,
            limit,
        })
        .await
        .map_err(|e| core_err(e.into()))?;
    let deliveries: Vec<DeliveryInfo> = records.into_iter().map(info).collect();
    Ok(serde_json::json!({ "deliveries": deliveries }))
}

pub fn info(r: DeliveryRecord) -> DeliveryInfo {
    DeliveryInfo {
        id: r.id,
        kind: r.kind,
        status: r.status.as_str().to_string(),
        channel: r.channel,
        to: r.to,
        account_id: r.account_id,
        thread_id: r.thread_id,
        session_key: r.session_key,
        run_id: r.run_id,
        text: r.text,
        attempts: r.attempts,
        next_attempt_at: (r.status == DeliveryStatus::Pending).then_some(r.next_attempt_at),
        detail: r.detail,
        created_at: r.created_at,
        updated_at: r.updated_at,
        delivered_at: r.delivered_at,
    }
}
