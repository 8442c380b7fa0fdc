//! Slash commands from a chat (`crate::sessions::Command`: `/status`, `/new`, `/send off`, …),
//! shared by the channel doors: the owner rule of a chat, and the command's answer in the chat
//! through the outbox (once per message); no run starts. Who is an owner is each channel's
//! setting.

use super::Inbound;
use super::inbound::Chat;
use crate::error::{CoreError, CoreResult};
use crate::sessions::{Door, Sessions};

/// A slash command, as the channel doors name it.
pub(crate) use crate::sessions::Command as Order;

/// Runs `order` from `chat` and tells its reply there (answered too): what changes the session
/// is for the chat's owners (`chat.setting` names them), the rest for anyone who may talk there;
/// a wrong argument is answered with what is accepted.
pub(crate) async fn answer(
    (inbound, sessions): (&Inbound, &Sessions),
    chat: Chat,
    owner: bool,
    order: Order,
) -> CoreResult<String> {
    let reply = if order.needs_owner(Door::Chat) && !owner {
        format!(
            "Only an owner of this chat can use {} ({} lists them).",
            order.name(),
            chat.setting
        )
    } else {
        match sessions.command(&chat.key, order).await {
            Ok(done) => done.reply,
            Err(CoreError::Invalid(why) | CoreError::NotFound(why)) => why,
            Err(e) => return Err(e),
        }
    };
    inbound.answer_command(chat, reply.clone()).await?;
    Ok(reply)
}
