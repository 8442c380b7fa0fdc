//! A WhatsApp Cloud API webhook notification (`crates/core/src/channels/whatsapp`): each text
//! message's body without mentions of the number (no whole mention of it left: `@<number>` not
//! followed by another digit), or an error that says what was wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_core::channels::whatsapp;

/// Whether `text` still mentions the number `15550001111` (a longer number is another's).
fn mentions_number(text: &str) -> bool {
    let mention = "@15550001111";
    text.match_indices(mention)
        .any(|(at, _)| !text[at + mention.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

fuzz_target!(|data: &[u8]| {
    switchboard_fuzz::channel(data, whatsapp::fuzz_inbound, |text| !mentions_number(text));
});
