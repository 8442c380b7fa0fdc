//! Owner commands from a Telegram chat (`/send on|off|inherit`, `/status`, `/new`): answered in
//! the chat through the outbox, once per update; no run starts.

use switchboard_protocol::overview::SessionsDescribeParams;
use switchboard_protocol::sessions::SessionKeyParams;

use super::{Poller, route};
use crate::channels::inbound::Chat;
use crate::error::{CoreError, CoreResult};
use crate::keys::SessionKey;
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
        match command.order {
            route::Order::Send(send) => {
                self.inbound.send_command(chat, command.owner, send).await?;
            }
            _ if !command.owner => {
                let text = "Only an owner of this chat can use /status and /new \
                            (channels.telegram.owners lists them).";
                self.inbound.answer_command(chat, text.into()).await?;
            }
            route::Order::Status => {
                let text = self.status_of(&chat.key).await?;
                self.inbound.answer_command(chat, text).await?;
            }
            route::Order::New => {
                let key = SessionKeyParams {
                    key: chat.key.as_str().to_string(),
                };
                let text = match self.sessions.reset(key).await {
                    Ok(reset) => format!(
                        "New session: {} (sessionId {}).",
                        reset.key, reset.session_id
                    ),
                    Err(CoreError::NotFound(_)) => {
                        "Nothing to reset: this chat has no session yet.".into()
                    }
                    Err(e) => return Err(e),
                };
                self.inbound.answer_command(chat, text).await?;
            }
        }
        self.telegram.store.write_batch(vec![cursor]).await?;
        Ok(())
    }

    /// `/status`: the chat's session as one line.
    async fn status_of(&self, key: &SessionKey) -> CoreResult<String> {
        let params = SessionsDescribeParams {
            key: key.as_str().to_string(),
            agent_id: None,
        };
        let Some(row) = self.sessions.describe(params).await?.session else {
            return Ok(format!(
                "{}: no session yet; write to start one.",
                key.display()
            ));
        };
        let policy = row.send_policy.as_deref().unwrap_or("inherit");
        let tokens = row.total_tokens.unwrap_or(0);
        Ok(format!(
            "{} · model {} · send policy {policy} · {} · {tokens} tokens so far",
            row.key,
            row.model.as_deref().unwrap_or("?"),
            row.run_state.map_or("idle", |state| state.as_str()),
        ))
    }
}
