//! A Matrix `/sync` answer (`crates/core/src/channels/matrix`): each text message's body as
//! routing reads it (trimmed and never empty), or an error that says what was wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_core::channels::matrix;

fuzz_target!(|data: &[u8]| {
    switchboard_fuzz::channel(data, matrix::fuzz_inbound, |text| {
        !text.is_empty() && text == text.trim()
    });
});
