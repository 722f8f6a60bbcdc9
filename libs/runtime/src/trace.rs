//! The span of each gRPC call: named after the method, tagged with the service, and a child of
//! the caller's W3C trace context (`traceparent`/`tracestate` metadata) when it sends one, so a
//! client's trace continues through the service, and the trace id is on every log line the call
//! writes (`ontoloop_observability::trace`). Health checks and reflection get no span.

use std::collections::BTreeMap;
use std::task::{Context as TaskContext, Poll};

use ontoloop_core::ServiceKind;
use ontoloop_observability::trace::{TRACEPARENT, TRACESTATE};
use tracing::Instrument as _;

/// Puts every call in a span for `kind` (outermost layer, so calls refused by limits or
/// authentication are in it too).
#[derive(Clone, Copy)]
pub(crate) struct TraceLayer {
    service: &'static str,
}

impl TraceLayer {
    pub(crate) fn new(kind: ServiceKind) -> Self {
        Self {
            service: kind.name(),
        }
    }
}

impl<S> tower_layer::Layer<S> for TraceLayer {
    type Service = Traced<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Traced {
            inner,
            service: self.service,
        }
    }
}

/// [`TraceLayer`]'s service.
#[derive(Clone)]
pub(crate) struct Traced<S> {
    inner: S,
    service: &'static str,
}

impl<S, B> tower_service::Service<http::Request<B>> for Traced<S>
where
    S: tower_service::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = tracing::instrument::Instrumented<S::Future>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let span = call_span(self.service, &request);
        let future = span.in_scope(|| self.inner.call(request));
        future.instrument(span)
    }
}

fn call_span<B>(service: &'static str, request: &http::Request<B>) -> tracing::Span {
    let path = request.uri().path();
    let (rpc_service, method) = path
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or(("", ""));
    if rpc_service.starts_with("grpc.health.") || rpc_service.starts_with("grpc.reflection.") {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        "grpc",
        otel.name = path,
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = rpc_service,
        rpc.method = method,
        service,
        trace_id = tracing::field::Empty,
    );
    let mut carrier = BTreeMap::new();
    for key in [TRACEPARENT, TRACESTATE] {
        if let Some(value) = request.headers().get(key).and_then(|v| v.to_str().ok()) {
            carrier.insert(key.to_owned(), value.to_owned());
        }
    }
    ontoloop_observability::trace::follow(&span, &carrier);
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_and_reflection_get_no_span() {
        for path in [
            "/grpc.health.v1.Health/Check",
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        ] {
            let request = http::Request::builder()
                .uri(path)
                .body(())
                .expect("request");
            assert!(call_span("retrieval", &request).is_none(), "{path}");
        }
    }
}
