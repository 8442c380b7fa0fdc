//! The handshake: `connect.challenge`, then the client's `connect` (protocol range, token, role)
//! answered by `hello-ok`, or an error and a close with a reason.

use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, close_code};
use futures_util::StreamExt;
use futures_util::stream::SplitStream;
use switchboard_protocol::events::ServerEvent;
use switchboard_protocol::frames::{
    CAPABILITIES, ConnectChallenge, ConnectParams, Features, HelloOk, Policy, ServerInfo,
};
use switchboard_protocol::{ErrorCode, ErrorShape, PROTOCOL_VERSION, RequestFrame, ResponseFrame};

use super::{Conn, binary_error, parse_request, read_error};
use crate::ServerState;
use crate::access::{Grant, Role};
use crate::admission::Pending;
use crate::methods::{self, EVENTS};

/// How long a client has to send `connect`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Challenges the client and handles its first frame; true when it is now connected (and its
/// connection no longer counts as `pending`).
pub(super) async fn connect(
    state: &ServerState,
    conn: &Conn,
    conn_id: u64,
    stream: &mut SplitStream<WebSocket>,
    pending: Option<Pending>,
) -> bool {
    let challenge = ConnectChallenge {
        nonce: uuid::Uuid::new_v4().to_string(),
        ts: state.engine.now_ms(),
    };
    conn.event(ServerEvent::ConnectChallenge(challenge), false)
        .await;
    // Until `hello-ok` the connection holds a place among the unauthenticated ones, which a
    // newer connection may take while this one has not sent `connect` (crate::admission).
    let evicted = pending
        .as_ref()
        .map(|p| p.evicted().clone())
        .unwrap_or_default();
    let first = tokio::select! {
        first = tokio::time::timeout(CONNECT_TIMEOUT, stream.next()) => first,
        () = evicted.cancelled() => {
            let reason = "too many connections are waiting to authenticate; connect again";
            conn.close(close_code::AGAIN, reason).await;
            return false;
        }
    };
    match first {
        Err(_) => {
            conn.close(
                close_code::POLICY,
                "connect timeout: send a connect request first",
            )
            .await;
            false
        }
        Ok(Some(Err(e))) => {
            read_error(conn, e).await;
            false
        }
        Ok(None) => false,
        Ok(Some(Ok(message))) => handshake(state, conn, conn_id, message, pending).await,
    }
}

/// Refuses the handshake: the error under the request's id, then a close with `reason`.
async fn refuse(conn: &Conn, id: impl Into<String>, error: ErrorShape, code: u16, reason: &str) {
    conn.respond(ResponseFrame::err(id, error)).await;
    conn.close(code, reason).await;
}

/// Handles the first frame; true when the client is now connected.
async fn handshake(
    state: &ServerState,
    conn: &Conn,
    conn_id: u64,
    message: Message,
    pending: Option<Pending>,
) -> bool {
    let text = match message {
        Message::Text(text) => text,
        Message::Binary(_) => {
            refuse(
                conn,
                "",
                binary_error(),
                close_code::POLICY,
                "expected a connect request",
            )
            .await;
            return false;
        }
        _ => {
            conn.close(close_code::POLICY, "expected a connect request")
                .await;
            return false;
        }
    };
    let req = match parse_request(text.as_str()) {
        Ok(req) => req,
        Err((id, error)) => {
            refuse(
                conn,
                id,
                error,
                close_code::POLICY,
                "expected a connect request",
            )
            .await;
            return false;
        }
    };
    let Some((id, params, role)) = check_connect(state, conn, req).await else {
        return false;
    };
    let mut hello = hello(state, conn_id);
    let grant = match role {
        Role::Operator => Grant::operator(&params.scopes),
        Role::Node => {
            let sessions = state.engine.sessions();
            let display_name = params.client.display_name.clone();
            match sessions
                .node_session(params.node_id.as_deref(), display_name)
                .await
            {
                Ok(key) => {
                    conn.subscriptions().keys.insert(key.as_str().to_string());
                    hello.session_key = Some(key.as_str().to_string());
                    Grant::Node {
                        session_key: key.into_string(),
                    }
                }
                Err(e) => {
                    let reason = "invalid node connect";
                    refuse(conn, id, e.to_shape(), close_code::POLICY, reason).await;
                    return false;
                }
            }
        }
    };
    hello.auth = Some(grant.hello());
    let _ = conn.grant.set(grant);
    let _ = conn.client_id.set(params.client.id.clone());
    // Before hello-ok leaves: a client that has it may open its next connection at once.
    if let Some(pending) = pending {
        pending.authenticated();
    }
    match methods::to_value(hello) {
        Ok(hello) => conn.respond(ResponseFrame::ok(id, hello)).await,
        Err(error) => {
            refuse(conn, id, error, close_code::ERROR, "internal error").await;
            return false;
        }
    }
    true
}

/// The `connect` request's params and role when it is one, speaks our protocol, names a known
/// role and carries the token; otherwise the client was told why and the connection is closing.
async fn check_connect(
    state: &ServerState,
    conn: &Conn,
    req: RequestFrame,
) -> Option<(String, ConnectParams, Role)> {
    if req.method != "connect" {
        let error = ErrorShape::new(
            ErrorCode::Unauthorized,
            format!(
                "{} before connect: the first request must be connect (with auth.token)",
                req.method
            ),
        );
        refuse(conn, req.id, error, close_code::POLICY, "connect required").await;
        return None;
    }
    if req.params.as_ref().is_none_or(|p| p.is_null()) {
        let error = ErrorShape::new(
            ErrorCode::InvalidRequest,
            format!(
                "connect: params are required: {{\"minProtocol\": {PROTOCOL_VERSION}, \"maxProtocol\": \
                 {PROTOCOL_VERSION}, \"client\": {{\"id\", \"version\", \"platform\", \"mode\"}}, \
                 \"role\": \"operator\", \"scopes\": [\"operator.read\", …], \"auth\": {{\"token\"}}}}"
            ),
        );
        refuse(conn, req.id, error, close_code::POLICY, "invalid connect").await;
        return None;
    }
    let params: ConnectParams = match methods::parse("connect", req.params) {
        Ok(p) => p,
        Err(error) => {
            refuse(conn, req.id, error, close_code::POLICY, "invalid connect").await;
            return None;
        }
    };
    if params.min_protocol > PROTOCOL_VERSION || params.max_protocol < PROTOCOL_VERSION {
        let error = ErrorShape::new(
            ErrorCode::InvalidRequest,
            format!(
                "protocol range {}..{} is not supported; this gateway speaks protocol {PROTOCOL_VERSION}",
                params.min_protocol, params.max_protocol
            ),
        );
        refuse(
            conn,
            req.id,
            error,
            close_code::PROTOCOL,
            "protocol mismatch",
        )
        .await;
        return None;
    }
    let role = match Role::parse(params.role.as_deref()) {
        Ok(role) => role,
        Err(error) => {
            refuse(conn, req.id, error, close_code::POLICY, "invalid role").await;
            return None;
        }
    };
    let token = params
        .auth
        .as_ref()
        .and_then(|a| a.token.as_deref().or(a.password.as_deref()));
    if !state.auth.check(token) {
        let what = if token.is_some() {
            "wrong token"
        } else {
            "missing token (auth.token)"
        };
        let error = ErrorShape::new(
            ErrorCode::Unauthorized,
            format!(
                "unauthorized: {what}; use the gateway token (printed where it is stored at start-up)"
            ),
        );
        refuse(conn, req.id, error, close_code::POLICY, "unauthorized").await;
        return None;
    }
    Some((req.id, params, role))
}

fn hello(state: &ServerState, conn_id: u64) -> HelloOk {
    HelloOk {
        kind: "hello-ok".into(),
        protocol: PROTOCOL_VERSION,
        server: ServerInfo {
            name: "switchboard".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            conn_id: conn_id.to_string(),
        },
        features: Features {
            methods: methods::method_names().map(str::to_string).collect(),
            events: EVENTS.iter().map(|e| e.to_string()).collect(),
            capabilities: CAPABILITIES.iter().map(|c| c.to_string()).collect(),
        },
        policy: Policy {
            max_payload: state.max_payload,
            max_buffered_bytes: state.max_payload.saturating_mul(4),
            tick_interval_ms: state.tick_interval.as_millis() as u64,
        },
        session_key: None,
        auth: None,
    }
}
