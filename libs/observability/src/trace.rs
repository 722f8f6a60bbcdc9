//! W3C trace context across process boundaries: read from a caller's `traceparent` and
//! `tracestate` (gRPC metadata, queue message headers), written into the headers of what this
//! process publishes, and the trace id put on the span so every log line under it carries it.
//!
//! Spans become OpenTelemetry spans only while traces are exported (`[telemetry.otlp]`, see
//! [`crate::init_with_traces`]); otherwise nothing is written into headers, and a span that
//! follows a caller's context still logs the caller's trace id.

use std::collections::BTreeMap;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The header (metadata key) of the W3C trace context.
pub const TRACEPARENT: &str = "traceparent";
/// The header of the vendor part of the W3C trace context.
pub const TRACESTATE: &str = "tracestate";

/// Makes `span` a child of the trace context `carrier` holds (`traceparent`, `tracestate`), when
/// it holds a valid one, and records the span's trace id in its `trace_id` field (which the span
/// must declare, `trace_id = tracing::field::Empty`). Call before the span is first entered.
pub fn follow(span: &tracing::Span, carrier: &BTreeMap<String, String>) {
    let remote = remote_context(carrier);
    if remote.span().span_context().is_valid() {
        // Fails only when traces are off (no OpenTelemetry layer) or the span already started.
        let _ = span.set_parent(remote.clone());
    }
    record_trace_id(span, &remote);
}

/// Makes `span` a child of the first valid trace context among `carriers` and links it to the
/// others (a batch of messages from several traces), then records its trace id as [`follow`]
/// does.
pub fn follow_many<'a>(
    span: &tracing::Span,
    carriers: impl IntoIterator<Item = &'a BTreeMap<String, String>>,
) {
    let mut parent = None;
    for carrier in carriers {
        let remote = remote_context(carrier);
        let context = remote.span().span_context().clone();
        if !context.is_valid() {
            continue;
        }
        match parent {
            None => parent = Some(remote),
            Some(ref first) if first.span().span_context().trace_id() == context.trace_id() => {}
            Some(_) => span.add_link(context),
        }
    }
    match parent {
        Some(remote) => {
            let _ = span.set_parent(remote.clone());
            record_trace_id(span, &remote);
        }
        None => record_trace_id(span, &opentelemetry::Context::new()),
    }
}

/// Writes the current span's trace context into `headers` (`traceparent`, `tracestate`), unless
/// they already carry one or there is none (traces off, or no span).
pub fn inject_current(headers: &mut BTreeMap<String, String>) {
    if headers.contains_key(TRACEPARENT) {
        return;
    }
    let context = tracing::Span::current().context();
    if !context.span().span_context().is_valid() {
        return;
    }
    TraceContextPropagator::new().inject_context(&context, &mut Headers(headers));
}

/// The current span's trace context as text to keep (a JSON object of `traceparent` and
/// `tracestate`), for a message another task publishes later ([`stored_headers`] reads it back);
/// `None` when there is none to carry.
pub fn current_stored() -> Option<String> {
    let mut headers = BTreeMap::new();
    inject_current(&mut headers);
    if headers.is_empty() {
        return None;
    }
    serde_json::to_string(&headers).ok()
}

/// The trace headers of text [`current_stored`] wrote: only `traceparent` and `tracestate`, and
/// none for text that is not such an object (a stored value is never trusted to add others).
pub fn stored_headers(stored: &str) -> BTreeMap<String, String> {
    serde_json::from_str::<BTreeMap<String, String>>(stored)
        .unwrap_or_default()
        .into_iter()
        .filter(|(key, _)| key == TRACEPARENT || key == TRACESTATE)
        .collect()
}

/// The trace id of the current span (32 hex digits), if it has one.
pub fn current_trace_id() -> Option<String> {
    let context = tracing::Span::current().context();
    let span = context.span();
    let span_context = span.span_context();
    span_context
        .is_valid()
        .then(|| span_context.trace_id().to_string())
}

fn remote_context(carrier: &BTreeMap<String, String>) -> opentelemetry::Context {
    TraceContextPropagator::new().extract(&Carrier(carrier))
}

/// Records the span's own trace id (set once the span is an OpenTelemetry span), else that of
/// the context it follows.
fn record_trace_id(span: &tracing::Span, remote: &opentelemetry::Context) {
    let own = span.context();
    let trace_id = [own.span().span_context(), remote.span().span_context()]
        .into_iter()
        .find(|context| context.is_valid())
        .map(|context| context.trace_id());
    if let Some(trace_id) = trace_id {
        span.record("trace_id", tracing::field::display(trace_id));
    }
}

struct Carrier<'a>(&'a BTreeMap<String, String>);

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

struct Headers<'a>(&'a mut BTreeMap<String, String>);

impl Injector for Headers<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn stored_context_gives_back_only_the_trace_headers() {
        let stored = format!(r#"{{"traceparent":"{PARENT}","tracestate":"a=1","x-other":"no"}}"#);
        let headers = stored_headers(&stored);
        assert_eq!(headers.len(), 2);
        assert_eq!(headers.get(TRACEPARENT).map(String::as_str), Some(PARENT));
        assert!(stored_headers("not json").is_empty());
        assert!(stored_headers("[1]").is_empty());
        // No span, no context to keep.
        assert_eq!(current_stored(), None);
    }

    #[test]
    fn a_valid_traceparent_is_read_and_garbage_is_not() {
        let mut carrier = BTreeMap::new();
        carrier.insert(TRACEPARENT.to_owned(), PARENT.to_owned());
        let remote = remote_context(&carrier);
        assert_eq!(
            remote.span().span_context().trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        carrier.insert(TRACEPARENT.to_owned(), "00-zz-yy-01".to_owned());
        assert!(!remote_context(&carrier).span().span_context().is_valid());
    }

    #[test]
    fn nothing_is_injected_without_a_trace() {
        let mut headers = BTreeMap::new();
        inject_current(&mut headers);
        assert!(headers.is_empty());
    }
}
