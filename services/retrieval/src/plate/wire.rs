//! Wire forms of plates, org answers and project context graphs.

use std::time::Duration;

use ontoloop_org::ask::OrgAnswer;
use ontoloop_org::filters::Plate;
use ontoloop_proto::convert::timestamp;
use ontoloop_proto::v1 as pb;

use super::TenantView;
use super::context::Opened;

/// Source id the evidence of an answer from the org graph cites.
pub const HR_SOURCE: &str = "hr-records";
/// Source id the evidence of an answer from the product graph cites.
pub const DOCS_SOURCE: &str = "product-docs";

/// The plate as the wire carries it, with each item's fields read from the tenant's index.
pub fn plate_response(plate: &Plate, view: &TenantView, tenant: &str) -> pb::PlateResponse {
    let partition = view.items.tenant(tenant);
    let items = plate
        .items
        .iter()
        .map(|entry| {
            let item = partition.and_then(|p| p.get(&entry.id));
            pb::PlateItem {
                item_id: entry.id.clone(),
                title: item.map(|i| i.title.clone()).unwrap_or_default(),
                assignee: item.and_then(|i| i.assignee.clone()).unwrap_or_default(),
                service: item.and_then(|i| i.service.clone()).unwrap_or_default(),
                severity: item
                    .map(|i| i.severity.name().to_owned())
                    .unwrap_or_default(),
                scope: item
                    .map(|i| i.scope.as_str().to_owned())
                    .unwrap_or_default(),
                source_type: item
                    .map(|i| i.source.as_str().to_owned())
                    .unwrap_or_default(),
                created_at: item.map(|i| timestamp(i.created_at)),
                score: entry.score,
                admitted_by: entry
                    .admitted_by
                    .iter()
                    .map(|d| d.as_str().to_owned())
                    .collect(),
                weights: [
                    ("temporal".to_owned(), entry.temporal_weight),
                    ("authority".to_owned(), entry.authority_weight),
                    ("severity".to_owned(), entry.severity_weight),
                ]
                .into_iter()
                .collect(),
            }
        })
        .collect();
    pb::PlateResponse {
        items,
        dimensions: plate
            .counts
            .iter()
            .map(|(name, count)| pb::DimensionCount {
                name: name.as_str().to_owned(),
                candidates_after: *count as u64,
            })
            .collect(),
        org_version: u64::try_from(view.version).unwrap_or_default(),
    }
}

/// What an org answer tells the analyst, if anything: a signal type and its subject.
pub fn answer_signal(answer: &OrgAnswer) -> Option<(&'static str, String, &'static str)> {
    match answer {
        OrgAnswer::UnknownPerson(name) => Some(("entity_missing", name.clone(), "")),
        OrgAnswer::UnknownEntity(name) => Some(("entity_missing", name.clone(), "")),
        OrgAnswer::Owner { entity, team: None } => {
            Some(("relationship_unknown", entity.clone(), "owned_by"))
        }
        _ => None,
    }
}

/// An answer from the org and product graphs, citing the HR records or the product docs at the
/// org version the graphs reflect.
pub fn org_answer(answer: &OrgAnswer, view: &TenantView, applied: u64) -> pb::Answer {
    let sentence = answer.render(&view.org, &view.product);
    let version = u64::try_from(view.version).unwrap_or_default();
    let evidence = |source: &str, origin: &str, value: &str| pb::Evidence {
        source_id: source.to_owned(),
        source_version: version,
        origin: origin.to_owned(),
        authority: 0,
        value: value.to_owned(),
        valid_from: None,
        valid_to: None,
        extracted_at: None,
        extractor: "org-graph".to_owned(),
        confidence: 1.0,
        excerpt: sentence.clone(),
    };
    let abstain = |reason: &str, entity: &str, path: &str, values: Vec<String>| pb::Answer {
        status: pb::AnswerStatus::Abstained as i32,
        abstain_reason: reason.to_owned(),
        entity: entity.to_owned(),
        predicate_path: vec![path.to_owned()],
        values,
        applied_sequence: applied,
        ..Default::default()
    };
    let answered =
        |entity: &str, path: &str, id: &str, value: String, ev: pb::Evidence| pb::Answer {
            status: pb::AnswerStatus::Answered as i32,
            value,
            values: Vec::new(),
            hedges: Vec::new(),
            hops: vec![pb::Hop {
                entity: entity.to_owned(),
                predicate: path.to_owned(),
                value: id.to_owned(),
                evidence: vec![ev.clone()],
            }],
            evidence: vec![ev],
            abstain_reason: String::new(),
            entity: entity.to_owned(),
            predicate_path: vec![path.to_owned()],
            applied_sequence: applied,
        };
    match answer {
        OrgAnswer::Manager {
            person,
            manager: Some(manager),
        } => {
            let name = view.org.person_name(manager).unwrap_or(manager).to_owned();
            answered(
                person,
                "reports_to",
                manager,
                name,
                evidence(HR_SOURCE, "hr", manager),
            )
        }
        OrgAnswer::Manager {
            person,
            manager: None,
        } => answered(
            person,
            "reports_to",
            "",
            "nobody".to_owned(),
            evidence(HR_SOURCE, "hr", ""),
        ),
        OrgAnswer::Owner {
            entity,
            team: Some(team),
        } => {
            let name = view.org.team_name(team).unwrap_or(team).to_owned();
            answered(
                entity,
                "owned_by",
                team,
                name,
                evidence(DOCS_SOURCE, "docs", team),
            )
        }
        OrgAnswer::Owner { entity, team: None } => abstain(&sentence, entity, "owned_by", vec![]),
        OrgAnswer::UnknownPerson(name) => abstain(&sentence, name, "reports_to", vec![]),
        OrgAnswer::AmbiguousPerson { name, candidates } => {
            abstain(&sentence, name, "reports_to", candidates.clone())
        }
        OrgAnswer::UnknownEntity(name) => abstain(&sentence, name, "owned_by", vec![]),
        OrgAnswer::AmbiguousEntity { name, candidates } => {
            abstain(&sentence, name, "owned_by", candidates.clone())
        }
    }
}

/// A project's context graph on the wire.
pub fn project_response(opened: &Opened, closed: bool) -> pb::ProjectContextResponse {
    let expires_at = chrono::Duration::from_std(opened.expires_in)
        .ok()
        .and_then(|left| chrono::Utc::now().checked_add_signed(left))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
    pb::ProjectContextResponse {
        project: opened.graph.project().to_owned(),
        members: opened.graph.members().map(str::to_owned).collect(),
        dependencies: opened.graph.dependencies().map(str::to_owned).collect(),
        constraints: opened.graph.constraints().to_vec(),
        expires_at: Some(timestamp(expires_at)),
        created: opened.created,
        closed,
    }
}

/// The answer to closing a project: nothing left to describe.
pub fn closed_response(project: &str, closed: bool) -> pb::ProjectContextResponse {
    pb::ProjectContextResponse {
        project: project.to_owned(),
        closed,
        ..Default::default()
    }
}

/// Seconds as a duration, refusing zero.
pub fn extension(secs: u64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs))
}
