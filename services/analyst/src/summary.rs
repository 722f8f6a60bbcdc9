//! A tenant's summary: what its knowledge holds (pages, facts, entities, the ontology's
//! predicates) and where its intake stands (the last ingest, the backlog), as the
//! `TenantSummary` RPC and the dashboard's header show it.

use chrono::{DateTime, Utc};
use ontoloop_core::knowledge::{Graph, Ontology, PageVersion, versions_in_effect};
use ontoloop_core::{ErrorCode, ServiceError};
use ontoloop_store::{IntakeSummary, Store, StoreError};

use crate::knowledge::KnowledgeWriter;
use crate::refusal::Refusal;

/// A tenant's knowledge and intake, read when asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// What the tenant's knowledge holds.
    pub held: Held,
    /// The tenant's knowledge version: one more with every commit.
    pub knowledge_version: u64,
    /// Where its intake stands.
    pub intake: IntakeSummary,
}

/// What a tenant's knowledge holds at an instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    /// Pages whose version in effect is not a deletion.
    pub pages: u64,
    /// Page versions kept, deletions included.
    pub page_versions: u64,
    /// Facts that hold at the instant.
    pub facts: u64,
    /// Entities of the graph.
    pub entities: u64,
    /// The ontology's predicates, in its order.
    pub predicates: Vec<String>,
}

/// Why a summary could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The intake log or the knowledge version could not be read.
    #[error("read the tenant's intake: {0}")]
    Store(#[from] StoreError),
    /// The tenant's knowledge could not be loaded.
    #[error("read the tenant's knowledge: {0}")]
    Knowledge(#[from] Refusal),
}

impl ServiceError for SummaryError {
    fn error_code(&self) -> ErrorCode {
        match self {
            SummaryError::Store(err) => err.error_code(),
            // Stored knowledge that cannot be read will not be readable on a retry either.
            SummaryError::Knowledge(Refusal::Invalid(_)) => ErrorCode::Internal,
            SummaryError::Knowledge(Refusal::Passing(_) | Refusal::Contended(_)) => {
                ErrorCode::Unavailable
            }
        }
    }
}

/// What `graph` and `pages`, under `ontology`, hold at `now`.
pub fn held(ontology: &Ontology, graph: &Graph, pages: &[PageVersion], now: DateTime<Utc>) -> Held {
    let live = versions_in_effect(pages, now)
        .iter()
        .filter(|page| !page.deleted)
        .count();
    Held {
        pages: live as u64,
        page_versions: pages.len() as u64,
        facts: graph.facts().iter().filter(|f| f.valid_at(now)).count() as u64,
        entities: graph.entities().count() as u64,
        predicates: ontology
            .predicates()
            .iter()
            .map(|p| p.name.clone())
            .collect(),
    }
}

/// The tenant's summary at `now`: its knowledge as the writer holds it (loaded when not cached or
/// out of date; all zero when nothing of it is stored) and its intake as the store has it.
pub async fn summary(
    store: &Store,
    writer: &KnowledgeWriter,
    tenant: &str,
    now: DateTime<Utc>,
) -> Result<Summary, SummaryError> {
    // The intake first: an event it counts as pending may be applied by the time the knowledge
    // is read, never the other way round (an applied event counted in neither).
    let intake = store.intake_summary(tenant).await?;
    let read = writer
        .read(tenant, |ontology, graph, pages| {
            held(ontology, graph, pages, now)
        })
        .await?;
    let knowledge_version = u64::try_from(store.knowledge_version(tenant).await?).unwrap_or(0);
    Ok(Summary {
        held: read.unwrap_or_default(),
        knowledge_version,
        intake,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(id: &str, version: u64, deleted: bool, at: DateTime<Utc>) -> PageVersion {
        PageVersion {
            source_id: id.to_owned(),
            version,
            title: id.to_owned(),
            origin: "wiki".to_owned(),
            body: if deleted {
                String::new()
            } else {
                format!("{id} v{version}")
            },
            updated_at: at,
            acl: Vec::new(),
            confidence: 1.0,
            deleted,
            effective_from: None,
        }
    }

    fn at(hour: u32) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(&format!("2026-03-01T{hour:02}:00:00Z"))
            .expect("a time")
            .with_timezone(&Utc)
    }

    #[test]
    fn pages_count_their_version_in_effect_and_not_deletions() {
        let mut announced = page("c", 2, false, at(1));
        announced.effective_from = Some(at(9));
        let mut removal = page("d", 2, true, at(1));
        removal.effective_from = Some(at(9));
        let pages = vec![
            // a: two versions, one page.
            page("a", 1, false, at(1)),
            page("a", 2, false, at(2)),
            // b: deleted, so gone.
            page("b", 1, false, at(1)),
            page("b", 2, true, at(3)),
            // c: a version announced for later; the page is there now, once.
            page("c", 1, false, at(1)),
            announced,
            // d: a deletion announced for later; still there now.
            page("d", 1, false, at(1)),
            removal,
        ];
        let graph = Graph::default();
        let ontology = Ontology::empty();
        let now = held(&ontology, &graph, &pages, at(5));
        assert_eq!(
            (now.pages, now.page_versions, now.facts, now.entities),
            (3, 8, 0, 0)
        );
        assert!(now.predicates.is_empty());
        // Once the announced deletion takes effect, d is gone too.
        assert_eq!(held(&ontology, &graph, &pages, at(10)).pages, 2);
    }

    #[test]
    fn facts_count_what_holds_and_predicates_come_in_the_ontology_order() {
        let ontology = Ontology::from_json(
            r#"{"predicates":[
              {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
              {"name":"owned_by","subject_type":"feature","object_type":"team","patterns":["The {s} feature is owned by the {o} team."]}],
              "authority":{"default":2}}"#,
        )
        .expect("a valid ontology");
        let mut graph = Graph::new(&ontology);
        let mut v1 = page("pricing", 1, false, at(1));
        v1.body = "The Pro plan costs €49 per month. The Starter plan costs €19 per month.".into();
        graph.apply_page(&ontology, &v1, at(1));
        let mut v2 = page("pricing", 2, false, at(3));
        v2.body = "The Pro plan costs €59 per month. The Starter plan costs €19 per month.".into();
        graph.apply_page(&ontology, &v2, at(3));
        let mut owners = page("kite", 1, false, at(2));
        owners.body = "The Kite feature is owned by the Platform team.".into();
        graph.apply_page(&ontology, &owners, at(2));
        let pages = [v1, v2, owners];
        // Before the new price: 49 and 99 hold, and the owner.
        let before = held(&ontology, &graph, &pages, at(2));
        assert_eq!((before.pages, before.facts), (2, 3));
        // After it: 49 is superseded by 59, so still three facts hold; four entities (two plans,
        // a feature, a team).
        let after = held(&ontology, &graph, &pages, at(4));
        assert_eq!(
            (
                after.pages,
                after.page_versions,
                after.facts,
                after.entities
            ),
            (2, 3, 3, 4)
        );
        assert_eq!(after.predicates, ["price", "owned_by"]);
        assert_eq!(
            graph.facts().len(),
            4,
            "the superseded price is kept, not counted"
        );
    }
}
