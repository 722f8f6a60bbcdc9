//! Tracing set-up for every ontoloop binary, and the process's metrics registry (`metrics`:
//! counters, gauges and latency histograms, kept and encoded by the `prometheus-client` crate).
//!
//! Owns the subscriber: an env filter (from settings, `RUST_LOG` wins when set) and text or JSON
//! lines on stderr, and the Prometheus registry services record into. With `[telemetry.otlp]` set
//! ([`init_with_traces`]) spans are also exported as OpenTelemetry traces over OTLP/gRPC, through
//! a batch processor with a bounded queue (full: spans are dropped; an unreachable collector is
//! logged, never waited for), flushed by [`shutdown_traces`]; [`trace`] carries the W3C trace
//! context across processes and puts the trace id on log lines. It never decides what to log or
//! measure; that belongs where errors are handled and work is done.

pub mod metrics;
pub mod trace;

use std::sync::OnceLock;
use std::time::Duration;

use ontoloop_settings::{LogSettings, OtlpSettings};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider,
};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// Which spans become OpenTelemetry spans: ontoloop's own, not those of its libraries (hyper,
/// h2, sqlx), whatever `log.filter` says about log lines.
const TRACED: &str = "ontoloop=info";

/// The tracer provider while traces are exported, for [`shutdown_traces`].
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ObservabilityError {
    /// The filter directives do not parse.
    #[error("setting `log.filter` is invalid: {0}")]
    Filter(#[from] tracing_subscriber::filter::ParseError),
    /// A global subscriber is already installed.
    #[error("install tracing subscriber: {0}")]
    Install(String),
    /// The OTLP exporter could not be built from `[telemetry.otlp]`.
    #[error("setting `telemetry.otlp.endpoint`: {0}")]
    Exporter(String),
}

/// Installs the global subscriber, log lines only. Call once, first thing in `main`.
pub fn init(settings: &LogSettings) -> Result<(), ObservabilityError> {
    install(settings, None)
}

/// Installs the global subscriber and, when `telemetry.otlp.endpoint` is set, exports spans to it as
/// `telemetry.otlp.service_name` (or `default_service` when that is empty). Call once, first thing in
/// `main`, inside the tokio runtime (the exporter's gRPC channel runs on it).
pub fn init_with_traces(
    log: &LogSettings,
    otlp: &OtlpSettings,
    default_service: &str,
) -> Result<(), ObservabilityError> {
    if !otlp.enabled() {
        return install(log, None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(otlp.endpoint.trim())
        .with_timeout(Duration::from_millis(otlp.export_timeout_ms))
        .build()
        .map_err(|err| ObservabilityError::Exporter(err.to_string()))?;
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(usize::try_from(otlp.max_queue_size).unwrap_or(usize::MAX))
        .build();
    let service = match otlp.service_name.trim() {
        "" => default_service.to_owned(),
        name => name.to_owned(),
    };
    let provider = SdkTracerProvider::builder()
        .with_span_processor(
            BatchSpanProcessor::builder(exporter)
                .with_batch_config(batch)
                .build(),
        )
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            otlp.sampling_ratio,
        ))))
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service)
                .build(),
        )
        .build();
    let tracer = provider.tracer("ontoloop");
    install(log, Some(tracer))?;
    let _ = PROVIDER.set(provider);
    tracing::info!(
        endpoint = otlp.endpoint.trim(),
        "exporting traces over otlp"
    );
    Ok(())
}

/// Exports the spans still queued and stops exporting (waits at most `telemetry.otlp.export_timeout_ms`
/// per batch). Blocking: call from a plain thread (`tokio::task::spawn_blocking`) at shutdown.
/// Does nothing when traces are not exported.
pub fn shutdown_traces() {
    if let Some(provider) = PROVIDER.get()
        && let Err(err) = provider.shutdown()
    {
        tracing::warn!(error = %err, "traces not flushed at shutdown");
    }
}

fn install(
    settings: &LogSettings,
    tracer: Option<opentelemetry_sdk::trace::SdkTracer>,
) -> Result<(), ObservabilityError> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(directives)?,
        _ => EnvFilter::try_new(&settings.filter)?,
    };
    // The span fields (among them `trace_id`) go with every line: JSON in `span`/`spans`, text
    // after the message.
    // Colours only on a terminal, not in files or a log collector.
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let lines = if settings.json {
        lines.json().flatten_event(true).boxed()
    } else {
        lines.compact().boxed()
    };
    let traces = match tracer {
        Some(tracer) => Some(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(EnvFilter::try_new(TRACED)?),
        ),
        None => None,
    };
    tracing_subscriber::registry()
        .with(lines.with_filter(filter))
        .with(traces)
        .try_init()
        .map_err(|err| ObservabilityError::Install(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_filter_names_the_setting() {
        let err = EnvFilter::try_new("info,[[[").map_err(ObservabilityError::from);
        let text = err.expect_err("bad filter").to_string();
        assert!(text.contains("log.filter"), "{text}");
    }
}
