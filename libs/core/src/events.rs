//! Events from integrations, as they travel on the queue (`ontoloop.events`): one JSON object,
//! a `type` tag and the event's fields. The timeline events of a world file have the same shape;
//! the queue adds the tenant, the intake sequence number and the time.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::DomainError;
use crate::knowledge::MaintenanceMode;

/// An event with where and when it applies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventEnvelope {
    /// Tenant the event belongs to.
    pub tenant: String,
    /// Intake sequence number, when it came through the telemetry intake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
    /// When the event happened.
    pub at: DateTime<Utc>,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

/// The kinds of event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    /// A page is created or gets a new version.
    #[serde(rename = "doc.upsert")]
    DocUpsert {
        /// Page id.
        doc_id: String,
        /// Title.
        #[serde(default)]
        title: String,
        /// Origin, naming the page's authority.
        origin: String,
        /// The new body.
        body: String,
        /// Principals who may read it; empty for the whole tenant.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        acl: Vec<String>,
        /// Store the version but leave extraction to a later maintenance run.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        hold: bool,
        /// Confidence in the text in (0, 1]; facts extracted from it inherit it. Absent: 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confidence: Option<f64>,
    },
    /// The system of record states the current value of a slot.
    #[serde(rename = "record.set")]
    RecordSet {
        /// Record system id.
        source: String,
        /// Entity name, alias or id.
        entity: String,
        /// Predicate.
        predicate: String,
        /// Value.
        value: String,
    },
    /// The system of record renames an entity.
    #[serde(rename = "record.rename")]
    RecordRename {
        /// Record system id.
        source: String,
        /// Old name.
        old: String,
        /// New name.
        new: String,
    },
    /// Sets the tenant's ontology.
    #[serde(rename = "ontology.set")]
    OntologySet {
        /// The ontology document.
        ontology: serde_json::Value,
    },
    /// Runs graph maintenance.
    #[serde(rename = "graph.maintain")]
    GraphMaintain {
        /// `patch`, `rebuild` or `repair`.
        mode: String,
    },
}

impl Event {
    /// The `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::DocUpsert { .. } => "doc.upsert",
            Event::RecordSet { .. } => "record.set",
            Event::RecordRename { .. } => "record.rename",
            Event::OntologySet { .. } => "ontology.set",
            Event::GraphMaintain { .. } => "graph.maintain",
        }
    }

    /// Checks required fields; the error names the first one missing or wrong.
    pub fn validate(&self) -> Result<(), DomainError> {
        let required = |field: &str, value: &str| {
            if value.trim().is_empty() {
                Err(DomainError::missing(field))
            } else {
                Ok(())
            }
        };
        match self {
            Event::DocUpsert {
                doc_id,
                origin,
                confidence,
                ..
            } => {
                required("doc_id", doc_id)?;
                required("origin", origin)?;
                match confidence {
                    Some(c) if !(*c > 0.0 && *c <= 1.0) => Err(DomainError::invalid(
                        "confidence",
                        format!("{c} is not in (0, 1]"),
                    )),
                    _ => Ok(()),
                }
            }
            Event::RecordSet {
                source,
                entity,
                predicate,
                value,
            } => {
                required("source", source)?;
                required("entity", entity)?;
                required("predicate", predicate)?;
                required("value", value)
            }
            Event::RecordRename { source, old, new } => {
                required("source", source)?;
                required("old", old)?;
                required("new", new)?;
                if old.trim().eq_ignore_ascii_case(new.trim()) {
                    return Err(DomainError::invalid("new", "is the same name as old"));
                }
                Ok(())
            }
            Event::OntologySet { ontology } => {
                crate::knowledge::Ontology::from_value(ontology.clone())
                    .map_err(|err| DomainError::invalid("ontology", err))?;
                Ok(())
            }
            Event::GraphMaintain { mode } => match MaintenanceMode::from_name(mode) {
                Some(
                    MaintenanceMode::Patch | MaintenanceMode::Rebuild | MaintenanceMode::Repair,
                ) => Ok(()),
                _ => Err(DomainError::invalid(
                    "mode",
                    format!("{mode:?} is not patch, rebuild or repair"),
                )),
            },
        }
    }
}

impl EventEnvelope {
    /// Parses a queue body; the error names the field path and position.
    pub fn parse(body: &[u8]) -> Result<Self, String> {
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        let envelope: Self =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
                let path = err.path().to_string();
                let inner = err.into_inner();
                format!("{path}: {inner}")
            })?;
        if envelope.tenant.trim().is_empty() {
            return Err(DomainError::missing("tenant").to_string());
        }
        envelope.event.validate().map_err(|err| err.to_string())?;
        Ok(envelope)
    }

    /// The queue body.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        let body = br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"doc.upsert","doc_id":"d02","title":"Pricing","origin":"pricing-page","body":"The Pro plan costs 49."}"#;
        let envelope = EventEnvelope::parse(body).expect("valid");
        assert_eq!(envelope.event.kind(), "doc.upsert");
        let again = EventEnvelope::parse(envelope.to_json().as_bytes()).expect("round trip");
        assert_eq!(again, envelope);
    }

    #[test]
    fn errors_name_the_field() {
        let err = EventEnvelope::parse(br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"record.set","source":"r","entity":"Pro","predicate":"price"}"#)
            .expect_err("no value");
        assert!(err.contains("value"), "{err}");
        let err = EventEnvelope::parse(
            br#"{"tenant":"acme","at":"yesterday","type":"graph.maintain","mode":"patch"}"#,
        )
        .expect_err("bad time");
        assert!(err.starts_with("at"), "{err}");
        let err = EventEnvelope::parse(br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"graph.maintain","mode":"sometimes"}"#).expect_err("bad mode");
        assert!(err.contains("mode"), "{err}");
        let err = EventEnvelope::parse(
            br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"doc.delete"}"#,
        )
        .expect_err("unknown type");
        assert!(err.contains("doc.delete"), "{err}");
        let err = EventEnvelope::parse(
            br#"{"tenant":"","at":"2026-09-01T09:00:00Z","type":"graph.maintain","mode":"patch"}"#,
        )
        .expect_err("no tenant");
        assert!(err.contains("tenant"), "{err}");
    }
}
