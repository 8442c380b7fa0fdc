//! A `POST /mcp` body (`crates/server/src/mcp/checks.rs`), checked before rmcp reads it: one
//! JSON-RPC 2.0 message, or a JSON-RPC error that says what is wrong (-32700 not JSON, -32600
//! not a message, -32602 bad params). The check never refuses a message MCP itself reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use switchboard_fuzz::says;
use switchboard_server::fuzzing::mcp_body;

fuzz_target!(|data: &[u8]| {
    // rmcp takes an `initialize` request it cannot read as one for a request of another kind;
    // MCP does not read it, and the check refuses it naming what initialize needs.
    let mcp_reads = match serde_json::from_slice::<ClientJsonRpcMessage>(data) {
        Ok(JsonRpcMessage::Request(r)) => {
            !matches!(&r.request, ClientRequest::CustomRequest(c) if c.method == "initialize")
        }
        Ok(_) => true,
        Err(_) => false,
    };
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
