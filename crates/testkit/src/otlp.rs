//! An OTLP/HTTP trace receiver on loopback: takes `POST /v1/traces` as a collector does,
//! decodes the protobuf with the OpenTelemetry project's own definitions (`opentelemetry-proto`)
//! and keeps every span it was sent, for the trace tests (docs/observability.md).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue as Any, KeyValue};
use prost::Message;
use tokio::sync::watch;

/// One span as the receiver decoded it: ids in lower-case hex, attributes as text.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a trace's root span.
    pub parent_span_id: String,
    pub name: String,
    /// `SpanKind` as the protobuf numbers it (1 internal, 2 server, 3 client, 4 producer,
    /// 5 consumer).
    pub kind: i32,
    pub attributes: BTreeMap<String, String>,
    /// `service.name` of the resource that sent it.
    pub service: String,
}

impl Span {
    /// The attribute `key`, if the span has it.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// A running receiver; it stops when dropped.
pub struct Receiver {
    addr: std::net::SocketAddr,
    spans: Arc<Mutex<Vec<Span>>>,
    headers: Arc<Mutex<Vec<HeaderMap>>>,
    _stop: watch::Sender<bool>,
}

impl Receiver {
    /// On a free loopback port.
    pub async fn start() -> Self {
        let (listener, addr) = crate::bind("OTLP receiver").await;
        let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
        let headers: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
        let (seen, seen_headers) = (spans.clone(), headers.clone());
        let app = Router::new().route(
            "/v1/traces",
            post(async move |request_headers: HeaderMap, body: Bytes| {
                let request = match ExportTraceServiceRequest::decode(body) {
                    Ok(request) => request,
                    Err(e) => return (StatusCode::BAD_REQUEST, format!("not OTLP protobuf: {e}")),
                };
                lock(&seen_headers).push(request_headers);
                lock(&seen).extend(decoded(request));
                (StatusCode::OK, String::new())
            }),
        );
        let (stop, stopped) = watch::channel(false);
        crate::serve("OTLP receiver", listener, app, stopped);
        Self {
            addr,
            spans,
            headers,
            _stop: stop,
        }
    }

    /// The base URL to give as `observability.otlp.endpoint`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        lock(&self.spans).clone()
    }

    /// The headers of every export received so far.
    pub fn export_headers(&self) -> Vec<HeaderMap> {
        lock(&self.headers).clone()
    }

    /// Waits (a minute at most: longer is a hang) until the spans received satisfy `done`.
    ///
    /// # Panics
    /// When they never do; the message lists what came.
    pub async fn wait_for(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        for _ in 0..1200 {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let names: Vec<String> = self
            .spans()
            .iter()
            .map(|s| format!("{} ({}…)", s.name, &s.trace_id[..8.min(s.trace_id.len())]))
            .collect();
        panic!("OTLP receiver: {what} did not arrive in a minute; received {names:?}");
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn decoded(request: ExportTraceServiceRequest) -> Vec<Span> {
    let mut out = Vec::new();
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .map(|r| attributes(&r.attributes))
            .and_then(|a| a.get("service.name").cloned())
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                out.push(Span {
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    name: span.name,
                    kind: span.kind,
                    attributes: attributes(&span.attributes),
                    service: service.clone(),
                });
            }
        }
    }
    out
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| {
            (
                kv.key.clone(),
                kv.value.as_ref().map(text).unwrap_or_default(),
            )
        })
        .collect()
}

fn text(value: &Any) -> String {
    match &value.value {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
