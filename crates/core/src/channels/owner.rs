//! Owner commands from a chat (`/send on|off|inherit`, `/status`, `/new`), shared by the channel
//! doors that take them: which command a message is, and its answer in the chat through the
//! outbox (once per message); no run starts. Who is an owner is each channel's setting.

use switchboard_protocol::overview::SessionsDescribeParams;
use switchboard_protocol::sessions::SessionKeyParams;

use super::Inbound;
use super::inbound::Chat;
use crate::error::{CoreError, CoreResult};
use crate::keys::SessionKey;
use crate::sessions::Sessions;

/// An owner command.
pub(crate) enum Order {
    /// `/send on|off|inherit`: the policy, or what is accepted.
    Send(Result<Option<&'static str>, String>),
    /// `/status`: the chat's session, its model, policy and size.
    Status,
    /// `/new`: a fresh transcript for the chat's session (`sessions.reset`).
    New,
}

impl Order {
    /// The command `word` (lower case, with its `/`) names, `rest` its arguments; `None` for
    /// any other word.
    pub(crate) fn parse(word: &str, rest: &str) -> Option<Self> {
        match word {
            "/send" => crate::access::send_command(&format!("/send {rest}")).map(Self::Send),
            "/status" => Some(Self::Status),
            "/new" => Some(Self::New),
            _ => None,
        }
    }

    /// The command a message's text starts with (its first word, any case), if any.
    pub(crate) fn of_text(text: &str) -> Option<Self> {
        let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        Self::parse(&word.to_lowercase(), rest)
    }
}

/// Answers `order` from `chat` in the chat: `/send` sets the policy for an owner (and refuses
/// anyone else), `/status` and `/new` are for owners only (`chat.setting` names them).
pub(crate) async fn answer(
    (inbound, sessions): (&Inbound, &Sessions),
    chat: Chat,
    owner: bool,
    order: Order,
) -> CoreResult<()> {
    match order {
        Order::Send(send) => {
            inbound.send_command(chat, owner, send).await?;
        }
        _ if !owner => {
            let text = format!(
                "Only an owner of this chat can use /status and /new ({} lists them).",
                chat.setting
            );
            inbound.answer_command(chat, text).await?;
        }
        Order::Status => {
            let text = status_of(sessions, &chat.key).await?;
            inbound.answer_command(chat, text).await?;
        }
        Order::New => {
            let key = SessionKeyParams {
                key: chat.key.as_str().to_string(),
                agent_id: None,
            };
            let text = match sessions.reset(key).await {
                Ok(reset) => format!(
                    "New session: {} (sessionId {}).",
                    reset.key, reset.session_id
                ),
                Err(CoreError::NotFound(_)) => {
                    "Nothing to reset: this chat has no session yet.".into()
                }
                Err(e) => return Err(e),
            };
            inbound.answer_command(chat, text).await?;
        }
    }
    Ok(())
}

/// `/status`: the chat's session as one line.
async fn status_of(sessions: &Sessions, key: &SessionKey) -> CoreResult<String> {
    let params = SessionsDescribeParams {
        key: key.as_str().to_string(),
        agent_id: None,
    };
    let Some(row) = sessions.describe(params).await?.session else {
        return Ok(format!(
            "{}: no session yet; write to start one.",
            key.display()
        ));
    };
    let policy = row.send_policy.as_deref().unwrap_or("inherit");
    let tokens = row.input_tokens.unwrap_or(0) + row.output_tokens.unwrap_or(0);
    Ok(format!(
        "{} · model {} · send policy {policy} · {} · {tokens} tokens so far",
        row.key,
        row.model.as_deref().unwrap_or("?"),
        row.run_state.map_or("idle", |state| state.as_str()),
    ))
}
