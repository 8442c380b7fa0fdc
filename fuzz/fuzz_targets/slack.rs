//! A Slack Socket Mode frame (`crates/core/src/channels/slack`): an event's text without the
//! app's mention (trimmed, and no mention of the app left in it), or an error that says what
//! was wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_core::channels::slack;

/// Whether `text` still holds a whole mention of the app: `<@U1>`, or `<@U1|name>`.
fn mentions_app(text: &str) -> bool {
    text.match_indices("<@U1").any(|(at, open)| {
        let after = &text[at + open.len()..];
        after.starts_with('>') || (after.starts_with('|') && after.contains('>'))
    })
}

fuzz_target!(|data: &[u8]| {
    switchboard_fuzz::channel(data, slack::fuzz_inbound, |text| {
        text == text.trim() && !mentions_app(text)
    });
});
