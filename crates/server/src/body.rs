//! Reading a request body, once its caller was authenticated: a declared `Content-Length` over
//! `gateway.maxPayloadBytes` is refused before a byte is read, a body that grows past it is
//! refused as soon as it does, and one that does not arrive within the body timeout is refused
//! too. Refusals are JSON in the gateway's error shape (JSON-RPC on `/mcp`).

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use futures_util::StreamExt;
use switchboard_protocol::ErrorCode;

use crate::ServerState;
use crate::guard::refusal;

/// Why a body was not read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// Declared or grown past the limit.
    TooLarge { size: Option<u64>, max: usize },
    /// Did not arrive in time.
    Timeout { after: std::time::Duration },
    /// The connection failed while sending it.
    Broken(String),
}

impl BodyError {
    /// The refusal on the door at `path`.
    pub(crate) fn refusal(&self, path: &str) -> Response {
        match self {
            Self::TooLarge { size, max } => {
                // A chunked body has no declared size: it is refused once it grows past the
                // limit, and said so.
                let body = size.map_or_else(
                    || "the body grew past the limit and".to_string(),
                    |s| format!("the body of {s} bytes"),
                );
                refusal(
                    path,
                    StatusCode::PAYLOAD_TOO_LARGE,
                    ErrorCode::InvalidRequest,
                    format!(
                        "{body} exceeds maxPayload ({max} bytes, gateway.maxPayloadBytes); send less"
                    ),
                )
            }
            Self::Timeout { after } => refusal(
                path,
                StatusCode::REQUEST_TIMEOUT,
                ErrorCode::InvalidRequest,
                format!("the body did not arrive within {after:?}"),
            ),
            Self::Broken(e) => refusal(
                path,
                StatusCode::BAD_REQUEST,
                ErrorCode::InvalidRequest,
                format!("the body could not be read: {e}"),
            ),
        }
    }
}

/// The declared length, when it is over the limit: refuse before reading.
pub(crate) fn check_length(state: &ServerState, headers: &HeaderMap) -> Result<(), BodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(size) if size > state.max_payload as u64 => Err(BodyError::TooLarge {
            size: Some(size),
            max: state.max_payload,
        }),
        _ => Ok(()),
    }
}

/// Reads the whole body: at most `maxPayload` bytes, within the body timeout.
pub(crate) async fn read(
    state: &ServerState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, BodyError> {
    check_length(state, headers)?;
    let max = state.max_payload;
    let read = async {
        let mut stream = body.into_data_stream();
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| BodyError::Broken(e.to_string()))?;
            if bytes.len() + chunk.len() > max {
                return Err(BodyError::TooLarge { size: None, max });
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(bytes))
    };
    let timeout = state.limits.body_timeout;
    tokio::time::timeout(timeout, read)
        .await
        .unwrap_or(Err(BodyError::Timeout { after: timeout }))
}
