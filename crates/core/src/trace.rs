//! Trace context carried with work that outlives the call that made it (SPEC §10b).
//!
//! Spans are `tracing` spans; the binary turns them into OpenTelemetry spans when
//! `observability.otlp` is set (cli/src/otlp.rs). Work that waits — a queued run, an exchange's
//! next step, a sub-agent's announce, an outbox record — stores the context of the span that made
//! it as a W3C `traceparent` and starts its own span as that span's child, in this process or
//! after a restart, so one multi-agent exchange is one trace. With traces off every function
//! here is a no-op and stores nothing.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The HTTP header of W3C Trace Context that the doors read (`/rpc`, `/hooks/agent`, A2A,
/// webhooks).
pub const TRACEPARENT: &str = "traceparent";

/// The current span's context as a `traceparent`, to store with work that starts later;
/// `None` when traces are off.
pub fn current() -> Option<String> {
    of(&Span::current())
}

/// `span`'s context as a `traceparent`; `None` when traces are off. Starts the span's
/// OpenTelemetry side: its parent cannot change after this.
pub fn of(span: &Span) -> Option<String> {
    valid_context(span).map(|context| format(&context))
}

/// Makes `span` a child of `traceparent` (stored with the work, or sent by a client). Nothing
/// happens for `None`, for text that is not a `traceparent`, or with traces off; `span` must
/// not have been entered yet.
pub fn adopt(span: &Span, traceparent: Option<&str>) {
    let Some(parent) = traceparent.and_then(parse) else {
        return;
    };
    let context = opentelemetry::Context::new().with_remote_span_context(parent);
    // Refused only when traces are off or the span was disabled: nothing to join then.
    let _ = span.set_parent(context);
}

/// The trace id of `span`, in hex, for log lines; `None` when traces are off.
pub fn trace_id(span: &Span) -> Option<String> {
    valid_context(span).map(|context| context.trace_id().to_string())
}

/// The OpenTelemetry context of `span`, when traces are on and it has one.
fn valid_context(span: &Span) -> Option<SpanContext> {
    let context = span.context();
    let span_ref = context.span();
    let span_context = span_ref.span_context();
    span_context.is_valid().then(|| span_context.clone())
}

/// `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>` (W3C Trace Context, version 00).
pub fn format(context: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        context.trace_id(),
        context.span_id(),
        context.trace_flags().to_u8()
    )
}

/// A `traceparent` header's context. Version `00` exactly as the recommendation writes it; a
/// later version is read by its first four fields, as the recommendation asks. All-zero ids,
/// version `ff`, upper-case hex or a wrong length are `None` (the work starts a trace of its own).
pub fn parse(text: &str) -> Option<SpanContext> {
    let text = text.trim();
    let mut fields = text.split('-');
    let (version, trace_id, span_id, flags) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let lower_hex = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let well_formed = lower_hex(version, 2)
        && version != "ff"
        && lower_hex(trace_id, 32)
        && lower_hex(span_id, 16)
        && lower_hex(flags, 2)
        && (version != "00" || fields.next().is_none());
    if !well_formed {
        return None;
    }
    let trace_id = TraceId::from_hex(trace_id).ok()?;
    let span_id = SpanId::from_hex(span_id).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let context = SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    );
    context.is_valid().then_some(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_reads_and_writes_back_the_same() {
        let context = parse(SAMPLE).unwrap();
        assert_eq!(
            context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(context.is_sampled());
        assert_eq!(format(&context), SAMPLE);
        let unsampled = SAMPLE.replace("-01", "-00");
        assert!(!parse(&unsampled).unwrap().is_sampled());
    }

    #[test]
    fn malformed_traceparents_are_not_read() {
        for bad in [
            "",
            "00",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
        ] {
            assert!(parse(bad).is_none(), "{bad:?} was read");
        }
        // A later version may add fields after the four it shares with 00.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-next";
        assert!(parse(later).is_some());
    }

    #[test]
    fn without_an_opentelemetry_layer_nothing_is_stored() {
        let span = tracing::info_span!("run");
        adopt(&span, Some(SAMPLE));
        assert_eq!(of(&span), None);
        assert_eq!(trace_id(&span), None);
        assert_eq!(current(), None);
    }
}
