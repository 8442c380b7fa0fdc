//! A Slack event as the kit's routing reads it: DMs (`channel_type: "im"`) are direct;
//! channels (public, private, group DMs) are groups by channel id, a thread
//! `:thread:<thread_ts>`; the app is addressed when it is mentioned (`<@botUserId>` in the text,
//! or an `app_mention` event). The reply goes back to the same conversation and thread. The
//! app's own messages and edits, joins and other subtypes are not read; other bots' messages
//! are read as a bot's (`allowBots`).

use super::api::{Event, Me};
use crate::channels::kit::{ChatMessage, Group, Thread};
use crate::channels::owner::Order;

/// `event` as the kit reads it, or why it is none the app reads.
pub(super) fn view(me: &Me, event: &Event) -> Result<ChatMessage, String> {
    if event.subtype.as_deref().is_some_and(|s| s != "bot_message") {
        return Err("not a new message".into());
    }
    let Some(sender) = event.user.as_deref().or(event.bot_id.as_deref()) else {
        return Err("no sender".into());
    };
    let own_bot = event.bot_id.is_some() && event.bot_id == me.bot_id;
    if sender == me.user_id || own_bot {
        return Err("the app's own message".into());
    }
    let text = strip_mention(&event.text, &me.user_id);
    let addressed = event.kind == "app_mention" || text != event.text.trim();
    let order = Order::of_text(&text);
    let thread = event.thread_ts.clone().filter(|parent| *parent != event.ts);
    let group = (!is_direct(event)).then(|| Group {
        id: event.channel.clone(),
        thread: thread.clone().map(Thread::Thread),
    });
    Ok(ChatMessage {
        sender: sender.to_owned(),
        alias: None,
        name: None,
        from_bot: event.bot_id.is_some(),
        text,
        group,
        addressed,
        order,
        reply_to: (event.channel.clone(), thread),
        who: format!("<@{sender}>"),
        title: None,
    })
}

/// A DM with the app (`im`; a `D…` conversation when the event does not say).
fn is_direct(event: &Event) -> bool {
    match event.channel_type.as_deref() {
        Some(kind) => kind == "im",
        None => event.channel.starts_with('D'),
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
