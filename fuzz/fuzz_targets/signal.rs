//! The Signal daemon's event stream (`crates/core/src/channels/signal`): the events framed the
//! same however the stream is cut into chunks, and each `receive` (or unnamed) event decoded
//! (its message's text read as routing reads it), or an error that says what was wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_core::channels::signal;
use switchboard_fuzz::pick;

fuzz_target!(|data: &[u8]| {
    let (at, body) = pick(data, 256);
    let whole = signal::fuzz_frames(body, body.len());
    let cut = signal::fuzz_frames(body, at * body.len() / 255);
    assert_eq!(whole, cut, "the events depend on where the stream was cut");
    switchboard_fuzz::channel(body, signal::fuzz_inbound, |_| true);
});
