//! What the services say about themselves: log lines (`[log]`) and OpenTelemetry traces
//! (`[telemetry.otlp]`).

use serde::Deserialize;

use crate::{SettingsError, invalid, positive};

/// What every service exports about itself (`[telemetry]`). Metrics are scraped from each
/// service's `/metrics` and need no setting here.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySettings {
    /// OpenTelemetry traces exported over OTLP/gRPC.
    pub otlp: OtlpSettings,
}

/// Logging.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    /// tracing env-filter directives.
    pub filter: String,
    /// JSON lines instead of text.
    pub json: bool,
}

/// OpenTelemetry traces exported over OTLP/gRPC (`[telemetry.otlp]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpSettings {
    /// The collector's OTLP/gRPC endpoint, `http://host:4317`; empty: no traces are exported.
    pub endpoint: String,
    /// `service.name` of the exported spans; empty: the binary's own name.
    pub service_name: String,
    /// Longest wait for the collector to take one batch.
    pub export_timeout_ms: u64,
    /// Share of new traces recorded, 0.0 to 1.0; a trace begun by a caller follows the caller's
    /// sampling decision.
    pub sampling_ratio: f64,
    /// Spans waiting for export at most; more are dropped (the service never waits for them).
    pub max_queue_size: u32,
}

impl OtlpSettings {
    /// Whether traces are exported.
    pub fn enabled(&self) -> bool {
        !self.endpoint.trim().is_empty()
    }

    pub(crate) fn validate(&self) -> Result<(), SettingsError> {
        if self.enabled() {
            let endpoint = self.endpoint.trim();
            let Some(rest) = endpoint.strip_prefix("http://") else {
                return Err(invalid(
                    "telemetry.otlp.endpoint",
                    format!(
                        "{endpoint:?} is not an http://host:port OTLP/gRPC endpoint (TLS to the \
                         collector is not supported: run a collector beside the service)"
                    ),
                ));
            };
            if rest.is_empty() || rest.starts_with('/') {
                return Err(invalid("telemetry.otlp.endpoint", "names no host"));
            }
        }
        positive("telemetry.otlp.export_timeout_ms", self.export_timeout_ms)?;
        positive(
            "telemetry.otlp.max_queue_size",
            u64::from(self.max_queue_size),
        )?;
        if !(0.0..=1.0).contains(&self.sampling_ratio) {
            return Err(invalid(
                "telemetry.otlp.sampling_ratio",
                format!("{} is not between 0.0 and 1.0", self.sampling_ratio),
            ));
        }
        Ok(())
    }
}
