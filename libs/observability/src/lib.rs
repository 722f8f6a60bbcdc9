//! Tracing set-up for every ontoloop binary, and the process's metrics registry.
//!
//! Owns the subscriber: an env filter (from settings, `RUST_LOG` wins when set) and text or JSON
//! lines on stderr, and the Prometheus registry services record into. It never decides what to
//! log or measure; that belongs where errors are handled and work is done.

pub mod metrics;

use ontoloop_settings::LogSettings;
use tracing_subscriber::EnvFilter;

/// Logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ObservabilityError {
    /// The filter directives do not parse.
    #[error("setting `log.filter` is invalid: {0}")]
    Filter(#[from] tracing_subscriber::filter::ParseError),
    /// A global subscriber is already installed.
    #[error("install tracing subscriber: {0}")]
    Install(String),
}

/// Installs the global subscriber. Call once, first thing in `main`.
pub fn init(settings: &LogSettings) -> Result<(), ObservabilityError> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(directives)?,
        _ => EnvFilter::try_new(&settings.filter)?,
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = if settings.json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.compact().try_init()
    };
    result.map_err(|err| ObservabilityError::Install(err.to_string()))
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
