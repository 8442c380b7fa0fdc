//! An OpenAI Chat Completions stream (`runtime/providers/openai.rs`), read whole as a streamed
//! turn reads a response: a reply, or an error prefixed with the provider that says what was
//! wrong with the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    switchboard_fuzz::stream(data, |streams, body| streams.openai(body));
});
