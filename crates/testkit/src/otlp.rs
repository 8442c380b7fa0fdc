//! An OTLP/HTTP trace receiver on loopback: takes `POST /v1/traces` as a collector does,
//! decodes the protobuf with the OpenTelemetry project's own definitions (`opentelemetry-proto`)
//! and keeps every span it was sent, for the trace tests (docs/observability.md).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue as Any, KeyValue};
use prost::Message;

use crate::fake::{FakeServer, Shared};

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
    server: FakeServer<(), Received>,
}

/// What the receiver was sent.
#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    /// The headers of every export.
    headers: Vec<HeaderMap>,
}

impl Receiver {
    /// On a free loopback port.
    pub async fn start() -> Self {
        let routes = Router::new().route("/v1/traces", post(export));
        let server = FakeServer::start("OTLP receiver", (), Received::default(), routes).await;
        Self { server }
    }

    /// The base URL to give as `observability.otlp.endpoint`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.server.lock().spans.clone()
    }

    /// The headers of every export received so far.
    pub fn export_headers(&self) -> Vec<HeaderMap> {
        self.server.lock().headers.clone()
    }

    /// Waits (a minute at most: longer is a hang) until the spans received satisfy `done`.
    ///
    /// # Panics
    /// When they never do; the message lists what came.
    pub async fn wait_for(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let mut spans = Vec::new();
        let ready = || {
            spans = self.spans();
            done(&spans)
        };
        if self
            .server
            .wait_at_most(Duration::from_secs(60), ready)
            .await
        {
            return spans;
        }
        let names: Vec<String> = self
            .spans()
            .iter()
            .map(|s| format!("{} ({}…)", s.name, &s.trace_id[..8.min(s.trace_id.len())]))
            .collect();
        panic!("OTLP receiver: {what} did not arrive in a minute; received {names:?}");
    }
}

/// `POST /v1/traces`: an OTLP protobuf export, its spans kept.
async fn export(
    State(shared): State<Arc<Shared<(), Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let request = match ExportTraceServiceRequest::decode(body) {
        Ok(request) => request,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("not OTLP protobuf: {e}")),
    };
    let mut received = shared.lock();
    received.headers.push(headers);
    received.spans.extend(decoded(request));
    drop(received);
    shared.bump();
    (StatusCode::OK, String::new())
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
