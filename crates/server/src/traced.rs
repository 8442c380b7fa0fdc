//! A span per request on the HTTP doors (SPEC §10b): `POST /rpc`, `/hooks/agent`, the channels'
//! webhooks, `/mcp` and A2A. A request that carries a W3C `traceparent` header continues its
//! sender's trace; the runs it starts are children of its span. Reads (`GET`) get none.

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use switchboard_core::trace::{self, TRACEPARENT};
use tracing::Instrument;

/// The middleware.
pub(crate) async fn http_span(request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    // The route's template, not the path: no account or agent names in span names.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let span = tracing::info_span!(
        "http_request",
        otel.name = %format_args!("POST {route}"),
        otel.kind = "server",
        http.request.method = "POST",
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
    );
    let parent = request
        .headers()
        .get(TRACEPARENT)
        .and_then(|value| value.to_str().ok());
    trace::adopt(&span, parent);
    let response = next.run(request).instrument(span.clone()).await;
    span.record("http.response.status_code", response.status().as_u16());
    response
}
