//! Shared HTTP plumbing of the wire-format providers. (Being written.)

use std::time::Duration;

/// A reqwest client with the ring TLS provider and a per-request timeout.
pub fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().timeout(timeout).build().map_err(|e| format!("cannot build the HTTP client: {e}"))
}
