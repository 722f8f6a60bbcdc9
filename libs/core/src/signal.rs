//! Failure signal kinds and severities.

use serde::{Deserialize, Serialize};

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

/// How urgent a signal or pattern is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Isolated.
    Low,
    /// Recurring.
    Medium,
    /// Frequent or spread over several agents.
    High,
    /// Frequent and widespread.
    Critical,
}

impl SignalType {
    /// Parses a wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

impl Severity {
    /// Every severity, least urgent first.
    pub const ALL: [Severity; 4] = [
        Severity::Low,
        Severity::Medium,
        Severity::High,
        Severity::Critical,
    ];

    /// Parses a wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Wire name.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

/// When frequency and spread make a signal more severe (from settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeverityThresholds {
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
mod tests {
    use super::*;

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
        let t = SeverityThresholds {
            critical_occurrences: 10,
            critical_agents: 5,
            high_occurrences: 5,
            high_agents: 3,
            medium_occurrences: 2,
        };
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
