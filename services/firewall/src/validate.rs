//! One validation: parse the request, read the tenant's graph (or fail closed), extract claims,
//! run the rules, publish signals for blocks.

use std::sync::Arc;

use ontoloop_core::knowledge::firewall::{
    ClaimToCheck, FirewallPolicy, FirewallView, Reason, ReasonCode, Risk, Triple, check_answer,
};
use ontoloop_core::knowledge::{Access, Claim, Ontology, Scope, split_sentences};
use ontoloop_core::{Caller, DomainError, SignalType};
use ontoloop_llm::LlmExtractor;
use ontoloop_proto::v1::{self as pb, ValidateRequest, ValidateResponse, validate_request::Input};
use ontoloop_proto::{caller_from, status_from};
use ontoloop_readmodel::Snapshots;
use ontoloop_runtime::Context;
use tonic::Status;

/// Validates answers for every tenant.
pub struct Validator {
    ctx: Context,
    snapshots: Arc<Snapshots>,
    policy: FirewallPolicy,
    llm: Option<LlmExtractor>,
}

/// A Validate request as the firewall reads it: its shape checked at the edge (the bounds of
/// `[firewall]` are checked by the validator, which holds them).
struct ValidateCall {
    /// The text, not blank, or the claims, at least one and each whole.
    input: Input,
    risk: Risk,
    /// The answer's domain (stricter thresholds may apply).
    domain: String,
    /// The instant to check as of (`None`: now, read once the model is held).
    as_of: Option<chrono::DateTime<chrono::Utc>>,
}

impl TryFrom<ValidateRequest> for ValidateCall {
    type Error = Status;

    fn try_from(request: ValidateRequest) -> Result<Self, Status> {
        let input = request
            .input
            .ok_or_else(|| status_from(DomainError::missing("input")))?;
        match &input {
            Input::Text(text) if text.trim().is_empty() => {
                return Err(status_from(DomainError::invalid("text", "is empty")));
            }
            Input::Text(_) => {}
            Input::Claims(list) => {
                if list.claims.is_empty() {
                    return Err(status_from(DomainError::missing("claims")));
                }
                for (i, claim) in list.claims.iter().enumerate() {
                    validate_claim_shape(i, claim)?;
                }
            }
        }
        let context = request.context.unwrap_or_default();
        let risk = match pb::RiskLevel::try_from(context.risk) {
            Ok(pb::RiskLevel::High) => Risk::High,
            Ok(pb::RiskLevel::Exploratory) => Risk::Exploratory,
            Ok(pb::RiskLevel::Unspecified) => Risk::Standard,
            Err(_) => {
                return Err(status_from(DomainError::invalid(
                    "context.risk",
                    format!("unknown risk level {}", context.risk),
                )));
            }
        };
        Ok(ValidateCall {
            input,
            risk,
            domain: context.domain,
            as_of: ontoloop_proto::convert::instant(request.as_of, "as_of")?,
        })
    }
}

/// One claim as it will be reported.
struct Checked {
    claim: pb::Claim,
    sentence: String,
    reasons: Vec<Reason>,
}

impl Checked {
    /// A claim the request gave as a triple (no sentence), with these reasons so far.
    fn given(claim: &pb::Claim, reasons: Vec<Reason>) -> Self {
        Checked {
            claim: claim.clone(),
            sentence: String::new(),
            reasons,
        }
    }
}

impl Validator {
    /// A validator over the context's store, reading `snapshots` (in a service, the process's
    /// shared ones, `Context::read_models`); the model extractor only when settings enable it.
    pub fn new(ctx: Context, snapshots: Arc<Snapshots>) -> anyhow::Result<Self> {
        let policy = ctx.settings.firewall.clone();
        let llm = if policy.llm.enabled {
            Some(LlmExtractor::new(policy.llm.clone())?)
        } else {
            None
        };
        Ok(Self {
            ctx,
            snapshots,
            policy,
            llm,
        })
    }

    /// Validates one call: the caller is the one [`caller_from`] reads (the verified token's
    /// identity when authentication is on).
    pub async fn validate_call(
        &self,
        request: tonic::Request<ValidateRequest>,
    ) -> Result<ValidateResponse, Status> {
        let caller = caller_from(&request)?;
        self.validate_as(caller, request.into_inner()).await
    }

    /// The `[firewall]` settings it validates with (benchmarks size their inputs by them).
    pub fn policy(&self) -> &FirewallPolicy {
        &self.policy
    }

    /// Validates one request in process, as the request's own `caller` (benchmarks).
    pub async fn validate(&self, request: ValidateRequest) -> Result<ValidateResponse, Status> {
        self.validate_call(tonic::Request::new(request)).await
    }

    async fn validate_as(
        &self,
        caller: Caller,
        request: ValidateRequest,
    ) -> Result<ValidateResponse, Status> {
        let ValidateCall {
            input,
            risk,
            domain,
            as_of: asked_at,
        } = ValidateCall::try_from(request)?;
        match &input {
            Input::Text(text) => {
                if text.len() > self.policy.max_text_bytes {
                    return Err(status_from(DomainError::invalid(
                        "text",
                        format!(
                            "is {} bytes; at most {} are validated at once (firewall.max_text_bytes)",
                            text.len(),
                            self.policy.max_text_bytes
                        ),
                    )));
                }
                self.within_max_claims("text", "sentences", split_sentences(text).len())?;
            }
            Input::Claims(list) => self.within_max_claims("claims", "claims", list.claims.len())?,
        }
        let snapshot = match self.snapshots.recent(caller.tenant()).await {
            Ok(snapshot) => snapshot,
            Err(err) => {
                // Fail closed: nothing passes a firewall that cannot read the graph.
                tracing::warn!(tenant = caller.tenant(), error = %err, "graph unreadable, blocking every claim");
                return Ok(fail_closed(
                    &input,
                    &format!("the knowledge graph cannot be read: {err}"),
                ));
            }
        };
        // "Now" is read once the model is held, so what it holds counts as in effect.
        let as_of = asked_at.unwrap_or_else(chrono::Utc::now);
        if let Input::Claims(list) = &input {
            for (i, claim) in list.claims.iter().enumerate() {
                let steps = if claim.chain.is_empty() {
                    vec![(claim.predicate.as_str(), "predicate".to_owned())]
                } else {
                    claim
                        .chain
                        .iter()
                        .enumerate()
                        .map(|(j, s)| (s.predicate.as_str(), format!("chain[{j}].predicate")))
                        .collect()
                };
                for (predicate, field) in steps {
                    if snapshot.ontology.predicate(predicate).is_none() {
                        return Err(status_from(DomainError::invalid(
                            &format!("claims[{i}].{field}"),
                            format!("{predicate:?} is not a predicate of the ontology"),
                        )));
                    }
                }
            }
        }
        // Read and checked on what the caller may see of the graph: an entity only hidden
        // facts name is as unknown as a name that names nothing.
        let graph = snapshot.graph_for(&Access::new(&caller, &snapshot.current));
        // The parts of the model this check reads. Reading a text may wait on a model call, and
        // the model must not be held still for it: then they are kept while the read lock goes.
        // Otherwise the lock is kept until the check is done and they go first: a patch that
        // found them still shared (the model is shared with retrieval) would copy them whole.
        let (ontology, current) = (
            std::sync::Arc::clone(&snapshot.ontology),
            std::sync::Arc::clone(&snapshot.current),
        );
        let held = if self.llm.is_some() && matches!(input, Input::Text(_)) {
            drop(snapshot);
            None
        } else {
            Some(snapshot)
        };
        let (mut checked, coverage) = match &input {
            Input::Text(text) => {
                // The pipeline (and its encoder) is CPU work: on the blocking pool, never on an
                // async worker. Fail closed if that task cannot finish.
                let read = {
                    let (ontology, text) = (std::sync::Arc::clone(&ontology), text.clone());
                    let graph = std::sync::Arc::clone(&graph);
                    tokio::task::spawn_blocking(move || {
                        ontology.extraction().scoped_claims(
                            &ontology,
                            &text,
                            &graph.lexicon(&ontology),
                        )
                    })
                    .await
                };
                let claims = match read {
                    Ok(claims) => claims,
                    Err(err) => {
                        return Ok(fail_closed(
                            &input,
                            &format!("the answer text could not be read: {err}"),
                        ));
                    }
                };
                // A text of few sentences may still read as many claims (a long list in one
                // sentence): the bound holds for the claims checked, not only the sentences.
                self.within_max_claims("text", "claims", claims.len())?;
                self.claims_from_text(&ontology, text, claims).await
            }
            Input::Claims(list) => (
                list.claims
                    .iter()
                    .map(|c| Checked::given(c, Vec::new()))
                    .collect(),
                pb::Coverage::default(),
            ),
        };
        let to_check: Vec<ClaimToCheck> = checked.iter().map(|c| to_check(&c.claim)).collect();
        let view = FirewallView {
            ontology: &ontology,
            graph: &graph,
            access: Access::new(&caller, &current),
            as_of,
            policy: &self.policy,
            threshold: self.policy.threshold(risk, &domain),
        };
        for (claim, reasons) in checked.iter_mut().zip(check_answer(&view, &to_check)) {
            claim.reasons = reasons;
        }
        drop((graph, current, ontology));
        drop(held);
        self.publish_signals(&caller, &checked).await;
        Ok(response(checked, coverage))
    }

    /// Refuses more than `firewall.max_claims` `what` in `field`: every claim is checked against
    /// the graph and answered with its verdict, so this bounds the work and the response.
    fn within_max_claims(&self, field: &str, what: &str, n: usize) -> Result<(), Status> {
        if n <= self.policy.max_claims {
            return Ok(());
        }
        Err(status_from(DomainError::invalid(
            field,
            format!(
                "has {n} {what}; at most {} are validated at once (firewall.max_claims)",
                self.policy.max_claims
            ),
        )))
    }

    /// `claims`: what the pipeline that reads pages read in `text`, with the graph's names, so a
    /// paraphrased claim is checked like a templated one; the model extractor, when configured,
    /// then reads the sentences left.
    async fn claims_from_text(
        &self,
        ontology: &Ontology,
        text: &str,
        scoped: Vec<(Scope, Claim)>,
    ) -> (Vec<Checked>, pb::Coverage) {
        let sentences = split_sentences(text);
        let mut checked: Vec<Checked> = scoped
            .iter()
            .map(|(scope, claim)| from_claim(claim, scope))
            .collect();
        let claims: Vec<&Claim> = scoped.iter().map(|(_, claim)| claim).collect();
        // Most claims carry their sentence as split: found by a set lookup, so only the others
        // (a claim read across sentences) are looked for by containment.
        let read: std::collections::HashSet<&str> =
            claims.iter().map(|c| c.sentence.trim()).collect();
        let mut unrecognised: Vec<&str> = sentences
            .iter()
            .copied()
            .filter(|s| {
                !read.contains(s.trim())
                    && !claims
                        .iter()
                        .any(|c| c.sentence.contains(s.trim()) || s.contains(&c.sentence))
            })
            .collect();
        if let Some(llm) = &self.llm
            && !unrecognised.is_empty()
        {
            match llm.extract(ontology, &unrecognised.join(" ")).await {
                Ok(extraction) => {
                    // The model's claims count toward firewall.max_claims too: those beyond it
                    // are not checked, and their sentences stay unrecognised.
                    let room = self.policy.max_claims.saturating_sub(checked.len());
                    let kept = &extraction.claims[..extraction.claims.len().min(room)];
                    let recognised: std::collections::BTreeSet<&str> =
                        kept.iter().map(|c| c.sentence.as_str()).collect();
                    unrecognised.retain(|s| !recognised.iter().any(|r| r.trim() == s.trim()));
                    checked.extend(kept.iter().map(|c| from_claim(c, &Scope::everywhere())));
                }
                // The model is an aid to coverage, not to the verdict: its failure leaves the
                // sentences unrecognised (and counted), it never passes or blocks anything.
                Err(err) => {
                    tracing::warn!(error = %err, "model extractor failed; sentences stay unrecognised")
                }
            }
        }
        let total = u32::try_from(sentences.len()).unwrap_or(u32::MAX);
        let unrecognised = u32::try_from(unrecognised.len()).unwrap_or(u32::MAX);
        (
            checked,
            pb::Coverage {
                sentences: total,
                checkable: total - unrecognised,
                unrecognised,
            },
        )
    }

    /// Tells the analyst about every block. Best effort: the verdict never waits on it.
    async fn publish_signals(&self, caller: &Caller, checked: &[Checked]) {
        for claim in checked.iter().filter(|c| !c.reasons.is_empty()) {
            let Some(kind) = claim.reasons.iter().find_map(|r| signal_type(r.code)) else {
                continue;
            };
            let report = ontoloop_runtime::signals::SignalReport {
                tenant: caller.tenant().to_owned(),
                reporter: "firewall".to_owned(),
                kind,
                query: claim.sentence.clone(),
                entity: claim.claim.subject.clone(),
                relationship: claim.claim.predicate.clone(),
                sector: String::new(),
                agent_id: format!("firewall:{}", caller.principal()),
                idempotency_key: ontoloop_queue::new_message_id(),
                detail: claim
                    .reasons
                    .iter()
                    .map(|r| r.code.name())
                    .collect::<Vec<_>>()
                    .join(","),
                at: chrono::Utc::now(),
            };
            // Off the request path: a slow or absent broker never slows a verdict.
            self.ctx.signals.report(report);
        }
    }
}

/// The signal a block tells the analyst about. Every block of a claim is a knowledge gap except
/// `firewall_unavailable`, which says nothing about the knowledge (the store could not be read,
/// and that path returns before signals are published).
fn signal_type(code: ReasonCode) -> Option<SignalType> {
    match code {
        ReasonCode::UnknownEntity => Some(SignalType::EntityMissing),
        ReasonCode::NotInGraph | ReasonCode::BrokenChain => Some(SignalType::RelationshipUnknown),
        ReasonCode::ExpiredRelationship => Some(SignalType::TemporalStale),
        ReasonCode::Contradicted
        | ReasonCode::TemporalInconsistency
        | ReasonCode::SingleSource
        | ReasonCode::LowConfidence => Some(SignalType::ConfidenceDrop),
        ReasonCode::FirewallUnavailable => None,
    }
}

fn validate_claim_shape(i: usize, claim: &pb::Claim) -> Result<(), Status> {
    ontoloop_proto::convert::scope(&claim.scope, &format!("claims[{i}].scope"))?;
    let steps: Vec<(String, &str, &str, &str)> = if claim.chain.is_empty() {
        vec![(
            format!("claims[{i}]"),
            claim.subject.as_str(),
            claim.predicate.as_str(),
            claim.object.as_str(),
        )]
    } else {
        claim
            .chain
            .iter()
            .enumerate()
            .map(|(j, s)| {
                (
                    format!("claims[{i}].chain[{j}]"),
                    s.subject.as_str(),
                    s.predicate.as_str(),
                    s.object.as_str(),
                )
            })
            .collect()
    };
    for (path, subject, predicate, object) in steps {
        for (field, value) in [
            ("subject", subject),
            ("predicate", predicate),
            ("object", object),
        ] {
            if value.trim().is_empty() {
                return Err(status_from(DomainError::missing(&format!(
                    "{path}.{field}"
                ))));
            }
        }
    }
    Ok(())
}

fn from_claim(claim: &Claim, scope: &Scope) -> Checked {
    Checked {
        claim: pb::Claim {
            subject: claim.subject.name().to_owned(),
            predicate: claim.predicate.clone(),
            object: claim.object.clone(),
            chain: Vec::new(),
            scope: scope.encode(),
        },
        sentence: echoed(&claim.sentence),
        reasons: Vec::new(),
    }
}

/// Longest sentence echoed beside a claim read from text, in characters; a longer one is cut and
/// ends in "…". Several claims may come from one sentence, so this keeps the response within a
/// fixed size per claim.
pub const MAX_SENTENCE_CHARS: usize = 1000;

fn echoed(sentence: &str) -> String {
    match sentence.char_indices().nth(MAX_SENTENCE_CHARS) {
        None => sentence.to_owned(),
        Some((cut, _)) => format!("{}…", &sentence[..cut]),
    }
}

fn to_check(claim: &pb::Claim) -> ClaimToCheck {
    let chain: Vec<Triple> = claim
        .chain
        .iter()
        .map(|s| Triple {
            subject: s.subject.clone(),
            predicate: s.predicate.clone(),
            object: s.object.clone(),
        })
        .collect();
    let triple = match (chain.first(), chain.last()) {
        (Some(first), Some(last)) => Triple {
            subject: first.subject.clone(),
            predicate: last.predicate.clone(),
            object: last.object.clone(),
        },
        _ => Triple {
            subject: claim.subject.clone(),
            predicate: claim.predicate.clone(),
            object: claim.object.clone(),
        },
    };
    ClaimToCheck {
        triple,
        chain,
        // Checked when the request was read (validate_claim_shape); a claim read from text
        // carries a scope the pipeline wrote.
        scope: Scope::parse(&claim.scope).unwrap_or_default(),
    }
}

fn response(checked: Vec<Checked>, coverage: pb::Coverage) -> ValidateResponse {
    let blocked = checked.iter().any(|c| !c.reasons.is_empty());
    ValidateResponse {
        overall: if blocked {
            pb::Verdict::Block
        } else {
            pb::Verdict::Pass
        } as i32,
        verdicts: checked
            .into_iter()
            .map(|c| pb::ClaimVerdict {
                verdict: if c.reasons.is_empty() {
                    pb::Verdict::Pass
                } else {
                    pb::Verdict::Block
                } as i32,
                reasons: c
                    .reasons
                    .iter()
                    .map(|r| pb::BlockReason {
                        code: r.code.name().to_owned(),
                        message: r.message.clone(),
                    })
                    .collect(),
                claim: Some(c.claim),
                sentence: c.sentence,
            })
            .collect(),
        coverage: Some(coverage),
    }
}

/// Every claim blocked with `firewall_unavailable`: the structured claims as given, or for text
/// each sentence (no ontology is at hand to extract claims from it).
fn fail_closed(input: &Input, why: &str) -> ValidateResponse {
    let reason = Reason {
        code: ReasonCode::FirewallUnavailable,
        message: why.to_owned(),
    };
    let (checked, coverage) = match input {
        Input::Claims(list) => (
            list.claims
                .iter()
                .map(|c| Checked::given(c, vec![reason.clone()]))
                .collect(),
            pb::Coverage::default(),
        ),
        Input::Text(text) => {
            let sentences = split_sentences(text);
            let n = u32::try_from(sentences.len()).unwrap_or(u32::MAX);
            (
                sentences
                    .into_iter()
                    .map(|s| Checked {
                        claim: pb::Claim::default(),
                        sentence: echoed(s),
                        reasons: vec![reason.clone()],
                    })
                    .collect(),
                pb::Coverage {
                    sentences: n,
                    checkable: 0,
                    unrecognised: n,
                },
            )
        }
    };
    response(checked, coverage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_closed_blocks_every_sentence_and_claim() {
        let text = Input::Text("The Pro plan costs €49. Nothing else.".into());
        let response = fail_closed(&text, "store down");
        assert_eq!(response.overall, pb::Verdict::Block as i32);
        assert_eq!(response.verdicts.len(), 2);
        assert!(
            response
                .verdicts
                .iter()
                .all(|v| v.reasons[0].code == "firewall_unavailable")
        );
        let claims = Input::Claims(pb::ClaimList {
            claims: vec![pb::Claim {
                subject: "a".into(),
                predicate: "p".into(),
                object: "b".into(),
                chain: Vec::new(),
                scope: String::new(),
            }],
        });
        assert_eq!(
            fail_closed(&claims, "x").verdicts[0].verdict,
            pb::Verdict::Block as i32
        );
    }

    #[test]
    fn claim_shapes_name_the_missing_field() {
        let err = validate_claim_shape(
            2,
            &pb::Claim {
                subject: "a".into(),
                predicate: String::new(),
                object: "b".into(),
                chain: Vec::new(),
                scope: String::new(),
            },
        )
        .expect_err("no predicate");
        assert!(
            err.message().contains("claims[2].predicate"),
            "{}",
            err.message()
        );
        let chain = pb::Claim {
            chain: vec![pb::ClaimStep {
                subject: "a".into(),
                predicate: "p".into(),
                object: String::new(),
            }],
            ..Default::default()
        };
        assert!(
            validate_claim_shape(0, &chain)
                .expect_err("no object")
                .message()
                .contains("claims[0].chain[0].object")
        );
    }

    #[test]
    fn long_sentences_are_echoed_cut() {
        assert_eq!(echoed("The Pro plan costs €49."), "The Pro plan costs €49.");
        let long = "€".repeat(MAX_SENTENCE_CHARS * 3);
        let cut = echoed(&long);
        assert_eq!(cut.chars().count(), MAX_SENTENCE_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn signals_follow_the_block_reason() {
        assert_eq!(
            signal_type(ReasonCode::UnknownEntity),
            Some(SignalType::EntityMissing)
        );
        assert_eq!(
            signal_type(ReasonCode::ExpiredRelationship),
            Some(SignalType::TemporalStale)
        );
        assert_eq!(
            signal_type(ReasonCode::SingleSource),
            Some(SignalType::ConfidenceDrop)
        );
        assert_eq!(signal_type(ReasonCode::FirewallUnavailable), None);
    }
}
