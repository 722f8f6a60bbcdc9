//! Conversions between retrieval's knowledge answers and the wire: the design a request names,
//! an answered question (hops, evidence, hedges, passages) as a `v1::Answer`, and a citation's
//! resolution. Plate and org answers convert in `plate::wire`.

use ontoloop_core::DomainError;
use ontoloop_core::knowledge::ask::{Asked, Passage};
use ontoloop_core::knowledge::designs::Design;
use std::collections::BTreeMap;

use ontoloop_core::knowledge::passage::{Chunk, Resolution};
use ontoloop_core::knowledge::{AnswerStatus, Candidate, Graph, PageVersion};
use ontoloop_proto::convert::timestamp;
use ontoloop_proto::status_from;
use ontoloop_proto::v1 as pb;
use ontoloop_readmodel::Ranking;
use tonic::Status;

/// The design a request names; blank is ontoloop's own.
pub fn design(name: &str) -> Result<Design, Status> {
    if name.trim().is_empty() {
        return Ok(Design::Ontoloop);
    }
    Design::from_name(name.trim()).ok_or_else(|| {
        status_from(DomainError::invalid(
            "design",
            format!("{name:?} is not ontoloop, Rag, Graph, Hybrid or HybridVersioned"),
        ))
    })
}

/// The ranking a request names (`None`: the service's default).
pub fn ranking(value: i32) -> Result<Option<Ranking>, Status> {
    match pb::PassageRanking::try_from(value) {
        Ok(pb::PassageRanking::Unspecified) => Ok(None),
        Ok(pb::PassageRanking::Bm25) => Ok(Some(Ranking::Bm25)),
        Ok(pb::PassageRanking::Dense) => Ok(Some(Ranking::Dense)),
        Ok(pb::PassageRanking::Fused) => Ok(Some(Ranking::Fused)),
        Err(_) => Err(status_from(DomainError::invalid(
            "passage_ranking",
            format!("{value} is not a PassageRanking"),
        ))),
    }
}

/// An answered question on the wire. The entity is the graph's id for the name asked about, or
/// the name itself when the graph does not know it; `applied` is the intake sequence number the
/// answer reflects.
pub fn answer(asked: &Asked, graph: &Graph, applied: u64) -> pb::Answer {
    let (question, result) = (&asked.question, &asked.answer);
    let last = result.hops.last().map(|(_, _, d)| d);
    pb::Answer {
        status: status(result.status) as i32,
        value: result.value.clone(),
        values: last.map(|d| d.values.clone()).unwrap_or_default(),
        hedges: result
            .hedges()
            .map(|h| pb::Hedge {
                code: h.code.name().to_owned(),
                message: h.message.clone(),
                source_id: h.source_id.clone(),
            })
            .collect(),
        hops: result
            .hops
            .iter()
            .map(|(entity, predicate, decision)| pb::Hop {
                entity: entity.clone(),
                predicate: predicate.clone(),
                value: decision.value.clone(),
                evidence: decision.evidence.iter().map(evidence).collect(),
            })
            .collect(),
        evidence: last
            .map(|d| d.evidence.iter().map(evidence).collect())
            .unwrap_or_default(),
        abstain_reason: result.abstain_reason.clone(),
        entity: graph
            .resolve(&question.entity)
            .map_or_else(|| question.entity.clone(), |e| e.id.clone()),
        predicate_path: question.path.clone(),
        applied_sequence: applied,
        passages: asked.passages.iter().map(passage).collect(),
        upcoming: result.upcoming().iter().map(evidence).collect(),
        scoped: result
            .scoped()
            .iter()
            .map(|scoped| pb::ScopedValue {
                scope: scoped.scope.encode(),
                value: scoped.value.clone(),
                evidence: scoped.evidence.iter().map(evidence).collect(),
            })
            .collect(),
    }
}

fn passage(found: &Passage) -> pb::Passage {
    pb::Passage {
        title: found.title.clone(),
        origin: found.origin.clone(),
        score: found.score,
        similarity: found.similarity,
        ..chunk(&found.chunk)
    }
}

/// A chunk as a wire passage, without its page's title, origin or a score.
fn chunk(chunk: &Chunk) -> pb::Passage {
    let anchor = &chunk.anchor;
    pb::Passage {
        source_id: anchor.doc_id.clone(),
        source_version: anchor.version,
        headings: chunk.headings.clone(),
        text: chunk.text.clone(),
        chunk_hash: anchor.hash.clone(),
        start: anchor.start as u64,
        end: anchor.end as u64,
        ..Default::default()
    }
}

/// A citation's resolution on the wire; the passage carries its page's current title and
/// origin (`current`: the newest version of every page).
pub fn resolution(
    resolution: &Resolution,
    current: &BTreeMap<String, PageVersion>,
    applied: u64,
) -> pb::CitationResolution {
    let (status, found) = match resolution {
        Resolution::Current(c) => (pb::CitationStatus::Current, Some(c)),
        Resolution::Moved(c) => (pb::CitationStatus::Moved, Some(c)),
        Resolution::Revised(c) => (pb::CitationStatus::Revised, Some(c)),
        Resolution::Gone => (pb::CitationStatus::Gone, None),
    };
    pb::CitationResolution {
        status: status as i32,
        passage: found.map(|c| {
            let page = current.get(&c.anchor.doc_id);
            pb::Passage {
                title: page.map(|p| p.title.clone()).unwrap_or_default(),
                origin: page.map(|p| p.origin.clone()).unwrap_or_default(),
                ..chunk(c)
            }
        }),
        applied_sequence: applied,
    }
}

fn status(status: AnswerStatus) -> pb::AnswerStatus {
    match status {
        AnswerStatus::Answered => pb::AnswerStatus::Answered,
        AnswerStatus::AnsweredPossiblyStale => pb::AnswerStatus::AnsweredPossiblyStale,
        AnswerStatus::ConflictOpen => pb::AnswerStatus::ConflictOpen,
        AnswerStatus::Abstained => pb::AnswerStatus::Abstained,
        AnswerStatus::AnsweredPassages => pb::AnswerStatus::AnsweredPassages,
        AnswerStatus::NeedsScope => pb::AnswerStatus::NeedsScope,
    }
}

fn evidence(candidate: &Candidate) -> pb::Evidence {
    pb::Evidence {
        source_id: candidate.source.source_id.clone(),
        source_version: candidate.source.version,
        origin: candidate.source.origin.clone(),
        authority: candidate.authority,
        value: candidate.value.clone(),
        valid_from: Some(timestamp(candidate.valid_from)),
        valid_to: None,
        extracted_at: candidate.extracted_at.map(timestamp),
        extractor: candidate.extractor.clone(),
        confidence: candidate.confidence,
        excerpt: candidate.excerpt.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status names the analyst's gate records are the API's, without the enum's prefix.
    #[test]
    fn every_status_is_named_as_the_api_names_it() {
        for s in [
            AnswerStatus::Answered,
            AnswerStatus::AnsweredPossiblyStale,
            AnswerStatus::ConflictOpen,
            AnswerStatus::Abstained,
            AnswerStatus::AnsweredPassages,
            AnswerStatus::NeedsScope,
        ] {
            assert_eq!(
                status(s).as_str_name().trim_start_matches("ANSWER_STATUS_"),
                s.name()
            );
        }
    }
}
