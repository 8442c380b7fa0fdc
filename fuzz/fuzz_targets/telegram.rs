//! A Telegram update (`crates/core/src/channels/telegram`), as the poller decodes an item of
//! `getUpdates`: its message's text, or an error that says what was wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_core::channels::telegram;

fuzz_target!(|data: &[u8]| {
    switchboard_fuzz::channel(data, telegram::fuzz_inbound, |_| true);
});
