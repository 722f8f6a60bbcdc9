//! Ontology proposals as reviewable updates (issue 40): an ontology proposed from a tenant's
//! current pages and the questions its agents failed to get answered ([`ontoloop_core::grow`]),
//! drafted on request (`graph.maintain` mode `propose-ontology`) or when a missing relationship
//! type pattern reaches `analyst.propose_at` (relationship discovery: only the predicates that
//! answer its questions). A draft is one [`UpdateRecord`] of domain
//! [`ONTOLOGY_DOMAIN`](ontoloop_core::supervisor::ONTOLOGY_DOMAIN), which the supervisor always
//! sends to a human, prioritised by its impact radius: the distinct failed questions it would
//! answer. Its `after` is the proposal as JSON (predicates with types, vocabulary, patterns,
//! examples and a preview), and a modification's value is a reviewer's [`Edit`] of it.
//!
//! Pure: the knowledge and the questions in, the draft out; the writer reads and submits.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use ontoloop_core::grow::{self, Edit, Page, Proposal};
use ontoloop_core::knowledge::PageVersion;
use ontoloop_core::knowledge::encoder::SentenceEncoder;
use ontoloop_core::supervisor::ONTOLOGY_DOMAIN;
use ontoloop_store::{UpdateRecord, UpdateSource, update_status};

use crate::routing::update_id;

/// The entity an ontology proposal's record names.
pub const ONTOLOGY_ENTITY: &str = "ontology";

/// The signal type (a learning category) of a proposal asked for by `graph.maintain`.
pub const ON_REQUEST: &str = "propose_ontology";

/// Preview facts each proposed predicate keeps in the record, at most (the count of subjects
/// says how many it would state in all).
pub const MAX_STORED_FACTS: usize = 20;

/// Failed questions a proposal lists as affected, at most (all count in its impact radius).
pub const MAX_LISTED_QUESTIONS: usize = 20;

/// Pages a proposal names as its sources, at most.
const MAX_SOURCES: usize = 10;

/// The longest `predicate` column text (the names of the predicates proposed).
const MAX_NAMES_CHARS: usize = 200;

/// What asked for a proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// `graph.maintain` mode `propose-ontology`: every predicate the corpus gives that the
    /// ontology lacks.
    Request,
    /// A missing relationship type pattern (its id, `missing_relationship_type:KEY`): only the
    /// predicates that answer its questions.
    Pattern(String),
}

/// The knowledge a proposal is drafted from.
pub struct Corpus<'a> {
    /// Names of the predicates the ontology in force has.
    pub predicates: &'a BTreeSet<String>,
    /// Its entity type nouns.
    pub types: &'a [String],
    /// The tenant's current pages.
    pub pages: &'a [PageVersion],
}

/// Drafts the tenant's ontology proposal from the pages everyone in the tenant may read (its
/// reviewers see its examples and preview): `None` when they give no predicate the ontology
/// lacks (for a pattern: none that answers one of its questions).
pub fn draft(
    tenant: &str,
    corpus: &Corpus<'_>,
    failed: &[String],
    trigger: &Trigger,
    encoder: Option<&dyn SentenceEncoder>,
    now: DateTime<Utc>,
) -> Option<UpdateRecord> {
    // Every reviewer of the tenant sees a proposal's examples and preview: a page not everyone
    // may read is left out of it.
    let pages: Vec<Page<'_>> = corpus
        .pages
        .iter()
        .filter(|p| p.acl.is_empty())
        .map(|p| Page {
            id: &p.source_id,
            title: &p.title,
            body: &p.body,
        })
        .collect();
    let questions: Vec<&str> = failed.iter().map(String::as_str).collect();
    let options = grow::Options {
        known_types: corpus.types.to_vec(),
        ..grow::Options::default()
    };
    let mut proposal = grow::propose(&pages, &questions, &options, encoder);
    proposal
        .predicates
        .retain(|p| !corpus.predicates.contains(&p.name));
    if matches!(trigger, Trigger::Pattern(_)) {
        proposal.predicates.retain(|p| !p.answers.is_empty());
    }
    if proposal.predicates.is_empty() {
        return None;
    }
    let used: BTreeSet<&str> = proposal
        .predicates
        .iter()
        .flat_map(|p| [p.subject_type.as_str(), p.object_type.as_str()])
        .collect();
    proposal.types.retain(|t| used.contains(t.name.as_str()));
    let mut sources: Vec<UpdateSource> = Vec::new();
    for p in &mut proposal.predicates {
        for fact in &p.facts {
            if sources.len() < MAX_SOURCES && !sources.iter().any(|s| s.source_id == fact.page) {
                let page = corpus.pages.iter().find(|page| page.source_id == fact.page);
                sources.push(UpdateSource {
                    source_id: fact.page.clone(),
                    version: page.map_or(0, |page| page.version),
                    title: page.map_or_else(String::new, |page| page.title.clone()),
                });
            }
        }
        p.facts.truncate(MAX_STORED_FACTS);
    }
    let answered: Vec<String> = proposal.answered().into_iter().map(str::to_owned).collect();
    let mut names: String = proposal
        .predicates
        .iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if names.chars().count() > MAX_NAMES_CHARS {
        names = names.chars().take(MAX_NAMES_CHARS - 1).collect::<String>() + "…";
    }
    let after = serde_json::to_string(&proposal).ok()?;
    // The same predicates stated the same ways are the same proposal, however often asked.
    let shape: BTreeMap<&str, &[String]> = proposal
        .predicates
        .iter()
        .map(|p| (p.name.as_str(), p.patterns.as_slice()))
        .collect();
    let shape = serde_json::to_string(&shape).ok()?;
    let (pattern_id, signal_type) = match trigger {
        Trigger::Request => (String::new(), ON_REQUEST),
        Trigger::Pattern(id) => (id.clone(), "relationship_unknown"),
    };
    Some(UpdateRecord {
        id: update_id(tenant, ONTOLOGY_ENTITY, "propose-ontology", &shape),
        tenant: tenant.to_owned(),
        pattern_id,
        signal_type: signal_type.to_owned(),
        source: "corpus".to_owned(),
        domain: ONTOLOGY_DOMAIN.to_owned(),
        entity: ONTOLOGY_ENTITY.to_owned(),
        predicate: names,
        before: String::new(),
        after,
        confidence: 1.0,
        confidence_variance: 0.0,
        impact_radius: u32::try_from(answered.len()).unwrap_or(u32::MAX),
        affected_queries: answered.into_iter().take(MAX_LISTED_QUESTIONS).collect(),
        sources,
        priority: 0.0,
        reason: String::new(),
        status: update_status::PENDING.to_owned(),
        applied_value: String::new(),
        created_at: now,
        queued_at: now,
        applied_at: None,
    })
}

/// Whether `update` is an ontology proposal.
pub fn is_ontology(update: &UpdateRecord) -> bool {
    update.domain == ONTOLOGY_DOMAIN && update.entity == ONTOLOGY_ENTITY
}

/// The proposal an ontology update applies: its `after` as drafted, edited by the reviewer's
/// modification when `value` is one (`{"drop": [...], "rename": {...}}`). Fails, saying why,
/// when either does not read or the edit does not fit the proposal.
pub fn proposal_of(update: &UpdateRecord, value: &str) -> Result<Proposal, String> {
    let proposal: Proposal = serde_json::from_str(&update.after)
        .map_err(|err| format!("the proposal of {} is unreadable: {err}", update.id))?;
    if value.trim().is_empty() || value == update.after {
        return Ok(proposal);
    }
    let edit: Edit = serde_json::from_str(value).map_err(|err| {
        format!(
            "a modification of an ontology proposal is an edit \
             {{\"drop\": [NAME, ...], \"rename\": {{NAME: NEW_NAME}}}}: {err}"
        )
    })?;
    proposal.edited(&edit)
}

/// The current version of every page that is not deleted.
pub fn current_pages(pages: &[PageVersion]) -> Vec<PageVersion> {
    let mut latest: BTreeMap<&str, &PageVersion> = BTreeMap::new();
    for page in pages {
        let newer = latest
            .get(page.source_id.as_str())
            .is_none_or(|held| held.version < page.version);
        if newer {
            latest.insert(&page.source_id, page);
        }
    }
    latest
        .into_values()
        .filter(|page| !page.deleted)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(id: &str, version: u64, body: &str) -> PageVersion {
        PageVersion {
            source_id: id.to_owned(),
            version,
            title: id.to_owned(),
            origin: "inventory".to_owned(),
            body: body.to_owned(),
            updated_at: Utc::now(),
            acl: Vec::new(),
            confidence: 1.0,
            deleted: false,
            effective_from: None,
        }
    }

    fn pump(n: u32, firmware: &str, keeper: &str) -> String {
        format!("pump-id: {n}\nname: Pump {n}\nfirmware: \"{firmware}\"\nkeeper: \"@{keeper}\"\n")
    }

    #[test]
    fn a_pattern_drafts_only_what_answers_its_questions_and_an_edit_shapes_it() {
        let pages = vec![
            page("pumps/1.yaml", 1, &pump(1, "v1.0", "ali")),
            page("pumps/1.yaml", 2, &pump(1, "v1.2", "ali")),
            page("pumps/2.yaml", 1, &pump(2, "v2.0", "bo")),
            page("pumps/3.yaml", 1, &pump(3, "v3.1", "cy")),
        ];
        let current = current_pages(&pages);
        assert_eq!(current.len(), 3);
        let known = BTreeSet::new();
        // A page with an ACL is no part of what every reviewer is shown.
        let mut secret = page("pumps/9.yaml", 1, &pump(9, "v9.9", "zed"));
        secret.acl = vec!["ops-lead".to_owned()];
        let mut current = current;
        current.push(secret);
        let corpus = Corpus {
            predicates: &known,
            types: &[],
            pages: &current,
        };
        let failed = vec![
            "Which firmware version does Pump 1 run?".to_owned(),
            "Which firmware version does Pump 2 run?".to_owned(),
        ];
        let trigger = Trigger::Pattern("missing_relationship_type:firmware".to_owned());
        let update = draft("acme", &corpus, &failed, &trigger, None, Utc::now())
            .expect("a firmware predicate answers them");
        assert!(is_ontology(&update));
        assert_eq!(update.predicate, "firmware");
        assert_eq!(update.impact_radius, 2);
        assert_eq!(update.affected_queries, failed);
        assert_eq!(update.pattern_id, "missing_relationship_type:firmware");
        let proposal = proposal_of(&update, "").expect("reads");
        assert!(!update.after.contains("v9.9") && !update.after.contains("zed"));
        assert!(
            proposal.predicates[0]
                .facts
                .iter()
                .any(|f| f.object.contains("v1.2")),
            "the current version: {:?}",
            proposal.predicates[0].facts
        );
        // On request, everything the ontology lacks; the same draft twice is one update.
        let on_request = || {
            draft(
                "acme",
                &corpus,
                &failed,
                &Trigger::Request,
                None,
                Utc::now(),
            )
            .expect("a proposal")
        };
        let all = on_request();
        assert!(all.predicate.contains("keeper"), "{}", all.predicate);
        assert_eq!(all.id, on_request().id);
        // What the ontology has already is not proposed again.
        let known: BTreeSet<String> = ["firmware".to_owned()].into();
        let corpus = Corpus {
            predicates: &known,
            ..corpus
        };
        assert!(draft("acme", &corpus, &failed, &trigger, None, Utc::now()).is_none());

        let renamed =
            proposal_of(&update, r#"{"rename":{"firmware":"runs_firmware"}}"#).expect("an edit");
        assert_eq!(renamed.predicates[0].name, "runs_firmware");
        for bad in ["firmware", r#"{"drop":["nope"]}"#, r#"{"keep":[]}"#] {
            assert!(proposal_of(&update, bad).is_err(), "{bad}");
        }
    }
}
