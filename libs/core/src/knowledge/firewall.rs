//! The semantic firewall's rules: each claim is checked against the graph, and blocked with one
//! or more reasons when the graph does not support it. Each rule is its own function; thresholds
//! come from [`FirewallPolicy`], never from literals here.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::answer::{Candidate, SlotContext, decide};
use super::graph::{Access, Entity, Fact, Graph};
pub use super::model::LlmSettings;
use super::ontology::Ontology;
use super::scope::Scope;
use super::words::same_value;
use crate::settings::{InvalidSetting, share};

/// Why a claim was blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReasonCode {
    /// The subject or object names no entity or alias in the graph.
    UnknownEntity,
    /// The fact existed but was superseded before the request time.
    ExpiredRelationship,
    /// The graph's current value for the slot differs.
    Contradicted,
    /// The entity exists but no fact supports the claim.
    NotInGraph,
    /// Fewer independent reliable sources than required.
    SingleSource,
    /// The supporting fact's confidence is below the threshold for the context.
    LowConfidence,
    /// A multi-hop claim whose steps do not connect or fail.
    BrokenChain,
    /// Claims of one answer that cannot hold at the same time.
    TemporalInconsistency,
    /// The graph could not be read: the firewall fails closed.
    FirewallUnavailable,
}

impl ReasonCode {
    /// Every code, in the order the API documents them: the reason-code lists people and
    /// agents read (the MCP answer's schema) are made from this.
    pub const ALL: [ReasonCode; 9] = [
        ReasonCode::UnknownEntity,
        ReasonCode::ExpiredRelationship,
        ReasonCode::Contradicted,
        ReasonCode::NotInGraph,
        ReasonCode::SingleSource,
        ReasonCode::LowConfidence,
        ReasonCode::BrokenChain,
        ReasonCode::TemporalInconsistency,
        ReasonCode::FirewallUnavailable,
    ];

    /// Wire name.
    pub fn name(self) -> &'static str {
        match self {
            ReasonCode::UnknownEntity => "unknown_entity",
            ReasonCode::ExpiredRelationship => "expired_relationship",
            ReasonCode::Contradicted => "contradicted",
            ReasonCode::NotInGraph => "not_in_graph",
            ReasonCode::SingleSource => "single_source",
            ReasonCode::LowConfidence => "low_confidence",
            ReasonCode::BrokenChain => "broken_chain",
            ReasonCode::TemporalInconsistency => "temporal_inconsistency",
            ReasonCode::FirewallUnavailable => "firewall_unavailable",
        }
    }
}

/// One reason, with words for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// Which rule.
    pub code: ReasonCode,
    /// What it found (never the content of facts the caller may not read).
    pub message: String,
}

impl Reason {
    fn new(code: ReasonCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// How strict the context is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Risk {
    /// Standard threshold.
    Standard,
    /// Strictest threshold.
    High,
    /// Most permissive threshold.
    Exploratory,
}

/// The `[firewall]` settings: the rules' thresholds, the longest text checked and the optional
/// model extractor.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirewallPolicy {
    /// Independent reliable sources a claim needs, unless one source is authoritative.
    pub min_independent_sources: usize,
    /// Origins at or above this authority count as reliable sources.
    pub reliable_authority: i32,
    /// A source at or above this authority is the slot's source of truth and suffices alone.
    pub authoritative_authority: i32,
    /// Confidence threshold in a standard context.
    pub confidence_standard: f64,
    /// Confidence threshold in a high-risk context.
    pub confidence_high_risk: f64,
    /// Confidence threshold in an exploratory context.
    pub confidence_exploratory: f64,
    /// Domains that are always high-risk.
    pub high_risk_domains: Vec<String>,
    /// Predicates that may hold several values at once (all others are functional).
    pub multi_valued_predicates: Vec<String>,
    /// Longest answer text accepted, in bytes.
    pub max_text_bytes: usize,
    /// Most claims checked in one validation: a longer claim list, or an answer text of more
    /// sentences or read as more claims, is refused.
    pub max_claims: usize,
    /// The optional model-based claim extractor (`ontoloop-llm`).
    pub llm: LlmSettings,
}

impl FirewallPolicy {
    /// Checks sizes, shares and the extractor's URL; the error names the key within
    /// `[firewall]`.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.max_text_bytes == 0 {
            return Err(InvalidSetting::new(
                "max_text_bytes",
                "must be greater than zero",
            ));
        }
        if self.max_claims == 0 {
            return Err(InvalidSetting::new(
                "max_claims",
                "must be greater than zero",
            ));
        }
        share("confidence_standard", self.confidence_standard)?;
        share("confidence_high_risk", self.confidence_high_risk)?;
        share("confidence_exploratory", self.confidence_exploratory)?;
        if self.llm.enabled && !self.llm.base_url.starts_with("http://") {
            return Err(InvalidSetting::new(
                "llm.base_url",
                "must be an http:// URL",
            ));
        }
        Ok(())
    }

    /// The confidence threshold for a context.
    pub fn threshold(&self, risk: Risk, domain: &str) -> f64 {
        let high = risk == Risk::High
            || self
                .high_risk_domains
                .iter()
                .any(|d| d.eq_ignore_ascii_case(domain.trim()));
        match (high, risk) {
            (true, _) => self.confidence_high_risk,
            (false, Risk::Exploratory) => self.confidence_exploratory,
            _ => self.confidence_standard,
        }
    }
}

/// One step of a claim: subject, predicate, object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triple {
    /// Subject name (or the predicate's fixed subject).
    pub subject: String,
    /// Predicate name.
    pub predicate: String,
    /// Object value.
    pub object: String,
}

/// A claim to check: one triple, or a chain of triples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimToCheck {
    /// The claim itself (for a chain: its first subject, last predicate and final object).
    pub triple: Triple,
    /// The steps of a multi-hop claim; empty for a single triple.
    pub chain: Vec<Triple>,
    /// Where the claim says it holds ("In the EU, ..."); everywhere when empty. It is checked
    /// against the values that hold throughout that scope, the narrowest first.
    pub scope: Scope,
}

/// What the rules see of the tenant.
pub struct FirewallView<'a> {
    /// The ontology.
    pub ontology: &'a Ontology,
    /// The graph.
    pub graph: &'a Graph,
    /// What the reader of the answer may read (by the newest version of every page).
    pub access: Access<'a>,
    /// The request time.
    pub as_of: DateTime<Utc>,
    /// Thresholds.
    pub policy: &'a FirewallPolicy,
    /// Confidence threshold for this request's context.
    pub threshold: f64,
}

/// The facts of one slot, sorted by what they say about a claimed value.
struct Slot<'a> {
    entity: Option<String>,
    readable_current: Vec<&'a Fact>,
    supporting: Vec<&'a Fact>,
    expired: Vec<&'a Fact>,
    /// Facts stating the claimed value that take effect only after the request time.
    announced: Vec<&'a Fact>,
    /// Current facts of the slot that hold only in scopes narrower than the claim's.
    narrower: Vec<&'a Fact>,
}

/// The facts of the claim's slot that hold throughout `scope` (a fact of a narrower or another
/// scope says nothing of the claim), a value of a wider scope giving way to a narrower one.
fn slot<'a>(
    view: &FirewallView<'a>,
    triple: &Triple,
    scope: &Scope,
    subject: Option<&Entity>,
) -> Slot<'a> {
    let entity = subject.map(|e| e.id.clone());
    let mut s = Slot {
        entity: entity.clone(),
        readable_current: Vec::new(),
        supporting: Vec::new(),
        expired: Vec::new(),
        announced: Vec::new(),
        narrower: Vec::new(),
    };
    let Some(entity) = entity else { return s };
    for fact in view
        .graph
        .facts_of(&entity)
        .filter(|f| f.predicate == triple.predicate)
    {
        if !fact.scope.within(scope) {
            if fact.scope.meets(scope) && fact.valid_at(view.as_of) && view.access.fact(fact) {
                s.narrower.push(fact);
            }
            continue;
        }
        let agrees = same_value(&fact.object, &triple.object);
        if fact.valid_from > view.as_of {
            // Announced for later: it supports nothing now, but a contradiction names it.
            if agrees
                && fact.valid_to.is_none_or(|to| to > fact.valid_from)
                && view.access.fact(fact)
            {
                s.announced.push(fact);
            }
            continue;
        }
        let current = fact.valid_at(view.as_of);
        // A fact the caller may not read counts as none: the verdict is the one it would be
        // if the fact did not exist, so it tells nothing of a hidden value, not even that there
        // is one (the services check on the caller's view of the graph, where it is absent).
        if !view.access.fact(fact) {
            continue;
        }
        if current {
            s.readable_current.push(fact);
            if agrees {
                s.supporting.push(fact);
            }
        } else if agrees {
            s.expired.push(fact);
        }
    }
    // The narrowest scope that holds wins over a wider one ("in the EU" over a general value).
    let overridden = |fact: &Fact, current: &[&Fact]| {
        current
            .iter()
            .any(|other| other.scope.narrower_than(&fact.scope))
    };
    let current = s.readable_current.clone();
    s.readable_current.retain(|f| !overridden(f, &current));
    s.supporting.retain(|f| !overridden(f, &current));
    s
}

/// Rule `unknown_entity`: the subject (`subject`, as the graph resolved it), or an object that
/// should be an entity, is unknown.
fn unknown_entity(
    view: &FirewallView<'_>,
    triple: &Triple,
    subject: Option<&Entity>,
) -> Option<Reason> {
    if subject.is_none() {
        return Some(Reason::new(
            ReasonCode::UnknownEntity,
            format!("no entity or alias is called {:?}", shown(&triple.subject)),
        ));
    }
    let object_is_entity = view
        .ontology
        .predicate(&triple.predicate)
        .is_some_and(|p| p.object_is_entity() || p.kind == super::ontology::PredicateKind::Rename);
    if object_is_entity && view.graph.resolve(&triple.object).is_none() {
        return Some(Reason::new(
            ReasonCode::UnknownEntity,
            format!("no entity or alias is called {:?}", shown(&triple.object)),
        ));
    }
    None
}

/// Rule `expired_relationship`: the claimed value held once, not at the request time.
fn expired_relationship(s: &Slot<'_>) -> Option<Reason> {
    if !s.supporting.is_empty() {
        return None;
    }
    let last = s.expired.iter().filter_map(|f| f.valid_to).max()?;
    Some(Reason::new(
        ReasonCode::ExpiredRelationship,
        format!(
            "this held until {}, then it was superseded",
            last.format("%Y-%m-%d")
        ),
    ))
}

/// Rule `contradicted`: the slot's current value, by the same authority-then-recency policy as
/// retrieval, is another one.
fn contradicted(s: &Slot<'_>, triple: &Triple) -> Option<Reason> {
    if s.readable_current.is_empty() {
        return None;
    }
    let candidates: Vec<Candidate> = s
        .readable_current
        .iter()
        .map(|f| Candidate {
            value: f.object.clone(),
            source: f.source.clone(),
            authority: f.authority,
            valid_from: f.valid_from,
            extracted_at: Some(f.extracted_at),
            extractor: f.extractor.clone(),
            confidence: f.confidence,
            excerpt: String::new(),
        })
        .collect();
    let decision = decide(candidates, &SlotContext::default());
    if decision
        .values
        .iter()
        .any(|v| same_value(v, &triple.object))
    {
        return None;
    }
    let winner = decision.evidence.first()?;
    let mut message = format!(
        "the graph says {:?} ({}@{}, {}, authority {})",
        decision.value,
        winner.source.source_id,
        winner.source.version,
        winner.source.origin,
        winner.authority
    );
    if let Some(next) = s.announced.iter().min_by_key(|f| f.valid_from) {
        let _ = write!(
            message,
            "; {:?} is announced to take effect on {} ({}@{})",
            next.object,
            next.valid_from.format("%Y-%m-%d %H:%M UTC"),
            next.source.source_id,
            next.source.version
        );
    }
    Some(Reason::new(ReasonCode::Contradicted, message))
}

/// Rule `not_in_graph`: the entity exists but nothing states this slot.
fn not_in_graph(s: &Slot<'_>, triple: &Triple) -> Option<Reason> {
    (s.entity.is_some() && s.readable_current.is_empty() && s.expired.is_empty()).then(|| {
        let mut message = format!(
            "no fact states {} of {:?}",
            shown(&triple.predicate),
            shown(&triple.subject)
        );
        // Values known only for narrower scopes: the claim needs one of them.
        let mut scoped: Vec<String> = s
            .narrower
            .iter()
            .map(|f| format!("{:?} in {}", shown(&f.object), f.scope))
            .collect();
        scoped.sort();
        scoped.dedup();
        if !scoped.is_empty() {
            let named: Vec<String> = scoped.iter().take(MAX_CONFLICTS_NAMED).cloned().collect();
            let _ = write!(
                message,
                " for every scope; the graph states {} (name the scope)",
                named.join(", ")
            );
        }
        Reason::new(ReasonCode::NotInGraph, message)
    })
}

/// Rule `single_source`: too few independent reliable sources. Versions or copies of one page
/// count once; reliability comes from the origin's authority; a source of truth (authority at or
/// above `authoritative_authority`) suffices alone.
fn single_source(view: &FirewallView<'_>, s: &Slot<'_>) -> Option<Reason> {
    if s.supporting.is_empty() {
        return None;
    }
    if s.supporting
        .iter()
        .any(|f| f.authority >= view.policy.authoritative_authority)
    {
        return None;
    }
    let mut sources: Vec<&str> = s
        .supporting
        .iter()
        .filter(|f| f.authority >= view.policy.reliable_authority)
        .map(|f| f.source.source_id.as_str())
        .collect();
    sources.sort_unstable();
    sources.dedup();
    (sources.len() < view.policy.min_independent_sources).then(|| {
        Reason::new(
            ReasonCode::SingleSource,
            format!(
                "{} independent reliable source(s) support it; {} are required",
                sources.len(),
                view.policy.min_independent_sources
            ),
        )
    })
}

/// Rule `low_confidence`: the best supporting fact is below the context's threshold.
fn low_confidence(view: &FirewallView<'_>, s: &Slot<'_>) -> Option<Reason> {
    let best = s
        .supporting
        .iter()
        .map(|f| f.confidence)
        .fold(None, |acc: Option<f64>, c| {
            Some(acc.map_or(c, |a| a.max(c)))
        })?;
    (best < view.threshold).then(|| {
        Reason::new(
            ReasonCode::LowConfidence,
            format!(
                "confidence {best:.2} is below the threshold {:.2} for this context",
                view.threshold
            ),
        )
    })
}

/// Every rule on one triple.
pub fn check_triple(view: &FirewallView<'_>, triple: &Triple, scope: &Scope) -> Vec<Reason> {
    if view.ontology.predicate(&triple.predicate).is_none() {
        return vec![Reason::new(
            ReasonCode::NotInGraph,
            format!(
                "{:?} is not a predicate of the ontology",
                shown(&triple.predicate)
            ),
        )];
    }
    // The subject is resolved once for every rule below.
    let subject = view.graph.resolve(&triple.subject);
    if let Some(reason) = unknown_entity(view, triple, subject) {
        return vec![reason];
    }
    if view
        .ontology
        .predicate(&triple.predicate)
        .is_some_and(|p| p.kind == super::ontology::PredicateKind::Rename)
    {
        // A rename claim holds when both names are one entity.
        let same = subject.map(|e| &e.id) == view.graph.resolve(&triple.object).map(|e| &e.id);
        return if same {
            Vec::new()
        } else {
            vec![Reason::new(
                ReasonCode::Contradicted,
                format!(
                    "{:?} and {:?} are different entities in the graph",
                    shown(&triple.subject),
                    shown(&triple.object)
                ),
            )]
        };
    }
    let s = slot(view, triple, scope, subject);
    let mut reasons: Vec<Reason> = [
        expired_relationship(&s),
        contradicted(&s, triple),
        not_in_graph(&s, triple),
    ]
    .into_iter()
    .flatten()
    .collect();
    reasons.extend(
        [single_source(view, &s), low_confidence(view, &s)]
            .into_iter()
            .flatten(),
    );
    reasons
}

/// Rule `broken_chain`: steps must connect (each subject is the previous object) and each step
/// must pass on its own.
pub fn broken_chain(view: &FirewallView<'_>, chain: &[Triple], scope: &Scope) -> Option<Reason> {
    let key = |name: &str| view.graph.normaliser().key(name);
    for (i, step) in chain.iter().enumerate() {
        if i > 0 && key(&chain[i - 1].object) != key(&step.subject) {
            return Some(Reason::new(
                ReasonCode::BrokenChain,
                format!(
                    "step {} starts at {:?}, but step {i} ended at {:?}",
                    i + 1,
                    shown(&step.subject),
                    shown(&chain[i - 1].object)
                ),
            ));
        }
        let failed = check_triple(view, step, scope);
        if let Some(first) = failed.first() {
            return Some(Reason::new(
                ReasonCode::BrokenChain,
                format!(
                    "step {} fails: {} ({})",
                    i + 1,
                    first.message,
                    first.code.name()
                ),
            ));
        }
    }
    None
}

/// Checks every claim of one answer; the result has one list of reasons per claim (empty: pass).
pub fn check_answer(view: &FirewallView<'_>, claims: &[ClaimToCheck]) -> Vec<Vec<Reason>> {
    let mut verdicts: Vec<Vec<Reason>> = claims
        .iter()
        .map(|claim| {
            if claim.chain.is_empty() {
                check_triple(view, &claim.triple, &claim.scope)
            } else {
                broken_chain(view, &claim.chain, &claim.scope)
                    .into_iter()
                    .collect()
            }
        })
        .collect();
    temporal_inconsistency(view, claims, &mut verdicts);
    verdicts
}

/// Values of another claim named in a `temporal_inconsistency` message; the rest are counted.
pub const MAX_CONFLICTS_NAMED: usize = 3;

/// Longest input string quoted in a reason, in characters; longer ones end in "…". Reasons (and
/// so responses) stay bounded whatever the claims carry.
pub const MAX_QUOTED_CHARS: usize = 120;

/// Rule `temporal_inconsistency`: one functional slot with two values in one answer. Claims are
/// grouped by slot (the subject's entity, or its name's key when the graph knows no such
/// entity, and the predicate), so the check is linear in the claims; each claim of a slot that
/// holds several values gets one reason naming at most [`MAX_CONFLICTS_NAMED`] of the others
/// and counting the rest.
fn temporal_inconsistency(
    view: &FirewallView<'_>,
    claims: &[ClaimToCheck],
    verdicts: &mut [Vec<Reason>],
) {
    use std::collections::HashMap;
    /// The values one slot is given, in first-seen order: each as first written, with the
    /// claims stating it; `index` finds a value by its key.
    #[derive(Default)]
    struct Values<'c> {
        index: HashMap<String, usize>,
        stated: Vec<(&'c str, Vec<usize>)>,
    }
    let mut slots: HashMap<(String, &str, &Scope), Values<'_>> = HashMap::new();
    for (i, claim) in claims.iter().enumerate() {
        let t = &claim.triple;
        if !claim.chain.is_empty() || view.policy.multi_valued_predicates.contains(&t.predicate) {
            continue;
        }
        let subject = match view.graph.resolve(&t.subject) {
            Some(entity) => format!("entity:{}", entity.id),
            None => format!("name:{}", view.graph.normaliser().key(&t.subject)),
        };
        // Values stated for different scopes ("in the EU", "in the US") do not conflict.
        let values = slots
            .entry((subject, t.predicate.as_str(), &claim.scope))
            .or_default();
        let key = super::words::normalise_value(&t.object);
        match values.index.get(&key) {
            Some(&n) => values.stated[n].1.push(i),
            None => {
                values.index.insert(key, values.stated.len());
                values.stated.push((t.object.as_str(), vec![i]));
            }
        }
    }
    for values in slots.values().map(|v| &v.stated).filter(|v| v.len() > 1) {
        for (n, (own, stating)) in values.iter().enumerate() {
            let named = values
                .iter()
                .enumerate()
                .filter(|(m, _)| *m != n)
                .take(MAX_CONFLICTS_NAMED)
                .map(|(_, (value, _))| format!("{:?}", shown(value)))
                .collect::<Vec<_>>();
            let rest = values.len() - 1 - named.len();
            let more = if rest > 0 {
                format!(" (and {rest} more values)")
            } else {
                String::new()
            };
            let named = named.join(" and ");
            for &i in stating {
                let t = &claims[i].triple;
                verdicts[i].push(Reason::new(
                    ReasonCode::TemporalInconsistency,
                    format!(
                        "{} of {:?} cannot be both {:?} and {named}{more} at once",
                        shown(&t.predicate),
                        shown(&t.subject),
                        shown(own)
                    ),
                ));
            }
        }
    }
}

/// `value` as quoted in a reason: at most [`MAX_QUOTED_CHARS`] characters.
fn shown(value: &str) -> std::borrow::Cow<'_, str> {
    match value.char_indices().nth(MAX_QUOTED_CHARS) {
        None => std::borrow::Cow::Borrowed(value),
        Some((cut, _)) => std::borrow::Cow::Owned(format!("{}…", &value[..cut])),
    }
}

#[cfg(test)]
mod tests;
