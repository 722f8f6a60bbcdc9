//! Conversions between retrieval's knowledge answers and the wire: an Ask request read into
//! checked domain values (`AskCall`, `SearchCall`), the design a request names, an answered question (hops,
//! evidence, hedges, passages) as a `v1::Answer`, passages found by a search, and a citation's
//! resolution. Plate and org
//! answers convert in `plate::wire`.

use ontoloop_core::DomainError;
use ontoloop_core::knowledge::ask::{Asked, Passage};
use ontoloop_core::knowledge::designs::Design;
use std::collections::BTreeMap;

use ontoloop_core::knowledge::passage::{Chunk, Resolution};
use ontoloop_core::knowledge::{AnswerStatus, Candidate, Graph, PageVersion, Scope};
use ontoloop_proto::convert::timestamp;
use ontoloop_proto::status_from;
use ontoloop_proto::v1 as pb;
use ontoloop_readmodel::searching::{DEFAULT_SEARCH_K, Found, MAX_SEARCH_K};
use ontoloop_readmodel::{PageFilter, Ranking};
use tonic::Status;

/// The longest question (or lookup query) answered, in bytes: a question is a sentence or two,
/// not a document.
pub const MAX_QUESTION_BYTES: usize = 4096;

/// An Ask request as retrieval reads it: every field checked at the edge.
#[derive(Debug, Clone)]
pub struct AskCall {
    /// The question, not blank and at most [`MAX_QUESTION_BYTES`].
    pub text: String,
    /// The answering design (blank: ontoloop's own).
    pub design: Design,
    /// The passage ranking asked for (`None`: the service's default).
    pub ranking: Option<Ranking>,
    /// Where the answer should hold.
    pub scope: Scope,
    /// Answer once this intake sequence number is applied (0: now).
    pub min_sequence: u64,
    /// The instant to answer as of (`None`: now, read once the model is held).
    pub as_of: Option<chrono::DateTime<chrono::Utc>>,
}

impl TryFrom<pb::AskRequest> for AskCall {
    type Error = Status;

    fn try_from(request: pb::AskRequest) -> Result<Self, Status> {
        bounded("text", &request.text, MAX_QUESTION_BYTES, || {
            format!("a question is at most {MAX_QUESTION_BYTES} bytes")
        })?;
        Ok(AskCall {
            design: design(&request.design)?,
            ranking: ranking(request.passage_ranking)?,
            scope: ontoloop_proto::convert::scope(&request.scope, "scope")?,
            as_of: ontoloop_proto::convert::instant(request.as_of, "as_of")?,
            min_sequence: request.min_sequence,
            text: request.text,
        })
    }
}

/// Most origins a Search may filter by.
pub const MAX_SEARCH_ORIGINS: usize = 16;

/// Longest origin or page-id prefix a Search may filter by, in bytes.
pub const MAX_SEARCH_FILTER_BYTES: usize = 256;

/// A Search request as retrieval reads it: every field checked at the edge.
#[derive(Debug, Clone)]
pub struct SearchCall {
    /// The query, not blank and at most [`MAX_QUESTION_BYTES`].
    pub query: String,
    /// Passages wanted, 1 ..= [`MAX_SEARCH_K`] (0 on the wire: [`DEFAULT_SEARCH_K`]).
    pub k: usize,
    /// The ranking asked for (`None`: the service's default).
    pub ranking: Option<Ranking>,
    /// Origins and id prefix of the pages searched.
    pub filter: PageFilter,
    /// Where a passage must hold.
    pub scope: Scope,
    /// Search once this intake sequence number is applied (0: now).
    pub min_sequence: u64,
    /// The instant searched (`None`: now, read once the model is held).
    pub as_of: Option<chrono::DateTime<chrono::Utc>>,
}

impl TryFrom<pb::SearchRequest> for SearchCall {
    type Error = Status;

    fn try_from(request: pb::SearchRequest) -> Result<Self, Status> {
        bounded("query", &request.query, MAX_QUESTION_BYTES, || {
            format!("a query is at most {MAX_QUESTION_BYTES} bytes")
        })?;
        let k = match usize::try_from(request.k) {
            Ok(0) => DEFAULT_SEARCH_K,
            Ok(k) if k <= MAX_SEARCH_K => k,
            _ => {
                return Err(status_from(DomainError::invalid(
                    "k",
                    format!("at most {MAX_SEARCH_K} passages ({} asked)", request.k),
                )));
            }
        };
        if request.origins.len() > MAX_SEARCH_ORIGINS {
            return Err(status_from(DomainError::invalid(
                "origins",
                format!("at most {MAX_SEARCH_ORIGINS} origins"),
            )));
        }
        let too_long = |value: &String| value.len() > MAX_SEARCH_FILTER_BYTES;
        if request
            .origins
            .iter()
            .any(|o| o.trim().is_empty() || too_long(o))
        {
            return Err(status_from(DomainError::invalid(
                "origins",
                format!("an origin is not blank and at most {MAX_SEARCH_FILTER_BYTES} bytes"),
            )));
        }
        if too_long(&request.page_prefix) {
            return Err(status_from(DomainError::invalid(
                "page_prefix",
                format!("at most {MAX_SEARCH_FILTER_BYTES} bytes"),
            )));
        }
        Ok(SearchCall {
            k,
            ranking: ranking(request.ranking)?,
            scope: ontoloop_proto::convert::scope(&request.scope, "scope")?,
            as_of: ontoloop_proto::convert::instant(request.as_of, "as_of")?,
            min_sequence: request.min_sequence,
            filter: PageFilter {
                origins: request.origins,
                prefix: request.page_prefix,
            },
            query: request.query,
        })
    }
}

/// Passages a search found on the wire, with the ranking used.
pub fn search_response(found: &[Found], ranking: Ranking, applied: u64) -> pb::SearchResponse {
    pb::SearchResponse {
        hits: found
            .iter()
            .map(|hit| pb::SearchHit {
                passage: Some(passage(&hit.passage)),
                entities: hit
                    .entities
                    .iter()
                    .map(|e| pb::MentionedEntity {
                        id: e.id.clone(),
                        name: e.name.clone(),
                        entity_type: e.entity_type.clone().unwrap_or_default(),
                    })
                    .collect(),
            })
            .collect(),
        ranking: match ranking {
            Ranking::Bm25 => pb::PassageRanking::Bm25,
            Ranking::Dense => pb::PassageRanking::Dense,
            Ranking::Fused => pb::PassageRanking::Fused,
        } as i32,
        applied_sequence: applied,
    }
}

/// The design a request names; blank is ontoloop's own.
pub fn design(name: &str) -> Result<Design, Status> {
    if name.trim().is_empty() {
        return Ok(Design::Ontoloop);
    }
    Design::from_name(name.trim()).ok_or_else(|| {
        status_from(DomainError::invalid(
            "design",
            format!(
                "{name:?} is not ontoloop, Rag, Graph, Hybrid, HybridVersioned or FlatMetadata"
            ),
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

/// Checks `value`, a request's `field`: not blank, and at most `max` bytes (`too_long` says why
/// a longer one is refused).
pub(crate) fn bounded(
    field: &str,
    value: &str,
    max: usize,
    too_long: impl FnOnce() -> String,
) -> Result<(), Status> {
    if value.trim().is_empty() {
        return Err(status_from(DomainError::missing(field)));
    }
    if value.len() > max {
        return Err(status_from(DomainError::invalid(field, too_long())));
    }
    Ok(())
}

/// An answered question on the wire. The entity is the graph's id for the name asked about, or
/// the name itself when the graph does not know it; `applied` is the intake sequence number the
/// answer reflects.
pub fn answer(asked: &Asked, graph: &Graph, applied: u64) -> pb::Answer {
    let (question, result) = (&asked.question, &asked.answer);
    // The final value's slot. Passages have none: their hops, on a question about an entity as
    // a whole, are each a slot of it, with its own value and evidence.
    let passages = result.status == AnswerStatus::AnsweredPassages;
    let last = result.hops.last().map(|(_, _, d)| d).filter(|_| !passages);
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
        upcoming: if passages {
            Vec::new()
        } else {
            result.upcoming().iter().map(evidence).collect()
        },
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
