//! A Discord message as the kit's routing reads it: DM channels are direct; guild text
//! channels and group DMs are groups by channel id, a thread `:thread:<threadId>` in its parent
//! channel; the bot is addressed when it is mentioned or replied to. The reply goes back to the
//! same channel or thread. The bot's own messages are not read.

use super::api::{ChannelInfo, Message, User};
use crate::channels::kit::{ChatMessage, Group, Thread};
use crate::channels::owner::Order;

/// Where a message was written.
pub(super) enum Place {
    /// A DM channel.
    Direct,
    /// A guild channel, or a thread in one (`info` says which).
    Guild(ChannelInfo),
    /// A group DM: a group of its own, outside any guild.
    GroupDm(ChannelInfo),
}

/// `message` as the kit reads it, or why it is none the bot reads.
pub(super) fn view(me: &User, (message, place): (&Message, &Place)) -> Result<ChatMessage, String> {
    let from = &message.author;
    if from.id == me.id {
        return Err("the bot's own message".into());
    }
    let text = strip_mention(&message.content, me);
    let order = Order::of_text(&text);
    let (group, reply_to, title) = match place {
        Place::Direct => (None, (message.channel_id.clone(), None), None),
        Place::GroupDm(info) => {
            let group = Group {
                id: info.id.clone(),
                thread: None,
            };
            (Some(group), (info.id.clone(), None), info.name.clone())
        }
        Place::Guild(info) => {
            let thread = info.is_thread().then(|| info.id.clone());
            let parent = match &thread {
                Some(_) => info.parent_id.clone().unwrap_or_else(|| info.id.clone()),
                None => info.id.clone(),
            };
            let group = Group {
                id: parent.clone(),
                thread: thread.clone().map(Thread::Thread),
            };
            let title = info.name.as_ref().map(|n| format!("#{n}"));
            (Some(group), (parent, thread), title)
        }
    };
    Ok(ChatMessage {
        sender: from.id.clone(),
        alias: Some(from.username.clone()),
        name: Some(from.username.clone()),
        from_bot: from.bot,
        text,
        group,
        addressed: addressed(me, message),
        order,
        reply_to,
        who: from.username.clone(),
        title,
    })
}

/// The bot is mentioned or the message replies to one of its messages.
fn addressed(me: &User, message: &Message) -> bool {
    let mentioned = message.mentions.iter().any(|u| u.id == me.id);
    let replied = message
        .referenced_message
        .as_ref()
        .is_some_and(|m| m.author.id == me.id);
    mentioned || replied
}

/// The text without the bot's own mention (`<@id>` or `<@!id>`), trimmed. Taking one out can
/// join the text around it into another (`<@<@1>1>`), so until none is left.
pub(super) fn strip_mention(content: &str, me: &User) -> String {
    let forms = [format!("<@{}>", me.id), format!("<@!{}>", me.id)];
    let mut text = content.to_string();
    while let Some(form) = forms.iter().find(|form| text.contains(form.as_str())) {
        text = text.replace(form.as_str(), "");
    }
    text.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::strip_mention;
    use crate::channels::discord::api::User;

    #[test]
    fn the_bots_mention_is_taken_out_even_when_that_joins_another() {
        let me = User {
            id: "1".into(),
            username: "bot".into(),
            bot: true,
        };
        assert_eq!(strip_mention("<@1> hello", &me), "hello");
        assert_eq!(strip_mention("<@!1>hi <@12>", &me), "hi <@12>");
        // Taking one out joins the text around it into another mention of the bot.
        assert_eq!(strip_mention("<@<@1>1> hello", &me), "hello");
        assert_eq!(strip_mention("<@!<@1>1>hello", &me), "hello");
    }
}
