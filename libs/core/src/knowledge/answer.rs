//! The answer policy: from every candidate value of one slot, with provenance, decide what an
//! agent is told. Higher authority wins; recency decides only inside the same authority; where
//! neither decides the conflict stays open. A hedge is given only with a reason computed here.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use super::graph::SourceRef;
use super::scope::Scope;
pub use super::words::same_value;

/// One candidate value of a slot.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The value as stated.
    pub value: String,
    /// Source and the version that states it.
    pub source: SourceRef,
    /// Authority of the source's origin.
    pub authority: i32,
    /// When the stating version appeared (recency).
    pub valid_from: DateTime<Utc>,
    /// When the graph extracted it; `None` for evidence read straight from a current page.
    pub extracted_at: Option<DateTime<Utc>>,
    /// Extractor id.
    pub extractor: String,
    /// Extraction confidence.
    pub confidence: f64,
    /// The sentence it was read from, when known.
    pub excerpt: String,
}

/// Why an answer is hedged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HedgeCode {
    /// Sources of the winner's authority disagree; the loser is named.
    SameAuthorityDisagree,
    /// The winner's source has a newer version that could not be read or extracted.
    SourceChangedUnread,
    /// The answer rests only on origins below the configured authority.
    LowAuthorityOnly,
    /// Words of the question name a relation the answered path does not follow; they are named.
    QuestionPartlyUnderstood,
    /// The value rests on weak evidence (the message says why).
    WeakEvidence,
    /// A study baseline hedged by its own rule (sources disagree, no graph entry, or a page
    /// changed after extraction); ontoloop's policy never uses it.
    StudyRule,
}

impl HedgeCode {
    /// Wire name.
    pub fn name(self) -> &'static str {
        match self {
            HedgeCode::SameAuthorityDisagree => "same_authority_disagree",
            HedgeCode::SourceChangedUnread => "source_changed_unread",
            HedgeCode::LowAuthorityOnly => "low_authority_only",
            HedgeCode::QuestionPartlyUnderstood => "question_partly_understood",
            HedgeCode::WeakEvidence => "weak_evidence",
            HedgeCode::StudyRule => "study_rule",
        }
    }
}

/// A computed reason for caution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hedge {
    /// Which reason.
    pub code: HedgeCode,
    /// Human-readable explanation.
    pub message: String,
    /// The source it concerns.
    pub source_id: String,
}

/// The trust status of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerStatus {
    /// A value, no reason for doubt.
    Answered,
    /// A value with at least one hedge.
    AnsweredPossiblyStale,
    /// Equal authority and time, different values: all listed.
    ConflictOpen,
    /// Nothing supports an answer.
    Abstained,
    /// No slot of the ontology answers the question; passages that match its words are given
    /// instead, each with its citation (the question's [`super::ask::Asked::passages`]).
    AnsweredPassages,
    /// The slot's values differ by scope and the question names none (or a wider one): each
    /// scope with its value is listed ([`SlotDecision::scoped`]). Neither a conflict nor a hedge.
    NeedsScope,
}

impl AnswerStatus {
    /// Name, as the API's `AnswerStatus` spells it without its `ANSWER_STATUS_` prefix (as the
    /// CLI prints it).
    pub fn name(self) -> &'static str {
        match self {
            AnswerStatus::Answered => "ANSWERED",
            AnswerStatus::AnsweredPossiblyStale => "ANSWERED_POSSIBLY_STALE",
            AnswerStatus::ConflictOpen => "CONFLICT_OPEN",
            AnswerStatus::Abstained => "ABSTAINED",
            AnswerStatus::AnsweredPassages => "ANSWERED_PASSAGES",
            AnswerStatus::NeedsScope => "NEEDS_SCOPE",
        }
    }
}

/// A value that holds in one scope, with what supports it, winner first.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedValue {
    /// Where it holds.
    pub scope: Scope,
    /// The value there.
    pub value: String,
    /// Candidates that support it, winner first.
    pub evidence: Vec<Candidate>,
}

/// Something the analyst should hear about, found while deciding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// The graph read an older version of this source than the one answering (graph lags).
    GraphLags {
        /// The source.
        source_id: String,
    },
    /// A lower-authority source still states another value (a stale sibling).
    StaleSibling {
        /// The source.
        source_id: String,
        /// What it states.
        value: String,
    },
    /// Same-authority sources disagree.
    Contradiction {
        /// The source that lost.
        source_id: String,
    },
}

/// What the policy decided for one slot.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotDecision {
    /// Status.
    pub status: AnswerStatus,
    /// The value (empty when abstained; the first of `values` when the conflict is open).
    pub value: String,
    /// Every value when the conflict is open.
    pub values: Vec<String>,
    /// Candidates that support the value, winner first; then the others.
    pub evidence: Vec<Candidate>,
    /// Computed hedges.
    pub hedges: Vec<Hedge>,
    /// Findings for the analyst.
    pub findings: Vec<Finding>,
    /// Values of the slot announced to take effect after the instant asked about, soonest
    /// first (`valid_from` is when): a note beside the value, neither a hedge nor a conflict.
    pub upcoming: Vec<Candidate>,
    /// [`AnswerStatus::NeedsScope`]: each scope with its value, the widest first.
    pub scoped: Vec<ScopedValue>,
}

impl SlotDecision {
    /// A decision of `status` that states no value (an abstention, say), telling the analyst
    /// `findings`.
    pub fn valueless(status: AnswerStatus, findings: Vec<Finding>) -> Self {
        SlotDecision {
            status,
            value: String::new(),
            values: Vec::new(),
            evidence: Vec::new(),
            hedges: Vec::new(),
            findings,
            upcoming: Vec::new(),
            scoped: Vec::new(),
        }
    }
}

/// What the policy is told besides the candidates.
#[derive(Debug, Clone, Default)]
pub struct SlotContext {
    /// Sources whose current version was read for this answer, with that version.
    pub read_versions: BTreeMap<String, u64>,
    /// Latest known version of each page source a candidate cites (others are never asked).
    pub latest_versions: BTreeMap<String, u64>,
    /// Answers resting only on origins below this authority are hedged.
    pub hedge_below_authority: i32,
}

/// Decides one slot.
pub fn decide(candidates: Vec<Candidate>, ctx: &SlotContext) -> SlotDecision {
    let mut findings = Vec::new();
    // A source speaks once, through the newest version that was read: older versions of a source
    // whose current version was read no longer count (the source moved on).
    let mut kept: Vec<Candidate> = Vec::new();
    for candidate in candidates {
        if let Some(&read) = ctx.read_versions.get(&candidate.source.source_id)
            && candidate.source.version < read
        {
            if candidate.extracted_at.is_some() {
                findings.push(Finding::GraphLags {
                    source_id: candidate.source.source_id.clone(),
                });
            }
            continue;
        }
        let duplicate = kept.iter().any(|k| {
            k.source.source_id == candidate.source.source_id
                && k.source.version == candidate.source.version
                && same_value(&k.value, &candidate.value)
        });
        if !duplicate {
            kept.push(candidate);
        }
    }
    dedup_findings(&mut findings);
    let Some(top_authority) = kept.iter().map(|c| c.authority).max() else {
        return SlotDecision::valueless(AnswerStatus::Abstained, findings);
    };
    let (top, lower): (Vec<Candidate>, Vec<Candidate>) =
        kept.into_iter().partition(|c| c.authority == top_authority);
    let latest = top.iter().map(|c| c.valid_from).max().unwrap_or_default();
    let mut newest_values: Vec<String> = Vec::new();
    for c in top.iter().filter(|c| c.valid_from == latest) {
        if !newest_values.iter().any(|v| same_value(v, &c.value)) {
            newest_values.push(c.value.clone());
        }
    }
    let mut hedges = Vec::new();
    let mut evidence: Vec<Candidate> = Vec::new();
    let status;
    let value;
    if newest_values.len() > 1 {
        status = AnswerStatus::ConflictOpen;
        value = newest_values[0].clone();
        evidence.extend(top.iter().cloned());
    } else {
        value = newest_values[0].clone();
        let (support, against): (Vec<Candidate>, Vec<Candidate>) =
            top.into_iter().partition(|c| same_value(&c.value, &value));
        let mut losers = BTreeSet::new();
        for loser in &against {
            if losers.insert(loser.source.source_id.clone()) {
                hedges.push(Hedge {
                    code: HedgeCode::SameAuthorityDisagree,
                    message: format!(
                        "{}@{} ({}, authority {}) still says {:?}; the newer {:?} wins by recency",
                        loser.source.source_id,
                        loser.source.version,
                        loser.source.origin,
                        loser.authority,
                        loser.value,
                        value
                    ),
                    source_id: loser.source.source_id.clone(),
                });
                findings.push(Finding::Contradiction {
                    source_id: loser.source.source_id.clone(),
                });
            }
        }
        let mut support = support;
        support.sort_by(|a, b| {
            b.valid_from
                .cmp(&a.valid_from)
                .then_with(|| a.source.cmp(&b.source))
        });
        for winner in support.iter().take(1) {
            let latest_known = ctx
                .latest_versions
                .get(&winner.source.source_id)
                .copied()
                .unwrap_or(winner.source.version);
            let read = ctx.read_versions.get(&winner.source.source_id).copied();
            if latest_known > winner.source.version && read.is_none_or(|r| r < latest_known) {
                hedges.push(Hedge {
                    code: HedgeCode::SourceChangedUnread,
                    message: format!(
                        "{} has version {latest_known}, newer than the version {} this value comes from, and it could not be read",
                        winner.source.source_id, winner.source.version
                    ),
                    source_id: winner.source.source_id.clone(),
                });
            }
            if winner.authority < ctx.hedge_below_authority {
                hedges.push(Hedge {
                    code: HedgeCode::LowAuthorityOnly,
                    message: format!(
                        "only {} (authority {}) states this; no source of authority {} or more does",
                        winner.source.origin, winner.authority, ctx.hedge_below_authority
                    ),
                    source_id: winner.source.source_id.clone(),
                });
            }
        }
        status = if hedges.is_empty() {
            AnswerStatus::Answered
        } else {
            AnswerStatus::AnsweredPossiblyStale
        };
        evidence.extend(support);
        evidence.extend(against);
    }
    for sibling in &lower {
        if !same_value(&sibling.value, &value) {
            findings.push(Finding::StaleSibling {
                source_id: sibling.source.source_id.clone(),
                value: sibling.value.clone(),
            });
        }
    }
    evidence.extend(lower);
    dedup_findings(&mut findings);
    SlotDecision {
        status,
        values: if status == AnswerStatus::ConflictOpen {
            newest_values
        } else {
            vec![value.clone()]
        },
        value,
        evidence,
        hedges,
        findings,
        upcoming: Vec::new(),
        scoped: Vec::new(),
    }
}

fn dedup_findings(findings: &mut Vec<Finding>) {
    let mut seen = Vec::new();
    findings.retain(|f| {
        if seen.contains(f) {
            false
        } else {
            seen.push(f.clone());
            true
        }
    });
}

/// A whole answer: one decision per hop, combined.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Combined status: abstained if any hop abstained, open if the last hop's conflict is open,
    /// possibly stale if any hop is hedged.
    pub status: AnswerStatus,
    /// The final value.
    pub value: String,
    /// Hops followed: (entity id, predicate, decision).
    pub hops: Vec<(String, String, SlotDecision)>,
    /// Why it abstained.
    pub abstain_reason: String,
}

impl Answer {
    /// Combines hop decisions.
    pub fn combine(
        hops: Vec<(String, String, SlotDecision)>,
        abstain_reason: Option<String>,
    ) -> Self {
        if let Some(reason) = abstain_reason {
            return Self {
                status: AnswerStatus::Abstained,
                value: String::new(),
                hops,
                abstain_reason: reason,
            };
        }
        let last = hops.last().map(|(_, _, d)| d);
        let status = match last.map(|d| d.status) {
            None | Some(AnswerStatus::Abstained) => AnswerStatus::Abstained,
            Some(AnswerStatus::NeedsScope) => AnswerStatus::NeedsScope,
            Some(AnswerStatus::ConflictOpen) => AnswerStatus::ConflictOpen,
            Some(_) if hops.iter().any(|(_, _, d)| !d.hedges.is_empty()) => {
                AnswerStatus::AnsweredPossiblyStale
            }
            Some(_) => AnswerStatus::Answered,
        };
        Self {
            status,
            value: last.map(|d| d.value.clone()).unwrap_or_default(),
            hops,
            abstain_reason: String::new(),
        }
    }

    /// Hedges a value that was given: the last hop carries `hedge`, and an answer without doubt
    /// becomes possibly stale. An abstention or an open conflict is left as it is.
    pub fn hedge(&mut self, hedge: Hedge) {
        if !matches!(
            self.status,
            AnswerStatus::Answered | AnswerStatus::AnsweredPossiblyStale
        ) {
            return;
        }
        if let Some((_, _, decision)) = self.hops.last_mut() {
            decision.hedges.push(hedge);
            self.status = AnswerStatus::AnsweredPossiblyStale;
        }
    }

    /// [`AnswerStatus::NeedsScope`]: each scope of the last hop followed with its value, the
    /// widest first; none otherwise.
    pub fn scoped(&self) -> &[ScopedValue] {
        match (self.status, self.hops.last()) {
            (AnswerStatus::NeedsScope, Some((_, _, decision))) => &decision.scoped,
            _ => &[],
        }
    }

    /// Every hedge of every hop.
    pub fn hedges(&self) -> impl Iterator<Item = &Hedge> {
        self.hops.iter().flat_map(|(_, _, d)| d.hedges.iter())
    }

    /// Values announced for the final slot after the instant asked about, soonest first; none
    /// when the answer abstained.
    pub fn upcoming(&self) -> &[Candidate] {
        match (self.status, self.hops.last()) {
            (AnswerStatus::Abstained, _) | (_, None) => &[],
            (_, Some((_, _, decision))) => &decision.upcoming,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn day(d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 9, d, 9, 0, 0)
            .single()
            .expect("date")
    }

    fn c(
        value: &str,
        source: &str,
        version: u64,
        origin: &str,
        authority: i32,
        d: u32,
        graph: bool,
    ) -> Candidate {
        Candidate {
            value: value.into(),
            source: SourceRef {
                source_id: source.into(),
                version,
                origin: origin.into(),
            },
            authority,
            valid_from: day(d),
            extracted_at: graph.then(|| day(d)),
            extractor: "patterns/v1".into(),
            confidence: 1.0,
            excerpt: String::new(),
        }
    }

    fn ctx() -> SlotContext {
        SlotContext {
            hedge_below_authority: 2,
            ..SlotContext::default()
        }
    }

    #[test]
    fn authority_beats_recency() {
        let decision = decide(
            vec![
                c("19", "d02", 1, "pricing-page", 3, 1, true),
                c("24", "d27", 2, "meeting-notes", 1, 29, false),
            ],
            &ctx(),
        );
        assert_eq!(decision.status, AnswerStatus::Answered);
        assert_eq!(decision.value, "19");
        assert!(
            decision.findings.iter().any(
                |f| matches!(f, Finding::StaleSibling { source_id, .. } if source_id == "d27")
            )
        );
    }

    #[test]
    fn recency_decides_inside_one_authority_and_hedges_naming_the_loser() {
        let decision = decide(
            vec![
                c("Atlas", "d09", 1, "team-page", 3, 1, true),
                c("Orion", "d12", 2, "service-catalog", 3, 29, false),
            ],
            &ctx(),
        );
        assert_eq!(decision.value, "Orion");
        assert_eq!(decision.status, AnswerStatus::AnsweredPossiblyStale);
        assert_eq!(decision.hedges[0].code, HedgeCode::SameAuthorityDisagree);
        assert_eq!(decision.hedges[0].source_id, "d09");
    }

    #[test]
    fn equal_authority_and_time_leaves_the_conflict_open() {
        let decision = decide(
            vec![
                c("49", "a", 1, "pricing-page", 3, 1, true),
                c("59", "b", 1, "pricing-page", 3, 1, true),
            ],
            &ctx(),
        );
        assert_eq!(decision.status, AnswerStatus::ConflictOpen);
        assert_eq!(decision.values, vec!["49".to_owned(), "59".to_owned()]);
    }

    #[test]
    fn a_lagging_graph_is_a_finding_not_a_hedge() {
        let mut ctx = ctx();
        ctx.read_versions.insert("d02".into(), 2);
        ctx.latest_versions.insert("d02".into(), 2);
        let decision = decide(
            vec![
                c("49", "d02", 1, "pricing-page", 3, 1, true),
                c("59", "d02", 2, "pricing-page", 3, 22, false),
            ],
            &ctx,
        );
        assert_eq!(decision.status, AnswerStatus::Answered);
        assert_eq!(decision.value, "59");
        assert_eq!(
            decision.findings,
            vec![Finding::GraphLags {
                source_id: "d02".into()
            }]
        );
    }

    #[test]
    fn an_unread_newer_version_of_the_winner_hedges() {
        let mut ctx = ctx();
        ctx.latest_versions.insert("d02".into(), 3);
        let decision = decide(vec![c("49", "d02", 1, "pricing-page", 3, 1, true)], &ctx);
        assert_eq!(decision.status, AnswerStatus::AnsweredPossiblyStale);
        assert_eq!(decision.hedges[0].code, HedgeCode::SourceChangedUnread);
    }

    #[test]
    fn low_authority_alone_hedges_and_nothing_abstains() {
        let decision = decide(
            vec![c("24", "d27", 2, "meeting-notes", 1, 29, false)],
            &ctx(),
        );
        assert_eq!(decision.hedges[0].code, HedgeCode::LowAuthorityOnly);
        assert_eq!(decide(Vec::new(), &ctx()).status, AnswerStatus::Abstained);
    }
}
