//! The engine's error type and its one mapping onto the wire: the protocol's error codes and the
//! HTTP statuses of the HTTP doors (`/rpc`, `/hooks/agent`, `/channels/webhook/…`).

use switchboard_protocol::{ErrorCode, ErrorShape};

use crate::keys::KeyError;
use crate::store::StoreError;

/// Every failure the engine reports to an adapter.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The caller's input was wrong; the message says what and what is accepted. Fix the input.
    #[error("{0}")]
    Invalid(String),
    /// The named session, run, agent or job does not exist (or the door is switched off).
    #[error("{0}")]
    NotFound(String),
    /// Access rules or send policy refused it; the message names the setting.
    #[error("{0}")]
    Forbidden(String),
    /// A missing or wrong token at a door that has its own (hooks, webhook accounts).
    #[error("{0}")]
    Unauthorized(String),
    /// The engine cannot take work now (it is shutting down); try again after a restart.
    #[error("{0}")]
    Unavailable(String),
    /// A body over `gateway.maxPayloadBytes`; the message gives both sizes.
    #[error("{0}")]
    TooLarge(String),
    /// A bad session key.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// Storage failed or refused.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl CoreError {
    /// The wire error code: the single place internal errors meet the protocol.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Invalid(_) | Self::Key(_) | Self::TooLarge(_) => ErrorCode::InvalidRequest,
            Self::NotFound(_) => ErrorCode::NotFound,
            Self::Forbidden(_) => ErrorCode::Forbidden,
            Self::Unauthorized(_) => ErrorCode::Unauthorized,
            Self::Unavailable(_) => ErrorCode::Unavailable,
            Self::Store(StoreError::NotFound(_)) => ErrorCode::NotFound,
            Self::Store(StoreError::Conflict(_)) => ErrorCode::InvalidRequest,
            Self::Store(
                StoreError::Closed
                | StoreError::Busy(_)
                | StoreError::Fenced(_)
                | StoreError::Stale(_)
                | StoreError::Unreachable(_),
            ) => ErrorCode::Unavailable,
            Self::Store(StoreError::Backend(_)) => ErrorCode::Internal,
        }
    }

    /// The HTTP status of this error at an HTTP door, next to [`CoreError::code`] so the two
    /// never disagree.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::TooLarge(_) => 413,
            other => http_status(other.code()),
        }
    }

    pub fn to_shape(&self) -> ErrorShape {
        ErrorShape::new(self.code(), self.to_string())
    }

    /// A session reference of an operator (a method, the CLI) that names no session; the hint
    /// names what an operator runs.
    pub fn session_not_found(reference: &str) -> Self {
        Self::NotFound(format!(
            "Session not found: {reference} (list the sessions with `switchboard sessions list` \
             or the sessions.list method, and use the full key)"
        ))
    }

    /// The same for a model's tool call; the hint names the model's tool.
    pub fn tool_session_not_found(reference: &str) -> String {
        format!("Session not found: {reference} (use the full sessionKey from sessions_list)")
    }

    /// Reports an invalid input with what is accepted.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }
}

/// The HTTP status of a wire error code.
pub fn http_status(code: ErrorCode) -> u16 {
    match code {
        ErrorCode::InvalidRequest => 400,
        ErrorCode::Unauthorized => 401,
        ErrorCode::Forbidden => 403,
        ErrorCode::NotFound => 404,
        ErrorCode::Unavailable => 503,
        ErrorCode::Internal => 500,
    }
}

pub type CoreResult<T> = Result<T, CoreError>;
