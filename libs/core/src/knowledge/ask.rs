//! One question asked of a tenant's knowledge: linked onto the graph (an entity and a predicate
//! path, helped by the names stated in the pages the caller's search found), answered by a
//! design, and the failure signals the answer reveals to the analyst.
//!
//! Retrieval's `Ask` and `Lookup` are these steps; the service only loads the read model, runs
//! the search and reports what [`Asked::signals`] lists.

use std::collections::BTreeSet;

use super::answer::{Answer, AnswerStatus, Finding, Hedge, HedgeCode};
use super::designs::{self, Design, KnowledgeView};
use super::extract::{Claim, PageClaims};
use super::graph::{Graph, PageVersion};
use super::ontology::{Ontology, PredicateKind};
use super::passage::Chunk;
use super::question::{Unmapped, map_question, names_in_claims};
use super::scope::Scope;
use super::words::{QUESTION_WORDS, STOPWORDS, content_words, words_plain};
use crate::SignalType;

/// Passages an answer offers at most.
pub const MAX_PASSAGES: usize = 3;

/// Share of a question's content words a passage must contain to be offered: below it a passage
/// only shares a word or two with the question and would be offered as an answer it is not.
pub const PASSAGE_MIN_COVERAGE: f64 = 0.5;

/// Cosine similarity (by the sentence encoder) at which a passage answers a question whatever
/// share of its words it repeats: a paraphrase ("How soon must receipts be filed?" of "Submit
/// receipts within 30 days") shares few words and all of the meaning. Sentence-embedding
/// models put an unrelated pair near 0 and a question next to its answer well above one half.
pub const PASSAGE_MIN_SIMILARITY: f32 = 0.5;

/// Key words of a question kept at most (its search query and its signal's subject).
pub const MAX_KEY_WORDS: usize = 12;

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
    /// Where the answer should hold: the scope the caller gave, else the one the question names
    /// ("... in the EU?"), else everywhere.
    pub scope: Scope,
    /// Why the path is only a guess by meaning (no word of the question names a relation well
    /// enough): the answer is hedged as weak evidence, saying so. `None` for a path the
    /// question's words name, or one looked up by name.
    pub guessed: Option<String>,
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
            scope: Scope::everywhere(),
            guessed: None,
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
    /// What it is about when the question linked to no entity or relation: its key words
    /// ([`key_words`]), so the analyst groups the gap like any other subject. Empty when the
    /// question's entity and path say it.
    pub subject: String,
}

/// A page's passage offered when no slot answers: a chunk of the current version of a page the
/// caller may read.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    /// The chunk, with its anchor (page, version, hash, span): the citation.
    pub chunk: Chunk,
    /// The page's title.
    pub title: String,
    /// The page's origin.
    pub origin: String,
    /// How well it matched, higher is better (comparable within one answer only).
    pub score: f64,
    /// Cosine similarity of the question and the passage by the sentence encoder, when the
    /// dense half of the search ran: a passage this close to the question answers it even
    /// when it words it otherwise (see [`PASSAGE_MIN_SIMILARITY`]).
    pub similarity: Option<f32>,
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
    /// Passages given instead of a value ([`AnswerStatus::AnsweredPassages`]), best first.
    pub passages: Vec<Passage>,
}

impl Asked {
    /// An abstention on `question` for `reason`, reported as ontoloop reports one: a `kind`
    /// failure signal (an abstention that followed no hop of the graph cannot tell the kind from
    /// the answer, so the one who abstained says it).
    pub fn abstained(question: Question, reason: String, kind: SignalType) -> Self {
        let signals = Some(vec![Revealed {
            kind,
            detail: reason.clone(),
            subject: String::new(),
        }]);
        let answer = Answer::combine(Vec::new(), Some(reason));
        Self {
            question,
            answer,
            signals,
            passages: Vec::new(),
        }
    }
}

/// The words of a question that say what it is about: lower-cased, stop words and question
/// words dropped, each once, in order, at most [`MAX_KEY_WORDS`].
pub fn key_words(text: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for word in words_plain(text) {
        let dropped = STOPWORDS.contains(&word.as_str()) || QUESTION_WORDS.contains(&word.as_str());
        if dropped || keys.contains(&word) {
            continue;
        }
        keys.push(word);
        if keys.len() == MAX_KEY_WORDS {
            break;
        }
    }
    keys
}

/// The words of a question written as names: capitalised (or holding a capital, as `VPN` or
/// `iPhone`) anywhere but at the start of a sentence, and a number right after such a word (the
/// `387` of "PEP 387", the `3.14` of "Python 3.14"), lower-cased. A passage that does not name
/// them is about something else ("the Pro plan" for a question on "the Platinum plan", PEP 594
/// for a question on PEP 387).
pub fn named_words(text: &str) -> String {
    let mut named = Vec::new();
    let mut starts_sentence = true;
    let mut after_name = false;
    for word in text.split_whitespace() {
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
        let name = !starts_sentence && bare.chars().any(char::is_uppercase);
        let number = after_name && bare.chars().any(|c| c.is_ascii_digit());
        if name || number {
            named.push(bare.to_lowercase());
        }
        if !bare.is_empty() {
            starts_sentence = word.ends_with(['.', '?', '!', ':']);
            // A name ends at punctuation ("Ask Ines, then 3 others").
            after_name = (name || number) && bare.len() == word.len();
        }
    }
    named.join(" ")
}

/// Whether `passage` answers a question: it holds every word of `named` (the names the
/// question writes) and either at least [`PASSAGE_MIN_COVERAGE`] of the question's content
/// words `wanted` (both stemmed, so `refunds` meets `refund`) or a meaning at least
/// [`PASSAGE_MIN_SIMILARITY`] close to the question's.
fn covers(wanted: &BTreeSet<String>, named: &BTreeSet<String>, passage: &Passage) -> bool {
    if wanted.is_empty() {
        return false;
    }
    let held = content_words(&passage.chunk.indexed_text(&passage.title));
    let shared = wanted.iter().filter(|w| held.contains(*w)).count();
    let close = passage
        .similarity
        .is_some_and(|s| s >= PASSAGE_MIN_SIMILARITY);
    named.is_subset(&held) && (close || shared as f64 >= PASSAGE_MIN_COVERAGE * wanted.len() as f64)
}

/// Links `text` onto the graph. `found` are the current versions of the pages the caller's
/// search for the text found: the names they state (read by `claims`) link entities the graph
/// does not know yet.
pub fn link(
    text: &str,
    ontology: &Ontology,
    graph: &Graph,
    found: &[&PageVersion],
    claims: &dyn PageClaims,
) -> Result<Question, Unmapped> {
    let claims: Vec<Claim> = found
        .iter()
        .flat_map(|page| claims.stated(ontology, page).as_ref().clone())
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
    // A scope the question names in a phrase of its own ("How long do refunds take in the
    // EU?") is read off, and the rest mapped; when the rest does not map, the whole question is.
    if let Some((scope, rest)) = ontology.scope_vocabulary().scope_of(text)
        && let Ok(mapped) = map_question(&rest, graph, ontology, &extra)
    {
        return Ok(Question {
            entity: mapped.entity,
            path: mapped.path,
            text: text.to_owned(),
            unexplained: mapped.unexplained,
            scope,
            guessed: mapped.guessed,
        });
    }
    let mapped = map_question(text, graph, ontology, &extra)?;
    Ok(Question {
        entity: mapped.entity,
        path: mapped.path,
        text: text.to_owned(),
        unexplained: mapped.unexplained,
        scope: Scope::everywhere(),
        guessed: mapped.guessed,
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
        scope: &question.scope,
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
    // Nor a value on a path only guessed by meaning.
    if design == Design::Ontoloop
        && let Some(why) = &question.guessed
    {
        answer.hedge(Hedge {
            code: HedgeCode::WeakEvidence,
            message: format!("the relation asked for is a guess: {why}"),
            source_id: String::new(),
        });
    }
    let signals = (design == Design::Ontoloop)
        .then(|| signals(&answer, view.graph.resolve(&question.entity).is_some()));
    Asked {
        question,
        answer,
        signals,
        passages: Vec::new(),
    }
}

/// A question that could not be linked onto the graph (it names no relation of the ontology,
/// or no entity the graph knows). When some of `found` (passages of the caller's search for its
/// key words, best first) name what it names and hold at least [`PASSAGE_MIN_COVERAGE`] of its
/// content words or mean what it asks ([`PASSAGE_MIN_SIMILARITY`]), the best
/// [`MAX_PASSAGES`] of them answer ([`AnswerStatus::AnsweredPassages`]); otherwise it abstains,
/// saying why. The gap is signalled with the question's key words as subject: a relationship
/// the ontology lacks when passages answered a question naming no relation, else a missing
/// entity. Only ontoloop's design offers passages or reports signals; the study's baselines
/// abstain.
pub fn unlinked(text: String, why: &Unmapped, design: Design, found: Vec<Passage>) -> Asked {
    let subject = key_words(&text).join(" ");
    let wanted = content_words(&subject);
    let named = content_words(&named_words(&text));
    let passages: Vec<Passage> = if design == Design::Ontoloop {
        found
            .into_iter()
            .filter(|p| covers(&wanted, &named, p))
            .take(MAX_PASSAGES)
            .collect()
    } else {
        Vec::new()
    };
    let question = Question {
        entity: String::new(),
        path: Vec::new(),
        text,
        unexplained: Vec::new(),
        scope: Scope::everywhere(),
        guessed: None,
    };
    let reason = format!("cannot map the question onto the graph: {why}");
    let mut asked = if passages.is_empty() {
        Asked::abstained(question, reason, SignalType::EntityMissing)
    } else {
        let detail = format!("{reason}; answered with {} passage(s)", passages.len());
        let kind = match why {
            Unmapped::NoPredicate => SignalType::RelationshipUnknown,
            Unmapped::NoEntity => SignalType::EntityMissing,
        };
        Asked {
            question,
            answer: Answer {
                status: AnswerStatus::AnsweredPassages,
                value: String::new(),
                hops: Vec::new(),
                abstain_reason: String::new(),
            },
            signals: Some(vec![Revealed {
                kind,
                detail,
                subject: String::new(),
            }]),
            passages,
        }
    };
    match asked.signals.as_mut() {
        Some(signals) if design == Design::Ontoloop => {
            for signal in signals {
                signal.subject.clone_from(&subject);
            }
        }
        _ => asked.signals = None,
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
            subject: String::new(),
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
            signals.push(Revealed {
                kind,
                detail,
                subject: String::new(),
            });
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
    use crate::knowledge::extract::Extract;
    use crate::knowledge::ontology::tests::{sample, scoped_sample};

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
            effective_from: None,
        }
    }

    /// An ontology's graph with one page read into it, as an agent sees it: the state the
    /// questions below are asked of.
    struct Stated {
        ontology: Ontology,
        graph: Graph,
        current: BTreeMap<String, PageVersion>,
        log: BTreeMap<String, u64>,
        agent: Caller,
        scope: Scope,
    }

    impl Stated {
        fn new(ontology: Ontology, stated: PageVersion) -> Self {
            let mut graph = Graph::new(&ontology);
            graph.apply_page(&ontology, &stated, Utc::now());
            let log = BTreeMap::from([(stated.source_id.clone(), stated.version)]);
            let current = BTreeMap::from([(stated.source_id.clone(), stated)]);
            Self {
                ontology,
                graph,
                current,
                log,
                agent: Caller::new("t", "agent").expect("caller"),
                scope: Scope::everywhere(),
            }
        }

        fn view<'a>(&'a self, search: &'a dyn Fn(&str, usize) -> Vec<String>) -> KnowledgeView<'a> {
            KnowledgeView {
                ontology: &self.ontology,
                graph: &self.graph,
                current: &self.current,
                log: &self.log,
                search,
                access: Access::new(&self.agent, &self.current),
                as_of: Utc::now(),
                hedge_below_authority: 0,
                top_k: 5,
                scope: &self.scope,
                claims: &Extract,
            }
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
        let linked = link(question, &ontology, &graph, &[&found], &Extract).expect("links");
        assert_eq!(
            (linked.entity.as_str(), linked.path.clone()),
            (
                "Tessaly Pier",
                vec!["included_in".to_owned(), "price".to_owned()]
            )
        );
        assert_eq!(linked.text, question);
        assert_eq!(
            link("Is it raining?", &ontology, &graph, &[], &Extract),
            Err(Unmapped::NoPredicate)
        );
    }

    #[test]
    fn a_question_that_names_a_scope_is_answered_in_it() {
        let stated = Stated::new(
            scoped_sample(),
            page(
                "refunds",
                "Customers can request a refund within 30 days of purchase. In the EU, customers \
             can request a refund within 14 days of purchase.",
            ),
        );
        let (ontology, graph) = (&stated.ontology, &stated.graph);
        let search = |_: &str, _: usize| vec!["refunds".to_owned()];
        let view = stated.view(&search);
        let asked = |text: &str| {
            let question = link(text, ontology, graph, &[], &Extract).expect("links");
            (
                question.scope.to_string(),
                answer(&view, Design::Ontoloop, question, None).answer,
            )
        };
        let (scope, eu) = asked("How many days do customers have to request a refund in the EU?");
        assert_eq!(
            (scope.as_str(), eu.value.as_str()),
            ("region=EU", "14"),
            "{eu:?}"
        );
        let (scope, any) = asked("How many days do customers have to request a refund?");
        assert_eq!(scope, "everywhere");
        assert_eq!(any.status, AnswerStatus::NeedsScope, "{any:?}");
        assert_eq!(any.scoped().len(), 2);
    }

    #[test]
    fn the_first_hop_reuses_the_search_already_run() {
        let stated = Stated::new(
            sample(),
            page("p", "The Pro plan costs €49 per user per month."),
        );
        let (ontology, graph) = (&stated.ontology, &stated.graph);
        let queries = RefCell::new(Vec::new());
        let search = |query: &str, _k: usize| {
            queries.borrow_mut().push(query.to_owned());
            vec!["p".to_owned()]
        };
        let view = stated.view(&search);
        let question = link(
            "How much does the Pro plan cost?",
            ontology,
            graph,
            &[],
            &Extract,
        )
        .expect("links");
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
        let stated = Stated::new(
            sample(),
            page(
                "p",
                "Payments service is owned by the Atlas team. The Atlas team is led by Derya Kaya.",
            ),
        );
        let (ontology, graph) = (&stated.ontology, &stated.graph);
        let search = |_: &str, _k: usize| vec!["p".to_owned()];
        let view = stated.view(&search);
        // Understood: owned_by then led_by, no hedge.
        let question = link(
            "Who leads the team that owns the Payments service?",
            ontology,
            graph,
            &[],
            &Extract,
        )
        .expect("links");
        let asked = answer(&view, Design::Ontoloop, question, None);
        assert_eq!(asked.answer.status, AnswerStatus::Answered);
        assert_eq!(asked.answer.value, "Derya Kaya");
        // "audits" names a relation the ontology does not know: the value is hedged, naming it.
        let question = link(
            "Who leads the team that audits the Payments service?",
            ontology,
            graph,
            &[],
            &Extract,
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
    fn a_value_on_a_guessed_relation_is_hedged_as_weak_evidence_saying_why() {
        let stated = Stated::new(
            sample(),
            page("p", "The Pro plan costs €49 per user per month."),
        );
        let search = |_: &str, _k: usize| vec!["p".to_owned()];
        let view = stated.view(&search);
        let question = Question {
            guessed: Some("\"toll\" was read as price by meaning alone".into()),
            ..Question::lookup(
                "Pro".into(),
                vec!["price".into()],
                "What toll has Pro?".into(),
            )
        };
        let asked = answer(&view, Design::Ontoloop, question.clone(), None);
        assert_eq!(asked.answer.status, AnswerStatus::AnsweredPossiblyStale);
        assert!(asked.answer.value.contains("49"), "{:?}", asked.answer);
        let hedge = asked.answer.hedges().last().expect("a hedge").clone();
        assert_eq!(hedge.code, HedgeCode::WeakEvidence);
        assert!(
            hedge.message.contains("\"toll\" was read as price"),
            "{}",
            hedge.message
        );
        // The study's baselines hedge by their own rules only.
        let baseline = answer(&view, Design::Rag, question, None);
        assert!(
            baseline
                .answer
                .hedges()
                .all(|h| h.code != HedgeCode::WeakEvidence),
            "{:?}",
            baseline.answer
        );
    }

    #[test]
    fn an_abstention_reports_what_the_graph_lacks() {
        let unknown = unlinked(
            "Is it raining?".into(),
            &Unmapped::NoPredicate,
            Design::Ontoloop,
            Vec::new(),
        );
        assert_eq!(unknown.answer.status, AnswerStatus::Abstained);
        assert_eq!(
            unknown.signals,
            Some(vec![Revealed {
                kind: SignalType::EntityMissing,
                detail: "cannot map the question onto the graph: the question matches no \
                         predicate of the ontology"
                    .into(),
                subject: "raining".into(),
            }])
        );
        let baseline = unlinked(
            "Is it raining?".into(),
            &Unmapped::NoPredicate,
            Design::Rag,
            Vec::new(),
        );
        assert_eq!(baseline.signals, None);
    }

    fn passage(doc: &str, heading: &str, text: &str) -> Passage {
        let body = format!("# {heading}\n\n{text}");
        let chunk = crate::knowledge::passage::chunk_page(doc, 2, &body)
            .pop()
            .expect("a chunk");
        Passage {
            chunk,
            title: doc.into(),
            origin: "wiki".into(),
            score: 1.0,
            similarity: None,
        }
    }

    #[test]
    fn a_question_no_slot_answers_gets_the_passages_that_hold_its_words() {
        let found = vec![
            passage("travel", "Travel", "Book trains two weeks ahead."),
            passage(
                "wifi",
                "Office",
                "The guest wifi password is on the fridge.",
            ),
            passage("parking", "Office", "Parking permits come from reception."),
        ];
        let text = "Where is the office wifi password?";
        let asked = unlinked(
            text.into(),
            &Unmapped::NoPredicate,
            Design::Ontoloop,
            found.clone(),
        );
        assert_eq!(asked.answer.status, AnswerStatus::AnsweredPassages);
        assert!(asked.answer.value.is_empty());
        // "travel" shares no word; "parking" only "office" (one of three): neither is offered.
        let offered: Vec<&str> = asked
            .passages
            .iter()
            .map(|p| p.chunk.anchor.doc_id.as_str())
            .collect();
        assert_eq!(offered, ["wifi"]);
        assert_eq!(asked.passages[0].chunk.anchor.version, 2);
        let signals = asked.signals.expect("signals");
        assert_eq!(signals.len(), 1);
        assert_eq!(signals[0].kind, SignalType::RelationshipUnknown);
        assert_eq!(signals[0].subject, "office wifi password");
        // A question that names a relation but no known entity gets the passages too; its
        // signal says the entity is missing, so the healing loop looks for it.
        let entity = unlinked(
            text.into(),
            &Unmapped::NoEntity,
            Design::Ontoloop,
            found.clone(),
        );
        assert_eq!(entity.answer.status, AnswerStatus::AnsweredPassages);
        assert_eq!(entity.passages.len(), 1);
        let signals = entity.signals.expect("signals");
        assert_eq!(signals[0].kind, SignalType::EntityMissing);
        assert_eq!(signals[0].subject, "office wifi password");
        // The study's baselines abstain and report nothing.
        let baseline = unlinked(text.into(), &Unmapped::NoPredicate, Design::Rag, found);
        assert_eq!(baseline.answer.status, AnswerStatus::Abstained);
        assert_eq!(baseline.signals, None);
    }

    #[test]
    fn a_passage_that_does_not_name_what_the_question_names_is_not_offered() {
        let found = vec![passage(
            "pricing",
            "Plans",
            "The Pro plan costs 49 euros a month.",
        )];
        let platinum = unlinked(
            "How much does the Platinum plan cost?".into(),
            &Unmapped::NoEntity,
            Design::Ontoloop,
            found.clone(),
        );
        assert_eq!(platinum.answer.status, AnswerStatus::Abstained);
        let pro = unlinked(
            "What does the Pro plan cost? Monthly?".into(),
            &Unmapped::NoEntity,
            Design::Ontoloop,
            found,
        );
        assert_eq!(pro.answer.status, AnswerStatus::AnsweredPassages);
        assert_eq!(
            named_words("Is VPN on? Ask Ines, the iPhone expert."),
            "vpn ines iphone"
        );
        // A number is part of the name it follows, not of a count.
        assert_eq!(
            named_words(
                "What does PEP 387 propose for Python 3.14, in 2 parts? Ask Ines, 3 times."
            ),
            "pep 387 python 3.14 ines"
        );
    }

    #[test]
    fn a_passage_close_in_meaning_answers_though_it_words_the_question_otherwise() {
        let close = |similarity| Passage {
            similarity: Some(similarity),
            ..passage(
                "expenses",
                "Expenses",
                "File every claim within 30 days of the trip.",
            )
        };
        // "receipts", "submitted": neither word is in the passage, its meaning is.
        let text = "How soon do receipts have to be submitted?";
        let asked = unlinked(
            text.into(),
            &Unmapped::NoPredicate,
            Design::Ontoloop,
            vec![close(PASSAGE_MIN_SIMILARITY)],
        );
        assert_eq!(asked.answer.status, AnswerStatus::AnsweredPassages);
        // Below the similarity, and sharing too few words, it is not offered.
        let far = unlinked(
            text.into(),
            &Unmapped::NoPredicate,
            Design::Ontoloop,
            vec![close(PASSAGE_MIN_SIMILARITY - 0.2)],
        );
        assert_eq!(far.answer.status, AnswerStatus::Abstained);
        // Closeness never excuses a name the question writes and the passage lacks.
        let named = unlinked(
            "How soon must Northwind receipts be submitted?".into(),
            &Unmapped::NoPredicate,
            Design::Ontoloop,
            vec![close(0.9)],
        );
        assert_eq!(named.answer.status, AnswerStatus::Abstained);
    }

    #[test]
    fn key_words_drop_stop_words_and_repeats() {
        assert_eq!(
            key_words("What is the refund policy for the EU, and the refund window?"),
            ["refund", "policy", "eu", "window"]
        );
        let long = (0..40)
            .map(|n| format!("w{n}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(key_words(&long).len(), MAX_KEY_WORDS);
    }

    #[test]
    fn an_abstention_reports_the_kind_its_author_names() {
        let question = Question {
            entity: "Ledger API".into(),
            path: vec!["owned_by".into()],
            text: "Who owns the Ledger API?".into(),
            unexplained: Vec::new(),
            scope: Scope::everywhere(),
            guessed: None,
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
                subject: String::new(),
            }])
        );
    }
}
