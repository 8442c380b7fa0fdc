//! A WebSocket text frame (`crates/server/src/ws`): a `req` frame, or an INVALID_REQUEST that
//! says what a frame looks like, under the request's id when it had one. A request read from a
//! frame, written out again, reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_fuzz::says;
use switchboard_protocol::{ErrorCode, Frame};
use switchboard_server::fuzzing::ws_frame;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return; // a binary frame is refused before it is read
    };
    match ws_frame(text) {
        Ok(req) => {
            let again = serde_json::to_string(&Frame::Req(req.clone())).unwrap_or_default();
            match ws_frame(&again) {
                Ok(read) => assert_eq!(read, req, "written out as {again}"),
                Err((_, e)) => panic!("read once, but not written out as {again}: {}", e.message),
            }
        }
        Err((id, error)) => {
            assert_eq!(error.code, ErrorCode::InvalidRequest);
            says(&error.message, &[r#"expected {"type":"req""#]);
            let given = serde_json::from_str::<serde_json::Value>(text).ok();
            let given_id = given
                .as_ref()
                .and_then(|v| v.get("id"))
                .and_then(|v| v.as_str());
            assert_eq!(
                id,
                given_id.unwrap_or_default(),
                "the answer's id is the request's"
            );
        }
    }
});
