//! Conversions between wire types and domain types, both directions, and the one conversion from
//! an error ([`ServiceError`]) to a gRPC status.

use ontoloop_core::events::{Event, EventEnvelope};
use ontoloop_core::{Caller, DomainError, ErrorCode, ServiceError};
use ontoloop_org::hr::{HrEvent, Move, Person, Team};
use tonic::{Code, Status};

use crate::v1;

/// The gRPC code for each domain error code. Exhaustive on purpose: a new `ErrorCode` must be
/// given its gRPC code here.
pub fn grpc_code(code: ErrorCode) -> Code {
    match code {
        ErrorCode::InvalidArgument => Code::InvalidArgument,
        ErrorCode::NotFound => Code::NotFound,
        ErrorCode::Unauthenticated => Code::Unauthenticated,
        ErrorCode::PermissionDenied => Code::PermissionDenied,
        ErrorCode::FailedPrecondition => Code::FailedPrecondition,
        ErrorCode::Unavailable => Code::Unavailable,
        ErrorCode::Unimplemented => Code::Unimplemented,
        ErrorCode::Internal => Code::Internal,
    }
}

/// Longest message a status carries, in bytes. An error may quote what the caller sent (a name,
/// a value), and a status travels in an HTTP/2 header, which clients cap: a client that is sent
/// a longer header block resets the call instead of reading the status, and enough such resets
/// make the server close the whole connection (HTTP/2's reset-flood guard), failing the other
/// calls on it.
pub const MAX_STATUS_MESSAGE_BYTES: usize = 1024;

/// The gRPC status of any service error: its code through [`grpc_code`], its message as it
/// displays, cut to [`MAX_STATUS_MESSAGE_BYTES`]. The one conversion from an error to a
/// `tonic::Status`.
pub fn status_from(err: impl ServiceError) -> Status {
    Status::new(
        grpc_code(err.error_code()),
        bounded_message(err.to_string()),
    )
}

/// `message` as it is when it fits in [`MAX_STATUS_MESSAGE_BYTES`]; else its head, cut at a
/// character boundary, and its full length.
pub fn bounded_message(message: String) -> String {
    if message.len() <= MAX_STATUS_MESSAGE_BYTES {
        return message;
    }
    let tail = format!("… ({} bytes in all)", message.len());
    let mut cut = MAX_STATUS_MESSAGE_BYTES - tail.len();
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{tail}", &message[..cut])
}

impl TryFrom<v1::Caller> for Caller {
    type Error = Status;

    fn try_from(caller: v1::Caller) -> Result<Self, Status> {
        Caller::new(&caller.tenant, &caller.principal).map_err(status_from)
    }
}

/// A request message that names its caller.
pub trait WithCaller {
    /// The `caller` field.
    fn caller(&self) -> Option<&v1::Caller>;
}

macro_rules! with_caller {
    ($($message:ident),* $(,)?) => {$(
        impl WithCaller for v1::$message {
            fn caller(&self) -> Option<&v1::Caller> {
                self.caller.as_ref()
            }
        }
    )*};
}

with_caller!(
    AskRequest,
    LookupRequest,
    ResolveCitationRequest,
    PlateRequest,
    ProjectContextRequest,
    SearchRequest,
    ValidateRequest,
    Signal,
    Event,
    NextReviewRequest,
    DecideRequest,
    ListPatternsRequest,
    ListMaintenanceRunsRequest,
    TenantSummaryRequest,
    ListPagesRequest,
);

/// The caller of a request: the one way every service learns who asks. With authentication on,
/// the runtime's trust boundary put the token's [`Identity`](ontoloop_auth::Identity) in the
/// request's extensions, and it is the caller (with the token's groups); a body `caller` that
/// names another tenant or principal is PERMISSION_DENIED, an empty one takes the token's. With
/// authentication off the body's `caller` is required and trusted.
pub fn caller_from<M: WithCaller>(request: &tonic::Request<M>) -> Result<Caller, Status> {
    caller_in(request.extensions(), request.get_ref().caller(), "caller")
}

/// [`caller_from`] for a message of a stream: the identity is the stream's, `field` names the
/// message's caller in errors (`signals[3].caller`).
pub fn caller_in(
    extensions: &tonic::Extensions,
    body: Option<&v1::Caller>,
    field: &str,
) -> Result<Caller, Status> {
    let Some(identity) = extensions.get::<ontoloop_auth::Identity>() else {
        let caller = body.ok_or_else(|| status_from(DomainError::missing(field)))?;
        return Caller::new(&caller.tenant, &caller.principal).map_err(|err| {
            if field == "caller" {
                status_from(err)
            } else {
                status_from(DomainError::invalid(field, err))
            }
        });
    };
    if let Some(body) = body {
        for (part, given, proven) in [
            ("tenant", &body.tenant, &identity.tenant),
            ("principal", &body.principal, &identity.principal),
        ] {
            let given = given.trim();
            if !given.is_empty() && given != proven {
                return Err(status_from(ontoloop_auth::Denied::Caller {
                    field: format!("{field}.{part}"),
                    given: given.to_owned(),
                }));
            }
        }
    }
    Caller::new(&identity.tenant, &identity.principal)
        .map(|caller| caller.with_groups(identity.groups.iter().cloned()))
        .map_err(status_from)
}

/// Refuses the call unless its verified identity may act in `role` for `what` (an event kind,
/// say); with authentication off there is no identity and nothing to check.
pub fn require_role(
    extensions: &tonic::Extensions,
    role: ontoloop_auth::Role,
    what: &str,
) -> Result<(), Status> {
    match extensions.get::<ontoloop_auth::Identity>() {
        Some(identity) => {
            ontoloop_auth::Denied::unless_may(identity, role, what).map_err(status_from)
        }
        None => Ok(()),
    }
}

impl From<&Caller> for v1::Caller {
    fn from(caller: &Caller) -> Self {
        v1::Caller {
            tenant: caller.tenant().to_owned(),
            principal: caller.principal().to_owned(),
        }
    }
}

/// The wire form of an instant.
pub fn timestamp(at: chrono::DateTime<chrono::Utc>) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: at.timestamp(),
        nanos: i32::try_from(at.timestamp_subsec_nanos()).unwrap_or_default(),
    }
}

/// An optional wire instant as a time, `default` when absent; a value out of range is
/// INVALID_ARGUMENT naming `field`.
pub fn instant_or(
    ts: Option<prost_types::Timestamp>,
    field: &str,
    default: chrono::DateTime<chrono::Utc>,
) -> Result<chrono::DateTime<chrono::Utc>, Status> {
    match ts {
        None => Ok(default),
        Some(ts) => chrono::DateTime::from_timestamp(
            ts.seconds,
            u32::try_from(ts.nanos).unwrap_or_default(),
        )
        .ok_or_else(|| status_from(DomainError::invalid(field, "timestamp out of range"))),
    }
}

/// A wire scope (`region=EU, plan=Pro`; empty: everywhere); one that cannot be read is
/// INVALID_ARGUMENT naming `field` and why.
pub fn scope(text: &str, field: &str) -> Result<ontoloop_core::knowledge::Scope, Status> {
    ontoloop_core::knowledge::Scope::parse(text)
        .map_err(|err| status_from(DomainError::invalid(field, err)))
}

/// An optional wire instant as an optional time; a value out of range is INVALID_ARGUMENT
/// naming `field`.
pub fn instant(
    ts: Option<prost_types::Timestamp>,
    field: &str,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, Status> {
    ts.map(|ts| instant_or(Some(ts), field, chrono::DateTime::UNIX_EPOCH))
        .transpose()
}

impl From<ontoloop_core::Severity> for v1::Severity {
    fn from(severity: ontoloop_core::Severity) -> Self {
        match severity {
            ontoloop_core::Severity::Low => v1::Severity::Low,
            ontoloop_core::Severity::Medium => v1::Severity::Medium,
            ontoloop_core::Severity::High => v1::Severity::High,
            ontoloop_core::Severity::Critical => v1::Severity::Critical,
        }
    }
}

/// Converts a pushed event into the queue's event envelope for `tenant`, accepted at `now` and
/// stamped at `now` when the event carries no time.
pub fn event_from(
    event: v1::Event,
    tenant: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<EventEnvelope, Status> {
    use v1::event::Kind;
    let at = instant_or(event.at, "at", now)?;
    let kind = event
        .kind
        .ok_or_else(|| status_from(DomainError::missing("kind")))?;
    let event = match kind {
        Kind::DocUpsert(d) => Event::DocUpsert {
            doc_id: d.doc_id,
            title: d.title,
            origin: d.origin,
            body: d.body,
            acl: d.acl,
            hold: d.hold,
            confidence: (d.confidence != 0.0).then_some(d.confidence),
            effective_from: instant(d.effective_from, "doc_upsert.effective_from")?,
        },
        Kind::DocDelete(d) => Event::DocDelete { doc_id: d.doc_id },
        Kind::SourceListing(l) => Event::SourceListing {
            origin: l.origin,
            doc_ids: l.doc_ids,
        },
        Kind::RecordSet(r) => Event::RecordSet {
            effective_from: instant(r.effective_from, "record_set.effective_from")?,
            scope: scope(&r.scope, "record_set.scope")?,
            source: r.source,
            entity: r.entity,
            predicate: r.predicate,
            value: r.value,
        },
        Kind::RecordRename(r) => Event::RecordRename {
            source: r.source,
            old: r.old,
            new: r.new,
        },
        Kind::OntologySet(o) => Event::OntologySet {
            ontology: serde_json::from_str(&o.ontology_json).map_err(|err| {
                status_from(DomainError::invalid("ontology_set.ontology_json", err))
            })?,
        },
        Kind::GraphMaintain(m) => Event::GraphMaintain { mode: m.mode },
        Kind::Hr(hr) => Event::Hr(hr_event(hr)?),
        Kind::DocsPush(d) => Event::DocsPush {
            changed_files: d.changed_files,
            contents: d.contents.into_iter().collect(),
        },
        Kind::WorkItem(item) => item_event(item, at)?,
    };
    event.validate().map_err(status_from)?;
    Ok(EventEnvelope {
        tenant: tenant.to_owned(),
        seq: None,
        at,
        accepted: Some(now),
        event,
    })
}

/// The pushed event a domain event is sent as, by `caller` at `at`; the inverse of
/// [`event_from`].
pub fn event_to_wire(
    caller: &Caller,
    event: &Event,
    at: chrono::DateTime<chrono::Utc>,
) -> v1::Event {
    use v1::event::Kind;
    let kind = match event {
        Event::DocUpsert {
            doc_id,
            title,
            origin,
            body,
            acl,
            hold,
            confidence,
            effective_from,
        } => Kind::DocUpsert(v1::DocUpsert {
            doc_id: doc_id.clone(),
            title: title.clone(),
            origin: origin.clone(),
            body: body.clone(),
            acl: acl.clone(),
            hold: *hold,
            confidence: confidence.unwrap_or_default(),
            effective_from: effective_from.map(timestamp),
        }),
        Event::DocDelete { doc_id } => Kind::DocDelete(v1::DocDelete {
            doc_id: doc_id.clone(),
        }),
        Event::SourceListing { origin, doc_ids } => Kind::SourceListing(v1::SourceListing {
            origin: origin.clone(),
            doc_ids: doc_ids.clone(),
        }),
        Event::RecordSet {
            source,
            entity,
            predicate,
            value,
            effective_from,
            scope,
        } => Kind::RecordSet(v1::RecordSet {
            source: source.clone(),
            entity: entity.clone(),
            predicate: predicate.clone(),
            value: value.clone(),
            effective_from: effective_from.map(timestamp),
            scope: scope.encode(),
        }),
        Event::RecordRename { source, old, new } => Kind::RecordRename(v1::RecordRename {
            source: source.clone(),
            old: old.clone(),
            new: new.clone(),
        }),
        Event::OntologySet { ontology } => Kind::OntologySet(v1::OntologySet {
            ontology_json: ontology.to_string(),
        }),
        Event::GraphMaintain { mode } => {
            Kind::GraphMaintain(v1::GraphMaintain { mode: mode.clone() })
        }
        Event::Hr(hr) => Kind::Hr(hr.into()),
        Event::DocsPush {
            changed_files,
            contents,
        } => Kind::DocsPush(v1::DocsPush {
            changed_files: changed_files.clone(),
            contents: contents.clone().into_iter().collect(),
        }),
        Event::ItemUpsert(item) => Kind::WorkItem(v1::WorkItemUpsert {
            item_id: item.id.clone(),
            title: item.title.clone(),
            assignee: item.assignee.clone().unwrap_or_default(),
            service: item.service.clone().unwrap_or_default(),
            severity: item.severity.name().to_owned(),
            scope: item.scope.as_str().to_owned(),
            source_type: item.source.as_str().to_owned(),
            created_at: item.created_at.map(timestamp),
            acl: item.acl.clone(),
        }),
    };
    v1::Event {
        caller: Some(caller.into()),
        at: Some(timestamp(at)),
        idempotency_key: String::new(),
        kind: Some(kind),
    }
}

/// An empty wire string as `None`.
fn non_empty(text: String) -> Option<String> {
    Some(text).filter(|t| !t.trim().is_empty())
}

/// The HR event an HR push describes; the error names the field.
fn hr_event(hr: v1::HrEvent) -> Result<HrEvent, Status> {
    let kind = v1::HrEventType::try_from(hr.r#type).map_err(|_| {
        status_from(DomainError::invalid(
            "hr.type",
            format!("unknown HR event type {}", hr.r#type),
        ))
    })?;
    let restructure_only = !hr.teams.is_empty() || !hr.moves.is_empty() || !hr.dissolve.is_empty();
    if restructure_only && kind != v1::HrEventType::OrgRestructure {
        return Err(status_from(DomainError::invalid(
            "hr.teams",
            "teams, moves and dissolve belong to an org.restructure",
        )));
    }
    Ok(match kind {
        v1::HrEventType::Unspecified => return Err(status_from(DomainError::missing("hr.type"))),
        v1::HrEventType::EmployeeHired => HrEvent::Hired(Person {
            id: hr.person_id,
            name: hr.name,
            team: hr.team,
            role: hr.role,
            manager: non_empty(hr.manager_id),
        }),
        v1::HrEventType::EmployeeTransferred => HrEvent::Transferred {
            person: hr.person_id,
            team: hr.team,
            manager: non_empty(hr.manager_id),
            role: non_empty(hr.role),
        },
        v1::HrEventType::EmployeeTerminated => HrEvent::Terminated {
            person: hr.person_id,
        },
        v1::HrEventType::OrgRestructure => HrEvent::Restructure {
            teams: hr
                .teams
                .into_iter()
                .map(|t| Team {
                    id: t.id,
                    name: t.name,
                    parent: non_empty(t.parent),
                })
                .collect(),
            moves: hr
                .moves
                .into_iter()
                .map(|m| Move {
                    person: m.person_id,
                    team: m.team,
                    manager: non_empty(m.manager_id),
                    role: non_empty(m.role),
                })
                .collect(),
            dissolve: hr.dissolve,
        },
    })
}

/// The wire form of an HR event; the inverse of [`hr_event`].
impl From<&HrEvent> for v1::HrEvent {
    fn from(event: &HrEvent) -> Self {
        match event {
            HrEvent::Hired(person) => v1::HrEvent {
                r#type: v1::HrEventType::EmployeeHired as i32,
                person_id: person.id.clone(),
                name: person.name.clone(),
                team: person.team.clone(),
                role: person.role.clone(),
                manager_id: person.manager.clone().unwrap_or_default(),
                ..Default::default()
            },
            HrEvent::Transferred {
                person,
                team,
                manager,
                role,
            } => v1::HrEvent {
                r#type: v1::HrEventType::EmployeeTransferred as i32,
                person_id: person.clone(),
                team: team.clone(),
                role: role.clone().unwrap_or_default(),
                manager_id: manager.clone().unwrap_or_default(),
                ..Default::default()
            },
            HrEvent::Terminated { person } => v1::HrEvent {
                r#type: v1::HrEventType::EmployeeTerminated as i32,
                person_id: person.clone(),
                ..Default::default()
            },
            HrEvent::Restructure {
                teams,
                moves,
                dissolve,
            } => v1::HrEvent {
                r#type: v1::HrEventType::OrgRestructure as i32,
                teams: teams
                    .iter()
                    .map(|t| v1::HrTeam {
                        id: t.id.clone(),
                        name: t.name.clone(),
                        parent: t.parent.clone().unwrap_or_default(),
                    })
                    .collect(),
                moves: moves
                    .iter()
                    .map(|m| v1::HrMove {
                        person_id: m.person.clone(),
                        team: m.team.clone(),
                        manager_id: m.manager.clone().unwrap_or_default(),
                        role: m.role.clone().unwrap_or_default(),
                    })
                    .collect(),
                dissolve: dissolve.clone(),
                ..Default::default()
            },
        }
    }
}

/// The domain event a work-item push describes; the error names the field.
fn item_event(
    item: v1::WorkItemUpsert,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<Event, Status> {
    use ontoloop_core::events::ItemUpsert;
    use ontoloop_org::items::{Scope, Severity, Source};
    let severity = Severity::ALL
        .into_iter()
        .find(|s| s.name() == item.severity.trim())
        .ok_or_else(|| {
            status_from(DomainError::invalid(
                "work_item.severity",
                format!("{:?} is not critical, high, medium or low", item.severity),
            ))
        })?;
    let scope = Scope::ALL
        .into_iter()
        .find(|s| s.as_str() == item.scope.trim())
        .ok_or_else(|| {
            status_from(DomainError::invalid(
                "work_item.scope",
                format!(
                    "{:?} is not code, bugs, features, production, critical or strategic",
                    item.scope
                ),
            ))
        })?;
    if item.source_type.trim().is_empty() {
        return Err(status_from(DomainError::missing("work_item.source_type")));
    }
    let created_at = match item.created_at {
        Some(ts) => Some(instant_or(Some(ts), "work_item.created_at", at)?),
        None => None,
    };
    Ok(Event::ItemUpsert(ItemUpsert {
        id: item.item_id,
        title: item.title,
        assignee: non_empty(item.assignee),
        service: non_empty(item.service),
        severity,
        scope,
        source: Source::from(item.source_type.trim()),
        created_at,
        acl: item.acl,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hr(kind: v1::HrEventType) -> v1::HrEvent {
        v1::HrEvent {
            r#type: kind as i32,
            person_id: "p1".into(),
            name: "Ada".into(),
            team: "eng".into(),
            role: "engineer".into(),
            manager_id: String::new(),
            teams: Vec::new(),
            moves: Vec::new(),
            dissolve: Vec::new(),
        }
    }

    fn push(kind: v1::event::Kind) -> Result<EventEnvelope, Status> {
        let event = v1::Event {
            caller: None,
            at: None,
            idempotency_key: String::new(),
            kind: Some(kind),
        };
        event_from(event, "acme", chrono::Utc::now())
    }

    #[test]
    fn hr_pushes_become_org_events() {
        use v1::event::Kind;
        let hired = push(Kind::Hr(hr(v1::HrEventType::EmployeeHired))).expect("valid hire");
        assert_eq!(hired.event.kind(), "employee.hired");
        let moved = push(Kind::Hr(v1::HrEvent {
            role: String::new(),
            ..hr(v1::HrEventType::EmployeeTransferred)
        }))
        .expect("valid transfer");
        assert_eq!(
            moved.event.hr_event(),
            Some(&ontoloop_org::HrEvent::Transferred {
                person: "p1".into(),
                team: "eng".into(),
                manager: None,
                role: None
            })
        );
        let status = push(Kind::Hr(hr(v1::HrEventType::Unspecified))).expect_err("no type");
        assert!(status.message().contains("hr.type"), "{status:?}");
        let status = push(Kind::Hr(v1::HrEvent {
            dissolve: vec!["eng".into()],
            ..hr(v1::HrEventType::EmployeeTerminated)
        }))
        .expect_err("restructure fields on a termination");
        assert!(status.message().contains("hr.teams"), "{status:?}");
        let status = push(Kind::Hr(v1::HrEvent {
            team: String::new(),
            ..hr(v1::HrEventType::EmployeeHired)
        }))
        .expect_err("no team");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().contains("team"), "{status:?}");
    }

    #[test]
    fn every_event_kind_round_trips_through_the_wire() {
        let caller = Caller::new("acme", "alice").expect("valid caller");
        let at = chrono::DateTime::from_timestamp(1_788_000_000, 0).expect("valid time");
        let bodies = [
            r#"{"type":"doc.upsert","doc_id":"d1","title":"T","origin":"wiki","body":"B","acl":["bob"],"hold":true,"confidence":0.5}"#,
            r#"{"type":"record.set","source":"crm","entity":"Pro","predicate":"price","value":"49"}"#,
            r#"{"type":"record.rename","source":"crm","old":"Pro","new":"Plus"}"#,
            r#"{"type":"ontology.set","ontology":{"predicates":[{"name":"led_by","subject_type":"team","object_type":"person","patterns":["The {s} team is led by {o}."]}],"authority":{"default":1}}}"#,
            r#"{"type":"graph.maintain","mode":"repair"}"#,
            r#"{"type":"employee.hired","id":"p9","name":"Nia","team":"eng","role":"sre","manager":"p1"}"#,
            r#"{"type":"employee.transferred","person":"p9","team":"ops","role":"lead"}"#,
            r#"{"type":"employee.terminated","person":"p9"}"#,
            r#"{"type":"org.restructure","teams":[{"id":"ops","name":"Ops","parent":"eng"}],"moves":[{"person":"p2","team":"ops","manager":"p1"}],"dissolve":["qa"]}"#,
            r#"{"type":"docs.push","changed_files":["a.md","b.md"],"contents":{"a.md":"x"}}"#,
            r#"{"type":"item.upsert","id":"T-1","title":"Fix","assignee":"p2","service":"api","severity":"high","scope":"bugs","source":"jira","created_at":"2026-09-01T09:00:00Z","acl":["p2"]}"#,
        ];
        for body in bodies {
            let event: Event = serde_json::from_str(body).expect("valid event");
            let wire = event_to_wire(&caller, &event, at);
            assert_eq!(wire.caller, Some(v1::Caller::from(&caller)));
            let back = event_from(wire, "acme", chrono::Utc::now()).expect("valid push");
            assert_eq!((back.event, back.at), (event, at), "{body}");
        }
    }

    #[test]
    fn docs_and_item_pushes_are_checked() {
        use v1::event::Kind;
        let docs = push(Kind::DocsPush(v1::DocsPush {
            changed_files: vec!["a.md".into()],
            contents: [("a.md".to_owned(), "---\nid: x\n---".to_owned())].into(),
        }))
        .expect("valid docs push");
        assert_eq!(docs.event.kind(), "docs.push");
        let status = push(Kind::DocsPush(v1::DocsPush::default())).expect_err("no files");
        assert!(status.message().contains("changed_files"), "{status:?}");
        let item = v1::WorkItemUpsert {
            item_id: "T-1".into(),
            title: "Fix".into(),
            severity: "high".into(),
            scope: "bugs".into(),
            source_type: "Jira".into(),
            ..Default::default()
        };
        let upsert = push(Kind::WorkItem(item.clone())).expect("valid item");
        assert_eq!(upsert.event.kind(), "item.upsert");
        let status = push(Kind::WorkItem(v1::WorkItemUpsert {
            severity: "urgent".into(),
            ..item
        }))
        .expect_err("bad severity");
        assert!(
            status.message().contains("work_item.severity"),
            "{status:?}"
        );
    }

    fn ask(caller: Option<v1::Caller>) -> tonic::Request<v1::AskRequest> {
        tonic::Request::new(v1::AskRequest {
            caller,
            ..Default::default()
        })
    }

    fn wire(tenant: &str, principal: &str) -> Option<v1::Caller> {
        Some(v1::Caller {
            tenant: tenant.into(),
            principal: principal.into(),
        })
    }

    #[test]
    fn a_missing_caller_is_invalid_and_named() {
        let status = caller_from(&ask(None)).expect_err("no caller");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().contains("caller"));
        let status = caller_from(&ask(wire("acme", ""))).expect_err("blank principal");
        assert!(status.message().contains("caller.principal"));
    }

    #[test]
    fn a_caller_round_trips() {
        let caller = caller_from(&ask(wire("acme", "alice"))).expect("valid");
        assert_eq!(v1::Caller::from(&caller).principal, "alice");
    }

    #[test]
    fn with_a_token_the_caller_is_the_token_and_a_differing_body_is_refused() {
        use ontoloop_auth::{Identity, Role};
        let identity = Identity {
            tenant: "acme".into(),
            principal: "alice".into(),
            groups: vec!["finance".into()],
            roles: [Role::Agent].into(),
        };
        let with_token = |caller| {
            let mut request = ask(caller);
            request.extensions_mut().insert(identity.clone());
            request
        };
        for body in [None, wire("", ""), wire("acme", "alice"), wire("acme", "")] {
            let caller = caller_from(&with_token(body.clone())).expect("the token's caller");
            assert_eq!(
                (caller.tenant(), caller.principal()),
                ("acme", "alice"),
                "{body:?}"
            );
            assert_eq!(caller.groups(), ["finance".to_owned()]);
        }
        let status = caller_from(&with_token(wire("globex", "alice"))).expect_err("tenant");
        assert_eq!(status.code(), Code::PermissionDenied);
        assert!(status.message().contains("caller.tenant"), "{status:?}");
        let status = caller_from(&with_token(wire("acme", "cfo"))).expect_err("principal");
        assert_eq!(status.code(), Code::PermissionDenied);
        assert!(status.message().contains("caller.principal"), "{status:?}");
        let request = with_token(None);
        let status =
            require_role(request.extensions(), Role::Admin, "ontology.set").expect_err("not admin");
        assert_eq!(status.code(), Code::PermissionDenied);
        assert!(status.message().contains("`admin`"), "{status:?}");
        assert!(require_role(request.extensions(), Role::Agent, "Ask").is_ok());
        assert!(require_role(ask(None).extensions(), Role::Admin, "ontology.set").is_ok());
    }

    #[test]
    fn a_status_message_is_cut_to_its_bound_at_a_character_boundary() {
        assert_eq!(bounded_message("short".into()), "short");
        let long = "é".repeat(5_000);
        let cut = bounded_message(long.clone());
        assert!(cut.len() <= MAX_STATUS_MESSAGE_BYTES, "{} bytes", cut.len());
        assert!(cut.starts_with("éé"));
        assert!(cut.ends_with(&format!("… ({} bytes in all)", long.len())));
        let status = status_from(DomainError::invalid("name", &long));
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().len() <= MAX_STATUS_MESSAGE_BYTES);
    }
}
