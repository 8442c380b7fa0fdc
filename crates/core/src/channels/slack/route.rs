//! Which events start a run or are owner commands, and in which session (the reference's
//! routing): DMs (`channel_type: "im"`) by `session.dmScope` and `dmPolicy`; channels (public,
//! private, group DMs) in `agent:<agentId>:slack:group:<channelId>`
//! (`:thread:<thread_ts>` in a thread), only when the app is mentioned (`<@botUserId>` in the
//! text, or an `app_mention` event) unless `requireMention` is off. The reply goes back to the
//! same conversation and thread. Bots' messages (the app's own included) and edits, joins and
//! other subtypes are ignored.

use switchboard_protocol::sessions::DeliveryContext;

use super::SLACK;
use super::api::{Event, Me};
use crate::channels::gate::{Decision, Gate, Sender, Turn};
use crate::channels::owner::Order;
use crate::config::{Config, SlackChannel};
use crate::error::CoreError;
use crate::keys::{self, ChatType};

/// What to do with an event: a run, an owner command, or nothing.
pub(super) fn decide(
    config: &Config,
    (account, channel): (&str, &SlackChannel),
    me: &Me,
    event: &Event,
) -> Result<Decision, CoreError> {
    let Some(user) = event.user.as_deref().filter(|_| person(event)) else {
        return Ok(Decision::ignore("not a person's new message"));
    };
    if user == me.user_id {
        return Ok(Decision::ignore("the app's own message"));
    }
    let text = strip_mention(&event.text, &me.user_id);
    let mentioned = event.kind == "app_mention" || text != event.text.trim();
    if text.is_empty() {
        return Ok(Decision::ignore("no text"));
    }
    let order = {
        let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((&text, ""));
        Order::parse(&word.to_lowercase(), rest)
    };
    let (rules, sender) = (gate(channel), sender(user));
    let agent_id = channel
        .agent_id
        .clone()
        .unwrap_or_else(|| config.default_agent_id());
    let thread = event.thread_ts.clone().filter(|parent| *parent != event.ts);
    let route = DeliveryContext {
        channel: SLACK.into(),
        to: event.channel.clone(),
        account_id: Some(account.into()),
        thread_id: thread.clone(),
    };
    let turn = if is_direct(event) {
        if let Err(why) = rules.may_dm(sender) {
            return Ok(Decision::Ignore(why));
        }
        let key = crate::channels::direct_key(config, &agent_id, SLACK, account, user, None)?;
        Turn {
            key,
            route,
            text,
            title: None,
        }
    } else {
        if let Err(why) = rules.group_allows(&event.channel, sender) {
            return Ok(Decision::Ignore(why));
        }
        if rules.require_mention(&event.channel) && order.is_none() && !mentioned {
            return Ok(Decision::ignore(
                "a channel message that does not mention the app",
            ));
        }
        let key = keys::group_key(
            &agent_id,
            SLACK,
            ChatType::Group,
            &event.channel,
            thread.as_deref(),
        );
        Turn {
            key,
            route,
            text: format!("[from <@{user}>]\n{text}"),
            title: None,
        }
    };
    Ok(Decision::of(turn, order, rules.is_owner(sender)))
}

/// A DM sender whom `dmPolicy: "pairing"` must admit (neither in `allowFrom` nor an owner):
/// their user id. `None` for anything else.
pub(super) fn stranger(channel: &SlackChannel, event: &Event) -> Option<String> {
    let user = event.user.as_deref().filter(|_| person(event))?;
    (is_direct(event) && gate(channel).is_stranger(sender(user))).then(|| user.to_string())
}

/// The app's access settings (Slack has no `groupAllowFrom` yet).
fn gate(channel: &SlackChannel) -> Gate<'_> {
    Gate {
        channel: SLACK,
        groups_are: ("channels", "channels"),
        dm_policy: channel.dm_policy,
        allow_from: &channel.allow_from,
        owners: &channel.owners,
        group_policy: channel.group_policy,
        groups: &channel.channels,
        group_allow_from: &[],
        require_mention: channel.require_mention,
    }
}

/// A person's new message: no bot behind it, no subtype (`bot_message`, `message_changed`,
/// `channel_join`, …).
fn person(event: &Event) -> bool {
    event.bot_id.is_none() && event.subtype.is_none()
}

/// A DM with the app (`im`; a `D…` conversation when the event does not say).
fn is_direct(event: &Event) -> bool {
    match event.channel_type.as_deref() {
        Some(kind) => kind == "im",
        None => event.channel.starts_with('D'),
    }
}

/// Slack gives user ids only: they are what `allowFrom` and `owners` list.
fn sender(user: &str) -> Sender<'_> {
    Sender {
        id: user,
        username: None,
    }
}

/// The text without the app's own mention (`<@U…>` or `<@U…|name>`), trimmed. Taking one out
/// can join the text around it into another (`<@U<@U1>1>`), so until none is left.
pub(super) fn strip_mention(text: &str, me: &str) -> String {
    let mut text = text.to_string();
    loop {
        let stripped = strip_once(&text, me);
        if stripped == text {
            return text;
        }
        text = stripped;
    }
}

/// One pass of [`strip_mention`].
fn strip_once(text: &str, me: &str) -> String {
    let open = format!("<@{me}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&open) {
        let after = &rest[at + open.len()..];
        match after.find('>') {
            Some(end) if after[..end].is_empty() || after.starts_with('|') => {
                out.push_str(&rest[..at]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[..at + open.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::strip_mention;

    #[test]
    fn the_apps_mention_is_taken_out_and_others_are_kept() {
        assert_eq!(strip_mention("<@U1> hello", "U1"), "hello");
        assert_eq!(strip_mention("hi <@U1|bot> there", "U1"), "hi  there");
        assert_eq!(strip_mention("<@U12> hello", "U1"), "<@U12> hello");
        assert_eq!(strip_mention("ask <@U2>", "U1"), "ask <@U2>");
        // Taking one out joins the text around it into another mention of the app.
        assert_eq!(strip_mention("<@U<@U1>1> hi", "U1"), "hi");
    }
}
