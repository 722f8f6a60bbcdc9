//! The semantic firewall's rules: each claim is checked against the graph, and blocked with one
//! or more reasons when the graph does not support it. Each rule is its own function; thresholds
//! come from [`FirewallPolicy`], never from literals here.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::answer::{Candidate, SlotContext, decide, same_value};
use super::graph::{Access, Entity, Fact, Graph};
use super::ontology::Ontology;
use super::scope::Scope;
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

/// An OpenAI-compatible chat endpoint for claim extraction (`[firewall.llm]`).
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    /// Off by default.
    pub enabled: bool,
    /// Base URL, for example `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Bearer key; empty for none.
    pub api_key: String,
    /// Whole-request timeout.
    pub timeout_ms: u64,
    /// Prompt version recorded on extracted claims.
    pub prompt_version: String,
}

impl std::fmt::Debug for LlmSettings {
    // The API key never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("enabled", &self.enabled)
            .field("base_url", &crate::redact_url(&self.base_url))
            .field("model", &self.model)
            .field(
                "api_key",
                &if self.api_key.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field("timeout_ms", &self.timeout_ms)
            .field("prompt_version", &self.prompt_version)
            .finish()
    }
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
        let key = super::answer::normalise_value(&t.object);
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
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::Caller;
    use crate::knowledge::graph::{PageVersion, RecordValue};
    use crate::knowledge::ontology::tests::sample;
    use chrono::TimeZone;

    fn day(d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 9, d, 9, 0, 0)
            .single()
            .expect("date")
    }

    fn policy() -> FirewallPolicy {
        FirewallPolicy {
            min_independent_sources: 2,
            reliable_authority: 2,
            authoritative_authority: 3,
            confidence_standard: 0.7,
            confidence_high_risk: 0.95,
            confidence_exploratory: 0.6,
            high_risk_domains: vec!["financial".into()],
            multi_valued_predicates: Vec::new(),
            max_text_bytes: 1024,
            max_claims: 100,
            llm: LlmSettings {
                enabled: false,
                base_url: String::new(),
                model: String::new(),
                api_key: String::new(),
                timeout_ms: 1000,
                prompt_version: String::new(),
            },
        }
    }

    /// No page's newest version: facts are read under their own ACL.
    static NO_PAGES: BTreeMap<String, PageVersion> = BTreeMap::new();

    fn page(id: &str, version: u64, origin: &str, body: &str, d: u32, acl: &[&str]) -> PageVersion {
        PageVersion {
            source_id: id.into(),
            version,
            title: id.into(),
            origin: origin.into(),
            body: body.into(),
            updated_at: day(d),
            acl: acl.iter().map(|s| s.to_string()).collect(),
            confidence: 1.0,
            deleted: false,
            effective_from: None,
        }
    }

    fn world() -> (Ontology, Graph) {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        for p in [
            page(
                "pricing",
                1,
                "pricing-page",
                "The Pro plan costs €49 per user per month.",
                1,
                &[],
            ),
            page(
                "faq",
                1,
                "faq",
                "The Pro plan costs €49 per user per month. Payments service is owned by the Atlas team.",
                1,
                &[],
            ),
            page(
                "wiki",
                1,
                "wiki",
                "Payments service is owned by the Atlas team. Tessaly Dock is included in the Pro plan.",
                1,
                &[],
            ),
            page(
                "notes",
                1,
                "meeting-notes",
                "The Starter plan costs €24 per user per month.",
                2,
                &[],
            ),
            page(
                "board",
                1,
                "pricing-page",
                "The Secret plan costs €999 per user per month.",
                1,
                &["cfo"],
            ),
        ] {
            graph.apply_page(&ontology, &p, p.updated_at);
        }
        graph.apply_page(
            &ontology,
            &page(
                "pricing",
                2,
                "pricing-page",
                "The Pro plan costs €59 per user per month.",
                20,
                &[],
            ),
            day(20),
        );
        graph.apply_page(&ontology, &page("faq", 2, "faq", "The Pro plan costs €59 per user per month. Payments service is owned by the Atlas team.", 20, &[]), day(20));
        (ontology, graph)
    }

    fn check(
        graph: &Graph,
        ontology: &Ontology,
        principal: &str,
        claims: &[(&str, &str, &str)],
        threshold: f64,
    ) -> Vec<Vec<ReasonCode>> {
        let everywhere: Vec<_> = claims.iter().map(|&(s, p, o)| (s, p, o, "")).collect();
        check_scoped(graph, ontology, principal, &everywhere, threshold)
            .into_iter()
            .map(|r| r.into_iter().map(|x| x.code).collect())
            .collect()
    }

    /// Claims `(subject, predicate, object, scope)` checked as of day 25; every reason.
    fn check_scoped(
        graph: &Graph,
        ontology: &Ontology,
        principal: &str,
        claims: &[(&str, &str, &str, &str)],
        threshold: f64,
    ) -> Vec<Vec<Reason>> {
        let policy = policy();
        let caller = Caller::new("t", principal).expect("caller");
        let view = FirewallView {
            ontology,
            graph,
            access: Access::new(&caller, &NO_PAGES),
            as_of: day(25),
            policy: &policy,
            threshold,
        };
        let claims: Vec<ClaimToCheck> = claims
            .iter()
            .map(|(s, p, o, scope)| ClaimToCheck {
                triple: Triple {
                    subject: s.to_string(),
                    predicate: p.to_string(),
                    object: o.to_string(),
                },
                chain: Vec::new(),
                scope: Scope::parse(scope).expect("scope"),
            })
            .collect();
        check_answer(&view, &claims)
    }

    #[test]
    fn a_scoped_claim_is_checked_against_the_value_of_its_scope() {
        let ontology = crate::knowledge::ontology::tests::scoped_sample();
        let mut graph = Graph::new(&ontology);
        for id in ["refunds-a", "refunds-b"] {
            graph.apply_page(
                &ontology,
                &page(
                    id,
                    1,
                    "wiki",
                    "Customers can request a refund within 30 days of purchase. In the EU, \
                     customers can request a refund within 14 days of purchase.",
                    1,
                    &[],
                ),
                day(1),
            );
        }
        let codes = |graph: &Graph, claims: &[(&str, &str, &str, &str)]| -> Vec<Vec<ReasonCode>> {
            check_scoped(graph, &ontology, "alice", claims, 0.7)
                .into_iter()
                .map(|r| r.into_iter().map(|x| x.code).collect())
                .collect()
        };
        let policy = "Refund policy";
        assert_eq!(
            codes(
                &graph,
                &[
                    (policy, "refund_days", "14", "region=EU"),
                    (policy, "refund_days", "30", ""),
                    // No statement for the US: the general value holds there.
                    (policy, "refund_days", "30", "region=US"),
                ]
            ),
            vec![Vec::<ReasonCode>::new(); 3],
            "each value in its own scope passes, and they are not inconsistent"
        );
        assert_eq!(
            codes(
                &graph,
                &[
                    (policy, "refund_days", "30", "region=EU"),
                    (policy, "refund_days", "14", ""),
                ]
            ),
            vec![
                vec![ReasonCode::Contradicted],
                vec![ReasonCode::Contradicted]
            ]
        );
        // A value known only for the EU: a claim for everywhere is not in the graph, and the
        // reason names the scope it holds in.
        graph.apply_record(
            &ontology,
            &RecordValue {
                source: "record:billing",
                sequence: 1,
                entity: "Pro",
                predicate: "price",
                value: "59",
                at: day(2),
                effective_from: None,
                scope: &Scope::parse("region=EU").expect("scope"),
            },
        );
        let general = check_scoped(
            &graph,
            &ontology,
            "alice",
            &[("Pro", "price", "59", "")],
            0.7,
        );
        let [reason] = general[0].as_slice() else {
            panic!("one reason: {general:?}");
        };
        assert_eq!(reason.code, ReasonCode::NotInGraph);
        assert!(reason.message.contains("\"59\" in region=EU"), "{reason:?}");
        assert_eq!(
            codes(&graph, &[("Pro", "price", "59", "region=EU")]),
            vec![Vec::<ReasonCode>::new()]
        );
    }

    #[test]
    fn a_supported_current_multi_sourced_claim_passes() {
        let (o, g) = world();
        assert_eq!(
            check(
                &g,
                &o,
                "alice",
                &[("Payments service", "owned_by", "Atlas")],
                0.7
            ),
            vec![Vec::<ReasonCode>::new()]
        );
        assert_eq!(
            check(&g, &o, "alice", &[("Pro", "price", "59")], 0.7),
            vec![Vec::<ReasonCode>::new()],
            "an authoritative source suffices"
        );
    }

    #[test]
    fn a_value_announced_for_later_is_not_current_and_the_contradiction_names_it() {
        let (o, mut g) = world();
        // Recorded on day 22 for day 28; the check is as of day 25.
        g.apply_record(
            &o,
            &RecordValue {
                source: "record:billing",
                sequence: 1,
                entity: "Pro",
                predicate: "price",
                value: "69",
                at: day(22),
                effective_from: Some(day(28)),
                scope: &Scope::everywhere(),
            },
        );
        assert_eq!(
            check(&g, &o, "alice", &[("Pro", "price", "59")], 0.7),
            vec![Vec::<ReasonCode>::new()],
            "the value in effect still passes"
        );
        let policy = policy();
        let caller = Caller::new("t", "alice").expect("caller");
        let view = FirewallView {
            ontology: &o,
            graph: &g,
            access: Access::new(&caller, &NO_PAGES),
            as_of: day(25),
            policy: &policy,
            threshold: 0.7,
        };
        let claim = ClaimToCheck {
            triple: Triple {
                subject: "Pro".into(),
                predicate: "price".into(),
                object: "69".into(),
            },
            chain: Vec::new(),
            scope: Scope::everywhere(),
        };
        let reasons = check_answer(&view, std::slice::from_ref(&claim)).remove(0);
        let contradicted = reasons
            .iter()
            .find(|r| r.code == ReasonCode::Contradicted)
            .expect("contradicted");
        assert!(
            contradicted
                .message
                .contains("\"69\" is announced to take effect on 2026-09-28"),
            "{contradicted:?}"
        );
        // From day 28 the announced value is the one in effect.
        let later = FirewallView {
            as_of: day(29),
            ..view
        };
        assert_eq!(check_answer(&later, &[claim]), vec![Vec::new()]);
    }

    #[test]
    fn an_expired_relationship_is_blocked_with_its_reason() {
        let (o, g) = world();
        let verdict = &check(&g, &o, "alice", &[("Pro plan", "price", "49")], 0.7)[0];
        assert!(
            verdict.contains(&ReasonCode::ExpiredRelationship),
            "{verdict:?}"
        );
        assert!(verdict.contains(&ReasonCode::Contradicted), "{verdict:?}");
    }

    #[test]
    fn unknown_entities_are_blocked() {
        let (o, g) = world();
        assert_eq!(
            check(&g, &o, "alice", &[("Tessaly Harbor", "price", "30")], 0.7)[0],
            vec![ReasonCode::UnknownEntity]
        );
        assert_eq!(
            check(
                &g,
                &o,
                "alice",
                &[("Payments service", "owned_by", "Zeta")],
                0.7
            )[0],
            vec![ReasonCode::UnknownEntity]
        );
    }

    #[test]
    fn a_single_source_is_blocked_on_provenance_alone() {
        let (o, g) = world();
        assert_eq!(
            check(
                &g,
                &o,
                "alice",
                &[("Tessaly Dock", "included_in", "Pro")],
                0.7
            )[0],
            vec![ReasonCode::SingleSource]
        );
    }

    #[test]
    fn a_draft_is_contradicted_and_unsupported() {
        let (o, g) = world();
        let verdict = &check(&g, &o, "alice", &[("Starter", "price", "24")], 0.7)[0];
        assert!(verdict.contains(&ReasonCode::SingleSource), "{verdict:?}");
        let verdict = &check(&g, &o, "alice", &[("Starter", "price", "19")], 0.7)[0];
        assert!(verdict.contains(&ReasonCode::Contradicted), "{verdict:?}");
    }

    #[test]
    fn raising_the_confidence_threshold_blocks_what_passed() {
        let (o, g) = world();
        assert!(check(&g, &o, "alice", &[("Pro", "price", "59")], 0.7)[0].is_empty());
        assert_eq!(
            check(&g, &o, "alice", &[("Pro", "price", "59")], 1.01)[0],
            vec![ReasonCode::LowConfidence]
        );
        assert_eq!(policy().threshold(Risk::Standard, "Financial"), 0.95);
        assert_eq!(policy().threshold(Risk::Exploratory, "marketing"), 0.6);
    }

    #[test]
    fn unreadable_support_counts_as_none_and_reveals_nothing() {
        let (o, g) = world();
        let policy = policy();
        let alice = Caller::new("t", "alice").expect("caller");
        let access = Access::new(&alice, &NO_PAGES);
        // As the services check: on the caller's view of the graph.
        let seen = g
            .visible_to(&access)
            .expect("alice may not read every fact");
        let view = FirewallView {
            ontology: &o,
            graph: &seen,
            access,
            as_of: day(25),
            policy: &policy,
            threshold: 0.7,
        };
        let told = |subject: &str| -> Vec<(ReasonCode, String)> {
            check_triple(
                &view,
                &Triple {
                    subject: subject.into(),
                    predicate: "price".into(),
                    object: "999".into(),
                },
                &Scope::everywhere(),
            )
            .into_iter()
            .map(|r| (r.code, r.message.replace(subject, "NAME")))
            .collect()
        };
        let hidden = told("Secret");
        assert!(!hidden.is_empty(), "a claim only hidden facts state passed");
        assert_eq!(hidden, told("Nowhere"), "told apart from a name never seen");
        assert!(hidden.iter().all(|(_, m)| !m.contains("board")));
        // On the whole graph too, the hidden fact is as absent as can be: the slot is unstated.
        assert_eq!(
            check(&g, &o, "alice", &[("Secret", "price", "999")], 0.7)[0],
            vec![ReasonCode::NotInGraph]
        );
        assert!(check(&g, &o, "cfo", &[("Secret", "price", "999")], 0.7)[0].is_empty());
    }

    #[test]
    fn a_claim_resting_on_a_page_narrowed_since_is_not_passed() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let v1 = page(
            "gold",
            1,
            "pricing-page",
            "The Gold plan costs €80 per user per month.",
            1,
            &[],
        );
        graph.apply_page(&ontology, &v1, v1.updated_at);
        // Version 2 narrows the page to a group; the graph has not read it yet.
        let v2 = page(
            "gold",
            2,
            "pricing-page",
            "Gold: see the board.",
            3,
            &["finance"],
        );
        let latest = BTreeMap::from([("gold".to_owned(), v2)]);
        let policy = policy();
        let verdict = |caller: &Caller, price: &str| {
            let view = FirewallView {
                ontology: &ontology,
                graph: &graph,
                access: Access::new(caller, &latest),
                as_of: day(25),
                policy: &policy,
                threshold: 0.0,
            };
            check_triple(
                &view,
                &Triple {
                    subject: "Gold".into(),
                    predicate: "price".into(),
                    object: price.into(),
                },
                &Scope::everywhere(),
            )
        };
        let bob = Caller::new("t", "bob").expect("caller");
        let reasons = verdict(&bob, "80");
        assert_eq!(
            reasons.iter().map(|r| r.code).collect::<Vec<_>>(),
            vec![ReasonCode::NotInGraph]
        );
        // A wrong value is refused alike: the verdict is no oracle for the hidden one.
        assert_eq!(verdict(&bob, "81"), reasons);
        assert!(
            reasons
                .iter()
                .all(|r| !r.message.contains("gold") && !r.message.contains("version")),
            "{reasons:?}"
        );
        let member = bob.with_groups(["finance".to_owned()]);
        assert!(
            !verdict(&member, "80")
                .iter()
                .any(|r| r.code == ReasonCode::NotInGraph),
            "a member of the group reads the page"
        );
    }

    #[test]
    fn two_values_of_one_slot_in_one_answer_are_inconsistent() {
        let (o, g) = world();
        let verdicts = check(
            &g,
            &o,
            "alice",
            &[("Pro", "price", "59"), ("Pro plan", "price", "49")],
            0.7,
        );
        assert!(verdicts[0].contains(&ReasonCode::TemporalInconsistency));
        assert!(verdicts[1].contains(&ReasonCode::TemporalInconsistency));
    }

    #[test]
    fn many_values_of_one_slot_give_each_claim_one_bounded_reason() {
        let (o, g) = world();
        let policy = policy();
        let alice = Caller::new("t", "alice").expect("caller");
        let view = FirewallView {
            ontology: &o,
            graph: &g,
            access: Access::new(&alice, &NO_PAGES),
            as_of: day(25),
            policy: &policy,
            threshold: 0.7,
        };
        let long = "9".repeat(10 * MAX_QUOTED_CHARS);
        let mut claims: Vec<ClaimToCheck> = (0..2000)
            .map(|n| ClaimToCheck {
                triple: Triple {
                    // Two names of one entity: one slot.
                    subject: if n % 2 == 0 { "Pro" } else { "Pro plan" }.into(),
                    predicate: "price".into(),
                    object: if n == 0 { long.clone() } else { n.to_string() },
                },
                chain: Vec::new(),
                scope: Scope::everywhere(),
            })
            .collect();
        // The same value twice is one value of the slot.
        claims[2].triple.object = "1.".into();
        let verdicts = check_answer(&view, &claims);
        for (n, reasons) in verdicts.iter().enumerate() {
            let inconsistent: Vec<&Reason> = reasons
                .iter()
                .filter(|r| r.code == ReasonCode::TemporalInconsistency)
                .collect();
            assert_eq!(inconsistent.len(), 1, "claim {n}: {reasons:?}");
            let message = &inconsistent[0].message;
            assert!(message.contains("(and 1995 more values)"), "{message}");
            assert!(
                message.len() < 6 * MAX_QUOTED_CHARS,
                "{} bytes",
                message.len()
            );
        }
        assert!(verdicts[1].iter().any(|r| r.message.contains('…')));
        // Another slot, or a value that fits the graph, is untouched by the rule.
        let two = check(
            &g,
            &o,
            "alice",
            &[("Pro", "price", "59"), ("Starter", "price", "24")],
            0.7,
        );
        assert!(
            two.iter()
                .flatten()
                .all(|c| *c != ReasonCode::TemporalInconsistency)
        );
    }

    #[test]
    fn quoted_inputs_are_cut_at_a_character_boundary() {
        assert_eq!(shown("short"), "short");
        let cut = shown(&"é".repeat(MAX_QUOTED_CHARS + 5)).into_owned();
        assert_eq!(cut.chars().count(), MAX_QUOTED_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn chains_must_connect_and_hold_step_by_step() {
        let (o, g) = world();
        let policy = policy();
        let alice = Caller::new("t", "alice").expect("caller");
        let view = FirewallView {
            ontology: &o,
            graph: &g,
            access: Access::new(&alice, &NO_PAGES),
            as_of: day(25),
            policy: &policy,
            threshold: 0.7,
        };
        let t = |s: &str, p: &str, ob: &str| Triple {
            subject: s.into(),
            predicate: p.into(),
            object: ob.into(),
        };
        assert!(
            broken_chain(
                &view,
                &[
                    t("Payments service", "owned_by", "Atlas"),
                    t("Pro", "price", "59")
                ],
                &Scope::everywhere(),
            )
            .is_some_and(|r| r.message.contains("starts at"))
        );
        assert!(
            broken_chain(
                &view,
                &[t("Payments service", "owned_by", "Helix")],
                &Scope::everywhere()
            )
            .is_some()
        );
    }

    #[test]
    fn honest_gap_a_wrong_fact_in_the_graph_is_enforced_as_confidently_as_a_right_one() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        // Two reliable pages agree on a wrong owner; the firewall cannot know better.
        for id in ["wiki-a", "wiki-b"] {
            graph.apply_page(
                &ontology,
                &page(
                    id,
                    1,
                    "wiki",
                    "Payments service is owned by the Wrong team.",
                    1,
                    &[],
                ),
                day(1),
            );
        }
        graph.apply_page(
            &ontology,
            &page("t", 1, "wiki", "The Right team is led by Ana.", 1, &[]),
            day(1),
        );
        assert!(
            check(
                &graph,
                &ontology,
                "alice",
                &[("Payments service", "owned_by", "Wrong")],
                0.7
            )[0]
            .is_empty()
        );
        assert!(
            check(
                &graph,
                &ontology,
                "alice",
                &[("Payments service", "owned_by", "Right")],
                0.7
            )[0]
            .contains(&ReasonCode::Contradicted)
        );
    }
}
