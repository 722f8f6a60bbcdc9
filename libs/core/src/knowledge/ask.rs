//! One question asked of a tenant's knowledge: linked onto the graph (an entity and a predicate
//! path, helped by the names stated in the pages the caller's search found), answered by a
//! design, and the failure signals the answer reveals to the analyst.
//!
//! Retrieval's `Ask` and `Lookup` are these steps; the service only loads the read model, runs
//! the search and reports what [`Asked::signals`] lists.

use super::answer::{Answer, AnswerStatus, Finding, Hedge, HedgeCode};
use super::designs::{self, Design, KnowledgeView};
use super::extract::{Claim, extract_claims};
use super::graph::{Graph, PageVersion};
use super::ontology::{Ontology, PredicateKind};
use super::question::{Unmapped, map_question, names_in_claims};
use crate::SignalType;

/// A question in structured form, ready to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The entity asked about, as named (the graph resolves it when the question is answered).
    pub entity: String,
    /// Predicates to follow from the entity.
    pub path: Vec<String>,
    /// The question's text, the first hop's search query.
    pub text: String,
    /// Words of the text that name a relation the path does not follow: the answer is hedged
    /// naming them.
    pub unexplained: Vec<String>,
}

impl Question {
    /// A slot looked up by name: the search query is `query`, or when that is blank the entity
    /// and the words of the predicates.
    pub fn lookup(entity: String, path: Vec<String>, query: String) -> Self {
        let text = if query.trim().is_empty() {
            format!("{} {}", entity, path.join(" ").replace('_', " "))
        } else {
            query
        };
        Self {
            entity,
            path,
            text,
            unexplained: Vec::new(),
        }
    }
}

/// A failure signal an answer reveals, for the analyst.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revealed {
    /// What kind of failure.
    pub kind: SignalType,
    /// What the answer saw, in words.
    pub detail: String,
}

/// A question answered, with what the answer tells the analyst.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    /// The question as it was answered.
    pub question: Question,
    /// The answer.
    pub answer: Answer,
    /// The signals to report; `None` for the study's baselines, which report (and count)
    /// nothing.
    pub signals: Option<Vec<Revealed>>,
}

impl Asked {
    /// An abstention on `question` for `reason`, reported as ontoloop reports one: a `kind`
    /// failure signal (an abstention that followed no hop of the graph cannot tell the kind from
    /// the answer, so the one who abstained says it).
    pub fn abstained(question: Question, reason: String, kind: SignalType) -> Self {
        let signals = Some(vec![Revealed {
            kind,
            detail: reason.clone(),
        }]);
        let answer = Answer::combine(Vec::new(), Some(reason));
        Self {
            question,
            answer,
            signals,
        }
    }
}

/// Links `text` onto the graph. `found` are the current versions of the pages the caller's
/// search for the text found: the names they state link entities the graph does not know yet.
pub fn link(
    text: &str,
    ontology: &Ontology,
    graph: &Graph,
    found: &[&PageVersion],
) -> Result<Question, Unmapped> {
    let claims: Vec<Claim> = found
        .iter()
        .flat_map(|page| extract_claims(ontology, &page.body))
        .collect();
    let mut extra = names_in_claims(ontology, &claims);
    // A rename passes the old name's type on to the new one.
    for claim in claims.iter().filter(|c| c.kind == PredicateKind::Rename) {
        if let Some(kind) = graph
            .resolve(&claim.object)
            .and_then(|e| e.entity_type.clone())
        {
            extra.push((claim.subject.name().to_owned(), Some(kind)));
        }
    }
    let mapped = map_question(text, graph, ontology, &extra)?;
    Ok(Question {
        entity: mapped.entity,
        path: mapped.path,
        text: text.to_owned(),
        unexplained: mapped.unexplained,
    })
}

/// Words as a reader sees them listed: `"a", "b"`.
fn quoted(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("{w:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Answers `question` with `design` over `view`. `searched` is a search already run for the
/// question's text with the view's `top_k` (page ids, best first); the first hop reuses it
/// instead of searching again.
pub fn answer(
    view: &KnowledgeView<'_>,
    design: Design,
    question: Question,
    searched: Option<&[String]>,
) -> Asked {
    let search = |query: &str, k: usize| match searched {
        Some(ids) if query == question.text && k == view.top_k => ids.to_vec(),
        _ => (view.search)(query, k),
    };
    let view = KnowledgeView {
        search: &search,
        ..*view
    };
    let mut answer = designs::answer(
        &view,
        design,
        &question.entity,
        &question.path,
        &question.text,
    );
    // A value for a question only partly understood is never given without saying so.
    if design == Design::Ontoloop && !question.unexplained.is_empty() {
        answer.hedge(Hedge {
            code: HedgeCode::QuestionPartlyUnderstood,
            message: format!(
                "the question's words {} name a relation this answer does not follow (it follows {})",
                quoted(&question.unexplained),
                question.path.join(" → ")
            ),
            source_id: String::new(),
        });
    }
    let signals = (design == Design::Ontoloop)
        .then(|| signals(&answer, view.graph.resolve(&question.entity).is_some()));
    Asked {
        question,
        answer,
        signals,
    }
}

/// A question that could not be linked onto the graph: an abstention saying why.
pub fn unlinked(text: String, why: &Unmapped, design: Design) -> Asked {
    let question = Question {
        entity: String::new(),
        path: Vec::new(),
        text,
        unexplained: Vec::new(),
    };
    let mut asked = Asked::abstained(
        question,
        format!("cannot map the question onto the graph: {why}"),
        SignalType::EntityMissing,
    );
    if design != Design::Ontoloop {
        asked.signals = None;
    }
    asked
}

/// What an answer tells the analyst: an abstention (an entity the graph lacks, or a relationship
/// it lacks for an entity it knows) and every finding of its hops (a graph that lags its pages,
/// a stale sibling, a contradiction at equal authority).
pub fn signals(answer: &Answer, entity_known: bool) -> Vec<Revealed> {
    let mut signals = Vec::new();
    if answer.status == AnswerStatus::Abstained {
        let kind = if answer.hops.is_empty() || !entity_known {
            SignalType::EntityMissing
        } else {
            SignalType::RelationshipUnknown
        };
        signals.push(Revealed {
            kind,
            detail: answer.abstain_reason.clone(),
        });
    }
    for (_, _, decision) in &answer.hops {
        for finding in &decision.findings {
            let (kind, detail) = match finding {
                Finding::GraphLags { source_id } => (
                    SignalType::TemporalStale,
                    format!("graph read an older version of {source_id}"),
                ),
                Finding::StaleSibling { source_id, value } => (
                    SignalType::TemporalStale,
                    format!("{source_id} still states {value:?}"),
                ),
                Finding::Contradiction { source_id } => (
                    SignalType::ConfidenceDrop,
                    format!("{source_id} disagrees at equal authority"),
                ),
            };
            signals.push(Revealed { kind, detail });
        }
    }
    signals
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    use chrono::Utc;

    use super::*;
    use crate::Caller;
    use crate::knowledge::Access;
    use crate::knowledge::ontology::tests::sample;

    fn page(id: &str, body: &str) -> PageVersion {
        PageVersion {
            source_id: id.into(),
            version: 1,
            title: id.into(),
            origin: "faq".into(),
            body: body.into(),
            updated_at: Utc::now(),
            acl: Vec::new(),
            confidence: 1.0,
            deleted: false,
        }
    }

    #[test]
    fn a_lookup_searches_for_its_query_or_the_slot_words() {
        let path = vec!["owned_by".to_owned()];
        assert_eq!(
            Question::lookup("Payments service".into(), path.clone(), " ".into()).text,
            "Payments service owned by"
        );
        assert_eq!(
            Question::lookup("Payments service".into(), path, "who owns it".into()).text,
            "who owns it"
        );
    }

    #[test]
    fn names_in_the_pages_found_link_an_entity_the_graph_lacks() {
        let ontology = sample();
        let graph = Graph::new(&ontology);
        let question = "How much does the plan that includes Tessaly Pier cost?";
        let found = page("p", "Tessaly Pier is included in the Pro plan.");
        let linked = link(question, &ontology, &graph, &[&found]).expect("links");
        assert_eq!(
            (linked.entity.as_str(), linked.path.clone()),
            (
                "Tessaly Pier",
                vec!["included_in".to_owned(), "price".to_owned()]
            )
        );
        assert_eq!(linked.text, question);
        assert_eq!(
            link("Is it raining?", &ontology, &graph, &[]),
            Err(Unmapped::NoPredicate)
        );
    }

    #[test]
    fn the_first_hop_reuses_the_search_already_run() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let stated = page("p", "The Pro plan costs €49 per user per month.");
        graph.apply_page(&ontology, &stated, Utc::now());
        let current = BTreeMap::from([("p".to_owned(), stated)]);
        let log = BTreeMap::from([("p".to_owned(), 1)]);
        let agent = Caller::new("t", "agent").expect("caller");
        let queries = RefCell::new(Vec::new());
        let search = |query: &str, _k: usize| {
            queries.borrow_mut().push(query.to_owned());
            vec!["p".to_owned()]
        };
        let view = KnowledgeView {
            ontology: &ontology,
            graph: &graph,
            current: &current,
            log: &log,
            search: &search,
            access: Access::new(&agent, &current),
            as_of: Utc::now(),
            hedge_below_authority: 0,
            top_k: 5,
        };
        let question =
            link("How much does the Pro plan cost?", &ontology, &graph, &[]).expect("links");
        let found = vec!["p".to_owned()];
        let asked = answer(&view, Design::Ontoloop, question, Some(&found));
        assert_eq!(asked.answer.status, AnswerStatus::Answered);
        assert!(asked.answer.value.contains("49"), "{:?}", asked.answer);
        assert_eq!(asked.signals, Some(Vec::new()));
        assert!(
            queries.borrow().is_empty(),
            "searched {:?}",
            queries.borrow()
        );
        let baseline = answer(&view, Design::Rag, asked.question, None);
        assert_eq!(baseline.signals, None);
        assert!(!queries.borrow().is_empty());
    }

    #[test]
    fn a_question_only_partly_understood_is_answered_with_a_hedge_naming_its_words() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let stated = page(
            "p",
            "Payments service is owned by the Atlas team. The Atlas team is led by Derya Kaya.",
        );
        graph.apply_page(&ontology, &stated, Utc::now());
        let current = BTreeMap::from([("p".to_owned(), stated)]);
        let log = BTreeMap::from([("p".to_owned(), 1)]);
        let agent = Caller::new("t", "agent").expect("caller");
        let search = |_: &str, _k: usize| vec!["p".to_owned()];
        let view = KnowledgeView {
            ontology: &ontology,
            graph: &graph,
            current: &current,
            log: &log,
            search: &search,
            access: Access::new(&agent, &current),
            as_of: Utc::now(),
            hedge_below_authority: 0,
            top_k: 5,
        };
        // Understood: owned_by then led_by, no hedge.
        let question = link(
            "Who leads the team that owns the Payments service?",
            &ontology,
            &graph,
            &[],
        )
        .expect("links");
        let asked = answer(&view, Design::Ontoloop, question, None);
        assert_eq!(asked.answer.status, AnswerStatus::Answered);
        assert_eq!(asked.answer.value, "Derya Kaya");
        // "audits" names a relation the ontology does not know: the value is hedged, naming it.
        let question = link(
            "Who leads the team that audits the Payments service?",
            &ontology,
            &graph,
            &[],
        )
        .expect("links");
        assert_eq!(question.unexplained, ["audits"]);
        let asked = answer(&view, Design::Ontoloop, question, None);
        assert_eq!(asked.answer.status, AnswerStatus::AnsweredPossiblyStale);
        let hedge = asked.answer.hedges().last().expect("a hedge").clone();
        assert_eq!(hedge.code, HedgeCode::QuestionPartlyUnderstood);
        assert!(hedge.message.contains("\"audits\""), "{}", hedge.message);
    }

    #[test]
    fn an_abstention_reports_what_the_graph_lacks() {
        let unknown = unlinked(
            "Is it raining?".into(),
            &Unmapped::NoPredicate,
            Design::Ontoloop,
        );
        assert_eq!(unknown.answer.status, AnswerStatus::Abstained);
        assert_eq!(
            unknown.signals,
            Some(vec![Revealed {
                kind: SignalType::EntityMissing,
                detail: "cannot map the question onto the graph: the question matches no \
                         predicate of the ontology"
                    .into(),
            }])
        );
        let baseline = unlinked("Is it raining?".into(), &Unmapped::NoPredicate, Design::Rag);
        assert_eq!(baseline.signals, None);
    }

    #[test]
    fn an_abstention_reports_the_kind_its_author_names() {
        let question = Question {
            entity: "Ledger API".into(),
            path: vec!["owned_by".into()],
            text: "Who owns the Ledger API?".into(),
            unexplained: Vec::new(),
        };
        let asked = Asked::abstained(
            question,
            "no owner is recorded".into(),
            SignalType::RelationshipUnknown,
        );
        assert_eq!(asked.answer.status, AnswerStatus::Abstained);
        assert_eq!(asked.answer.abstain_reason, "no owner is recorded");
        assert_eq!(
            asked.signals,
            Some(vec![Revealed {
                kind: SignalType::RelationshipUnknown,
                detail: "no owner is recorded".into(),
            }])
        );
    }
}
