//! Conversions between wire types and domain types, and the one error-code mapping.

use ontoloop_core::{Caller, DomainError, ErrorCode};
use tonic::{Code, Status};

use crate::v1;

/// The gRPC code for each domain error code. Exhaustive on purpose: a new `ErrorCode` must be
/// given its gRPC code here.
pub fn grpc_code(code: ErrorCode) -> Code {
    match code {
        ErrorCode::InvalidArgument => Code::InvalidArgument,
        ErrorCode::NotFound => Code::NotFound,
        ErrorCode::PermissionDenied => Code::PermissionDenied,
        ErrorCode::FailedPrecondition => Code::FailedPrecondition,
        ErrorCode::Unavailable => Code::Unavailable,
        ErrorCode::Unimplemented => Code::Unimplemented,
        ErrorCode::Internal => Code::Internal,
    }
}

/// A gRPC status carrying the domain error's code and message.
pub fn status_from(err: DomainError) -> Status {
    Status::new(grpc_code(err.code()), err.message().to_owned())
}

impl TryFrom<v1::Caller> for Caller {
    type Error = Status;

    fn try_from(caller: v1::Caller) -> Result<Self, Status> {
        Caller::new(&caller.tenant, &caller.principal).map_err(status_from)
    }
}

/// The caller of a request, which every request must carry.
pub fn caller_from(caller: Option<v1::Caller>) -> Result<Caller, Status> {
    caller
        .ok_or_else(|| status_from(DomainError::missing("caller")))?
        .try_into()
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

/// Converts a pushed event into the queue's event envelope for `tenant`, stamped at `now` when
/// the event carries no time. HR and docs-push events are not built yet.
pub fn event_from(
    event: v1::Event,
    tenant: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<ontoloop_core::events::EventEnvelope, Status> {
    use ontoloop_core::events::{Event, EventEnvelope};
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
        },
        Kind::RecordSet(r) => Event::RecordSet {
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
        Kind::Hr(_) => {
            return Err(status_from(DomainError::unimplemented(
                "HR events need the org graph (issue #6)",
            )));
        }
        Kind::DocsPush(_) => {
            return Err(status_from(DomainError::unimplemented(
                "docs-push events need the product graph (issue #6)",
            )));
        }
    };
    event.validate().map_err(status_from)?;
    Ok(EventEnvelope {
        tenant: tenant.to_owned(),
        seq: None,
        at,
        event,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_caller_is_invalid_and_named() {
        let status = caller_from(None).expect_err("no caller");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().contains("caller"));
        let status = caller_from(Some(v1::Caller {
            tenant: "acme".into(),
            principal: String::new(),
        }))
        .expect_err("blank principal");
        assert!(status.message().contains("caller.principal"));
    }

    #[test]
    fn a_caller_round_trips() {
        let caller = caller_from(Some(v1::Caller {
            tenant: "acme".into(),
            principal: "alice".into(),
        }))
        .expect("valid");
        assert_eq!(v1::Caller::from(&caller).principal, "alice");
    }
}
