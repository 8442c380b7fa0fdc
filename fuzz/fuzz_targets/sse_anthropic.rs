//! An Anthropic Messages stream (`runtime/providers/anthropic.rs`), read whole as a streamed
//! turn reads a response: a reply, or an error prefixed with the provider that says what was
//! wrong with the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    switchboard_fuzz::stream(data, |streams, body| streams.anthropic(body));
});
