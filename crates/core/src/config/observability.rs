//! `observability` and `logging`: what the gateway tells its operator about itself (SPEC §10b,
//! docs/observability.md). Metrics are served on the gateway's port; traces go over OTLP to
//! the collector `otlp.endpoint` names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::choices::{LogFormat, MetricsAuth, OtlpProtocol};
use super::validate::Checker;

/// `observability`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservabilityConfig {
    /// `GET /metrics` in the Prometheus text format.
    pub metrics: MetricsConfig,
    /// Traces over OTLP; off while `endpoint` is unset.
    pub otlp: OtlpConfig,
}

/// `observability.otlp`: where the gateway sends its traces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OtlpConfig {
    /// The collector: for `http/protobuf` its base URL (`/v1/traces` is added unless the URL
    /// ends with it), for `grpc` its address (`http://host:4317`). Unset: no traces.
    pub endpoint: Option<String>,
    pub protocol: OtlpProtocol,
    /// Sent with every export (a collector's API key); shown redacted by `config show`.
    pub headers: BTreeMap<String, String>,
    /// Share of new traces recorded, 0.0–1.0 (default 1.0). A trace that arrives with a
    /// `traceparent` follows its sender's sampling decision.
    pub sample_ratio: f64,
}

impl Default for OtlpConfig {
    fn default() -> Self {
        Self {
            endpoint: None,
            protocol: OtlpProtocol::HttpProtobuf,
            headers: BTreeMap::new(),
            sample_ratio: 1.0,
        }
    }
}

impl Checker<'_> {
    pub(super) fn observability(&mut self, config: &mut ObservabilityConfig) {
        let otlp = &mut config.otlp;
        super::validate::clear_if_empty(&mut otlp.endpoint);
        if let Some(url) = &otlp.endpoint {
            self.url("observability.otlp.endpoint", url);
        }
        if !(0.0..=1.0).contains(&otlp.sample_ratio) {
            self.invalid(
                "observability.otlp.sampleRatio",
                otlp.sample_ratio.to_string(),
                SAMPLE_RATIO_EXPECTED,
            );
        }
    }
}

pub(super) const SAMPLE_RATIO_EXPECTED: &str =
    "a number from 0.0 (no new trace) to 1.0 (every trace)";

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
