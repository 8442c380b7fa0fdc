//! The gateway's decoders as plain functions, for the fuzz targets under `fuzz/`
//! (docs/testing.md): each runs the code its door runs on the bytes it receives, without the
//! socket, the token check or the engine. Not an API: hidden from the docs, and nothing in the
//! workspace calls it.

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use switchboard_protocol::a2a::{A2aError, Method, VERSION_HEADER};
use switchboard_protocol::frames::RpcRequest;
use switchboard_protocol::{ErrorShape, RequestFrame};

/// A WebSocket text frame: a `req` frame, or the request's id (when one could be read) and the
/// `INVALID_REQUEST` to answer.
pub fn ws_frame(text: &str) -> Result<RequestFrame, (String, ErrorShape)> {
    crate::ws::parse_request(text)
}

/// A `POST /rpc` body: the request, or the 400's message.
pub fn rpc_body(body: &[u8]) -> Result<RpcRequest, String> {
    crate::http::parse_body(body)
}

/// A `POST /mcp` body: `Ok` when it is one JSON-RPC 2.0 message for rmcp to read; otherwise the
/// JSON-RPC error code and message of the 400.
pub fn mcp_body(body: &[u8]) -> Result<(), (i64, String)> {
    crate::mcp::checks::json_rpc_body(body).map_err(|r| (r.code, r.message))
}

/// A `POST /a2a/<agentId>` body sent with `A2A-Version: <version>` (none when `None` or not a
/// header value): the method and its params, or the request's id and the JSON-RPC error.
pub fn a2a_body(
    body: &[u8],
    version: Option<&str>,
) -> Result<(Method, Option<Value>), (Value, A2aError)> {
    let mut headers = HeaderMap::new();
    let name = HeaderName::try_from(VERSION_HEADER);
    let value = version.map(HeaderValue::from_str);
    if let (Ok(name), Some(Ok(value))) = (name, value) {
        headers.insert(name, value);
    }
    crate::a2a::rpc::check(body, &headers).map(|call| (call.method, call.params))
}
