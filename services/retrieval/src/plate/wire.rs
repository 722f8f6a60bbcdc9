//! Wire forms of plates, org answers (with what an org answer tells the analyst) and project
//! context graphs.

use std::time::Duration;

use ontoloop_core::SignalType;
use ontoloop_core::knowledge::ask::{Asked, Question};
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

/// What an org answer to the question `text` tells the analyst, if anything, as an abstention
/// whose reason is the answer's `sentence` (rendered only then): nobody by the name asked is a
/// missing entity, an entity with no owning team an unknown relationship.
pub fn org_asked(
    answer: &OrgAnswer,
    text: &str,
    sentence: impl FnOnce() -> String,
) -> Option<Asked> {
    let (kind, subject, relationship) = match answer {
        OrgAnswer::UnknownPerson(name) | OrgAnswer::UnknownEntity(name) => {
            (SignalType::EntityMissing, name, "")
        }
        OrgAnswer::Owner { entity, team: None } => {
            (SignalType::RelationshipUnknown, entity, "owned_by")
        }
        _ => return None,
    };
    let question = Question {
        text: text.to_owned(),
        ..Question::lookup(
            subject.clone(),
            vec![relationship.to_owned()],
            String::new(),
        )
    };
    Some(Asked::abstained(question, sentence(), kind))
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
            passages: Vec::new(),
            upcoming: Vec::new(),
            scoped: Vec::new(),
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

#[cfg(test)]
mod tests {
    use ontoloop_org::context::ContextSettings;

    use super::*;
    use crate::plate::context::tests::{graphs, spec};
    use crate::plate::context::{Contexts, build_parts};

    fn kinds(answer: &OrgAnswer) -> Option<Vec<SignalType>> {
        let asked = org_asked(answer, "who owns it?", || "the answer".to_owned())?;
        asked
            .signals
            .map(|signals| signals.iter().map(|s| s.kind).collect())
    }

    #[test]
    fn an_org_answer_reveals_the_kind_of_what_the_graphs_lack() {
        let unowned = OrgAnswer::Owner {
            entity: "ledger-api".into(),
            team: None,
        };
        assert_eq!(kinds(&unowned), Some(vec![SignalType::RelationshipUnknown]));
        let asked = org_asked(&unowned, "Who owns the Ledger API?", || "no owner".into())
            .expect("an owner without a team is reported");
        assert_eq!(
            (asked.question.entity.as_str(), asked.question.path.clone()),
            ("ledger-api", vec!["owned_by".to_owned()])
        );
        assert_eq!(asked.question.text, "Who owns the Ledger API?");
        assert_eq!(
            kinds(&OrgAnswer::UnknownPerson("Ada".into())),
            Some(vec![SignalType::EntityMissing])
        );
        assert_eq!(
            kinds(&OrgAnswer::UnknownEntity("Kite".into())),
            Some(vec![SignalType::EntityMissing])
        );
        let owned = OrgAnswer::Owner {
            entity: "ledger-api".into(),
            team: Some("payments".into()),
        };
        assert_eq!(kinds(&owned), None);
    }

    /// A caller-given extension of any size, u64::MAX seconds included, is clamped instead of
    /// overflowing the clock; so are configured lifetimes too long for it.
    #[tokio::test(start_paused = true)]
    async fn huge_extensions_are_clamped_not_a_panic() {
        let (org, product) = graphs();
        for settings in [
            ontoloop_settings::Settings::defaults().org.contexts(),
            ContextSettings {
                ttl: Duration::MAX,
                idle: Duration::MAX,
            },
        ] {
            let budget = ontoloop_settings::Settings::defaults().cache.context_graphs;
            let contexts = Contexts::new(settings, budget);
            contexts
                .open("acme", "apollo", || {
                    build_parts(&spec("core"), &org, &product)
                })
                .expect("builds");
            for secs in [u64::MAX, u64::MAX - 1, u64::MAX / 2, 1 << 40] {
                let by = extension(secs).expect("positive");
                let extended = contexts.extend("acme", "apollo", by).expect("extends");
                assert!(
                    extended.graph.lifetime() >= ontoloop_org::context::MAX_LIFETIME,
                    "{secs}: {:?}",
                    extended.graph.lifetime()
                );
                let response = project_response(&extended, false);
                assert!(response.expires_at.is_some());
            }
        }
    }
}
