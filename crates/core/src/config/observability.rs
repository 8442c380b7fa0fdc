//! `observability` and `logging`: what the gateway tells its operator about itself (SPEC §10b,
//! docs/observability.md). Metrics are served on the gateway's port; traces (`otlp`) are to
//! come in this section beside them.

use serde::{Deserialize, Serialize};

use super::choices::{LogFormat, MetricsAuth};

/// `observability`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservabilityConfig {
    /// `GET /metrics` in the Prometheus text format.
    pub metrics: MetricsConfig,
}

/// `observability.metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MetricsConfig {
    /// Serve `GET /metrics` (default: yes). Off, the route answers 404 and nothing is recorded.
    pub enabled: bool,
    /// Who may read it: `token` (default; the gateway token, as for `/rpc`) or `loopback`
    /// (clients on 127.0.0.1 or ::1, without a token).
    pub auth: MetricsAuth,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            auth: MetricsAuth::Token,
        }
    }
}

/// `logging`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LoggingConfig {
    /// `text` (default) or `json` (one JSON object a line).
    pub format: LogFormat,
}
