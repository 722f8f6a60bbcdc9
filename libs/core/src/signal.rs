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
    fn severities_order_by_urgency() {
        assert!(Severity::Low < Severity::Medium);
        assert!(Severity::High < Severity::Critical);
    }
}
