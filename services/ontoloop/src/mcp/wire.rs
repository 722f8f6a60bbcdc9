//! What the MCP tools answer with: the gRPC replies carried field for field as serde types with
//! a JSON schema (the tools' output schemas), and the short text each answer is also given as.
//! Enum values keep their protobuf names (`ANSWER_STATUS_ANSWERED`, `VERDICT_BLOCK`), so an
//! agent reading both APIs sees one vocabulary.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ontoloop_proto::v1;
use schemars::JsonSchema;
use serde::Serialize;

/// An answer of `ask` or `lookup`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Answer {
    /// ANSWER_STATUS_ANSWERED, ANSWER_STATUS_ANSWERED_POSSIBLY_STALE, ANSWER_STATUS_CONFLICT_OPEN,
    /// ANSWER_STATUS_ABSTAINED or ANSWER_STATUS_ANSWERED_PASSAGES (no slot of the ontology answers;
    /// `passages` holds the text to read, with citations).
    pub status: String,
    /// The answer ("" when abstained).
    pub value: String,
    /// Every value an open conflict is between (one when there is none).
    pub values: Vec<String>,
    /// Why the answer may be wrong: stale source, conflict, low confidence.
    pub hedges: Vec<Hedge>,
    /// The path followed, one step per predicate, each with its provenance.
    pub hops: Vec<Hop>,
    /// Provenance of the final value.
    pub evidence: Vec<Evidence>,
    /// Why no answer was given, when abstained.
    pub abstain_reason: String,
    /// The canonical entity the question was about.
    pub entity: String,
    /// The predicates followed from it.
    pub predicate_path: Vec<String>,
    /// The intake sequence number the answer reflects.
    pub applied_sequence: u64,
    /// ANSWER_STATUS_ANSWERED_PASSAGES: the passages, best first.
    pub passages: Vec<Passage>,
    /// Values announced to take effect later (`valid_from` is when), soonest first; `value`
    /// stays the value in effect until then.
    pub upcoming: Vec<Evidence>,
    /// NEEDS_SCOPE: each scope (`region=EU`; empty: everywhere else) with its value, the
    /// widest first. Ask again with `scope` for one value.
    pub scoped: Vec<ScopedValue>,
}

/// A value that holds in one scope.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScopedValue {
    /// `key=value` pairs joined by `, `; empty: everywhere no narrower scope says otherwise.
    pub scope: String,
    /// The value there.
    pub value: String,
    /// What supports it, winner first.
    pub evidence: Vec<Evidence>,
}

/// A passage of a page given as an answer, with its citation.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Passage {
    /// The page.
    pub source_id: String,
    /// The page version it was cut from.
    pub source_version: u64,
    /// The page's title.
    pub title: String,
    /// The page's origin.
    pub origin: String,
    /// Headings above it, outermost first.
    pub headings: Vec<String>,
    /// Its text.
    pub text: String,
    /// Hash of its words: the same text keeps it wherever it moves.
    pub chunk_hash: String,
    /// Its first character in the version's body.
    pub start: u64,
    /// One past its last character.
    pub end: u64,
    /// Rank score, higher is better (fused reciprocal rank, or BM25 without the model).
    pub score: f64,
    /// Cosine similarity of the question and the passage by the sentence encoder; absent
    /// without the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
}

impl From<v1::Passage> for Passage {
    fn from(p: v1::Passage) -> Self {
        Self {
            source_id: p.source_id,
            source_version: p.source_version,
            title: p.title,
            origin: p.origin,
            headings: p.headings,
            text: p.text,
            chunk_hash: p.chunk_hash,
            start: p.start,
            end: p.end,
            score: p.score,
            similarity: p.similarity,
        }
    }
}

/// What a passage cited earlier is now.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Citation {
    /// current (same text, same place), moved (same text elsewhere on the page or on another
    /// page), revised (the passage changed: `passage` is its text now) or gone (deleted).
    pub status: String,
    /// The passage now; absent when gone. Its `score` is 0.
    pub passage: Option<Passage>,
    /// The intake sequence number the resolution reflects.
    pub applied_sequence: u64,
}

/// A citation status as people and agents read it: `current`, `moved`, `revised` or `gone`
/// (the CLI prints the same).
pub fn citation_status(status: i32) -> String {
    v1::CitationStatus::try_from(status)
        .map(|s| s.as_str_name().trim_start_matches("CITATION_STATUS_"))
        .unwrap_or("UNKNOWN")
        .to_lowercase()
}

impl From<v1::CitationResolution> for Citation {
    fn from(r: v1::CitationResolution) -> Self {
        Self {
            status: citation_status(r.status),
            passage: r.passage.map(Passage::from),
            applied_sequence: r.applied_sequence,
        }
    }
}

impl Render for Citation {
    fn render(&self) -> String {
        match &self.passage {
            Some(p) => format!(
                "{}: {}@{} [{}..{}] {}: {}",
                self.status, p.source_id, p.source_version, p.start, p.end, p.title, p.text
            ),
            None => self.status.clone(),
        }
    }
}

/// A reason to doubt an answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hedge {
    /// Machine-readable code, for example possibly_stale or conflict_open.
    pub code: String,
    /// What it means for this answer.
    pub message: String,
    /// The source it concerns, when one.
    pub source_id: String,
}

/// One step of an answer's path.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hop {
    /// The entity the step starts from.
    pub entity: String,
    /// The predicate followed.
    pub predicate: String,
    /// The value reached.
    pub value: String,
    /// Where the step's fact came from.
    pub evidence: Vec<Evidence>,
}

/// Where a fact or a candidate value came from.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Evidence {
    /// The page or record.
    pub source_id: String,
    /// Its version.
    pub source_version: u64,
    /// Its origin (pricing-page, wiki, forum, ...), which sets its authority.
    pub origin: String,
    /// Higher wins a conflict.
    pub authority: i32,
    /// The value it states.
    pub value: String,
    /// Valid from (RFC 3339), when known.
    pub valid_from: Option<String>,
    /// Valid until (RFC 3339), when superseded.
    pub valid_to: Option<String>,
    /// When it was extracted into the graph (RFC 3339); absent for text matched in a page.
    pub extracted_at: Option<String>,
    /// The extractor that produced it.
    pub extractor: String,
    /// The extractor's confidence, 0 to 1.
    pub confidence: f64,
    /// The sentence it was read from.
    pub excerpt: String,
}

/// The firewall's result on an answer text or a list of claims.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Validation {
    /// VERDICT_PASS, or VERDICT_BLOCK when any claim is blocked.
    pub overall: String,
    /// One verdict per claim.
    pub verdicts: Vec<ClaimVerdict>,
    /// How much of a text could be checked.
    pub coverage: Option<Coverage>,
}

/// The verdict on one claim.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClaimVerdict {
    /// The claim as checked.
    pub claim: Option<Claim>,
    /// VERDICT_PASS or VERDICT_BLOCK.
    pub verdict: String,
    /// Every rule that blocked it.
    pub reasons: Vec<BlockReason>,
    /// The sentence it was extracted from, for text input.
    pub sentence: String,
}

/// A (subject, predicate, object) claim.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Claim {
    /// The entity the claim is about.
    pub subject: String,
    /// The relation or attribute.
    pub predicate: String,
    /// The value claimed.
    pub object: String,
}

/// Why a claim was blocked.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BlockReason {
    /// unknown_entity, expired_relationship, contradicted, not_in_graph, single_source,
    /// low_confidence, broken_chain, temporal_inconsistency or firewall_unavailable.
    pub code: String,
    /// What was wrong.
    pub message: String,
}

/// Extraction coverage of a text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Coverage {
    /// Sentences in the text.
    pub sentences: u32,
    /// Sentences that became checkable claims.
    pub checkable: u32,
    /// Sentences no pattern recognised; they pass unchecked.
    pub unrecognised: u32,
}

/// The intake's acknowledgement of a failure signal.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SignalAck {
    /// Whether this idempotency key was seen before (nothing was recorded again).
    pub duplicate: bool,
    /// SEVERITY_LOW to SEVERITY_CRITICAL, from how often and how widely it recurs.
    pub severity: String,
}

/// The caller's work items ranked through the dimensional filters.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Plate {
    /// The items, best first.
    pub items: Vec<PlateItem>,
    /// Candidates left after each dimension, in order.
    pub dimensions: Vec<DimensionCount>,
    /// The organisation version the plate was computed on.
    pub org_version: u64,
}

/// One work item on a plate.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlateItem {
    /// Its id.
    pub item_id: String,
    /// Its title.
    pub title: String,
    /// Who it is assigned to.
    pub assignee: String,
    /// The service it concerns.
    pub service: String,
    /// Its severity.
    pub severity: String,
    /// Its scope.
    pub scope: String,
    /// Where it came from (ticket, alert, ...).
    pub source_type: String,
    /// When it was created (RFC 3339).
    pub created_at: Option<String>,
    /// Its rank score.
    pub score: f64,
    /// The dimensions that admitted it.
    pub admitted_by: Vec<String>,
    /// The weight each ranking dimension gave it.
    pub weights: BTreeMap<String, f64>,
}

/// Candidates left after one dimension.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DimensionCount {
    /// permission, scope, hierarchy, ownership, dependency, temporal or authority.
    pub name: String,
    /// Candidates left after it ran.
    pub candidates_after: u64,
}

/// The patterns the analyst found in failure signals.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Patterns {
    /// Most severe first, as the analyst lists them.
    pub patterns: Vec<Pattern>,
}

/// Failure signals grouped across spellings.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Pattern {
    /// Its id.
    pub id: String,
    /// The signal type it groups.
    pub kind: String,
    /// The normalised key (entity, relationship or sector).
    pub key: String,
    /// Signals in it.
    pub signal_count: u64,
    /// Distinct agents that reported them.
    pub agent_count: u64,
    /// SEVERITY_LOW to SEVERITY_CRITICAL.
    pub severity: String,
    /// open, healing, healed, ...
    pub status: String,
    /// First signal (RFC 3339).
    pub first_seen: Option<String>,
    /// Latest signal (RFC 3339).
    pub last_seen: Option<String>,
    /// What the analyst did or proposes.
    pub action: String,
    /// Time from first signal to heal, in milliseconds (0 while open).
    pub signal_to_heal_ms: i64,
}

/// A `NEEDS_SCOPE` answer's scope as a reader sees it listed: `region=EU`, or "everywhere else"
/// for the value that holds outside every narrower scope listed.
pub fn scope_label(scope: &str) -> &str {
    if scope.is_empty() {
        "everywhere else"
    } else {
        scope
    }
}

/// A wire instant in RFC 3339; none when absent or out of range.
pub fn instant(ts: Option<&prost_types::Timestamp>) -> Option<String> {
    let ts = ts?;
    chrono::DateTime::from_timestamp(ts.seconds, u32::try_from(ts.nanos).unwrap_or_default())
        .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
}

fn severity(value: i32) -> String {
    v1::Severity::try_from(value)
        .map(|s| s.as_str_name().to_owned())
        .unwrap_or_else(|_| format!("SEVERITY_{value}"))
}

fn verdict(value: i32) -> String {
    v1::Verdict::try_from(value)
        .map(|v| v.as_str_name().to_owned())
        .unwrap_or_else(|_| format!("VERDICT_{value}"))
}

impl From<v1::Evidence> for Evidence {
    fn from(e: v1::Evidence) -> Self {
        Self {
            valid_from: instant(e.valid_from.as_ref()),
            valid_to: instant(e.valid_to.as_ref()),
            extracted_at: instant(e.extracted_at.as_ref()),
            source_id: e.source_id,
            source_version: e.source_version,
            origin: e.origin,
            authority: e.authority,
            value: e.value,
            extractor: e.extractor,
            confidence: e.confidence,
            excerpt: e.excerpt,
        }
    }
}

impl From<v1::Answer> for Answer {
    fn from(a: v1::Answer) -> Self {
        Self {
            status: v1::AnswerStatus::try_from(a.status)
                .map(|s| s.as_str_name().to_owned())
                .unwrap_or_else(|_| format!("ANSWER_STATUS_{}", a.status)),
            value: a.value,
            values: a.values,
            hedges: a
                .hedges
                .into_iter()
                .map(|h| Hedge {
                    code: h.code,
                    message: h.message,
                    source_id: h.source_id,
                })
                .collect(),
            hops: a
                .hops
                .into_iter()
                .map(|h| Hop {
                    entity: h.entity,
                    predicate: h.predicate,
                    value: h.value,
                    evidence: h.evidence.into_iter().map(Evidence::from).collect(),
                })
                .collect(),
            evidence: a.evidence.into_iter().map(Evidence::from).collect(),
            abstain_reason: a.abstain_reason,
            entity: a.entity,
            predicate_path: a.predicate_path,
            applied_sequence: a.applied_sequence,
            passages: a.passages.into_iter().map(Passage::from).collect(),
            upcoming: a.upcoming.into_iter().map(Evidence::from).collect(),
            scoped: a
                .scoped
                .into_iter()
                .map(|v| ScopedValue {
                    scope: v.scope,
                    value: v.value,
                    evidence: v.evidence.into_iter().map(Evidence::from).collect(),
                })
                .collect(),
        }
    }
}

impl From<v1::ValidateResponse> for Validation {
    fn from(r: v1::ValidateResponse) -> Self {
        Self {
            overall: verdict(r.overall),
            verdicts: r
                .verdicts
                .into_iter()
                .map(|v| ClaimVerdict {
                    claim: v.claim.map(|c| Claim {
                        subject: c.subject,
                        predicate: c.predicate,
                        object: c.object,
                    }),
                    verdict: verdict(v.verdict),
                    reasons: v
                        .reasons
                        .into_iter()
                        .map(|r| BlockReason {
                            code: r.code,
                            message: r.message,
                        })
                        .collect(),
                    sentence: v.sentence,
                })
                .collect(),
            coverage: r.coverage.map(|c| Coverage {
                sentences: c.sentences,
                checkable: c.checkable,
                unrecognised: c.unrecognised,
            }),
        }
    }
}

impl From<v1::SignalAck> for SignalAck {
    fn from(ack: v1::SignalAck) -> Self {
        Self {
            duplicate: ack.duplicate,
            severity: severity(ack.severity),
        }
    }
}

impl From<v1::PlateResponse> for Plate {
    fn from(p: v1::PlateResponse) -> Self {
        Self {
            items: p
                .items
                .into_iter()
                .map(|i| PlateItem {
                    created_at: instant(i.created_at.as_ref()),
                    item_id: i.item_id,
                    title: i.title,
                    assignee: i.assignee,
                    service: i.service,
                    severity: i.severity,
                    scope: i.scope,
                    source_type: i.source_type,
                    score: i.score,
                    admitted_by: i.admitted_by,
                    weights: i.weights.into_iter().collect(),
                })
                .collect(),
            dimensions: p
                .dimensions
                .into_iter()
                .map(|d| DimensionCount {
                    name: d.name,
                    candidates_after: d.candidates_after,
                })
                .collect(),
            org_version: p.org_version,
        }
    }
}

impl From<v1::ListPatternsResponse> for Patterns {
    fn from(r: v1::ListPatternsResponse) -> Self {
        Self {
            patterns: r
                .patterns
                .into_iter()
                .map(|p| Pattern {
                    first_seen: instant(p.first_seen.as_ref()),
                    last_seen: instant(p.last_seen.as_ref()),
                    severity: severity(p.severity),
                    id: p.id,
                    kind: p.kind,
                    key: p.key,
                    signal_count: p.signal_count,
                    agent_count: p.agent_count,
                    status: p.status,
                    action: p.action,
                    signal_to_heal_ms: p.signal_to_heal_ms,
                })
                .collect(),
        }
    }
}

/// The short text rendering of each answer, for clients that show text only.
pub trait Render {
    /// A few lines a person or a model can read.
    fn render(&self) -> String;
}

impl Render for Answer {
    fn render(&self) -> String {
        if self.status == v1::AnswerStatus::Abstained.as_str_name() {
            return format!("abstained: {}", self.abstain_reason);
        }
        if self.status == v1::AnswerStatus::AnsweredPassages.as_str_name() {
            let mut text = "no fact answers this; these passages may:".to_owned();
            for p in &self.passages {
                let _ = write!(
                    text,
                    "\n  {}@{} [{}..{}] {}: {}",
                    p.source_id, p.source_version, p.start, p.end, p.title, p.text
                );
            }
            return text;
        }
        let status = self.status.trim_start_matches("ANSWER_STATUS_");
        if self.status == v1::AnswerStatus::NeedsScope.as_str_name() {
            let mut text = format!("the value depends on the scope; ask with `scope` [{status}]");
            for v in &self.scoped {
                let scope = scope_label(&v.scope);
                let _ = write!(
                    text,
                    "
  {scope}: {}",
                    v.value
                );
            }
            return text;
        }
        let mut text = format!("{} [{status}]", self.value);
        if self.values.len() > 1 {
            let _ = write!(text, "\nopen conflict between: {}", self.values.join(", "));
        }
        for hedge in &self.hedges {
            let _ = write!(text, "\nhedge {}: {}", hedge.code, hedge.message);
        }
        for e in &self.upcoming {
            let _ = write!(
                text,
                "\nchanges to {} from {} (announced by {}@{}, {})",
                e.value,
                e.valid_from.as_deref().unwrap_or("?"),
                e.source_id,
                e.source_version,
                e.origin
            );
        }
        let source = |text: &mut String, e: &Evidence| {
            let _ = write!(
                text,
                "\n  source {}@{} ({}, authority {}): {}",
                e.source_id, e.source_version, e.origin, e.authority, e.value
            );
        };
        for hop in &self.hops {
            let _ = write!(text, "\n{} -{}-> {}", hop.entity, hop.predicate, hop.value);
            hop.evidence.iter().for_each(|e| source(&mut text, e));
        }
        // Without hops (a page match), the final value's evidence is all there is.
        if self.hops.is_empty() {
            self.evidence.iter().for_each(|e| source(&mut text, e));
        }
        text
    }
}

impl Render for Validation {
    fn render(&self) -> String {
        let mut text = self.overall.trim_start_matches("VERDICT_").to_owned();
        for v in &self.verdicts {
            let claim = v
                .claim
                .as_ref()
                .map(|c| format!("{} {} {}", c.subject, c.predicate, c.object))
                .unwrap_or_default();
            let _ = write!(
                text,
                "\n{} {claim}",
                v.verdict.trim_start_matches("VERDICT_")
            );
            for r in &v.reasons {
                let _ = write!(text, "\n  {}: {}", r.code, r.message);
            }
        }
        text
    }
}

impl Render for SignalAck {
    fn render(&self) -> String {
        let severity = self.severity.trim_start_matches("SEVERITY_");
        if self.duplicate {
            format!("duplicate (already recorded), severity {severity}")
        } else {
            format!("recorded, severity {severity}")
        }
    }
}

impl Render for Plate {
    fn render(&self) -> String {
        let mut text = format!("{} items", self.items.len());
        for item in &self.items {
            let _ = write!(
                text,
                "\n{:.3} {} {} ({}, {})",
                item.score, item.item_id, item.title, item.service, item.severity
            );
        }
        text
    }
}

impl Render for Patterns {
    fn render(&self) -> String {
        let mut text = format!("{} patterns", self.patterns.len());
        for p in &self.patterns {
            let _ = write!(
                text,
                "\n{} {} {:?}: {} signals from {} agents, {} ({})",
                p.severity.trim_start_matches("SEVERITY_"),
                p.kind,
                p.key,
                p.signal_count,
                p.agent_count,
                p.status,
                p.action
            );
        }
        text
    }
}
