//! The stream decoders of the wire-format providers as plain functions, for the fuzz targets
//! under `fuzz/` (docs/testing.md): a whole SSE body in memory, read by the same framing, event
//! handlers and end-of-stream rule as a streamed turn. Not an API: hidden from the docs.

use std::time::Duration;

use super::http::{self, Endpoint};
use super::{ModelResponse, ProviderError, anthropic, openai};
use crate::config::ProviderConfig;

/// The provider id every error of these decoders is prefixed with (`fuzz: …`).
pub const PROVIDER: &str = "fuzz";

/// An endpoint to report errors through, built once (a client per input would be most of the
/// fuzzer's time).
pub struct Streams {
    endpoint: Endpoint,
}

impl Streams {
    pub fn new() -> Result<Self, String> {
        let client = http::client(Duration::from_secs(1))?;
        let config = ProviderConfig::default();
        let endpoint = Endpoint::new(PROVIDER, &config, "v1/x", Vec::new(), client);
        Ok(Self { endpoint })
    }

    /// An OpenAI Chat Completions stream (`data: {chunk}` … `data: [DONE]`).
    pub fn openai(&self, body: &[u8]) -> Result<ModelResponse, ProviderError> {
        openai::read_stream(&self.endpoint, body)
    }

    /// An Anthropic Messages stream (`event: message_start` … `message_stop`).
    pub fn anthropic(&self, body: &[u8]) -> Result<ModelResponse, ProviderError> {
        anthropic::read_stream(&self.endpoint, body)
    }
}
