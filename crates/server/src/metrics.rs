//! `GET /metrics` (SPEC §10b, docs/observability.md): what the engine's seams recorded through
//! the `metrics` facade (`switchboard_core::measure`), rendered in the Prometheus text format by
//! `metrics-exporter-prometheus` (its own listener and push gateway are not built: the route
//! is ours, behind our auth), followed by the gauges that mirror the engine's state, read at
//! the scrape.
//!
//! Who may read it is `observability.metrics.auth`: `token` (the gateway token, as `/rpc`) or
//! `loopback` (a client on 127.0.0.1 or ::1 that names this machine in `Host`, so a web page that
//! rebinds its DNS name to 127.0.0.1 is refused). Labels are bounded names from the config and
//! fixed sets: nothing a scrape shows is secret.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use switchboard_core::config::MetricsAuth;
use switchboard_core::engine::gauges::{Reading, mirrored};
use switchboard_core::measure;
use switchboard_protocol::ErrorCode;

use crate::{GatewayAuth, ServerState};

/// How often the recorder's histograms are drained when nobody scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The content type of the Prometheus text format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Why no recorder could be installed.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The histogram buckets of `switchboard_core::measure::BUCKETS` were refused.
    #[error("the metrics exporter refused its settings: {0}")]
    Build(String),
    /// The process has a recorder already (an embedding program installed one).
    #[error("a metrics recorder is installed already: {0}")]
    Installed(String),
}

/// What renders the recorded metrics.
#[derive(Clone)]
pub struct Exporter {
    handle: PrometheusHandle,
}

impl Exporter {
    /// Installs the process's recorder (there is one per process: the `metrics` facade's) and
    /// describes every metric. Call once, from the binary, inside a tokio runtime: a task
    /// drains the histograms every few seconds.
    pub fn install() -> Result<Self, MetricsError> {
        let recorder = builder()?.build_recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder)
            .map_err(|e| MetricsError::Installed(e.to_string()))?;
        measure::describe();
        let upkeep = handle.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(UPKEEP_EVERY).await;
                upkeep.run_upkeep();
            }
        });
        Ok(Self { handle })
    }

    /// A recorder that is not the process's: it renders nothing recorded, only the mirrored
    /// gauges (tests of the door).
    pub fn detached() -> Result<Self, MetricsError> {
        let handle = builder()?.build_recorder().handle();
        Ok(Self { handle })
    }
}

fn builder() -> Result<PrometheusBuilder, MetricsError> {
    measure::BUCKETS
        .iter()
        .try_fold(PrometheusBuilder::new(), |builder, (name, buckets)| {
            builder.set_buckets_for_metric(Matcher::Full((*name).to_string()), buckets)
        })
        .map_err(|e| MetricsError::Build(e.to_string()))
}

/// Why a scrape is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub message: &'static str,
}

/// Whether a scrape may read the metrics: `bearer` is the token it presented, `peer` the
/// address it connects from (`None`: not known, as when the router is driven without a
/// socket), `host` its `Host` header.
pub fn admits(
    mode: MetricsAuth,
    auth: &GatewayAuth,
    bearer: Option<&str>,
    peer: Option<IpAddr>,
    host: &str,
) -> Result<(), Refusal> {
    match mode {
        MetricsAuth::Token if auth.check(bearer) => Ok(()),
        MetricsAuth::Token => Err(Refusal {
            status: StatusCode::UNAUTHORIZED,
            message: "missing or wrong token: send Authorization: Bearer <gateway token> \
                      (observability.metrics.auth is \"token\")",
        }),
        MetricsAuth::Loopback
            if peer.is_some_and(|ip| ip.to_canonical().is_loopback())
                && crate::guard::is_loopback_host(host) =>
        {
            Ok(())
        }
        MetricsAuth::Loopback => Err(Refusal {
            status: StatusCode::FORBIDDEN,
            message: "metrics are served to this machine only (observability.metrics.auth is \
                      \"loopback\"): scrape 127.0.0.1 or [::1] from the gateway's host",
        }),
    }
}

/// `GET /metrics`. 404 while `observability.metrics.enabled` is off (or the binary installed
/// no exporter).
pub async fn scrape(
    State(state): State<Arc<ServerState>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    pending: Option<Extension<crate::admission::Pending>>,
    headers: HeaderMap,
) -> Response {
    let config = &state.engine.config().observability.metrics;
    let Some(exporter) = state.metrics.get().filter(|_| config.enabled) else {
        return crate::http::failure(
            StatusCode::NOT_FOUND,
            ErrorCode::NotFound,
            "metrics are off: set observability.metrics.enabled".into(),
        );
    };
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let peer = peer.map(|Extension(ConnectInfo(addr))| addr.ip());
    let bearer = crate::http::bearer(&headers);
    if let Err(refused) = admits(config.auth, &state.auth, bearer, peer, host) {
        let code = match refused.status {
            StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
            _ => ErrorCode::Forbidden,
        };
        return crate::http::failure(refused.status, code, refused.message.into());
    }
    // A scraper keeps its connection: admitted, it no longer counts as waiting to authenticate.
    crate::admission::authenticated(pending.as_ref());
    let mut body = exporter.handle.render();
    body.push_str(&render(&mirror(&state).await));
    ([(header::CONTENT_TYPE, TEXT_FORMAT)], body).into_response()
}

/// The mirrored gauges in the text format: a `# HELP` and `# TYPE` line per gauge, then its
/// series, in the order first seen.
fn render(readings: &[Reading]) -> String {
    let mut names: Vec<&'static str> = Vec::new();
    for reading in readings {
        if !names.contains(&reading.name) {
            names.push(reading.name);
        }
    }
    let mut out = String::new();
    for name in names {
        let mut series = readings.iter().filter(|r| r.name == name).peekable();
        if let Some(first) = series.peek() {
            let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} gauge", first.help);
        }
        for reading in series {
            let labels: Vec<String> = reading
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            let value = reading.value;
            let _ = match labels.is_empty() {
                true => writeln!(out, "{name} {value}"),
                false => writeln!(out, "{name}{{{}}} {value}", labels.join(",")),
            };
        }
        out.push('\n');
    }
    out
}

/// A label value in the text format: backslash, double quote and newline escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The engine's mirrored gauges and the connections of this server.
async fn mirror(state: &ServerState) -> Vec<Reading> {
    let mut readings = vec![Reading {
        name: mirrored::WEBSOCKET_CLIENTS,
        help: "Open WebSocket connections.",
        labels: Vec::new(),
        value: state.connections() as f64,
    }];
    readings.extend(state.engine.mirrored_gauges().await);
    readings
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOPBACK_V4: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));

    #[test]
    fn loopback_mode_admits_only_loopback_peers_that_name_this_machine() {
        let auth = GatewayAuth::token("secret-token");
        let admit = |peer: Option<&str>, host: &str| {
            let peer = peer.map(|p| p.parse::<IpAddr>().unwrap());
            admits(MetricsAuth::Loopback, &auth, None, peer, host).map_err(|r| r.status)
        };
        for (peer, host) in [
            ("127.0.0.1", "127.0.0.1:9000"),
            ("::1", "[::1]:9000"),
            ("::ffff:127.0.0.1", "localhost:9000"),
        ] {
            assert_eq!(admit(Some(peer), host), Ok(()), "{peer} {host}");
        }
        for (peer, host) in [
            (Some("192.168.1.20"), "127.0.0.1:9000"),
            (Some("10.0.0.1"), "localhost"),
            (Some("2001:db8::1"), "[::1]:9000"),
            (Some("127.0.0.1"), "rebound.example:9000"),
            (None, "127.0.0.1:9000"),
        ] {
            assert_eq!(
                admit(peer, host),
                Err(StatusCode::FORBIDDEN),
                "{peer:?} {host}"
            );
        }
        // The token opens nothing in loopback mode: the address decides.
        let remote = Some("192.168.1.20".parse().unwrap());
        let with_token = admits(
            MetricsAuth::Loopback,
            &auth,
            Some("secret-token"),
            remote,
            "x",
        );
        assert_eq!(with_token.map_err(|r| r.status), Err(StatusCode::FORBIDDEN));
    }

    #[test]
    fn token_mode_wants_the_gateway_token_from_anywhere() {
        let auth = GatewayAuth::token("secret-token");
        let remote = Some("192.168.1.20".parse().unwrap());
        for (bearer, peer) in [
            (None, LOOPBACK_V4),
            (Some("wrong"), LOOPBACK_V4),
            (None, remote),
        ] {
            let refused = admits(MetricsAuth::Token, &auth, bearer, peer, "127.0.0.1");
            assert_eq!(refused.map_err(|r| r.status), Err(StatusCode::UNAUTHORIZED));
        }
        assert_eq!(
            admits(
                MetricsAuth::Token,
                &auth,
                Some("secret-token"),
                remote,
                "box.lan"
            ),
            Ok(())
        );
    }

    #[test]
    fn the_mirrored_gauges_are_the_text_format_with_escaped_labels() {
        let reading = |name, labels: Vec<(&'static str, String)>, value| Reading {
            name,
            help: if name == "g" { "A gauge." } else { "Another." },
            labels,
            value,
        };
        let readings = [
            reading("g", vec![("channel", "a\"b\\c\nd".into())], 2.0),
            reading("h", Vec::new(), 1.0),
            reading("g", vec![("channel", "x".into())], 0.5),
        ];
        assert_eq!(
            render(&readings),
            "# HELP g A gauge.\n# TYPE g gauge\ng{channel=\"a\\\"b\\\\c\\nd\"} 2\ng{channel=\"x\"} 0.5\n\n\
             # HELP h Another.\n# TYPE h gauge\nh 1\n\n"
        );
    }
}
