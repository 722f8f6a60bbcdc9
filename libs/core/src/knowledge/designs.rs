//! Answering a slot or a multi-hop question over one tenant's knowledge, by ontoloop's policy or
//! by one of the four baseline designs of the drift study (kept for comparison, faithfully).
//!
//! Everything the designs need arrives as a [`KnowledgeView`]: the graph, the current pages, the
//! extraction log and a search function that already applied the caller's permissions.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use super::answer::{
    Answer, AnswerStatus, Candidate, ScopedValue, SlotContext, SlotDecision, decide, same_value,
};
use super::extract::{Claim, PageClaims, claims_in_sentence, split_sentences};
use super::graph::{Access, Fact, Graph, PageVersion, SourceRef};
use super::ontology::{Ontology, PredicateKind};
use super::scope::{Applicable, Scope, by_scope};

/// Which design answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// ontoloop's own policy: authority, then recency, computed hedges.
    Ontoloop,
    /// Top-3 BM25 pages, first candidate.
    Rag,
    /// One graph value per question: the value most sources agree on, ties to the latest write.
    GraphOnly,
    /// The graph value first, then the top-3 pages; first usable answer.
    Hybrid,
    /// Every graph value with dates plus the top-3 pages; newest claim wins; hedges.
    HybridVersioned,
    /// The control the graph must beat (seed 003): flat retrieval of the top pages with the
    /// same version, as-of, scope and authority metadata, read by the same pipeline, the
    /// newest authoritative value taken; no graph.
    FlatMetadata,
}

impl Design {
    /// Every design, ontoloop first.
    pub const ALL: [Design; 6] = [
        Design::Ontoloop,
        Design::Rag,
        Design::GraphOnly,
        Design::Hybrid,
        Design::HybridVersioned,
        Design::FlatMetadata,
    ];

    /// Name used in tables and on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Design::Ontoloop => "ontoloop",
            Design::Rag => "Rag",
            Design::GraphOnly => "Graph",
            Design::Hybrid => "Hybrid",
            Design::HybridVersioned => "HybridVersioned",
            Design::FlatMetadata => "FlatMetadata",
        }
    }

    /// Parses a name (case-insensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(name))
    }
}

/// Pages the study's baselines read per question.
pub const BASELINE_TOP_K: usize = 3;

/// What a design can see of one tenant, for one caller.
pub struct KnowledgeView<'a> {
    /// The tenant's ontology.
    pub ontology: &'a Ontology,
    /// The graph.
    pub graph: &'a Graph,
    /// The version of every page current at `as_of` (all pages, permission is checked on use).
    pub current: &'a BTreeMap<String, PageVersion>,
    /// Extraction log: page id to the version the graph last read.
    pub log: &'a BTreeMap<String, u64>,
    /// BM25 search over the pages the caller may read: page ids, best first.
    pub search: &'a dyn Fn(&str, usize) -> Vec<String>,
    /// What the caller may read, by the newest version of every page; every page, fact and
    /// version number a design uses passes it first.
    pub access: Access<'a>,
    /// Facts are taken as of this instant.
    pub as_of: DateTime<Utc>,
    /// ontoloop hedges answers resting only on origins below this authority.
    pub hedge_below_authority: i32,
    /// Pages ontoloop's policy reads besides the sources the graph cites.
    pub top_k: usize,
    /// Where the answer should hold; everywhere asks for the value that holds everywhere, and
    /// values that differ by scope then need one ([`AnswerStatus::NeedsScope`]).
    pub scope: &'a Scope,
    /// The claims of the pages ontoloop's policy reads ([`Extract`](super::extract::Extract)
    /// extracts them at each read; a read model keeps them).
    pub claims: &'a dyn PageClaims,
}

impl KnowledgeView<'_> {
    fn readable_page(&self, id: &str) -> Option<&PageVersion> {
        self.current.get(id).filter(|p| self.access.page(p))
    }

    fn ahead(&self, id: &str) -> bool {
        match (self.current.get(id), self.log.get(id)) {
            (Some(page), Some(read)) => *read < page.version,
            (Some(_), None) => true,
            _ => false,
        }
    }

    /// The words of a predicate for a follow-up hop's query: its first pattern without slots.
    fn predicate_words(&self, predicate: &str) -> String {
        self.ontology
            .predicate(predicate)
            .and_then(|p| p.patterns.first())
            .map(|p| p.literal_text())
            .unwrap_or_else(|| predicate.replace('_', " "))
    }
}

/// Answers `entity` → `hops` with `design`. `question` is the first hop's search query (the
/// question text); later hops search for the previous value and the predicate's words.
pub fn answer(
    view: &KnowledgeView<'_>,
    design: Design,
    entity: &str,
    hops: &[String],
    question: &str,
) -> Answer {
    let mut current = entity.trim().to_owned();
    let mut decisions = Vec::new();
    for (i, predicate) in hops.iter().enumerate() {
        let query = if i == 0 {
            question.to_owned()
        } else {
            format!("{current} {}", view.predicate_words(predicate))
        };
        let decision = match design {
            Design::Ontoloop => ontoloop_slot(view, &current, predicate, &query),
            Design::FlatMetadata => flat_metadata_slot(view, &current, predicate, &query),
            other => baseline_slot(view, other, &current, predicate, &query),
        };
        let abstained = decision.status == AnswerStatus::Abstained;
        // Values that differ by scope leave no one entity to follow further.
        let needs_scope = decision.status == AnswerStatus::NeedsScope;
        let entity_id = view
            .graph
            .resolve(&current)
            .map_or_else(|| current.clone(), |e| e.id.clone());
        let next = clean_value(&decision.value);
        decisions.push((entity_id, predicate.clone(), decision));
        if abstained {
            let reason = format!("nothing the caller may read states {predicate} of {current:?}");
            return Answer::combine(decisions, Some(reason));
        }
        if needs_scope {
            return Answer::combine(decisions, None);
        }
        current = next;
    }
    Answer::combine(decisions, None)
}

/// A hop's value as the next hop's entity: trimmed, a final period and a leading "the" dropped.
fn clean_value(value: &str) -> String {
    let value = value.trim().trim_end_matches('.').trim();
    let value = value
        .strip_prefix("the ")
        .or_else(|| value.strip_prefix("The "))
        .unwrap_or(value);
    // A trailing entity-type noun ("the Atlas team") needs no handling here: names are
    // resolved through the ontology's type nouns when the next hop starts.
    value.trim().to_owned()
}

/// Names that refer to the same thing as `seed`: the graph's aliases plus renames stated in the
/// given claims (both directions, to a fixed point).
fn name_closure(graph: &Graph, seed: &str, renames: &[&Claim]) -> BTreeSet<String> {
    let key = |n: &str| graph.normaliser().key(n);
    let mut keys: BTreeSet<String> = BTreeSet::from([key(seed)]);
    loop {
        let before = keys.len();
        for name in keys.clone() {
            if let Some(entity) = graph.resolve(&name) {
                keys.extend(entity.aliases.iter().map(|a| key(a)));
                keys.insert(key(&entity.name));
            }
        }
        for claim in renames {
            let (new, old) = (key(claim.subject.name()), key(&claim.object));
            if keys.contains(&new) || keys.contains(&old) {
                keys.insert(new);
                keys.insert(old);
            }
        }
        if keys.len() == before {
            return keys;
        }
    }
}

/// ontoloop's policy for one slot.
fn ontoloop_slot(
    view: &KnowledgeView<'_>,
    entity: &str,
    predicate: &str,
    query: &str,
) -> SlotDecision {
    let graph = view.graph;
    // Pages retrieval finds for the question, read at their current version.
    let mut read: BTreeMap<String, &PageVersion> = BTreeMap::new();
    for id in (view.search)(query, view.top_k) {
        if let Some(page) = view.readable_page(&id) {
            read.insert(id, page);
        }
    }
    let lexicon = graph.lexicon(view.ontology);
    let claims_of = |page: &PageVersion| view.claims.scoped(view.ontology, page, &lexicon);
    let mut page_claims: BTreeMap<String, std::sync::Arc<Vec<(Scope, Claim)>>> = read
        .iter()
        .map(|(id, p)| (id.clone(), claims_of(p)))
        .collect();
    let renames: Vec<Claim> = page_claims
        .values()
        .flat_map(|claims| claims.iter())
        .filter(|(_, c)| c.kind == PredicateKind::Rename)
        .map(|(_, c)| c.clone())
        .collect();
    let names = name_closure(graph, entity, &renames.iter().collect::<Vec<_>>());
    let entity_ids: BTreeSet<String> = names
        .iter()
        .filter_map(|n| graph.resolve(n))
        .map(|e| e.id.clone())
        .collect();
    // Graph facts of the slot the caller may read, and the current versions of their sources;
    // values announced for later are kept aside as the slot's upcoming changes.
    let mut candidates: Vec<(Scope, Candidate)> = Vec::new();
    let mut upcoming: Vec<Candidate> = Vec::new();
    let mut slot_facts: Vec<&Fact> = entity_ids
        .iter()
        .flat_map(|id| graph.facts_of(id))
        .filter(|f| f.predicate == predicate && view.access.fact(f))
        .collect();
    // In id order, as a scan of every fact would meet them.
    slot_facts.sort_by_key(|f| f.id);
    for fact in slot_facts {
        if fact.valid_from > view.as_of
            && fact.valid_to.is_none_or(|to| to > fact.valid_from)
            && fact.scope.within(view.scope)
        {
            upcoming.push(fact_candidate(fact));
        }
        if !fact.valid_at(view.as_of) {
            continue;
        }
        if !read.contains_key(&fact.source.source_id)
            && let Some(page) = view.readable_page(&fact.source.source_id)
        {
            read.insert(fact.source.source_id.clone(), page);
            page_claims.insert(fact.source.source_id.clone(), claims_of(page));
        }
        candidates.push((fact.scope.clone(), fact_candidate(fact)));
    }
    for (id, claims) in &page_claims {
        let Some(page) = read.get(id) else { continue };
        for (scope, claim) in claims
            .iter()
            .filter(|(_, c)| c.kind == PredicateKind::Slot && c.predicate == predicate)
        {
            if !names.contains(&graph.normaliser().key(claim.subject.name())) {
                continue;
            }
            candidates.push((scope.clone(), page_candidate(view, id, page, claim)));
        }
    }
    let ctx = SlotContext {
        read_versions: read.iter().map(|(id, p)| (id.clone(), p.version)).collect(),
        // The sources the candidates cite, and only pages the caller may read, so a hedge
        // never names another (and an Ask never copies every page's version).
        latest_versions: candidates
            .iter()
            .map(|(_, c)| &c.source.source_id)
            .filter(|id| view.access.source(id))
            .filter_map(|id| view.current.get(id).map(|p| (id.clone(), p.version)))
            .collect(),
        hedge_below_authority: view.hedge_below_authority,
    };
    upcoming.sort_by(|a, b| {
        a.valid_from
            .cmp(&b.valid_from)
            .then(b.authority.cmp(&a.authority))
    });
    // Values in different scopes are weighed apart: one value for the scope asked about, or
    // each scope's value when they differ (the policy decides inside each scope).
    let decision = match by_scope(
        candidates,
        view.scope,
        |group| Some(decide(group, &ctx)),
        |a, b| same_value(&a.value, &b.value),
    ) {
        Applicable::One(decision) => decision,
        Applicable::Nothing => decide(Vec::new(), &ctx),
        Applicable::NeedsScope(split) => {
            let findings = split
                .iter()
                .flat_map(|(_, d)| d.findings.iter().cloned())
                .collect();
            SlotDecision {
                scoped: split
                    .into_iter()
                    .map(|(scope, d)| ScopedValue {
                        scope,
                        value: d.value,
                        evidence: d.evidence,
                    })
                    .collect(),
                ..SlotDecision::valueless(AnswerStatus::NeedsScope, findings)
            }
        }
    };
    // Whether the page behind the chosen value is a record about the entity (a header block or
    // front matter whose fields state its slots): its prose is then the record's description,
    // not its word on a slot its fields leave out. A `Key: value` sentence in prose is no record.
    let fielded = |source_id: &str| {
        let about_entity = page_claims.get(source_id).is_some_and(|claims| {
            claims.iter().any(|(_, c)| {
                c.extractor == super::structured::STRUCTURED_ID
                    && c.kind == PredicateKind::Slot
                    && names.contains(&graph.normaliser().key(c.subject.name()))
            })
        });
        about_entity
            && read.get(source_id).is_some_and(|page| {
                super::document::parse(&page.body)
                    .records
                    .iter()
                    .any(|r| r.layout.is_header())
            })
    };
    weak_evidence(
        view,
        predicate,
        &fielded,
        SlotDecision {
            upcoming,
            ..decision
        },
    )
}

/// Most words a sentence may have and still be a fragment when it ends without a full stop
/// (a heading's words, a list's item, a table's cell read as prose).
const FRAGMENT_WORDS: usize = 4;

/// ontoloop never gives a value on weak evidence without saying so: a value of another shape
/// than the predicate's objects (a name where a date is wanted), or one read by meaning alone
/// (not a field, not the ontology's own phrasing) from a fragment of a sentence, or from the
/// prose of a page whose own fields describe the same subject but leave this slot out (a
/// record's description is no field of it: "written in pure Python" states no Python version).
fn weak_evidence(
    view: &KnowledgeView<'_>,
    predicate: &str,
    fielded: &dyn Fn(&str) -> bool,
    mut decision: SlotDecision,
) -> SlotDecision {
    if decision.status != AnswerStatus::Answered {
        return decision;
    }
    let Some(winner) = decision.evidence.first() else {
        return decision;
    };
    let object_type = view
        .ontology
        .predicate(predicate)
        .map(|p| p.object_type.clone())
        .unwrap_or_default();
    let read_by_meaning = !winner.extractor.starts_with("structured/")
        && winner.extractor != super::extract::RULE_SET
        && winner.confidence < 1.0;
    let excerpt = winner.excerpt.trim();
    let fragment = read_by_meaning
        && !excerpt.is_empty()
        && !excerpt.ends_with(['.', '!', '?'])
        && excerpt.split_whitespace().count() <= FRAGMENT_WORDS;
    let why = if !super::structured::has_shape(&object_type, &decision.value) {
        Some(format!(
            "{:?} does not have the shape of a {object_type} value",
            decision.value
        ))
    } else if fragment {
        Some(format!(
            "read by meaning from a fragment, {excerpt:?}, not from a sentence or a field"
        ))
    } else if read_by_meaning && fielded(&winner.source.source_id) {
        Some(format!(
            "read by meaning from the prose of a page whose own fields about it do not state \
             {predicate}: {excerpt:?}"
        ))
    } else {
        None
    };
    if let Some(message) = why {
        let source_id = winner.source.source_id.clone();
        decision.hedges.push(super::answer::Hedge {
            code: super::answer::HedgeCode::WeakEvidence,
            message,
            source_id,
        });
        decision.status = AnswerStatus::AnsweredPossiblyStale;
    }
    decision
}

/// A page's claims, each with the scope it holds in.
type ScopedClaims = std::sync::Arc<Vec<(Scope, Claim)>>;

/// The flat control for one slot: the top pages retrieval finds for the question, read by the
/// tenant's pipeline; each claim of the slot about the entity (by its spelling, and renames the
/// pages state) a candidate with its page's version, time, scope and authority; the same policy
/// decides. The graph is used for nothing but the spelling of names.
fn flat_metadata_slot(
    view: &KnowledgeView<'_>,
    entity: &str,
    predicate: &str,
    query: &str,
) -> SlotDecision {
    let normaliser = view.graph.normaliser();
    let lexicon = super::semantic::Lexicon::default();
    let pages: Vec<(String, &PageVersion)> = (view.search)(query, view.top_k)
        .into_iter()
        .filter_map(|id| view.readable_page(&id).map(|p| (id, p)))
        .collect();
    let claims: Vec<(&str, &PageVersion, ScopedClaims)> = pages
        .iter()
        .map(|(id, page)| {
            (
                id.as_str(),
                *page,
                view.claims.scoped(view.ontology, page, &lexicon),
            )
        })
        .collect();
    let mut names = BTreeSet::from([normaliser.key(entity)]);
    loop {
        let before = names.len();
        for (_, claim) in claims.iter().flat_map(|(_, _, c)| c.iter()) {
            let (new, old) = (
                normaliser.key(claim.subject.name()),
                normaliser.key(&claim.object),
            );
            if claim.kind == PredicateKind::Rename && (names.contains(&new) || names.contains(&old))
            {
                names.insert(new);
                names.insert(old);
            }
        }
        if names.len() == before {
            break;
        }
    }
    let mut candidates = Vec::new();
    for (id, page, page_claims) in &claims {
        for (scope, claim) in page_claims.iter() {
            if claim.kind != PredicateKind::Slot
                || claim.predicate != predicate
                || !names.contains(&normaliser.key(claim.subject.name()))
            {
                continue;
            }
            candidates.push((scope.clone(), page_candidate(view, id, page, claim)));
        }
    }
    let ctx = SlotContext {
        read_versions: pages
            .iter()
            .map(|(id, p)| (id.clone(), p.version))
            .collect(),
        latest_versions: BTreeMap::new(),
        hedge_below_authority: view.hedge_below_authority,
    };
    match by_scope(
        candidates,
        view.scope,
        |group| Some(decide(group, &ctx)),
        |a, b| same_value(&a.value, &b.value),
    ) {
        Applicable::One(decision) => decision,
        Applicable::Nothing | Applicable::NeedsScope(_) => decide(Vec::new(), &ctx),
    }
}

/// A claim read from a page's current version as a candidate, with the page's version, time and
/// authority.
fn page_candidate(
    view: &KnowledgeView<'_>,
    id: &str,
    page: &PageVersion,
    claim: &Claim,
) -> Candidate {
    Candidate {
        value: claim.object.clone(),
        source: SourceRef {
            source_id: id.to_owned(),
            version: page.version,
            origin: page.origin.clone(),
        },
        authority: view.ontology.authority(&page.origin),
        valid_from: page.effective_at(),
        extracted_at: None,
        extractor: claim.extractor.clone(),
        confidence: claim.confidence,
        excerpt: claim.sentence.clone(),
    }
}

/// A graph fact as a candidate: cited at the newest version of its source known to state it.
fn fact_candidate(fact: &Fact) -> Candidate {
    Candidate {
        value: fact.object.clone(),
        source: SourceRef {
            version: fact.seen_version.max(fact.source.version),
            ..fact.source.clone()
        },
        authority: fact.authority,
        valid_from: fact.valid_from,
        extracted_at: Some(fact.extracted_at),
        extractor: fact.extractor.clone(),
        confidence: fact.confidence,
        excerpt: String::new(),
    }
}

/// One piece of evidence a baseline reader sees.
struct Item {
    claims: Vec<Claim>,
    text: String,
    date: DateTime<Utc>,
    from_graph: bool,
    ahead: bool,
    source: SourceRef,
}

/// The study's baselines for one slot.
fn baseline_slot(
    view: &KnowledgeView<'_>,
    design: Design,
    entity: &str,
    predicate: &str,
    query: &str,
) -> SlotDecision {
    let mut items = Vec::new();
    if matches!(
        design,
        Design::GraphOnly | Design::Hybrid | Design::HybridVersioned
    ) {
        items.extend(graph_items(view, design, entity, predicate));
    }
    if matches!(
        design,
        Design::Rag | Design::Hybrid | Design::HybridVersioned
    ) {
        for id in (view.search)(query, BASELINE_TOP_K) {
            let Some(page) = view.readable_page(&id) else {
                continue;
            };
            let mut claims: Vec<Claim> = claims_in_sentence(view.ontology, &page.title);
            claims.extend(
                split_sentences(&page.body)
                    .into_iter()
                    .flat_map(|s| claims_in_sentence(view.ontology, s)),
            );
            items.push(Item {
                claims,
                text: format!("{}\n{}", page.title, page.body),
                date: page.effective_at(),
                from_graph: false,
                ahead: view.ahead(&id),
                source: SourceRef {
                    source_id: id.clone(),
                    version: page.version,
                    origin: page.origin.clone(),
                },
            });
        }
    }
    read_baseline(view, design, entity, predicate, &items)
}

/// Graph evidence as the study renders it: one rename line per alias, then the slot's values.
fn graph_items(
    view: &KnowledgeView<'_>,
    design: Design,
    entity: &str,
    predicate: &str,
) -> Vec<Item> {
    let Some(node) = view.graph.resolve(entity) else {
        return Vec::new();
    };
    let mut items = Vec::new();
    let rename = view
        .ontology
        .predicates()
        .iter()
        .find(|p| p.kind == PredicateKind::Rename)
        .map(|p| p.name.clone());
    for alias in node
        .aliases
        .iter()
        .filter(|a| !a.eq_ignore_ascii_case(&node.name))
    {
        if let Some(rename) = &rename {
            items.push(Item {
                claims: vec![Claim {
                    predicate: rename.clone(),
                    kind: PredicateKind::Rename,
                    subject: super::extract::ClaimSubject::Named(node.name.clone()),
                    object: alias.clone(),
                    sentence: String::new(),
                    extractor: super::extract::RULE_SET.to_owned(),
                    confidence: 1.0,
                }],
                text: format!("{} {}", node.name, alias),
                date: DateTime::<Utc>::MIN_UTC,
                from_graph: true,
                ahead: false,
                source: SourceRef::default_graph(),
            });
        }
    }
    let mut facts: Vec<_> = view
        .graph
        .facts_of(&node.id)
        .filter(|f| f.predicate == predicate && f.valid_at(view.as_of) && view.access.fact(f))
        .collect();
    facts.sort_by_key(|f| f.id);
    // Group by value, in order of first appearance.
    let mut groups: Vec<(String, Vec<&super::graph::Fact>)> = Vec::new();
    for fact in facts {
        match groups.iter_mut().find(|(v, _)| same_value(v, &fact.object)) {
            Some((_, members)) => members.push(fact),
            None => groups.push((fact.object.clone(), vec![fact])),
        }
    }
    let chosen: Vec<&super::graph::Fact> = if design == Design::HybridVersioned {
        groups
            .iter()
            .filter_map(|(_, members)| {
                members
                    .iter()
                    .copied()
                    .max_by(|a, b| a.valid_from.cmp(&b.valid_from).then(b.id.cmp(&a.id)))
            })
            .collect()
    } else {
        groups
            .iter()
            .max_by(|(_, a), (_, b)| {
                a.len().cmp(&b.len()).then(
                    a.iter()
                        .map(|f| f.id)
                        .max()
                        .cmp(&b.iter().map(|f| f.id).max()),
                )
            })
            .and_then(|(_, members)| members.iter().copied().max_by_key(|f| f.id))
            .into_iter()
            .collect()
    };
    for fact in chosen {
        items.push(Item {
            claims: vec![Claim {
                predicate: fact.predicate.clone(),
                kind: PredicateKind::Slot,
                subject: super::extract::ClaimSubject::Named(node.name.clone()),
                object: fact.object.clone(),
                sentence: String::new(),
                extractor: fact.extractor.clone(),
                confidence: fact.confidence,
            }],
            text: format!("{} {}", node.name, fact.object),
            date: fact.valid_from,
            from_graph: true,
            ahead: false,
            source: fact.source.clone(),
        });
    }
    items
}

/// The study's deterministic reader.
fn read_baseline(
    view: &KnowledgeView<'_>,
    design: Design,
    entity: &str,
    predicate: &str,
    items: &[Item],
) -> SlotDecision {
    let lower = |s: &str| s.trim().to_lowercase();
    let mut names: BTreeSet<String> = BTreeSet::from([lower(entity)]);
    for _ in 0..2 {
        for claim in items
            .iter()
            .flat_map(|i| &i.claims)
            .filter(|c| c.kind == PredicateKind::Rename)
        {
            let (new, old) = (lower(claim.subject.name()), lower(&claim.object));
            if names.contains(&new) {
                names.insert(old.clone());
            }
            if names.contains(&old) {
                names.insert(new);
            }
        }
    }
    let mut candidates: Vec<(usize, &Item, &Claim)> = Vec::new();
    for (order, item) in items.iter().enumerate() {
        for claim in item
            .claims
            .iter()
            .filter(|c| c.kind == PredicateKind::Slot && c.predicate == predicate)
        {
            if names.contains(&lower(claim.subject.name())) {
                candidates.push((order, item, claim));
            }
        }
    }
    let to_candidate = |item: &Item, claim: &Claim| Candidate {
        value: claim.object.clone(),
        source: item.source.clone(),
        authority: view.ontology.authority(&item.source.origin),
        valid_from: item.date,
        extracted_at: None,
        extractor: super::extract::RULE_SET.to_owned(),
        confidence: 1.0,
        excerpt: claim.sentence.clone(),
    };
    if candidates.is_empty() {
        return SlotDecision::valueless(AnswerStatus::Abstained, Vec::new());
    }
    let (winner, hedged) = if design == Design::HybridVersioned {
        let mut sorted = candidates.clone();
        // Newest first; on the same date the graph first; then evidence order (stable sort).
        sorted.sort_by(|a, b| {
            b.1.date
                .cmp(&a.1.date)
                .then(b.1.from_graph.cmp(&a.1.from_graph))
        });
        let winner = sorted[0];
        let mut distinct: Vec<&str> = Vec::new();
        for (_, _, claim) in &candidates {
            if !distinct.iter().any(|d| same_value(d, &claim.object)) {
                distinct.push(&claim.object);
            }
        }
        let disagree = distinct.len() > 1;
        let no_graph = !candidates.iter().any(|(_, item, _)| item.from_graph);
        let changed = items.iter().any(|item| {
            item.ahead
                && names
                    .iter()
                    .any(|n| item.text.to_lowercase().contains(n.as_str()))
        });
        (winner, disagree || no_graph || changed)
    } else {
        (candidates[0], false)
    };
    let mut hedges = Vec::new();
    if hedged {
        hedges.push(super::answer::Hedge {
            code: super::answer::HedgeCode::StudyRule,
            message: "sources disagree, the graph has no entry, or a page changed after extraction"
                .to_owned(),
            source_id: winner.1.source.source_id.clone(),
        });
    }
    SlotDecision {
        status: if hedged {
            AnswerStatus::AnsweredPossiblyStale
        } else {
            AnswerStatus::Answered
        },
        value: winner.2.object.clone(),
        values: vec![winner.2.object.clone()],
        evidence: vec![to_candidate(winner.1, winner.2)],
        hedges,
        findings: Vec::new(),
        upcoming: Vec::new(),
        scoped: Vec::new(),
    }
}

impl SourceRef {
    fn default_graph() -> Self {
        SourceRef {
            source_id: "graph".to_owned(),
            version: 0,
            origin: "graph".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests;
