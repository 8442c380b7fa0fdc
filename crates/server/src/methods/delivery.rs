//! `send` and `deliveries.list`: delegations to the outbox (SPEC §9.1).

use switchboard_core::Engine;
use switchboard_protocol::delivery::{DeliveriesListParams, SendParams};

use super::{MethodResult, answer};

pub async fn send(engine: &Engine, p: SendParams) -> MethodResult {
    answer(engine.outbox().send(p).await)
}

pub async fn list(engine: &Engine, p: DeliveriesListParams) -> MethodResult {
    answer(engine.outbox().list(p).await)
}
