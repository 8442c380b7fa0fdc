//! A `POST /rpc` body (`crates/server/src/http.rs`): a request, or a 400 that says what a body
//! looks like. A request read from a body, written out again, reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_fuzz::says;
use switchboard_server::fuzzing::rpc_body;

fuzz_target!(|data: &[u8]| {
    match rpc_body(data) {
        Ok(request) => {
            let again = serde_json::to_vec(&request).unwrap_or_default();
            match rpc_body(&again) {
                Ok(read) => assert_eq!(read, request),
                Err(e) => panic!("read once, but not written out again: {e}"),
            }
        }
        Err(message) => says(&message, &[r#"expected {"method": "#]),
    }
});
