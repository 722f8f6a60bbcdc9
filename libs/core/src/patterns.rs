//! Grouping failure signals into patterns: the same missing entity asked repeatedly (across
//! spellings), a stale sector, a missing relationship type, a contradiction. Pure: the caller
//! passes the signals of the window and the thresholds.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::signal::{Severity, SeverityThresholds, SignalType, severity};

/// One signal as the analyst recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedSignal {
    /// Its type.
    pub kind: SignalType,
    /// What it concerns: entity, relationship or sector, as reported.
    pub subject: String,
    /// The agent that reported it.
    pub agent: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// What a pattern is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PatternKind {
    /// An entity the graph lacks (entity_missing, query_pattern).
    MissingEntity,
    /// A region whose answers go stale (temporal_stale).
    StaleSector,
    /// A relationship the graph lacks (relationship_unknown).
    MissingRelationshipType,
    /// Sources that contradict each other (confidence_drop).
    Contradiction,
}

impl PatternKind {
    /// Wire name.
    pub fn name(self) -> &'static str {
        match self {
            PatternKind::MissingEntity => "missing_entity",
            PatternKind::StaleSector => "stale_sector",
            PatternKind::MissingRelationshipType => "missing_relationship_type",
            PatternKind::Contradiction => "contradiction",
        }
    }

    /// The pattern a signal type feeds.
    pub fn of(kind: SignalType) -> Self {
        match kind {
            SignalType::EntityMissing | SignalType::QueryPattern => PatternKind::MissingEntity,
            SignalType::TemporalStale => PatternKind::StaleSector,
            SignalType::RelationshipUnknown => PatternKind::MissingRelationshipType,
            SignalType::ConfidenceDrop => PatternKind::Contradiction,
        }
    }
}

/// A group of signals with one cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// Kind.
    pub kind: PatternKind,
    /// The folded subject every spelling shares.
    pub key: String,
    /// Signals in it.
    pub signals: u64,
    /// Distinct agents.
    pub agents: u64,
    /// Severity from frequency and spread.
    pub severity: Severity,
    /// First signal.
    pub first_seen: DateTime<Utc>,
    /// Latest signal.
    pub last_seen: DateTime<Utc>,
}

/// Folds spellings of one subject together: case, punctuation, spacing and a leading "the".
pub fn fold(subject: &str) -> String {
    let words: Vec<String> = subject
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let start = usize::from(words.len() > 1 && words[0] == "the");
    words[start..].join(" ")
}

/// Groups the signals into patterns, most severe first, then most frequent.
pub fn cluster(signals: &[ObservedSignal], thresholds: &SeverityThresholds) -> Vec<Pattern> {
    let mut groups: BTreeMap<(PatternKind, String), Vec<&ObservedSignal>> = BTreeMap::new();
    for signal in signals {
        let key = fold(&signal.subject);
        if key.is_empty() {
            continue;
        }
        groups
            .entry((PatternKind::of(signal.kind), key))
            .or_default()
            .push(signal);
    }
    let mut patterns: Vec<Pattern> = groups
        .into_iter()
        .map(|((kind, key), members)| {
            let mut agents: Vec<&str> = members.iter().map(|s| s.agent.as_str()).collect();
            agents.sort_unstable();
            agents.dedup();
            let (signals, agents) = (members.len() as u64, agents.len() as u64);
            Pattern {
                kind,
                key,
                signals,
                agents,
                severity: severity(signals, agents, thresholds),
                first_seen: members.iter().map(|s| s.at).min().unwrap_or_default(),
                last_seen: members.iter().map(|s| s.at).max().unwrap_or_default(),
            }
        })
        .collect();
    patterns.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(b.signals.cmp(&a.signals))
            .then(a.key.cmp(&b.key))
    });
    patterns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> SeverityThresholds {
        SeverityThresholds {
            window_secs: 3600,
            critical_occurrences: 10,
            critical_agents: 5,
            high_occurrences: 5,
            high_agents: 3,
            medium_occurrences: 2,
        }
    }

    fn s(kind: SignalType, subject: &str, agent: &str) -> ObservedSignal {
        ObservedSignal {
            kind,
            subject: subject.into(),
            agent: agent.into(),
            at: Utc::now(),
        }
    }

    #[test]
    fn spellings_of_one_missing_entity_form_one_pattern() {
        let mut signals: Vec<ObservedSignal> = (0..11)
            .map(|i| {
                s(
                    SignalType::EntityMissing,
                    ["Project Kite", "project kite", "the Project-Kite"][i % 3],
                    &format!("agent-{i}"),
                )
            })
            .collect();
        signals.push(s(SignalType::QueryPattern, "PROJECT KITE", "agent-0"));
        signals.push(s(SignalType::TemporalStale, "pricing", "agent-1"));
        let patterns = cluster(&signals, &t());
        assert_eq!(patterns.len(), 2);
        assert_eq!(
            (patterns[0].kind, patterns[0].key.as_str()),
            (PatternKind::MissingEntity, "project kite")
        );
        assert_eq!(
            (
                patterns[0].signals,
                patterns[0].agents,
                patterns[0].severity
            ),
            (12, 11, Severity::Critical)
        );
        assert_eq!(
            (patterns[1].kind, patterns[1].severity),
            (PatternKind::StaleSector, Severity::Low)
        );
    }

    #[test]
    fn empty_subjects_are_not_patterns() {
        assert!(cluster(&[s(SignalType::EntityMissing, " ?! ", "a")], &t()).is_empty());
    }
}
