//! What a settings section's own validation reports: the key within its section and why.
//!
//! The domain types that are settings sections (`SeverityThresholds` for `[signals]`,
//! `SupervisorPolicy` for `[supervisor]`, `FirewallPolicy` for `[firewall]`) validate themselves;
//! `ontoloop-settings` prefixes the section, so the error names the full dotted key.

/// A setting with a value that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("setting `{key}` is invalid: {reason}")]
pub struct InvalidSetting {
    /// Key within its section, for example `base_rate` or `llm.base_url`.
    pub key: &'static str,
    /// Why the value was refused.
    pub reason: String,
}

impl InvalidSetting {
    /// A refused value of `key`.
    pub fn new(key: &'static str, reason: impl Into<String>) -> Self {
        Self {
            key,
            reason: reason.into(),
        }
    }
}

/// Refuses a value outside `[0, 1]` (NaN included).
pub fn share(key: &'static str, value: f64) -> Result<(), InvalidSetting> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(InvalidSetting::new(
            key,
            format!("{value} is not between 0 and 1"),
        ))
    }
}
