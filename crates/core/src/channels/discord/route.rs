//! Which messages start a run or are owner commands, and in which session (the reference's routing): DMs by
//! `session.dmScope` and `dmPolicy`; guild text channels in
//! `agent:<agentId>:discord:group:<channelId>` (`:thread:<threadId>` in a thread), only when the
//! bot is mentioned or replied to (unless `requireMention` is off). The reply goes back to the
//! same channel or thread. The bot's own messages, and other bots', are ignored.

use switchboard_protocol::sessions::DeliveryContext;

use super::DISCORD;
use super::api::{ChannelInfo, Message, User};
use crate::channels::gate::{Decision, Gate, Sender, Turn};
use crate::channels::owner::Order;
use crate::config::{Config, DiscordChannel};
use crate::error::CoreError;
use crate::keys::{self, ChatType, SessionKey};

/// Where a message was written.
pub(super) enum Place {
    /// A DM channel.
    Direct,
    /// A guild channel, or a thread in one (`info` says which).
    Guild(ChannelInfo),
}

/// What to do with a message: a run or nothing.
pub(super) fn decide(
    config: &Config,
    (account, channel): (&str, &DiscordChannel),
    me: &User,
    (message, place): (&Message, &Place),
) -> Result<Decision, CoreError> {
    let from = &message.author;
    if from.id == me.id {
        return Ok(Decision::ignore("the bot's own message"));
    }
    if from.bot {
        return Ok(Decision::ignore("not from a person"));
    }
    let text = strip_mention(&message.content, me);
    if text.is_empty() {
        return Ok(Decision::ignore("no text"));
    }
    let (gate, sender) = (gate(channel), sender(from));
    let order = {
        let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((&text, ""));
        Order::parse(&word.to_lowercase(), rest)
    };
    let agent_id = channel
        .agent_id
        .clone()
        .unwrap_or_else(|| config.default_agent_id());
    let mut route = DeliveryContext {
        channel: DISCORD.into(),
        to: message.channel_id.clone(),
        account_id: Some(account.into()),
        thread_id: None,
    };
    let turn = match place {
        Place::Direct => {
            if let Err(why) = gate.may_dm(sender) {
                return Ok(Decision::Ignore(why));
            }
            let key =
                crate::channels::direct_key(config, &agent_id, DISCORD, account, &from.id, None)?;
            Turn {
                key,
                route,
                text,
                title: None,
            }
        }
        Place::Guild(info) => {
            let thread = info.is_thread().then(|| info.id.clone());
            let parent = match &thread {
                Some(_) => info.parent_id.clone().unwrap_or_else(|| info.id.clone()),
                None => info.id.clone(),
            };
            if let Err(why) = gate.group_allows(&parent, sender) {
                return Ok(Decision::Ignore(why));
            }
            if gate.require_mention(&parent) && order.is_none() && !addressed(me, message) {
                return Ok(Decision::ignore(
                    "a guild message that does not mention the bot",
                ));
            }
            let mut key = keys::group_key(&agent_id, DISCORD, ChatType::Group, &parent, None);
            route.to = parent;
            if let Some(thread) = thread {
                key = SessionKey::from_canonical(format!("{}:thread:{thread}", key.as_str()));
                route.thread_id = Some(thread);
            }
            Turn {
                key,
                route,
                text: format!("[from {}]\n{text}", from.username),
                title: info.name.as_ref().map(|n| format!("#{n}")),
            }
        }
    };
    Ok(Decision::of(turn, order, gate.is_owner(sender)))
}

/// A DM sender whom `dmPolicy: "pairing"` must admit (neither in `allowFrom` nor an owner):
/// their id and username. `None` for anything else.
pub(super) fn stranger(
    channel: &DiscordChannel,
    message: &Message,
    place: &Place,
) -> Option<(String, Option<String>)> {
    let from = &message.author;
    let direct = matches!(place, Place::Direct);
    (direct && !from.bot && gate(channel).is_stranger(sender(from)))
        .then(|| (from.id.clone(), Some(from.username.clone())))
}

/// The bot's access settings (Discord has no `groupAllowFrom` yet).
fn gate(channel: &DiscordChannel) -> Gate<'_> {
    Gate {
        channel: DISCORD,
        groups_are: ("guild channels", "channels"),
        dm_policy: channel.dm_policy,
        allow_from: &channel.allow_from,
        owners: &channel.owners,
        group_policy: channel.group_policy,
        groups: &channel.channels,
        group_allow_from: &[],
        require_mention: channel.require_mention,
    }
}

fn sender(from: &User) -> Sender<'_> {
    Sender {
        id: &from.id,
        username: Some(&from.username),
    }
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
