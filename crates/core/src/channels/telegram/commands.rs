//! Owner commands from a Telegram chat (`/send on|off|inherit`, `/status`, `/new`): answered in
//! the chat through the outbox (`crate::channels::owner`), once per update; no run starts.

use super::{Poller, route};
use crate::channels::inbound::Chat;
use crate::channels::owner;
use crate::error::CoreResult;
use crate::store::WriteOp;

/// The chat a turn came from, to answer in (once per `source` update).
pub(super) fn chat_of(turn: &route::Turn, source: &str) -> Chat {
    Chat {
        key: turn.key.clone(),
        route: turn.route.clone(),
        setting: "channels.telegram.owners".into(),
        idempotency_key: Some(source.to_string()),
    }
}

impl Poller {
    /// An owner command: answered in the chat, then the offset moves past its update.
    pub(super) async fn command(
        &self,
        command: route::Command,
        source: String,
        cursor: WriteOp,
    ) -> CoreResult<()> {
        let chat = chat_of(&command.chat, &source);
        let parts = (self.parts.inbound.as_ref(), self.parts.sessions.as_ref());
        owner::answer(parts, chat, command.owner, command.order).await?;
        self.telegram.store.write_batch(vec![cursor]).await?;
        Ok(())
    }
}
