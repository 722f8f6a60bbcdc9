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

use std::path::Path;

use ontoloop_auth::AuthSettings;
use ontoloop_core::Severity;
use ontoloop_core::SeverityThresholds;
use ontoloop_core::knowledge::ExtractSettings;
use ontoloop_core::knowledge::firewall::FirewallPolicy;
use ontoloop_core::settings::InvalidSetting;
use ontoloop_core::supervisor::SupervisorPolicy;
use ontoloop_org::context::ContextSettings;
use ontoloop_org::{OrgError, PlateSettings};
use serde::Deserialize;

const DEFAULTS: &str = include_str!("defaults.toml");
const ENV_PREFIX: &str = "ONTOLOOP";
const ENV_SEPARATOR: &str = "__";

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

/// What every service exports about itself (`[telemetry]`). Metrics are scraped from each
/// service's `/metrics` and need no setting here.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySettings {
    /// OpenTelemetry traces exported over OTLP/gRPC.
    pub otlp: OtlpSettings,
}

/// The budgets of the per-tenant caches (`[cache.<kind>]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSettings {
    /// Retrieval's and the firewall's read models (`ontoloop_readmodel::Snapshots`), each.
    pub read_models: ontoloop_core::CacheBudget,
    /// The analyst's knowledge of each tenant between events (graph, page versions).
    pub knowledge: ontoloop_core::CacheBudget,
    /// The analyst's HR records of each tenant between org events.
    pub hr_records: ontoloop_core::CacheBudget,
    /// The healer's stage of each (tenant, pattern), so a pattern is acted on once per stage.
    pub heal_stages: ontoloop_core::CacheBudget,
    /// The supervisor's learned rates of each tenant.
    pub supervisors: ontoloop_core::CacheBudget,
    /// Retrieval's org, product and work-item graphs of each tenant.
    pub org_views: ontoloop_core::CacheBudget,
    /// Retrieval's context graphs, by tenant.
    pub context_graphs: ontoloop_core::CacheBudget,
}

/// The ephemeral org, product and context graphs that retrieval holds per tenant.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrgSettings {
    /// How often, at least, retrieval asks the store whether a tenant's org version moved (it
    /// also asks at each word of an analyst commit).
    pub watch_interval_ms: u64,
    /// Safety net: graphs older than this are rebuilt from the store even without an event.
    pub safety_ttl_secs: u64,
    /// More pending changes than this are not patched in one by one: the graphs are rebuilt.
    pub max_patch_changes: u64,
    /// Documentation coverage (share of products with an owner and a description) below which
    /// a rebuilt product graph raises a `temporal_stale` signal.
    pub coverage_threshold: f64,
    /// How long a project's context graph lives unless extended.
    pub context_ttl_secs: u64,
    /// How long a context graph may go unused before it expires.
    pub context_idle_secs: u64,
    /// How often the sweeper removes expired context graphs.
    pub context_sweep_secs: u64,
}

/// How long the store keeps rows that only serve for a while (`[retention]`; what each window
/// means is said in `defaults.toml`). The analyst prunes every `every_minutes`, at most
/// `max_rows_per_pass` rows of each table per pass. A window of 0 days keeps a table forever.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSettings {
    /// How often the analyst prunes.
    pub every_minutes: u64,
    /// Rows of one table deleted per pass at most.
    pub max_rows_per_pass: u64,
    /// The analyst's inbox of recorded queue messages.
    pub inbox_days: u64,
    /// Signals taken in (published ones only).
    pub signal_intake_days: u64,
    /// Events taken in (settled and published ones only, never a tenant's newest).
    pub intake_event_days: u64,
    /// The org change log.
    pub org_change_days: u64,
}

impl RetentionSettings {
    /// The pause between two pruning passes.
    pub fn every(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.every_minutes.saturating_mul(60))
    }

    /// How long rows are kept for a window of `days`; `None` (keep forever) for 0.
    pub fn keep(days: u64) -> Option<std::time::Duration> {
        (days > 0).then(|| std::time::Duration::from_secs(days.saturating_mul(86_400)))
    }
}

/// The analyst's healing.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalystSettings {
    /// Directory of project records (`ROOT/TENANT/*.md`); empty for none.
    pub sources_dir: String,
    /// Origin of the records found there.
    pub source_origin: String,
    /// Severity at which a missing-entity pattern heals at once.
    pub heal_at: Severity,
    /// Severity at which a pattern below `heal_at` becomes proposed graph updates.
    pub propose_at: Severity,
    /// Domain of an update by its predicate: domain name → words a predicate name contains.
    pub domains: std::collections::BTreeMap<String, Vec<String>>,
}

/// Retrieval's answer policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalSettings {
    /// Pages read per question besides the sources the graph cites.
    pub top_k: usize,
    /// Answers resting only on origins below this authority are hedged.
    pub hedge_below_authority: i32,
    /// How long a request with `min_sequence` waits for that event to be applied.
    pub read_your_writes_timeout_ms: u64,
}

/// The relational store. `Debug` shows `url` without its password.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSettings {
    /// `sqlite://...` or `postgres://...`.
    pub url: String,
    /// Pool size.
    pub max_connections: u32,
    /// Per-attempt connect timeout.
    pub connect_timeout_ms: u64,
    /// Attempts before an unreachable database is reported as an error.
    pub connect_attempts: u32,
    /// First wait between attempts; doubles up to `backoff_max_ms`.
    pub backoff_initial_ms: u64,
    /// Longest wait between attempts.
    pub backoff_max_ms: u64,
}

/// The message queue. `Debug` shows `url` without its password.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSettings {
    /// `memory` or `amqp://...`.
    pub url: String,
    /// Prefix of every queue name on the broker, so separate systems can share one RabbitMQ.
    pub namespace: String,
    /// Unacknowledged messages a consumer may hold.
    pub prefetch: u16,
    /// Attempts before an unreachable broker is reported as an error.
    pub connect_attempts: u32,
    /// How long one broker handshake may take: opening a connection, a channel or a consumer,
    /// or one publish's confirm. A broker (or a path to it) that accepts the socket and then
    /// stays silent counts as a failed attempt instead of holding the connection forever.
    pub connect_timeout_ms: u64,
    /// First wait between attempts; doubles up to `backoff_max_ms`.
    pub backoff_initial_ms: u64,
    /// Longest wait between attempts.
    pub backoff_max_ms: u64,
    /// `amqps://`: the CA (PEM) the broker's certificate must chain to; the only one trusted.
    pub tls_ca_file: String,
    /// `amqps://`: the client certificate (PEM) presented to a broker that asks for one.
    pub tls_client_cert_file: String,
    /// `amqps://`: the key of `tls_client_cert_file`.
    pub tls_client_key_file: String,
    /// How long a request waits for the broker's confirm of what it has just recorded before
    /// leaving the publish to the outbox relay (the acknowledgement stands either way).
    pub publish_timeout_ms: u64,
    /// Deliveries of one message a consumer tries before dead-lettering it with the last reason.
    pub max_attempts: u32,
    /// Wait before a message that failed for a passing reason is tried again.
    pub retry_delay_ms: u64,
    /// The largest message body a consumer reads; a larger one is dead-lettered at once with a
    /// reason naming this, and the intake refuses an event whose body would be larger.
    pub max_body_bytes: usize,
}

impl std::fmt::Debug for StoreSettings {
    // The URL's password never reaches a log or an error.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            url,
            max_connections,
            connect_timeout_ms,
            connect_attempts,
            backoff_initial_ms,
            backoff_max_ms,
        } = self;
        f.debug_struct("StoreSettings")
            .field("url", &ontoloop_core::redact_url(url))
            .field("max_connections", max_connections)
            .field("connect_timeout_ms", connect_timeout_ms)
            .field("connect_attempts", connect_attempts)
            .field("backoff_initial_ms", backoff_initial_ms)
            .field("backoff_max_ms", backoff_max_ms)
            .finish()
    }
}

impl std::fmt::Debug for QueueSettings {
    // The URL's password never reaches a log or an error.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            url,
            namespace,
            prefetch,
            connect_attempts,
            connect_timeout_ms,
            backoff_initial_ms,
            backoff_max_ms,
            tls_ca_file,
            tls_client_cert_file,
            tls_client_key_file,
            publish_timeout_ms,
            max_attempts,
            retry_delay_ms,
            max_body_bytes,
        } = self;
        f.debug_struct("QueueSettings")
            .field("url", &ontoloop_core::redact_url(url))
            .field("namespace", namespace)
            .field("prefetch", prefetch)
            .field("connect_attempts", connect_attempts)
            .field("connect_timeout_ms", connect_timeout_ms)
            .field("backoff_initial_ms", backoff_initial_ms)
            .field("backoff_max_ms", backoff_max_ms)
            .field("tls_ca_file", tls_ca_file)
            .field("tls_client_cert_file", tls_client_cert_file)
            .field("tls_client_key_file", tls_client_key_file)
            .field("publish_timeout_ms", publish_timeout_ms)
            .field("max_attempts", max_attempts)
            .field("retry_delay_ms", retry_delay_ms)
            .field("max_body_bytes", max_body_bytes)
            .finish()
    }
}

/// Where the services listen.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServicesSettings {
    /// Host every service binds to and the command line dials.
    pub host: String,
    /// Retrieval gRPC port.
    pub retrieval_port: u16,
    /// Firewall gRPC port.
    pub firewall_port: u16,
    /// Telemetry gRPC port.
    pub telemetry_port: u16,
    /// Analyst gRPC port.
    pub analyst_port: u16,
    /// HTTP ports of retrieval, firewall, telemetry and analyst, in that order: each serves
    /// Prometheus `/metrics`; the analyst's also serves the review dashboard at `/`.
    pub http_ports: [u16; 4],
    /// Grace period for in-flight work after a shutdown signal.
    pub drain_timeout_ms: u64,
    /// Largest gRPC message a service accepts, in bytes (at most tonic's own 4 MiB).
    pub max_message_bytes: usize,
    /// A call not answered within this ends with DEADLINE_EXCEEDED.
    pub request_timeout_ms: u64,
    /// Calls one service handles at once; one more is refused with RESOURCE_EXHAUSTED.
    pub max_concurrent_requests: usize,
    /// Largest HTTP request body on the metrics and dashboard ports; a larger one gets 413.
    pub max_http_body_bytes: usize,
    /// Messages one client stream (`ReportSignals`) may carry; the next is refused.
    pub max_stream_messages: usize,
}

/// tonic's own ceiling on a decoded message: `services.max_message_bytes` may only lower it.
pub const MAX_MESSAGE_BYTES_CEILING: usize = 4 * 1024 * 1024;

/// TLS (rustls) of the gRPC servers and of their clients: PEM file paths, empty for unset.
/// Only paths are checked here; `ontoloop-runtime` reads the files at start-up and names the
/// setting of one it cannot read or parse.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSettings {
    /// The servers' certificate chain; with `key_file`, every gRPC server serves TLS only.
    pub cert_file: String,
    /// The servers' private key.
    pub key_file: String,
    /// mTLS: clients must present a certificate this CA signed.
    pub client_ca_file: String,
    /// Clients: the CA they trust; set, they dial `https://`.
    pub ca_file: String,
    /// Clients: the name verified in the server's certificate; empty, the host dialled.
    pub domain: String,
    /// Clients: the certificate they present (mTLS).
    pub client_cert_file: String,
    /// Clients: the key of `client_cert_file`.
    pub client_key_file: String,
}

impl TlsSettings {
    /// Whether the servers serve TLS.
    pub fn serves_tls(&self) -> bool {
        !self.cert_file.is_empty()
    }

    /// Whether clients dial with TLS: a CA to trust is configured, or the servers of these same
    /// settings serve TLS (then `ca_file` is required, and its absence is reported when dialling).
    pub fn dials_tls(&self) -> bool {
        !self.ca_file.is_empty() || self.serves_tls()
    }

    /// Pairs that only work together.
    fn validate(&self) -> Result<(), SettingsError> {
        let pairs = [
            (
                "tls.cert_file",
                &self.cert_file,
                "tls.key_file",
                &self.key_file,
            ),
            (
                "tls.client_cert_file",
                &self.client_cert_file,
                "tls.client_key_file",
                &self.client_key_file,
            ),
        ];
        for (cert_key, cert, key_key, key) in pairs {
            match (cert.is_empty(), key.is_empty()) {
                (false, true) => return Err(invalid(key_key, format!("required with {cert_key}"))),
                (true, false) => return Err(invalid(cert_key, format!("required with {key_key}"))),
                _ => {}
            }
        }
        if !self.client_ca_file.is_empty() && self.cert_file.is_empty() {
            return Err(invalid(
                "tls.client_ca_file",
                "mTLS needs TLS: set tls.cert_file and tls.key_file too",
            ));
        }
        if !self.domain.is_empty() && !self.dials_tls() {
            return Err(invalid("tls.domain", "only used with tls.ca_file"));
        }
        if !self.client_cert_file.is_empty() && !self.dials_tls() {
            return Err(invalid(
                "tls.client_cert_file",
                "a client certificate needs TLS: set tls.ca_file too",
            ));
        }
        Ok(())
    }
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

    fn validate(&self) -> Result<(), SettingsError> {
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

/// Which queue implementation the settings select.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueBackend {
    /// The in-process queue.
    Memory,
    /// RabbitMQ at this URL.
    Amqp(String),
}

impl OrgSettings {
    /// Lifetimes of the context graphs.
    pub fn contexts(&self) -> ContextSettings {
        ContextSettings {
            ttl: std::time::Duration::from_secs(self.context_ttl_secs),
            idle: std::time::Duration::from_secs(self.context_idle_secs),
        }
    }
}

impl QueueSettings {
    /// The `tls_*` files go with an `amqps://` URL, which needs the CA (it is the only one
    /// trusted), and the client certificate and key go together.
    fn validate_tls(&self) -> Result<(), SettingsError> {
        let tls = self.url.starts_with("amqps://");
        let files = [
            ("queue.tls_ca_file", &self.tls_ca_file),
            ("queue.tls_client_cert_file", &self.tls_client_cert_file),
            ("queue.tls_client_key_file", &self.tls_client_key_file),
        ];
        if !tls {
            if let Some((key, _)) = files.iter().find(|(_, path)| !path.is_empty()) {
                return Err(invalid(key, "only used with an amqps:// queue.url"));
            }
            return Ok(());
        }
        if self.tls_ca_file.is_empty() {
            return Err(invalid(
                "queue.tls_ca_file",
                "required with an amqps:// queue.url (the CA the broker's certificate chains to)",
            ));
        }
        match (
            self.tls_client_cert_file.is_empty(),
            self.tls_client_key_file.is_empty(),
        ) {
            (false, true) => Err(invalid(
                "queue.tls_client_key_file",
                "required with queue.tls_client_cert_file",
            )),
            (true, false) => Err(invalid(
                "queue.tls_client_cert_file",
                "required with queue.tls_client_key_file",
            )),
            _ => Ok(()),
        }
    }

    /// The backend the URL selects (validated at load time).
    pub fn backend(&self) -> QueueBackend {
        if self.url == "memory" {
            QueueBackend::Memory
        } else {
            QueueBackend::Amqp(self.url.clone())
        }
    }
}

impl ServicesSettings {
    /// The port of a service by its short name (`retrieval`, `firewall`, `telemetry`, `analyst`).
    pub fn port_of(&self, service: &str) -> Option<u16> {
        match service {
            "retrieval" => Some(self.retrieval_port),
            "firewall" => Some(self.firewall_port),
            "telemetry" => Some(self.telemetry_port),
            "analyst" => Some(self.analyst_port),
            _ => None,
        }
    }

    /// The HTTP (metrics, and the analyst's dashboard) port of a service, by name.
    pub fn http_port_of(&self, service: &str) -> Option<u16> {
        match service {
            "retrieval" => Some(self.http_ports[0]),
            "firewall" => Some(self.http_ports[1]),
            "telemetry" => Some(self.http_ports[2]),
            "analyst" => Some(self.http_ports[3]),
            _ => None,
        }
    }
}

/// Builder for the layers; the environment is passed in so tests need not touch the process's.
#[derive(Debug, Default)]
pub struct Loader {
    file: Option<std::path::PathBuf>,
    env: Option<Vec<(String, String)>>,
    overrides: Vec<(String, String)>,
}

impl Loader {
    /// Starts from the embedded defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a settings file (TOML) above the defaults.
    pub fn file(mut self, path: impl AsRef<Path>) -> Self {
        self.file = Some(path.as_ref().to_path_buf());
        self
    }

    /// Uses these variables instead of the process environment.
    pub fn env_vars(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env = Some(vars.into_iter().collect());
        self
    }

    /// Sets one dotted key above every other layer (command-line flags use this).
    pub fn set(mut self, key: &str, value: impl Into<String>) -> Self {
        self.overrides.push((key.to_owned(), value.into()));
        self
    }

    /// Loads and validates.
    pub fn load(self) -> Result<Settings, SettingsError> {
        let mut builder = config::Config::builder()
            .add_source(config::File::from_str(DEFAULTS, config::FileFormat::Toml));
        if let Some(file) = &self.file {
            builder = builder.add_source(config::File::from(file.as_path()).required(true));
        }
        let mut env = config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator(ENV_SEPARATOR)
            .separator(ENV_SEPARATOR)
            .try_parsing(true)
            // Lists come comma-separated: ONTOLOOP__SERVICES__HTTP_PORTS=9151,9152,9153,8484.
            .list_separator(",")
            .with_list_parse_key("services.http_ports")
            .with_list_parse_key("supervisor.critical_domains")
            .with_list_parse_key("firewall.high_risk_domains")
            .with_list_parse_key("firewall.multi_valued_predicates")
            .with_list_parse_key("plate.default_scopes")
            .with_list_parse_key("plate.report_severities")
            .with_list_parse_key("plate.dependency_severities")
            .with_list_parse_key("extract.stages")
            .with_list_parse_key("auth.dashboard_origins");
        if let Some(vars) = self.env {
            env = env.source(Some(vars.into_iter().collect()));
        }
        builder = builder.add_source(env);
        for (key, value) in self.overrides {
            builder = builder.set_override(key, value)?;
        }
        let settings: Settings = builder.build()?.try_deserialize()?;
        settings.validate()?;
        Ok(settings)
    }
}

impl Settings {
    /// Embedded defaults, then `file` if given, then the process environment.
    pub fn load(file: Option<&Path>) -> Result<Self, SettingsError> {
        let loader = Loader::new();
        match file {
            Some(path) => loader.file(path).load(),
            None => loader.load(),
        }
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

fn validate_store_url(raw: &str) -> Result<(), SettingsError> {
    const KEY: &str = "store.url";
    // Errors quote the URL without its password.
    let shown = ontoloop_core::redact_url(raw);
    let url = url::Url::parse(raw)
        .map_err(|err| invalid(KEY, format!("{shown:?} is not a URL: {err}")))?;
    match url.scheme() {
        "sqlite" => Ok(()),
        "postgres" | "postgresql" => {
            if url.host_str().is_none_or(str::is_empty) {
                return Err(invalid(KEY, format!("{shown:?} names no host")));
            }
            Ok(())
        }
        other => Err(invalid(
            KEY,
            format!("scheme {other:?} is not supported (use sqlite:// or postgres://)"),
        )),
    }
}

fn validate_queue_url(raw: &str) -> Result<(), SettingsError> {
    const KEY: &str = "queue.url";
    if raw == "memory" {
        return Ok(());
    }
    let shown = ontoloop_core::redact_url(raw);
    let url = url::Url::parse(raw)
        .map_err(|err| invalid(KEY, format!("{shown:?} is not a URL: {err}")))?;
    match url.scheme() {
        "amqp" | "amqps" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        "amqp" | "amqps" => Err(invalid(KEY, format!("{shown:?} names no host"))),
        other => Err(invalid(
            KEY,
            format!("scheme {other:?} is not supported (use memory or amqp://)"),
        )),
    }
}

fn positive(key: &'static str, value: u64) -> Result<(), SettingsError> {
    if value == 0 {
        return Err(invalid(key, "must be greater than zero"));
    }
    Ok(())
}

fn invalid(key: &str, reason: impl Into<String>) -> SettingsError {
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use ontoloop_org::Scope;

    use super::*;

    fn load_with(vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        Loader::new()
            .env_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .load()
    }

    #[test]
    fn otlp_is_off_by_default_and_refusals_name_their_key() {
        let settings = load_with(&[]).expect("defaults are valid");
        assert!(!settings.telemetry.otlp.enabled());
        let on = load_with(&[(
            "ONTOLOOP__TELEMETRY__OTLP__ENDPOINT",
            "http://127.0.0.1:4317",
        )])
        .expect("an http endpoint is valid");
        assert!(on.telemetry.otlp.enabled());
        for (key, value, named) in [
            (
                "ONTOLOOP__TELEMETRY__OTLP__ENDPOINT",
                "127.0.0.1:4317",
                "telemetry.otlp.endpoint",
            ),
            (
                "ONTOLOOP__TELEMETRY__OTLP__ENDPOINT",
                "https://collector:4317",
                "telemetry.otlp.endpoint",
            ),
            (
                "ONTOLOOP__TELEMETRY__OTLP__ENDPOINT",
                "http://",
                "telemetry.otlp.endpoint",
            ),
            (
                "ONTOLOOP__TELEMETRY__OTLP__SAMPLING_RATIO",
                "1.5",
                "telemetry.otlp.sampling_ratio",
            ),
            (
                "ONTOLOOP__TELEMETRY__OTLP__EXPORT_TIMEOUT_MS",
                "0",
                "telemetry.otlp.export_timeout_ms",
            ),
            (
                "ONTOLOOP__TELEMETRY__OTLP__MAX_QUEUE_SIZE",
                "0",
                "telemetry.otlp.max_queue_size",
            ),
        ] {
            let err = load_with(&[(key, value)]).expect_err(value).to_string();
            assert!(err.contains(named), "{key}={value}: {err}");
        }
    }

    #[test]
    fn defaults_load() {
        let settings = load_with(&[]).expect("defaults are valid");
        assert!(settings.store.url.starts_with("sqlite://"));
        assert_eq!(settings.queue.backend(), QueueBackend::Memory);
        assert_eq!(settings.services.port_of("analyst"), Some(50054));
    }

    #[test]
    fn limits_load_and_refusals_name_their_key() {
        let settings = load_with(&[]).expect("defaults are valid");
        assert_eq!(
            settings.services.max_message_bytes,
            MAX_MESSAGE_BYTES_CEILING
        );
        assert_eq!(settings.firewall.max_claims, 1000);
        for (var, value, key) in [
            (
                "ONTOLOOP__SERVICES__MAX_MESSAGE_BYTES",
                "4194305",
                "services.max_message_bytes",
            ),
            (
                "ONTOLOOP__SERVICES__REQUEST_TIMEOUT_MS",
                "0",
                "services.request_timeout_ms",
            ),
            (
                "ONTOLOOP__SERVICES__MAX_CONCURRENT_REQUESTS",
                "0",
                "services.max_concurrent_requests",
            ),
            (
                "ONTOLOOP__SERVICES__MAX_HTTP_BODY_BYTES",
                "0",
                "services.max_http_body_bytes",
            ),
            (
                "ONTOLOOP__SERVICES__MAX_STREAM_MESSAGES",
                "0",
                "services.max_stream_messages",
            ),
            ("ONTOLOOP__FIREWALL__MAX_CLAIMS", "0", "firewall.max_claims"),
        ] {
            let err = load_with(&[(var, value)]).expect_err("invalid");
            assert!(err.to_string().contains(key), "{err} should name {key}");
        }
    }

    #[test]
    fn environment_overrides_defaults() {
        let settings = load_with(&[
            (
                "ONTOLOOP__STORE__URL",
                "postgres://postgres@127.0.0.1:5432/ontoloop",
            ),
            (
                "ONTOLOOP__QUEUE__URL",
                "amqp://guest:guest@127.0.0.1:5672/%2f",
            ),
            ("ONTOLOOP__SERVICES__RETRIEVAL_PORT", "6000"),
        ])
        .expect("valid overrides");
        assert!(settings.store.url.starts_with("postgres://"));
        assert!(matches!(settings.queue.backend(), QueueBackend::Amqp(_)));
        assert_eq!(settings.services.retrieval_port, 6000);
    }

    #[test]
    fn unknown_key_is_named() {
        let err =
            load_with(&[("ONTOLOOP__STORE__URLL", "sqlite://x.db")]).expect_err("unknown key");
        let text = err.to_string();
        assert!(text.contains("urll"), "error should name the key: {text}");
    }

    #[test]
    fn unknown_section_is_named() {
        let err = load_with(&[("ONTOLOOP__CACHE__SIZE", "3")]).expect_err("unknown section");
        assert!(err.to_string().contains("cache"), "{err}");
    }

    #[test]
    fn bad_store_url_is_named() {
        let err = load_with(&[("ONTOLOOP__STORE__URL", "mysql://db")]).expect_err("bad scheme");
        assert!(
            matches!(
                err,
                SettingsError::Invalid { ref key, .. } if key == "store.url"
            ),
            "{err}"
        );
        let err = load_with(&[("ONTOLOOP__STORE__URL", "not a url")]).expect_err("not a url");
        assert!(err.to_string().contains("store.url"), "{err}");
    }

    #[test]
    fn bad_queue_url_is_named() {
        let err = load_with(&[("ONTOLOOP__QUEUE__URL", "http://rabbit")]).expect_err("bad scheme");
        assert!(
            matches!(
                err,
                SettingsError::Invalid { ref key, .. } if key == "queue.url"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_password_in_a_bad_url_stays_out_of_the_error() {
        let err = load_with(&[("ONTOLOOP__STORE__URL", "mysql://app:hunter2@db/x")])
            .expect_err("bad scheme");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let err = load_with(&[("ONTOLOOP__STORE__URL", "postgres://app@/x?password=hunter2")])
            .expect_err("no host");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let err = load_with(&[("ONTOLOOP__QUEUE__URL", "amqps://app:hunter2@/%2f")])
            .expect_err("no host");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn queue_tls_files_go_with_amqps_and_errors_name_the_key() {
        let amqps = (
            "ONTOLOOP__QUEUE__URL",
            "amqps://guest:guest@rabbit:5671/%2f",
        );
        // The variables set, and the key refused (None: the settings load).
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);
        let cases: [Case; 6] = [
            (&[amqps], Some("queue.tls_ca_file")),
            (&[amqps, ("ONTOLOOP__QUEUE__TLS_CA_FILE", "ca.pem")], None),
            (
                &[
                    amqps,
                    ("ONTOLOOP__QUEUE__TLS_CA_FILE", "ca.pem"),
                    ("ONTOLOOP__QUEUE__TLS_CLIENT_CERT_FILE", "client.pem"),
                ],
                Some("queue.tls_client_key_file"),
            ),
            (
                &[
                    amqps,
                    ("ONTOLOOP__QUEUE__TLS_CA_FILE", "ca.pem"),
                    ("ONTOLOOP__QUEUE__TLS_CLIENT_KEY_FILE", "client.key"),
                ],
                Some("queue.tls_client_cert_file"),
            ),
            (
                &[
                    amqps,
                    ("ONTOLOOP__QUEUE__TLS_CA_FILE", "ca.pem"),
                    ("ONTOLOOP__QUEUE__TLS_CLIENT_CERT_FILE", "client.pem"),
                    ("ONTOLOOP__QUEUE__TLS_CLIENT_KEY_FILE", "client.key"),
                ],
                None,
            ),
            (
                &[
                    ("ONTOLOOP__QUEUE__URL", "amqp://guest:guest@rabbit:5672/%2f"),
                    ("ONTOLOOP__QUEUE__TLS_CA_FILE", "ca.pem"),
                ],
                Some("queue.tls_ca_file"),
            ),
        ];
        for (vars, refused) in cases {
            match (load_with(vars), refused) {
                (Ok(_), None) => {}
                (Err(SettingsError::Invalid { key, .. }), Some(expected)) => {
                    assert_eq!(key, expected, "{vars:?}");
                }
                (other, _) => panic!("{vars:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn mistyped_value_is_named() {
        let err = load_with(&[("ONTOLOOP__QUEUE__PREFETCH", "many")]).expect_err("not a number");
        assert!(err.to_string().contains("prefetch"), "{err}");
    }

    #[test]
    fn retention_defaults_load_and_errors_name_the_key() {
        let settings = load_with(&[]).expect("defaults are valid");
        let retention = &settings.retention;
        assert_eq!(retention.every(), std::time::Duration::from_secs(3600));
        assert_eq!(
            RetentionSettings::keep(retention.inbox_days),
            Some(std::time::Duration::from_secs(7 * 86_400))
        );
        assert_eq!(RetentionSettings::keep(0), None, "0 days keeps forever");
        let forever = load_with(&[("ONTOLOOP__RETENTION__SIGNAL_INTAKE_DAYS", "0")])
            .expect("0 keeps signals forever");
        assert_eq!(forever.retention.signal_intake_days, 0);
        for (vars, key) in [
            (
                &[("ONTOLOOP__RETENTION__EVERY_MINUTES", "0")][..],
                "retention.every_minutes",
            ),
            (
                &[("ONTOLOOP__RETENTION__MAX_ROWS_PER_PASS", "0")][..],
                "retention.max_rows_per_pass",
            ),
            (
                &[
                    ("ONTOLOOP__RETENTION__SIGNAL_INTAKE_DAYS", "1"),
                    ("ONTOLOOP__SIGNALS__WINDOW_SECS", "172800"),
                ][..],
                "retention.signal_intake_days",
            ),
        ] {
            match load_with(vars) {
                Err(SettingsError::Invalid { key: named, .. }) => assert_eq!(named, key),
                other => panic!("{vars:?}: expected {key} refused, got {other:?}"),
            }
        }
    }

    #[test]
    fn org_and_plate_defaults_load_and_errors_name_the_key() {
        let settings = load_with(&[]).expect("defaults are valid");
        assert_eq!(settings.org.safety_ttl_secs, 86_400);
        assert_eq!(settings.org.context_ttl_secs, 30 * 86_400);
        assert_eq!(settings.org.context_idle_secs, 7 * 86_400);
        assert_eq!(settings.plate.min_authority, 0.7);
        assert_eq!(settings.plate.temporal_scale_days, 30.0);
        assert_eq!(
            settings.plate.scopes_by_role["sre"],
            BTreeSet::from([Scope::Code, Scope::Bugs, Scope::Production, Scope::Critical])
        );
        let overridden = load_with(&[
            ("ONTOLOOP__PLATE__MIN_AUTHORITY", "0.5"),
            ("ONTOLOOP__PLATE__DEFAULT_SCOPES", "code,bugs"),
        ])
        .expect("valid overrides");
        assert_eq!(overridden.plate.min_authority, 0.5);
        assert_eq!(
            overridden.plate.default_scopes,
            BTreeSet::from([Scope::Code, Scope::Bugs])
        );
        for (var, value, key) in [
            (
                "ONTOLOOP__PLATE__DEFAULT_SCOPES",
                "code,gossip",
                "plate.default_scopes",
            ),
            (
                "ONTOLOOP__PLATE__TEMPORAL_SCALE_DAYS",
                "0",
                "plate.temporal_scale_days",
            ),
            (
                "ONTOLOOP__ORG__COVERAGE_THRESHOLD",
                "1.5",
                "org.coverage_threshold",
            ),
            (
                "ONTOLOOP__ORG__WATCH_INTERVAL_MS",
                "0",
                "org.watch_interval_ms",
            ),
        ] {
            let err = load_with(&[(var, value)]).expect_err("invalid");
            assert!(err.to_string().contains(key), "{err} should name {key}");
        }
    }

    #[test]
    fn a_mistyped_analyst_severity_fails_at_load() {
        // It used to fall back to critical in the healer; now the typo stops start-up.
        for (var, key) in [
            ("ONTOLOOP__ANALYST__HEAL_AT", "analyst.heal_at"),
            ("ONTOLOOP__ANALYST__PROPOSE_AT", "analyst.propose_at"),
        ] {
            let err = load_with(&[(var, "critcal")]).expect_err("not a severity");
            let text = err.to_string();
            assert!(text.contains(key), "{text} should name {key}");
            assert!(text.contains("critcal"), "{text} should quote the value");
        }
        let settings = load_with(&[("ONTOLOOP__ANALYST__HEAL_AT", "high")]).expect("valid");
        assert_eq!(settings.analyst.heal_at, Severity::High);
    }

    #[test]
    fn extraction_stages_come_from_the_environment_and_a_typo_names_the_key() {
        use ontoloop_core::knowledge::Stage;
        let settings = load_with(&[]).expect("defaults are valid");
        assert_eq!(
            settings.extract.stages,
            vec![Stage::Structured, Stage::Patterns, Stage::Semantic]
        );
        let settings =
            load_with(&[("ONTOLOOP__EXTRACT__STAGES", "patterns,semantic")]).expect("valid");
        assert_eq!(
            settings.extract.stages,
            vec![Stage::Patterns, Stage::Semantic]
        );
        let err = load_with(&[("ONTOLOOP__EXTRACT__STAGES", "patterns,semantc")])
            .expect_err("not a stage");
        assert!(err.to_string().contains("extract.stages"), "{err}");
        let err =
            load_with(&[("ONTOLOOP__EXTRACT__STAGES", "patterns,patterns")]).expect_err("twice");
        assert!(err.to_string().contains("extract.stages"), "{err}");
    }

    #[test]
    fn dashboard_origins_come_from_the_environment_and_a_path_names_the_key() {
        let settings = load_with(&[]).expect("defaults are valid");
        assert!(settings.auth.dashboard_origins.is_empty());
        let settings = load_with(&[(
            "ONTOLOOP__AUTH__DASHBOARD_ORIGINS",
            "https://review.example.com,http://10.0.0.5:8484",
        )])
        .expect("valid");
        assert_eq!(
            settings.auth.dashboard_origins,
            vec!["https://review.example.com", "http://10.0.0.5:8484"]
        );
        let err = load_with(&[(
            "ONTOLOOP__AUTH__DASHBOARD_ORIGINS",
            "https://review.example.com/queue",
        )])
        .expect_err("a path");
        assert!(err.to_string().contains("auth.dashboard_origins"), "{err}");
    }

    #[test]
    fn domain_sections_load_and_errors_name_the_key() {
        let settings = load_with(&[]).expect("defaults are valid");
        assert_eq!(settings.analyst.heal_at, Severity::Critical);
        assert_eq!(settings.analyst.propose_at, Severity::Medium);
        assert_eq!(settings.signals.window_secs, 3600);
        assert_eq!(settings.supervisor.base_rate, 0.05);
        assert_eq!(settings.firewall.min_independent_sources, 2);
        assert!(!settings.firewall.llm.enabled);
        assert_eq!(
            settings.plate.report_severities,
            BTreeSet::from([Severity::Critical, Severity::High])
        );
        for (var, value, key) in [
            (
                "ONTOLOOP__PLATE__REPORT_SEVERITIES",
                "critical,hihg",
                "plate.report_severities",
            ),
            ("ONTOLOOP__SIGNALS__WINDOW_SECS", "0", "signals.window_secs"),
            (
                "ONTOLOOP__SUPERVISOR__BASE_RATE",
                "1.5",
                "supervisor.base_rate",
            ),
            (
                "ONTOLOOP__SUPERVISOR__REJECT_FACTOR",
                "0.5",
                "supervisor.reject_factor",
            ),
            (
                "ONTOLOOP__FIREWALL__CONFIDENCE_HIGH_RISK",
                "2",
                "firewall.confidence_high_risk",
            ),
            (
                "ONTOLOOP__FIREWALL__MAX_TEXT_BYTES",
                "0",
                "firewall.max_text_bytes",
            ),
            ("ONTOLOOP__PLATE__LIMIT", "0", "plate.limit"),
        ] {
            let err = load_with(&[(var, value)]).expect_err("invalid");
            assert!(err.to_string().contains(key), "{err} should name {key}");
        }
        let err = load_with(&[
            ("ONTOLOOP__FIREWALL__LLM__ENABLED", "true"),
            ("ONTOLOOP__FIREWALL__LLM__BASE_URL", "https://model"),
        ])
        .expect_err("not http");
        assert!(
            matches!(
                err,
                SettingsError::Invalid { ref key, .. } if key == "firewall.llm.base_url"
            ),
            "{err}"
        );
    }

    #[test]
    fn tls_is_off_by_default_and_its_halves_come_in_pairs() {
        let settings = load_with(&[]).expect("defaults are valid");
        assert!(!settings.tls.serves_tls());
        assert!(!settings.tls.dials_tls());
        let invalid_key = |vars: &[(&str, &str)]| match load_with(vars) {
            Err(SettingsError::Invalid { key, .. }) => key,
            other => panic!("expected an invalid setting, got {other:?}"),
        };
        assert_eq!(
            invalid_key(&[("ONTOLOOP__TLS__CERT_FILE", "server.pem")]),
            "tls.key_file"
        );
        assert_eq!(
            invalid_key(&[("ONTOLOOP__TLS__KEY_FILE", "server.key")]),
            "tls.cert_file"
        );
        assert_eq!(
            invalid_key(&[("ONTOLOOP__TLS__CLIENT_CA_FILE", "ca.pem")]),
            "tls.client_ca_file"
        );
        assert_eq!(
            invalid_key(&[
                ("ONTOLOOP__TLS__CA_FILE", "ca.pem"),
                ("ONTOLOOP__TLS__CLIENT_CERT_FILE", "client.pem"),
            ]),
            "tls.client_key_file"
        );
        assert_eq!(
            invalid_key(&[("ONTOLOOP__TLS__DOMAIN", "localhost")]),
            "tls.domain"
        );
        let settings = load_with(&[
            ("ONTOLOOP__TLS__CERT_FILE", "server.pem"),
            ("ONTOLOOP__TLS__KEY_FILE", "server.key"),
            ("ONTOLOOP__TLS__CLIENT_CA_FILE", "ca.pem"),
        ])
        .expect("a server with mTLS");
        assert!(settings.tls.serves_tls());
        assert!(settings.tls.dials_tls());
    }

    #[test]
    fn auth_is_off_by_default_and_jwt_needs_its_keys() {
        let settings = load_with(&[]).expect("defaults are valid");
        assert_eq!(settings.auth.mode, ontoloop_auth::AuthMode::Off);
        assert_eq!(settings.auth.claims.principal, "sub");
        let err = load_with(&[("ONTOLOOP__AUTH__MODE", "jwt")]).expect_err("no issuer");
        assert!(
            matches!(
                err,
                SettingsError::Invalid { ref key, .. } if key == "auth.issuer"
            ),
            "{err}"
        );
        let settings = load_with(&[
            ("ONTOLOOP__AUTH__MODE", "jwt"),
            ("ONTOLOOP__AUTH__ISSUER", "https://issuer.test"),
            ("ONTOLOOP__AUTH__AUDIENCE", "ontoloop"),
            (
                "ONTOLOOP__AUTH__HS256_SECRET",
                "0123456789abcdef0123456789abcdef",
            ),
        ])
        .expect("valid jwt section");
        assert_eq!(settings.auth.mode, ontoloop_auth::AuthMode::Jwt);
        let err = load_with(&[("ONTOLOOP__AUTH__MODE", "open")]).expect_err("not a mode");
        assert!(err.to_string().contains("mode"), "{err}");
    }

    #[test]
    fn clashing_ports_are_refused() {
        let err = load_with(&[("ONTOLOOP__SERVICES__FIREWALL_PORT", "50051")]).expect_err("clash");
        assert!(
            matches!(
                err,
                SettingsError::Invalid { ref key, .. } if key == "services.firewall_port"
            ),
            "{err}"
        );
    }

    #[test]
    fn debug_of_the_settings_shows_no_password_or_secret() {
        let settings = load_with(&[
            (
                "ONTOLOOP__STORE__URL",
                "postgres://app:storepw1@db:5432/x?sslmode=disable&password=storepw2",
            ),
            ("ONTOLOOP__QUEUE__URL", "amqp://guest:queuepw3@mq:5672/%2f"),
            (
                "ONTOLOOP__AUTH__HS256_SECRET",
                "hs256-secret-0123456789abcdef0123456789",
            ),
            ("ONTOLOOP__FIREWALL__LLM__API_KEY", "llmkey4"),
            ("ONTOLOOP__EXTRACT__MODEL__API_KEY", "modelkey5"),
            (
                "ONTOLOOP__EXTRACT__MODEL__BASE_URL",
                "http://user:modelpw6@llm:8000/v1",
            ),
        ])
        .expect("valid settings");
        assert_eq!(settings.auth.hs256_secret.len(), 39, "the secret was set");
        assert_eq!(settings.extract.model.api_key, "modelkey5");
        let shown = format!("{settings:?}");
        for secret in [
            "storepw1",
            "storepw2",
            "queuepw3",
            "hs256-secret",
            "llmkey4",
            "modelkey5",
            "modelpw6",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        // The rest of each URL is still shown, so the output stays useful.
        assert!(shown.contains("postgres://app:***@db:5432/x?sslmode=disable&password=***"));
        assert!(shown.contains("amqp://guest:***@mq:5672/%2f"));
    }

    #[test]
    fn cache_budgets_load_and_an_empty_one_is_refused_by_key() {
        let settings = load_with(&[("ONTOLOOP__CACHE__READ_MODELS__MAX_BYTES", "4096")])
            .expect("valid settings");
        assert_eq!(settings.cache.read_models.max_entries, 1000);
        assert_eq!(settings.cache.read_models.max_bytes, 4096);
        match load_with(&[("ONTOLOOP__CACHE__READ_MODELS__MAX_ENTRIES", "0")]) {
            Err(SettingsError::Invalid { key, .. }) => {
                assert_eq!(key, "cache.read_models.max_entries");
            }
            other => panic!("expected an invalid key, got {other:?}"),
        }
        match load_with(&[("ONTOLOOP__CACHE__HEAL_STAGES__MAX_ENTRIES", "0")]) {
            Err(SettingsError::Invalid { key, .. }) => {
                assert_eq!(key, "cache.heal_stages.max_entries");
            }
            other => panic!("expected an invalid key, got {other:?}"),
        }
    }
}
