//! Placeholder: being written.

use super::{EventSink, ModelRequest, Provider, ProviderError, ProviderFuture};
use crate::config::ProviderConfig;

pub struct OpenAi {
    id: String,
}

impl OpenAi {
    pub fn new(id: &str, _config: &ProviderConfig, _client: reqwest::Client) -> Self {
        Self { id: id.to_string() }
    }
}

impl Provider for OpenAi {
    fn id(&self) -> &str {
        &self.id
    }

    fn complete<'a>(&'a self, _request: &'a ModelRequest, _events: EventSink<'a>) -> ProviderFuture<'a> {
        Box::pin(async { Err(ProviderError::InvalidResponse { message: "not implemented yet".into() }) })
    }
}
