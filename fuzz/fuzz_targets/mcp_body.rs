//! A `POST /mcp` body (`crates/server/src/mcp/checks.rs`), checked before rmcp reads it: one
//! JSON-RPC 2.0 message, or a JSON-RPC error that says what is wrong (-32700 not JSON, -32600
//! not a message, -32602 bad params). The check never refuses a message MCP itself reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmcp::model::ClientJsonRpcMessage;
use switchboard_fuzz::says;
use switchboard_server::fuzzing::mcp_body;

fuzz_target!(|data: &[u8]| {
    let mcp_reads = serde_json::from_slice::<ClientJsonRpcMessage>(data).is_ok();
    match mcp_body(data) {
        Ok(()) => {}
        Err((code, message)) => {
            assert!(
                !mcp_reads,
                "refused a message rmcp reads ({code}: {message}): {}",
                String::from_utf8_lossy(data)
            );
            assert!(
                [-32700, -32600, -32602].contains(&code),
                "code {code}: {message}"
            );
            says(&message, &["expected", "must be"]);
        }
    }
});
