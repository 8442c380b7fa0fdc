//! Placeholder: being written.

use super::{EventSink, ModelRequest, Provider, ProviderError, ProviderFuture};

pub struct Builtin;

impl Builtin {
    pub fn new() -> Self {
        Self
    }
}

impl Provider for Builtin {
    fn id(&self) -> &str {
        "builtin"
    }

    fn complete<'a>(&'a self, _request: &'a ModelRequest, _events: EventSink<'a>) -> ProviderFuture<'a> {
        Box::pin(async { Err(ProviderError::InvalidResponse { message: "not implemented yet".into() }) })
    }
}
