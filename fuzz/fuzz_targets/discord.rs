//! A Discord Gateway payload (`crates/core/src/channels/discord`): a `MESSAGE_CREATE`'s text
//! without the bot's mention (trimmed, and no mention of the bot left in it), or an error that
//! says what was wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_core::channels::discord;

fuzz_target!(|data: &[u8]| {
    switchboard_fuzz::channel(data, discord::fuzz_inbound, |text| {
        text == text.trim() && !text.contains("<@1>") && !text.contains("<@!1>")
    });
});
