//! Layered, validated settings for every ontoloop binary.
//!
//! Owns the settings schema and its layering: embedded defaults, then an optional file, then
//! `ONTOLOOP__SECTION__KEY` environment variables. Everything is validated once, at start-up,
//! and errors name the offending key. This crate never connects to anything.
//!
//! Sections that parameterise a domain rule are that domain's own types, deserialised here
//! directly: `[signals]` is `ontoloop_core::SeverityThresholds`, `[supervisor]`
//! `SupervisorPolicy`, `[firewall]` `FirewallPolicy`, `[plate]` `ontoloop_org::PlateSettings` and
//! `[auth]` `ontoloop_auth::AuthSettings`.
//! Each validates itself; [`Settings`] calls those checks once and names the full key. The
//! defaults of every section are written once, in `defaults.toml`.
//!
//! By module: `connections` (the store and the queue), `serving` (where the services listen,
//! TLS), `observing` (log lines and traces), `sections` (the services' own sections: retrieval,
//! analyst, org graphs, caches, retention), and `load`, which layers the sources.

mod connections;
mod load;
mod observing;
mod sections;
mod serving;
#[cfg(test)]
mod tests;

use std::path::Path;

use ontoloop_auth::AuthSettings;
use ontoloop_core::SeverityThresholds;
use ontoloop_core::knowledge::ExtractSettings;
use ontoloop_core::knowledge::firewall::FirewallPolicy;
use ontoloop_core::settings::InvalidSetting;
use ontoloop_core::supervisor::SupervisorPolicy;
use ontoloop_org::{OrgError, PlateSettings};
use serde::Deserialize;

pub use connections::{QueueBackend, QueueSettings, StoreSettings};
pub use load::Loader;
pub use observing::{LogSettings, OtlpSettings, TelemetrySettings};
pub use sections::{
    AnalystSettings, CacheSettings, OrgSettings, RetentionSettings, RetrievalSettings,
};
pub use serving::{MAX_MESSAGE_BYTES_CEILING, ServicesSettings, TlsSettings};

use connections::{validate_queue_url, validate_store_url};

/// Settings could not be loaded or failed validation.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A layer could not be read or a key is unknown or mistyped.
    #[error("load settings: {0}")]
    Load(#[from] config::ConfigError),
    /// A key has a value that cannot work.
    #[error("setting `{key}` is invalid: {reason}")]
    Invalid {
        /// Dotted key, for example `store.url`.
        key: String,
        /// Why the value was refused.
        reason: String,
    },
}

/// Every setting of an ontoloop process.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The relational store.
    pub store: StoreSettings,
    /// The message queue.
    pub queue: QueueSettings,
    /// Where the services listen.
    pub services: ServicesSettings,
    /// Retrieval's answer policy.
    pub retrieval: RetrievalSettings,
    /// Failure signal intake: the window and thresholds of severity.
    pub signals: SeverityThresholds,
    /// The analyst's healing.
    pub analyst: AnalystSettings,
    /// The statistical supervisor.
    pub supervisor: SupervisorPolicy,
    /// The semantic firewall.
    pub firewall: FirewallPolicy,
    /// The ephemeral org, product and context graphs.
    pub org: OrgSettings,
    /// The budgets of the per-tenant caches.
    pub cache: CacheSettings,
    /// How long the store keeps rows that only serve for a while, and the pruning pass.
    pub retention: RetentionSettings,
    /// The dimensional filters of the plate ("what is on my plate?").
    pub plate: PlateSettings,
    /// How text becomes claims: the extraction stages, their confidences, the model folder.
    pub extract: ExtractSettings,
    /// Authentication of gRPC calls (`ontoloop-auth`'s own section).
    pub auth: AuthSettings,
    /// TLS of the gRPC servers and of the clients that dial them.
    pub tls: TlsSettings,
    /// Logging.
    pub log: LogSettings,
    /// What the services export about themselves: OpenTelemetry traces over OTLP
    /// (`[telemetry.otlp]`, off while its endpoint is empty).
    pub telemetry: TelemetrySettings,
}

impl Settings {
    /// Embedded defaults, then `file` if given, then the process environment.
    pub fn load(file: Option<&Path>) -> Result<Self, SettingsError> {
        Loader::new().file_if_given(file).load()
    }

    /// The embedded defaults alone (no file, no environment): what tests and benchmarks build
    /// from, so that a default is written only in `defaults.toml`.
    pub fn defaults() -> Self {
        // The defaults are compiled in and loading them is a unit test of this crate, so a
        // failure here is a build of this crate that never passed its tests.
        Loader::new()
            .env_vars([])
            .load()
            .expect("the embedded defaults load")
    }

    /// The one validation: each section's own checks, then what spans sections.
    fn validate(&self) -> Result<(), SettingsError> {
        validate_store_url(&self.store.url)?;
        validate_queue_url(&self.queue.url)?;
        self.queue.validate_tls()?;
        positive(
            "store.max_connections",
            u64::from(self.store.max_connections),
        )?;
        positive(
            "store.connect_attempts",
            u64::from(self.store.connect_attempts),
        )?;
        positive("queue.prefetch", u64::from(self.queue.prefetch))?;
        positive("queue.publish_timeout_ms", self.queue.publish_timeout_ms)?;
        positive("queue.connect_timeout_ms", self.queue.connect_timeout_ms)?;
        positive("queue.max_attempts", u64::from(self.queue.max_attempts))?;
        positive("queue.max_body_bytes", self.queue.max_body_bytes as u64)?;
        positive("retrieval.top_k", self.retrieval.top_k as u64)?;
        self.signals.validate().map_err(in_section("signals"))?;
        self.supervisor
            .validate()
            .map_err(in_section("supervisor"))?;
        self.firewall.validate().map_err(in_section("firewall"))?;
        for (section, budget) in [
            ("cache.read_models", &self.cache.read_models),
            ("cache.knowledge", &self.cache.knowledge),
            ("cache.hr_records", &self.cache.hr_records),
            ("cache.heal_stages", &self.cache.heal_stages),
            ("cache.supervisors", &self.cache.supervisors),
            ("cache.org_views", &self.cache.org_views),
            ("cache.context_graphs", &self.cache.context_graphs),
        ] {
            budget.validate().map_err(in_section(section))?;
        }
        self.extract.validate().map_err(in_section("extract"))?;
        self.auth.validate().map_err(in_section("auth"))?;
        self.tls.validate()?;
        self.telemetry.otlp.validate()?;
        positive(
            "queue.connect_attempts",
            u64::from(self.queue.connect_attempts),
        )?;
        if self.store.backoff_initial_ms > self.store.backoff_max_ms {
            return Err(invalid(
                "store.backoff_initial_ms",
                "must not exceed store.backoff_max_ms",
            ));
        }
        if self.queue.backoff_initial_ms > self.queue.backoff_max_ms {
            return Err(invalid(
                "queue.backoff_initial_ms",
                "must not exceed queue.backoff_max_ms",
            ));
        }
        if self.services.host.trim().is_empty() {
            return Err(invalid("services.host", "must not be empty"));
        }
        if !(1..=MAX_MESSAGE_BYTES_CEILING).contains(&self.services.max_message_bytes) {
            return Err(invalid(
                "services.max_message_bytes",
                format!("must be between 1 and {MAX_MESSAGE_BYTES_CEILING}"),
            ));
        }
        positive(
            "services.request_timeout_ms",
            self.services.request_timeout_ms,
        )?;
        positive(
            "services.max_concurrent_requests",
            self.services.max_concurrent_requests as u64,
        )?;
        positive(
            "services.max_http_body_bytes",
            self.services.max_http_body_bytes as u64,
        )?;
        positive(
            "services.max_stream_messages",
            self.services.max_stream_messages as u64,
        )?;
        self.validate_org()?;
        self.validate_retention()?;
        self.plate.validate().map_err(|err| match err {
            OrgError::InvalidSetting { name, reason } => SettingsError::Invalid {
                key: format!("plate.{name}"),
                reason,
            },
            other => invalid("plate", other.to_string()),
        })?;
        let ports = [
            ("services.retrieval_port", self.services.retrieval_port),
            ("services.firewall_port", self.services.firewall_port),
            ("services.telemetry_port", self.services.telemetry_port),
            ("services.analyst_port", self.services.analyst_port),
            ("services.http_ports", self.services.http_ports[0]),
            ("services.http_ports", self.services.http_ports[1]),
            ("services.http_ports", self.services.http_ports[2]),
            ("services.http_ports", self.services.http_ports[3]),
        ];
        for (i, (key, port)) in ports.iter().enumerate() {
            if ports[..i]
                .iter()
                .any(|(_, other)| other == port && *port != 0)
            {
                return Err(invalid(
                    key,
                    format!("port {port} is used by another service"),
                ));
            }
        }
        Ok(())
    }

    fn validate_retention(&self) -> Result<(), SettingsError> {
        let retention = &self.retention;
        positive("retention.every_minutes", retention.every_minutes)?;
        positive("retention.max_rows_per_pass", retention.max_rows_per_pass)?;
        // Severities, patterns and the healer count signals over the window: pruning inside it
        // would make a subject look rarer than it is.
        let days = retention.signal_intake_days;
        if days > 0 && days.saturating_mul(86_400) < self.signals.window_secs {
            return Err(invalid(
                "retention.signal_intake_days",
                format!(
                    "{days} days do not cover signals.window_secs ({} s)",
                    self.signals.window_secs
                ),
            ));
        }
        Ok(())
    }

    fn validate_org(&self) -> Result<(), SettingsError> {
        let org = &self.org;
        positive("org.watch_interval_ms", org.watch_interval_ms)?;
        positive("org.safety_ttl_secs", org.safety_ttl_secs)?;
        positive("org.max_patch_changes", org.max_patch_changes)?;
        positive("org.context_ttl_secs", org.context_ttl_secs)?;
        positive("org.context_idle_secs", org.context_idle_secs)?;
        positive("org.context_sweep_secs", org.context_sweep_secs)?;
        if !(0.0..=1.0).contains(&org.coverage_threshold) {
            return Err(invalid(
                "org.coverage_threshold",
                format!("{} is not between 0 and 1", org.coverage_threshold),
            ));
        }
        Ok(())
    }
}

pub(crate) fn positive(key: &'static str, value: u64) -> Result<(), SettingsError> {
    if value == 0 {
        return Err(invalid(key, "must be greater than zero"));
    }
    Ok(())
}

pub(crate) fn invalid(key: &str, reason: impl Into<String>) -> SettingsError {
    SettingsError::Invalid {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

/// Names a section's own validation error by its full dotted key.
fn in_section(section: &'static str) -> impl Fn(InvalidSetting) -> SettingsError {
    move |err| SettingsError::Invalid {
        key: format!("{section}.{}", err.key),
        reason: err.reason,
    }
}
