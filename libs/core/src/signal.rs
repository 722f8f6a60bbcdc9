//! Failure signal kinds and severities.

use serde::{Deserialize, Serialize};

use crate::settings::InvalidSetting;

/// Why an agent could not get a trustworthy answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalType {
    /// The question names an entity the graph does not know.
    EntityMissing,
    /// The entity is known but the relationship is not.
    RelationshipUnknown,
    /// The answer rests on facts older than their sources.
    TemporalStale,
    /// Sources contradict each other.
    ConfidenceDrop,
    /// The same unknown is asked repeatedly.
    QueryPattern,
}

impl SignalType {
    /// Every signal type.
    pub const ALL: [SignalType; 5] = [
        SignalType::EntityMissing,
        SignalType::RelationshipUnknown,
        SignalType::TemporalStale,
        SignalType::ConfidenceDrop,
        SignalType::QueryPattern,
    ];

    /// The snake_case name used on the queue and in metrics.
    pub fn name(self) -> &'static str {
        match self {
            SignalType::EntityMissing => "entity_missing",
            SignalType::RelationshipUnknown => "relationship_unknown",
            SignalType::TemporalStale => "temporal_stale",
            SignalType::ConfidenceDrop => "confidence_drop",
            SignalType::QueryPattern => "query_pattern",
        }
    }
}

/// How urgent a signal or pattern is: the workspace's one severity, shared with work items.
pub use ontoloop_org::items::Severity;

impl SignalType {
    /// Parses a wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// The `[signals]` settings: the window a subject's signals are counted over, and when
/// frequency and spread make a signal more severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeverityThresholds {
    /// Window over which a subject's signals are counted, in seconds (positive).
    pub window_secs: u64,
    /// Critical needs more occurrences than this...
    pub critical_occurrences: u64,
    /// ...and more affected agents than this.
    pub critical_agents: u64,
    /// High needs more occurrences than this, or...
    pub high_occurrences: u64,
    /// ...more affected agents than this.
    pub high_agents: u64,
    /// Medium needs more occurrences than this.
    pub medium_occurrences: u64,
}

impl SeverityThresholds {
    /// The counting window.
    pub fn window(&self) -> chrono::Duration {
        chrono::Duration::seconds(i64::try_from(self.window_secs).unwrap_or(i64::MAX / 1000))
    }

    /// Checks that the window is not empty; the error names the key within `[signals]`.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.window_secs == 0 {
            return Err(InvalidSetting::new(
                "window_secs",
                "must be greater than zero",
            ));
        }
        Ok(())
    }
}

/// Severity from how often a subject failed and for how many agents.
pub fn severity(occurrences: u64, agents: u64, t: &SeverityThresholds) -> Severity {
    if occurrences > t.critical_occurrences && agents > t.critical_agents {
        Severity::Critical
    } else if occurrences > t.high_occurrences || agents > t.high_agents {
        Severity::High
    } else if occurrences > t.medium_occurrences {
        Severity::Medium
    } else {
        Severity::Low
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The thresholds the tests count severities by.
    pub(crate) fn thresholds() -> SeverityThresholds {
        SeverityThresholds {
            window_secs: 3600,
            critical_occurrences: 10,
            critical_agents: 5,
            high_occurrences: 5,
            high_agents: 3,
            medium_occurrences: 2,
        }
    }

    #[test]
    fn names_match_the_wire_format() {
        // The derive and the hand-written name are both wire formats: they must agree.
        for kind in SignalType::ALL {
            let json = serde_json::to_string(&kind).expect("unit variant serialises");
            assert_eq!(json, format!("\"{}\"", kind.name()));
        }
    }

    #[test]
    fn severity_follows_frequency_and_spread() {
        let t = thresholds();
        assert_eq!(severity(1, 1, &t), Severity::Low);
        assert_eq!(severity(3, 1, &t), Severity::Medium);
        assert_eq!(severity(6, 1, &t), Severity::High);
        assert_eq!(severity(2, 4, &t), Severity::High);
        assert_eq!(severity(11, 5, &t), Severity::High);
        assert_eq!(severity(11, 6, &t), Severity::Critical);
        assert_eq!(
            SignalType::from_name("query_pattern"),
            Some(SignalType::QueryPattern)
        );
    }

    #[test]
    fn severities_order_by_urgency() {
        assert!(Severity::Low < Severity::Medium);
        assert!(Severity::High < Severity::Critical);
    }
}
