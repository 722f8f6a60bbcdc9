//! Events from integrations, as they travel on the queue (`ontoloop.events`): one JSON object,
//! a `type` tag and the event's fields. The timeline events of a world file have the same shape;
//! the queue adds the tenant, the intake sequence number and the time.
//!
//! Knowledge events (`doc.upsert`, `doc.delete`, `source.listing`, `record.*`, `ontology.set`,
//! `graph.maintain`) feed the knowledge graph; HR events (`employee.*`, `org.restructure`:
//! [`ontoloop_org::HrEvent`], carried as [`Event::Hr`]), `docs.push` and `item.upsert` feed the
//! ephemeral org and product graphs and the work items ([`Event::is_org`]).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use ontoloop_org::hr::HrEvent;
use ontoloop_org::items::{Scope, Severity, Source, WorkItem};
use serde::{Deserialize, Serialize};

use crate::error::DomainError;
use crate::knowledge::MaintenanceMode;

/// The longest id or name an event may carry, in bytes (page ids, origins, record systems,
/// entities, predicates, rename names, changed file paths, work item ids).
pub const MAX_NAME_BYTES: usize = 1024;

// HR events carry their own bound (the org crate validates them); it is this one.
const _: () = assert!(ontoloop_org::hr::MAX_FIELD_BYTES == MAX_NAME_BYTES);

/// The most page ids one `source.listing` may name (a source with more lists them in shards, one
/// origin each).
pub const MAX_LISTED_DOCS: usize = 100_000;

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
    /// When the telemetry intake accepted the event, where its event → visible time starts;
    /// absent for events that did not come through the intake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<DateTime<Utc>>,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

/// The kinds of event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", remote = "Self")]
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
        /// When this version takes effect, if later than the event (a page published today for
        /// next month): until then the version before stays the page's text and its facts hold,
        /// and answers note the change to come; `as_of` reads effective time. Absent, or not
        /// after the event's time: at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        effective_from: Option<DateTime<Utc>>,
    },
    /// A page is removed: every fact read from it ends (its `valid_to` is the event's time), and
    /// answers and the firewall stop citing it; an `as_of` before the deletion still sees it.
    /// Deleting a page that does not exist (or is already deleted) changes nothing.
    #[serde(rename = "doc.delete")]
    DocDelete {
        /// Page id.
        doc_id: String,
    },
    /// A source's full list of its pages: every current page of `origin` whose id is not listed
    /// is deleted as by `doc.delete` (reconcile after deletions the source never reported).
    #[serde(rename = "source.listing")]
    SourceListing {
        /// The origin whose pages are listed (as in `doc.upsert`).
        origin: String,
        /// Every page id the source holds now; at most [`MAX_LISTED_DOCS`].
        doc_ids: Vec<String>,
    },
    /// The system of record states the value of a slot, now or from a later instant.
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
        /// When the value takes effect, if later than the event (a price announced today for
        /// next month): until then the slot keeps its value and answers note the change to
        /// come; `as_of` reads effective time. Absent, or not after the event's time: at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        effective_from: Option<DateTime<Utc>>,
        /// Where the value holds (`{"region": "EU"}`); everywhere when absent. A value ends only
        /// the values of its own scope.
        #[serde(
            default,
            skip_serializing_if = "crate::knowledge::Scope::is_everywhere"
        )]
        scope: crate::knowledge::Scope,
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
        /// `patch`, `rebuild`, `repair`, `rollback` or `propose-ontology` (an ontology proposed
        /// from the tenant's pages and failed questions, queued for review; the graph is not
        /// touched).
        mode: String,
    },
    /// Documentation files changed: the product graph is rebuilt from the facts they state
    /// (`ontoloop_org::docs`).
    #[serde(rename = "docs.push")]
    DocsPush {
        /// Paths of the changed files.
        changed_files: Vec<String>,
        /// New content by path; a changed file without content was deleted.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        contents: BTreeMap<String, String>,
    },
    /// A work item is created or replaced (by id, within the tenant).
    #[serde(rename = "item.upsert")]
    ItemUpsert(ItemUpsert),
    /// An HR change (`employee.hired`, `employee.transferred`, `employee.terminated`,
    /// `org.restructure`): the org crate's own event, carried as it is, with its own `type` tag.
    #[serde(skip)]
    Hr(HrEvent),
}

// The derived impls above (`remote = "Self"`) are inherent functions; these trait impls send
// HR events to `HrEvent`'s own serde and everything else to the derived one, so an HR event type
// is declared once, in `ontoloop_org::hr`, and a refused field keeps its precise message.
impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Event::Hr(hr) => hr.serialize(serializer),
            other => Event::serialize(other, serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = serde_json::Value::deserialize(deserializer)?;
        let is_hr = value
            .get("type")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|kind| HrEvent::TYPES.contains(&kind));
        if is_hr {
            HrEvent::deserialize(value)
                .map(Event::Hr)
                .map_err(D::Error::custom)
        } else {
            Event::deserialize(value).map_err(D::Error::custom)
        }
    }
}

/// A work item as an integration states it; the envelope's tenant owns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemUpsert {
    /// Id, unique within the tenant.
    pub id: String,
    /// Short title.
    pub title: String,
    /// Person id of the assignee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// Service id the item is filed against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// `critical`, `high`, `medium` or `low`.
    pub severity: Severity,
    /// `code`, `bugs`, `features`, `production`, `critical` or `strategic`.
    pub scope: Scope,
    /// System of origin (`jira`, `servicenow`, ...).
    pub source: Source,
    /// When the item was created; absent: the event's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// Principals or groups that may read it; empty for the whole tenant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acl: Vec<String>,
}

impl ItemUpsert {
    /// The item of `tenant`, created at `at` unless the upsert says otherwise.
    pub fn to_item(&self, tenant: &str, at: DateTime<Utc>) -> WorkItem {
        WorkItem {
            id: self.id.trim().to_owned(),
            tenant: tenant.to_owned(),
            title: self.title.clone(),
            assignee: self.assignee.clone().filter(|a| !a.trim().is_empty()),
            service: self.service.clone().filter(|s| !s.trim().is_empty()),
            severity: self.severity,
            scope: self.scope,
            source: self.source.clone(),
            created_at: self.created_at.unwrap_or(at),
            acl: self.acl.clone(),
        }
    }
}

impl Event {
    /// The `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::DocUpsert { .. } => "doc.upsert",
            Event::DocDelete { .. } => "doc.delete",
            Event::SourceListing { .. } => "source.listing",
            Event::RecordSet { .. } => "record.set",
            Event::RecordRename { .. } => "record.rename",
            Event::OntologySet { .. } => "ontology.set",
            Event::GraphMaintain { .. } => "graph.maintain",
            Event::DocsPush { .. } => "docs.push",
            Event::ItemUpsert(_) => "item.upsert",
            Event::Hr(hr) => hr.type_name(),
        }
    }

    /// Whether the event feeds the org and product graphs and the work items rather than the
    /// knowledge graph.
    pub fn is_org(&self) -> bool {
        matches!(
            self,
            Event::Hr(_) | Event::DocsPush { .. } | Event::ItemUpsert(_)
        )
    }

    /// The HR event this is, if it is one.
    pub fn hr_event(&self) -> Option<&HrEvent> {
        match self {
            Event::Hr(hr) => Some(hr),
            _ => None,
        }
    }

    /// Checks required fields; the error names the first one missing or wrong.
    pub fn validate(&self) -> Result<(), DomainError> {
        let present = |field: &str, value: &str| {
            if value.trim().is_empty() {
                Err(DomainError::missing(field))
            } else {
                Ok(())
            }
        };
        // Ids and names are keys the store indexes: bounded, so a huge one is refused here
        // with its field rather than by the database.
        let required = |field: &str, value: &str| {
            present(field, value)?;
            if value.len() > MAX_NAME_BYTES {
                return Err(DomainError::invalid(
                    field,
                    format!(
                        "{} bytes are more than MAX_NAME_BYTES ({MAX_NAME_BYTES})",
                        value.len()
                    ),
                ));
            }
            Ok(())
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
            Event::DocDelete { doc_id } => required("doc_id", doc_id),
            Event::SourceListing { origin, doc_ids } => {
                required("origin", origin)?;
                if doc_ids.len() > MAX_LISTED_DOCS {
                    return Err(DomainError::invalid(
                        "doc_ids",
                        format!(
                            "{} ids are more than MAX_LISTED_DOCS ({MAX_LISTED_DOCS})",
                            doc_ids.len()
                        ),
                    ));
                }
                for (i, id) in doc_ids.iter().enumerate() {
                    required(&format!("doc_ids[{i}]"), id)?;
                }
                Ok(())
            }
            Event::RecordSet {
                source,
                entity,
                predicate,
                value,
                scope,
                ..
            } => {
                required("source", source)?;
                required("entity", entity)?;
                required("predicate", predicate)?;
                scope
                    .check()
                    .map_err(|err| DomainError::invalid("scope", err.to_string()))?;
                present("value", value)
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
                    MaintenanceMode::Patch
                    | MaintenanceMode::Rebuild
                    | MaintenanceMode::Repair
                    | MaintenanceMode::Rollback
                    | MaintenanceMode::ProposeOntology,
                ) => Ok(()),
                _ => Err(DomainError::invalid(
                    "mode",
                    format!("{mode:?} is not patch, rebuild, repair, rollback or propose-ontology"),
                )),
            },
            Event::Hr(hr) => hr.validate().map_err(DomainError::from),
            Event::DocsPush {
                changed_files,
                contents,
            } => {
                if changed_files.is_empty() {
                    return Err(DomainError::missing("changed_files"));
                }
                for (i, path) in changed_files.iter().enumerate() {
                    required(&format!("changed_files[{i}]"), path)?;
                }
                match contents.keys().find(|path| !changed_files.contains(path)) {
                    Some(path) => Err(DomainError::invalid(
                        "contents",
                        format!("{path:?} is not among changed_files"),
                    )),
                    None => Ok(()),
                }
            }
            Event::ItemUpsert(item) => {
                required("id", &item.id)?;
                present("title", &item.title)?;
                required("source", item.source.as_str())?;
                optional("assignee", item.assignee.as_deref())?;
                optional("service", item.service.as_deref())
            }
        }
    }
}

/// An optional field that, when present, must not be blank.
fn optional(field: &str, value: Option<&str>) -> Result<(), DomainError> {
    match value {
        Some(v) if v.trim().is_empty() => Err(DomainError::invalid(field, "must not be blank")),
        _ => Ok(()),
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
        // One JSON value and nothing after it: bytes after the event are refused, not ignored.
        deserializer.end().map_err(|err| format!(".: {err}"))?;
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
    fn deletions_and_listings_parse_and_are_checked() {
        let delete =
            br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"doc.delete","doc_id":"d02"}"#;
        let envelope = EventEnvelope::parse(delete).expect("valid");
        assert_eq!(
            envelope.event,
            Event::DocDelete {
                doc_id: "d02".into()
            }
        );
        let listing = br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"source.listing","origin":"wiki","doc_ids":["a","b"]}"#;
        let envelope = EventEnvelope::parse(listing).expect("valid");
        assert_eq!(envelope.event.kind(), "source.listing");
        let again = EventEnvelope::parse(envelope.to_json().as_bytes()).expect("round trip");
        assert_eq!(again, envelope);
        let blank = Event::DocDelete { doc_id: " ".into() };
        assert!(blank.validate().is_err());
        let too_many = Event::SourceListing {
            origin: "wiki".into(),
            doc_ids: vec!["a".into(); MAX_LISTED_DOCS + 1],
        };
        let err = too_many.validate().expect_err("too many ids");
        assert!(err.to_string().contains("MAX_LISTED_DOCS"), "{err}");
    }

    #[test]
    fn an_id_longer_than_the_limit_is_refused_naming_it() {
        let id = |len: usize| Event::DocDelete {
            doc_id: "x".repeat(len),
        };
        assert!(id(MAX_NAME_BYTES).validate().is_ok());
        let err = id(MAX_NAME_BYTES + 1).validate().expect_err("too long");
        assert!(
            err.to_string().contains("doc_id") && err.to_string().contains("MAX_NAME_BYTES"),
            "{err}"
        );
        // A record's value is not a key: it may be longer.
        let record = Event::RecordSet {
            source: "billing".into(),
            entity: "Pro".into(),
            predicate: "price".into(),
            value: "9".repeat(MAX_NAME_BYTES * 2),
            effective_from: None,
            scope: crate::knowledge::Scope::everywhere(),
        };
        assert!(record.validate().is_ok());
    }

    #[test]
    fn bytes_after_the_event_are_refused() {
        let event = r#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"graph.maintain","mode":"patch"}"#;
        assert!(EventEnvelope::parse(event.as_bytes()).is_ok());
        assert!(EventEnvelope::parse(format!("{event}  \n").as_bytes()).is_ok());
        for trailing in ["x", "{}", "\u{0}"] {
            let err = EventEnvelope::parse(format!("{event}{trailing}").as_bytes())
                .expect_err("trailing bytes");
            assert!(err.contains("trailing"), "{trailing:?}: {err}");
        }
        let mut garbage = event.as_bytes().to_vec();
        garbage.extend_from_slice(&[0xff, 0x2b, 0x17]);
        assert!(EventEnvelope::parse(&garbage).is_err());
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
            br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"doc.archive"}"#,
        )
        .expect_err("unknown type");
        assert!(err.contains("doc.archive"), "{err}");
        let err = EventEnvelope::parse(
            br#"{"tenant":"","at":"2026-09-01T09:00:00Z","type":"graph.maintain","mode":"patch"}"#,
        )
        .expect_err("no tenant");
        assert!(err.contains("tenant"), "{err}");
    }

    #[test]
    fn org_events_round_trip_and_convert() {
        let bodies: [&[u8]; 6] = [
            br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"employee.hired","id":"p9","name":"Nia","team":"eng","role":"sre","manager":"p1"}"#,
            br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"employee.transferred","person":"p9","team":"ops","manager":"p2"}"#,
            br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"employee.terminated","person":"p9"}"#,
            br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"org.restructure","teams":[{"id":"ops","name":"Ops"}],"moves":[{"person":"p2","team":"ops"}]}"#,
            br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"docs.push","changed_files":["a.md","b.md"],"contents":{"a.md":"---\nid: x\n---"}}"#,
            br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"item.upsert","id":"T-1","title":"Fix it","assignee":"p2","severity":"high","scope":"bugs","source":"jira"}"#,
        ];
        for body in bodies {
            let envelope = EventEnvelope::parse(body).expect("valid org event");
            assert!(envelope.event.is_org(), "{}", envelope.event.kind());
            let again = EventEnvelope::parse(envelope.to_json().as_bytes()).expect("round trip");
            assert_eq!(again, envelope);
            if let Some(hr) = envelope.event.hr_event() {
                assert_eq!(hr.type_name(), envelope.event.kind());
                assert_eq!(envelope.event, Event::Hr(hr.clone()));
            }
        }
        let item = EventEnvelope::parse(bodies[5]).expect("valid");
        let Event::ItemUpsert(upsert) = &item.event else {
            panic!("not an item upsert");
        };
        let work = upsert.to_item("acme", item.at);
        assert_eq!((work.tenant.as_str(), work.created_at), ("acme", item.at));
        assert!(
            !Event::GraphMaintain {
                mode: "patch".into()
            }
            .is_org()
        );
    }

    #[test]
    fn org_event_errors_name_the_field() {
        let cases: [(&[u8], &str); 5] = [
            (
                br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"employee.hired","id":"p9","name":"Nia","team":"","role":"sre"}"#,
                "team",
            ),
            (
                br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"employee.transferred","person":"p9"}"#,
                "team",
            ),
            (
                br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"org.restructure","moves":[{"person":" ","team":"ops"}]}"#,
                "moves[0].person",
            ),
            (
                br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"docs.push","changed_files":["a.md"],"contents":{"b.md":""}}"#,
                "contents",
            ),
            (
                br#"{"tenant":"acme","at":"2026-09-01T09:00:00Z","type":"item.upsert","id":"T-1","title":"x","severity":"urgent","scope":"bugs","source":"jira"}"#,
                "urgent",
            ),
        ];
        for (body, field) in cases {
            let err = EventEnvelope::parse(body).expect_err("invalid");
            assert!(err.contains(field), "{err} should name {field}");
        }
    }
}
