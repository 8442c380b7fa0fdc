//! The engine's error type and its one mapping onto the wire's error codes.

use switchboard_protocol::{ErrorCode, ErrorShape};

use crate::keys::KeyError;
use crate::store::StoreError;

/// Every failure the engine reports to an adapter.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The caller's input was wrong; the message says what and what is accepted.
    #[error("{0}")]
    Invalid(String),
    /// The named session, run or agent does not exist.
    #[error("{0}")]
    NotFound(String),
    /// Access rules or send policy refused it; the message names the setting.
    #[error("{0}")]
    Forbidden(String),
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
            Self::Invalid(_) | Self::Key(_) => ErrorCode::InvalidRequest,
            Self::NotFound(_) => ErrorCode::NotFound,
            Self::Forbidden(_) => ErrorCode::Forbidden,
            Self::Store(StoreError::NotFound(_)) => ErrorCode::NotFound,
            Self::Store(StoreError::Conflict(_)) => ErrorCode::InvalidRequest,
            Self::Store(StoreError::Closed) => ErrorCode::Unavailable,
            Self::Store(StoreError::Backend(_)) => ErrorCode::Internal,
        }
    }

    pub fn to_shape(&self) -> ErrorShape {
        ErrorShape::new(self.code(), self.to_string())
    }
}

pub type CoreResult<T> = Result<T, CoreError>;
