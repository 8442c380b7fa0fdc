//! The browser check every request passes before its route, on every door (the WebSocket
//! upgrade, `/rpc`, `/mcp`, the inbound webhooks and hooks, `/health`), and the one shape of a
//! refusal made before a route answers.
//!
//! A web page can make a browser send requests to the gateway — a WebSocket upgrade or a
//! `text/plain` POST need no CORS preflight — so without a check any page could drive a
//! token-less gateway, or one whose token it learned. Browsers always say where such a request
//! comes from in `Origin`; clients that are not browsers (the CLI, MCP clients, webhook senders)
//! send none and are not affected.
//!
//! - An `Origin` must be a loopback origin of the gateway's own port (`http://127.0.0.1:<port>`,
//!   `http://localhost:<port>`, `http://[::1]:<port>`) or be listed in
//!   `gateway.controlUi.allowedOrigins`; otherwise 403.
//! - Without a token (`gateway.auth.mode: "none"`, loopback only) the `Host` must also be a
//!   loopback name (or the host of an allowed origin): a page that rebinds its own DNS name to
//!   127.0.0.1 is same-origin with itself, so only the `Host` it sends gives it away.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use switchboard_core::config::normalize_origin;
use switchboard_protocol::ErrorCode;

use crate::ServerState;

/// A refusal before (or instead of) a route's own answer: JSON in the gateway's error shape
/// (`{ok: false, error: {code, message}}`), or a JSON-RPC error on `/mcp` and `/a2a`, whose
/// clients read only that.
pub(crate) fn refusal(
    path: &str,
    status: StatusCode,
    code: ErrorCode,
    message: impl Into<String>,
) -> Response {
    let message = message.into();
    // Both JSON-RPC doors take -32600 (invalid request) for a refusal before the method.
    let json_rpc = ["/mcp", "/a2a"]
        .iter()
        .any(|door| path == *door || path.starts_with(&format!("{door}/")));
    if json_rpc {
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": -32600, "message": message, "data": {"code": code.as_str()}},
        });
        return (status, axum::Json(body)).into_response();
    }
    crate::http::failure(status, code, message)
}

/// The middleware: refuses a request from a browser page the gateway does not trust.
pub(crate) async fn browser_check(
    State(state): State<Arc<ServerState>>,
    request: Request,
    next: Next,
) -> Response {
    let port = state.port();
    let allowed = &state.engine.config().gateway.control_ui.allowed_origins;
    match check(request.headers(), port, allowed, state.auth.is_open()) {
        Ok(()) => next.run(request).await,
        Err(message) => refusal(
            request.uri().path(),
            StatusCode::FORBIDDEN,
            ErrorCode::Forbidden,
            message,
        ),
    }
}

/// `Ok` for a request this gateway serves; otherwise what was wrong and what is accepted.
fn check(headers: &HeaderMap, port: u16, allowed: &[String], open: bool) -> Result<(), String> {
    let own = [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ];
    let accepted = || {
        let mut list = own.join(", ");
        if allowed.is_empty() {
            list.push_str(", or an origin listed in gateway.controlUi.allowedOrigins");
        } else {
            list.push_str(&format!(", {}", allowed.join(", ")));
        }
        list
    };
    if let Some(origin) = headers.get(header::ORIGIN) {
        let text = origin.to_str().unwrap_or("(not text)");
        let normalized = normalize_origin(text);
        let trusted = normalized
            .as_deref()
            .is_some_and(|o| own.iter().chain(allowed).any(|a| a == o));
        if !trusted {
            return Err(format!(
                "origin {text:?} is not allowed: browsers may call this gateway from {}",
                accepted()
            ));
        }
    }
    if open {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        if !is_loopback_host(host) && !allowed.iter().any(|o| origin_host(o) == Some(host)) {
            return Err(format!(
                "host {host:?} is not allowed on a gateway without a token: use \
                 127.0.0.1:{port} or localhost:{port}, or list the origin in \
                 gateway.controlUi.allowedOrigins"
            ));
        }
    }
    Ok(())
}

/// `host[:port]` of an `http(s)://host[:port]` origin.
fn origin_host(origin: &str) -> Option<&str> {
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
}

/// Whether a `Host` header names this machine: `localhost`, a loopback IP, with any port.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(origin: Option<&str>, host: &str) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        if let Some(o) = origin {
            map.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
        }
        map
    }

    #[test]
    fn loopback_origins_of_the_own_port_and_listed_ones_pass() {
        let listed = vec!["https://ui.example".to_string()];
        for origin in [
            None,
            Some("http://127.0.0.1:4000"),
            Some("http://LOCALHOST:4000/"),
            Some("http://[::1]:4000"),
            Some("https://ui.example"),
        ] {
            assert_eq!(check(&headers(origin, "x"), 4000, &listed, false), Ok(()));
        }
        for origin in [
            "http://127.0.0.1:4001",
            "http://evil.example",
            "null",
            "https://ui.example.evil",
        ] {
            let e = check(&headers(Some(origin), "x"), 4000, &listed, false).unwrap_err();
            assert!(e.contains("is not allowed") && e.contains("http://127.0.0.1:4000"));
        }
    }

    #[test]
    fn without_a_token_the_host_must_be_this_machine() {
        for host in [
            "127.0.0.1:4000",
            "localhost:4000",
            "[::1]:4000",
            "localhost",
        ] {
            assert_eq!(check(&headers(None, host), 4000, &[], true), Ok(()));
        }
        let e = check(&headers(None, "rebound.example:4000"), 4000, &[], true).unwrap_err();
        assert!(e.contains("without a token"), "{e}");
        // With a token the host is not checked (a LAN gateway answers its own names).
        assert_eq!(
            check(&headers(None, "box.lan:4000"), 4000, &[], false),
            Ok(())
        );
    }
}
