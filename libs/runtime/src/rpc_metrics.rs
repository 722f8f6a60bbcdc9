//! gRPC request latency, as one tower layer in front of every server: each call is observed in
//! the histogram `ontoloop_<service>_rpc_duration_seconds{service, method}`, from the moment the
//! server takes the request until its response starts (for a unary call, its whole handling; for
//! a streaming one, until the first message can flow). The layer sits outside the limits and the
//! trust boundary, so a call they refuse is measured too.
//!
//! The `method` label is the call's path (`/ontoloop.v1.RetrievalService/Ask`) when it names a
//! method the served descriptors declare (ours, health, reflection), and `other` for any other
//! path, so a client sending made-up paths cannot grow the number of series.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::task::{Context as TaskContext, Poll};
use std::time::Instant;

use ontoloop_core::ServiceKind;
use ontoloop_observability::metrics::OTHER;
use prost::Message as _;

/// The layer of [`Measured`] for one service.
#[derive(Clone)]
pub(crate) struct RpcMetricsLayer {
    service: &'static str,
    family: Arc<str>,
}

impl RpcMetricsLayer {
    pub(crate) fn new(kind: ServiceKind) -> Self {
        Self {
            service: kind.name(),
            family: family(kind).into(),
        }
    }
}

/// The name of `kind`'s latency histogram.
pub(crate) fn family(kind: ServiceKind) -> String {
    format!("ontoloop_{}_rpc_duration_seconds", kind.name())
}

impl<S> tower_layer::Layer<S> for RpcMetricsLayer {
    type Service = Measured<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Measured {
            inner,
            service: self.service,
            family: Arc::clone(&self.family),
        }
    }
}

/// A gRPC server whose calls are timed into the service's latency histogram.
#[derive(Clone)]
pub(crate) struct Measured<S> {
    inner: S,
    service: &'static str,
    family: Arc<str>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> tower_service::Service<http::Request<B>> for Measured<S>
where
    S: tower_service::Service<http::Request<B>>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let method = method_label(request.uri().path());
        let (service, family) = (self.service, Arc::clone(&self.family));
        let started = Instant::now();
        let call = self.inner.call(request);
        Box::pin(async move {
            let response = call.await;
            ontoloop_observability::metrics::global().observe(
                &family,
                "Seconds from a gRPC request to the start of its response, by method.",
                &[("service", service), ("method", method)],
                started.elapsed().as_secs_f64(),
            );
            response
        })
    }
}

/// The `method` label of a call to `path`: the path of a served method, else [`OTHER`].
fn method_label(path: &str) -> &'static str {
    METHODS.get(path).map_or(OTHER, |known| known.as_str())
}

/// Every method path the servers answer: the methods of ontoloop's protos and of gRPC health,
/// and server reflection in both versions.
static METHODS: LazyLock<HashSet<String>> = LazyLock::new(|| {
    let mut methods: HashSet<String> = [
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    for encoded in [
        ontoloop_proto::FILE_DESCRIPTOR_SET,
        tonic_health::pb::FILE_DESCRIPTOR_SET,
    ] {
        // Both sets are compiled in; one that did not decode would only leave its methods
        // labelled `other`.
        let Ok(set) = prost_types::FileDescriptorSet::decode(encoded) else {
            tracing::warn!("cannot decode a compiled-in descriptor set for rpc metrics");
            continue;
        };
        for file in set.file {
            let package = file.package();
            for service in &file.service {
                for method in &service.method {
                    let qualified = if package.is_empty() {
                        service.name().to_owned()
                    } else {
                        format!("{package}.{}", service.name())
                    };
                    methods.insert(format!("/{qualified}/{}", method.name()));
                }
            }
        }
    }
    methods
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_methods_keep_their_path_and_any_other_path_is_other() {
        assert_eq!(
            method_label("/ontoloop.v1.RetrievalService/Ask"),
            "/ontoloop.v1.RetrievalService/Ask"
        );
        assert_eq!(
            method_label("/grpc.health.v1.Health/Check"),
            "/grpc.health.v1.Health/Check"
        );
        assert_eq!(
            method_label("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"),
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
        );
        assert_eq!(method_label("/ontoloop.v1.RetrievalService/Nope"), OTHER);
        assert_eq!(method_label("/made.up/Path"), OTHER);
    }

    #[tokio::test]
    async fn a_call_is_observed_under_its_service_and_method() {
        use tower_layer::Layer as _;
        use tower_service::Service as _;

        let mut measured = RpcMetricsLayer::new(ServiceKind::Firewall).layer(tower_service_fn(
            |_request: http::Request<()>| async {
                Ok::<_, std::convert::Infallible>(http::Response::new(()))
            },
        ));
        let metrics = ontoloop_observability::metrics::global();
        let name = family(ServiceKind::Firewall);
        let labels = [
            ("service", "firewall"),
            ("method", "/ontoloop.v1.FirewallService/Validate"),
        ];
        let before = metrics.value(&name, &labels);
        let request = http::Request::builder()
            .uri("/ontoloop.v1.FirewallService/Validate")
            .body(())
            .expect("request");
        measured.call(request).await.expect("answered");
        assert_eq!(metrics.value(&name, &labels), before + 1.0);
        let text = metrics.render(&name);
        assert!(text.contains(&format!("# TYPE {name} histogram")), "{text}");
    }

    /// A service from a function (tower's `service_fn`, without depending on tower for it).
    fn tower_service_fn<F>(f: F) -> ServiceFn<F> {
        ServiceFn(f)
    }

    #[derive(Clone)]
    struct ServiceFn<F>(F);

    impl<F, Fut, R, T, E> tower_service::Service<R> for ServiceFn<F>
    where
        F: FnMut(R) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        type Response = T;
        type Error = E;
        type Future = Fut;

        fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), E>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: R) -> Fut {
            (self.0)(request)
        }
    }
}
