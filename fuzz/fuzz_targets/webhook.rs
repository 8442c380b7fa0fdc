//! The generic webhook door (`POST /channels/webhook/<accountId>`) and the hook door
//! (`POST /hooks/agent`), `crates/core/src/channels/webhook.rs`: a checked payload that
//! re-encodes to a body that decodes equal, or an INVALID error that names the field or says
//! what a body looks like.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_core::CoreError;
use switchboard_core::channels::webhook::{fuzz_hook, fuzz_inbound};
use switchboard_fuzz::{json, pick, quoted_in, refusal_of, round_trip, says};

/// The promise of both doors' errors: `Invalid`, naming the field at fault (`chatId: …`) or
/// the shape that is expected.
fn refused(e: CoreError, body: &[u8]) {
    const FIELDS: &[&str] = &["expected", "from: ", "chatType: ", "chatId: ", "text: "];
    match e {
        CoreError::Invalid(message) => {
            says(&message, FIELDS);
            refusal_of(&message, &json(body).unwrap_or_else(|| quoted_in(body)));
        }
        other => panic!("a body is refused as invalid, not {other:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let (door, body) = pick(data, 2);
    if door == 0 {
        match fuzz_inbound(body) {
            Ok(payload) => round_trip(&payload, |json| fuzz_inbound(json.to_string().as_bytes())),
            Err(e) => refused(e, body),
        }
    } else {
        match fuzz_hook(body) {
            Ok(params) => round_trip(&params, |json| fuzz_hook(json.to_string().as_bytes())),
            Err(e) => refused(e, body),
        }
    }
});
