//! Traces over OTLP (SPEC §10b, `observability.otlp`, docs/observability.md): the layer that
//! turns the gateway's spans into OpenTelemetry spans, and the exporter that sends them to the
//! collector in batches from a thread of its own. Off (no layer at all) while no endpoint is
//! set.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::tonic_types::metadata::MetadataMap;
use opentelemetry_otlp::{
    Protocol, SpanExporter, WithExportConfig, WithHttpConfig, WithTonicConfig,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use switchboard_core::config::{OtlpConfig, OtlpProtocol};
use tracing::Level;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// How long one export may take before the batch is given up.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the layer sees: the gateway's own spans at info, and its warnings and errors (span
/// events), whatever the log filter says. Nothing of the libraries under it.
fn exported(meta: &tracing::Metadata<'_>) -> bool {
    let ours = ["switchboard_core", "switchboard_server"]
        .iter()
        .any(|krate| meta.target().starts_with(krate));
    let level = match meta.is_span() {
        true => Level::INFO,
        false => Level::WARN,
    };
    ours && *meta.level() <= level
}

/// The tracing layer and the provider behind it (shut it down to send what is buffered);
/// `None` while `observability.otlp.endpoint` is unset. Built inside `runtime`, whose tasks
/// make the exporter's requests.
pub fn layer<S>(
    config: &OtlpConfig,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<Option<(impl Layer<S> + use<S>, SdkTracerProvider)>>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let Some(endpoint) = config.endpoint.as_deref() else {
        return Ok(None);
    };
    let _inside = runtime.enter();
    // Checked for both protocols: over HTTP a header that cannot be sent would only make every
    // export fail, silently.
    let headers = header_map(config)?;
    let exporter = match config.protocol {
        OtlpProtocol::HttpProtobuf => SpanExporter::builder()
            .with_http()
            .with_http_client(Client::new(runtime.clone())?)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(traces_url(endpoint))
            .with_headers(
                config
                    .headers
                    .clone()
                    .into_iter()
                    .collect::<HashMap<_, _>>(),
            )
            .with_timeout(EXPORT_TIMEOUT)
            .build(),
        OtlpProtocol::Grpc => SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .with_metadata(MetadataMap::from_headers(headers))
            .with_timeout(EXPORT_TIMEOUT)
            .build(),
    }
    .with_context(|| format!("observability.otlp: cannot export traces to {endpoint}"))?;
    let sampler = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(config.sample_ratio)));
    let resource = Resource::builder()
        .with_service_name("switchboard")
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(sampler)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("switchboard");
    // No busy/idle timing (two clock reads a poll), no OpenTelemetry context made current at
    // each poll (nothing here reads it: `core::trace` asks the span), no thread or
    // source-location attributes: a span costs what it says.
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_tracked_inactivity(false)
        .with_context_activation(false)
        .with_threads(false)
        .with_location(false)
        // The hint keeps the `log` bridge's level at the log filter's: without it every
        // dependency's `log::trace!` (a WebSocket frame's, ~160 a turn) is turned into a tracing
        // event only to be dropped (measured: +140,000 instructions a turn).
        .with_filter(
            tracing_subscriber::filter::filter_fn(exported)
                .with_max_level_hint(tracing_subscriber::filter::LevelFilter::INFO),
        );
    Ok(Some((layer, provider)))
}

/// The URL traces are posted to: `endpoint` with `/v1/traces` added unless it ends with it.
fn traces_url(endpoint: &str) -> String {
    let endpoint = endpoint.trim_end_matches('/');
    match endpoint.ends_with("/v1/traces") {
        true => endpoint.to_string(),
        false => format!("{endpoint}/v1/traces"),
    }
}

/// `headers` checked as HTTP headers (names lower-case ASCII, values printable ASCII), which is
/// also what gRPC metadata takes.
fn header_map(config: &OtlpConfig) -> anyhow::Result<reqwest::header::HeaderMap> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &config.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).with_context(|| {
            format!("observability.otlp.headers: {name:?} is not a header name")
        })?;
        // The value is a secret: the error names the header only.
        let value = reqwest::header::HeaderValue::from_str(value).with_context(|| {
            format!("observability.otlp.headers.{name}: the value is not printable ASCII")
        })?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// The exporter's HTTP client: the gateway's own reqwest and TLS setting, its requests made
/// by tasks of the gateway's runtime (the exporter's thread has none).
#[derive(Debug)]
struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl Client {
    fn new(runtime: tokio::runtime::Handle) -> anyhow::Result<Self> {
        let http = switchboard_core::runtime::providers::client_builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .context("cannot build the OTLP exporter's HTTP client")?;
        Ok(Self { http, runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let http = self.http.clone();
        let (status, headers, body) = self
            .runtime
            .spawn(async move {
                let response = http.execute(request).await?;
                let (status, headers) = (response.status(), response.headers().clone());
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>((status, headers, body))
            })
            .await??;
        let mut response = Response::builder().status(status).body(body)?;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_added_once() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://collector/otlp/v1/traces"),
            "https://collector/otlp/v1/traces"
        );
    }

    #[test]
    fn a_header_that_cannot_be_sent_is_named_without_its_value() {
        let config = OtlpConfig {
            headers: [("x-api-key".to_string(), "secret\nvalue".to_string())].into(),
            ..OtlpConfig::default()
        };
        let error = format!("{:#}", header_map(&config).unwrap_err());
        assert!(error.contains("x-api-key"), "{error}");
        assert!(!error.contains("secret"), "{error}");
    }
}
