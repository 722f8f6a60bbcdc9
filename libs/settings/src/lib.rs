//! Layered, validated settings for every ontoloop binary.
//!
//! Owns the settings schema and its layering: embedded defaults, then an optional file, then
//! `ONTOLOOP__SECTION__KEY` environment variables. Everything is validated once, at start-up,
//! and errors name the offending key. This crate never connects to anything.

use std::path::Path;

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
        key: &'static str,
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
    /// Failure signal intake.
    pub signals: SignalSettings,
    /// The analyst's healing.
    pub analyst: AnalystSettings,
    /// The semantic firewall.
    pub firewall: FirewallSettings,
    /// Logging.
    pub log: LogSettings,
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
    pub heal_at: String,
}

/// Failure signal intake: the window and thresholds of severity.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalSettings {
    /// Window over which a subject's signals are counted.
    pub window_secs: u64,
    /// Critical: more occurrences than this...
    pub critical_occurrences: u64,
    /// ...and more agents than this.
    pub critical_agents: u64,
    /// High: more occurrences than this, or...
    pub high_occurrences: u64,
    /// ...more agents than this.
    pub high_agents: u64,
    /// Medium: more occurrences than this.
    pub medium_occurrences: u64,
}

/// The semantic firewall's thresholds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirewallSettings {
    /// Independent reliable sources a claim needs.
    pub min_independent_sources: usize,
    /// Origins at or above this authority are reliable.
    pub reliable_authority: i32,
    /// A source at or above this authority suffices alone.
    pub authoritative_authority: i32,
    /// Confidence threshold in a standard context.
    pub confidence_standard: f64,
    /// Confidence threshold in a high-risk context.
    pub confidence_high_risk: f64,
    /// Confidence threshold in an exploratory context.
    pub confidence_exploratory: f64,
    /// Domains always checked at the high-risk threshold.
    pub high_risk_domains: Vec<String>,
    /// Predicates that may hold several values at once.
    pub multi_valued_predicates: Vec<String>,
    /// Longest answer text accepted.
    pub max_text_bytes: usize,
    /// The optional model-based claim extractor.
    pub llm: LlmSettings,
}

/// An OpenAI-compatible chat endpoint for claim extraction.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    /// Off by default.
    pub enabled: bool,
    /// Base URL, for example `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Bearer key; empty for none.
    pub api_key: String,
    /// Whole-request timeout.
    pub timeout_ms: u64,
    /// Prompt version recorded on extracted claims.
    pub prompt_version: String,
}

impl std::fmt::Debug for LlmSettings {
    // The API key never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("enabled", &self.enabled)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field(
                "api_key",
                &if self.api_key.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field("timeout_ms", &self.timeout_ms)
            .field("prompt_version", &self.prompt_version)
            .finish()
    }
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

/// The relational store.
#[derive(Debug, Clone, Deserialize)]
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

/// The message queue.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSettings {
    /// `memory` or `amqp://...`.
    pub url: String,
    /// Unacknowledged messages a consumer may hold.
    pub prefetch: u16,
    /// Attempts before an unreachable broker is reported as an error.
    pub connect_attempts: u32,
    /// First wait between attempts; doubles up to `backoff_max_ms`.
    pub backoff_initial_ms: u64,
    /// Longest wait between attempts.
    pub backoff_max_ms: u64,
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
    /// Grace period for in-flight work after a shutdown signal.
    pub drain_timeout_ms: u64,
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

/// Which queue implementation the settings select.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueBackend {
    /// The in-process queue.
    Memory,
    /// RabbitMQ at this URL.
    Amqp(String),
}

impl QueueSettings {
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
            .try_parsing(true);
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

    fn validate(&self) -> Result<(), SettingsError> {
        validate_store_url(&self.store.url)?;
        validate_queue_url(&self.queue.url)?;
        positive(
            "store.max_connections",
            u64::from(self.store.max_connections),
        )?;
        positive(
            "store.connect_attempts",
            u64::from(self.store.connect_attempts),
        )?;
        positive("queue.prefetch", u64::from(self.queue.prefetch))?;
        positive("retrieval.top_k", self.retrieval.top_k as u64)?;
        positive("signals.window_secs", self.signals.window_secs)?;
        if !["low", "medium", "high", "critical"].contains(&self.analyst.heal_at.as_str()) {
            return Err(invalid(
                "analyst.heal_at",
                format!(
                    "{:?} is not low, medium, high or critical",
                    self.analyst.heal_at
                ),
            ));
        }
        positive(
            "firewall.max_text_bytes",
            self.firewall.max_text_bytes as u64,
        )?;
        for (key, value) in [
            (
                "firewall.confidence_standard",
                self.firewall.confidence_standard,
            ),
            (
                "firewall.confidence_high_risk",
                self.firewall.confidence_high_risk,
            ),
            (
                "firewall.confidence_exploratory",
                self.firewall.confidence_exploratory,
            ),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(invalid(key, format!("{value} is not between 0 and 1")));
            }
        }
        if self.firewall.llm.enabled && !self.firewall.llm.base_url.starts_with("http://") {
            return Err(invalid("firewall.llm.base_url", "must be an http:// URL"));
        }
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
        let ports = [
            ("services.retrieval_port", self.services.retrieval_port),
            ("services.firewall_port", self.services.firewall_port),
            ("services.telemetry_port", self.services.telemetry_port),
            ("services.analyst_port", self.services.analyst_port),
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
}

fn validate_store_url(raw: &str) -> Result<(), SettingsError> {
    const KEY: &str = "store.url";
    let url =
        url::Url::parse(raw).map_err(|err| invalid(KEY, format!("{raw:?} is not a URL: {err}")))?;
    match url.scheme() {
        "sqlite" => Ok(()),
        "postgres" | "postgresql" => {
            if url.host_str().is_none_or(str::is_empty) {
                return Err(invalid(KEY, format!("{raw:?} names no host")));
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
    let url =
        url::Url::parse(raw).map_err(|err| invalid(KEY, format!("{raw:?} is not a URL: {err}")))?;
    match url.scheme() {
        "amqp" | "amqps" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        "amqp" | "amqps" => Err(invalid(KEY, format!("{raw:?} names no host"))),
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

fn invalid(key: &'static str, reason: impl Into<String>) -> SettingsError {
    SettingsError::Invalid {
        key,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_with(vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        Loader::new()
            .env_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .load()
    }

    #[test]
    fn defaults_load() {
        let settings = load_with(&[]).expect("defaults are valid");
        assert!(settings.store.url.starts_with("sqlite://"));
        assert_eq!(settings.queue.backend(), QueueBackend::Memory);
        assert_eq!(settings.services.port_of("analyst"), Some(50054));
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
                SettingsError::Invalid {
                    key: "store.url",
                    ..
                }
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
                SettingsError::Invalid {
                    key: "queue.url",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn mistyped_value_is_named() {
        let err = load_with(&[("ONTOLOOP__QUEUE__PREFETCH", "many")]).expect_err("not a number");
        assert!(err.to_string().contains("prefetch"), "{err}");
    }

    #[test]
    fn clashing_ports_are_refused() {
        let err = load_with(&[("ONTOLOOP__SERVICES__FIREWALL_PORT", "50051")]).expect_err("clash");
        assert!(
            matches!(
                err,
                SettingsError::Invalid {
                    key: "services.firewall_port",
                    ..
                }
            ),
            "{err}"
        );
    }
}
