//! The gate before a change of the whole graph goes live: a rebuild, a repair that re-reads a
//! large share of the pages, or an ontology change (which re-reads every page under the new
//! ontology). The change is built in a shadow of the tenant's knowledge; the tenant's recent
//! questions (the query log retrieval keeps, at most [`ontoloop_readmodel::RECENT_QUESTIONS`])
//! are replayed against the live graph and the shadow, each as the caller who asked it; the
//! change goes live only when no answer changed without a page change explaining it. Otherwise
//! it is held with the answers that differ, for a reviewer to approve or discard on the
//! dashboard. What the graph held before a change that went live is kept with its record, for
//! a rollback (`graph.maintain` mode `rollback`).
//!
//! This module holds the pure parts (the replay, the comparison, what a rollback restores); the
//! writer ([`crate::knowledge`]) decides when to gate and commits. It must never write the
//! store itself, nor let a held change touch the live graph.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use ontoloop_core::knowledge::answer::{Answer, AnswerStatus};
use ontoloop_core::knowledge::ask::Asked;
use ontoloop_core::knowledge::designs::Design;
use ontoloop_core::knowledge::graph::{Entity, Fact};
use ontoloop_core::knowledge::{PageVersion, Scope};
use ontoloop_readmodel::asking::{self, Answering, Asking};
use ontoloop_readmodel::{Asker, Snapshot};
use ontoloop_store::LoggedQuestion;
use serde::{Deserialize, Serialize};

/// A repair that re-reads at least this share of the current pages is gated like a rebuild.
pub const LARGE_REPAIR_SHARE: f64 = 0.5;

/// Differing answers a held change keeps to show, at most (the count is kept whole).
pub const MAX_SHOWN_DIFFERENCES: usize = 200;

/// What kind of change the gate judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Every page read again.
    Rebuild,
    /// A repair that re-reads a large share of the pages.
    Repair,
    /// A new ontology, every page read again under it.
    Ontology,
}

impl Kind {
    /// Its name in the record.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Rebuild => "rebuild",
            Kind::Repair => "repair",
            Kind::Ontology => "ontology",
        }
    }
}

/// A record's status.
pub mod status {
    /// Waiting for a reviewer: not applied.
    pub const HELD: &str = "held";
    /// Went live by itself: no answer changed unexplained.
    pub const LIVE: &str = "live";
    /// A reviewer let it go live.
    pub const APPROVED: &str = "approved";
    /// A reviewer threw it away.
    pub const DISCARDED: &str = "discarded";
    /// It went live and was rolled back.
    pub const ROLLED_BACK: &str = "rolled_back";
}

/// An answer as the gate compares it: its status, its value (every value of an open conflict,
/// every scope's value, the passages offered) and the sources it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The status, as the wire names it (`ANSWERED`, `ABSTAINED`, …).
    pub status: String,
    /// What it says.
    pub value: String,
    /// `page@version` of each source it rests on.
    pub sources: Vec<String>,
}

impl Outcome {
    /// The outcome of `asked`.
    pub fn of(asked: &Asked) -> Self {
        let answer = &asked.answer;
        let last = answer.hops.last().map(|(_, _, decision)| decision);
        let value = match answer.status {
            AnswerStatus::ConflictOpen => last.map(|d| d.values.join(" | ")).unwrap_or_default(),
            AnswerStatus::NeedsScope => last
                .map(|d| {
                    d.scoped
                        .iter()
                        .map(|s| format!("{}: {}", scope_label(&s.scope), s.value))
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default(),
            // The slots of an entity asked about as a whole, then the passages.
            AnswerStatus::AnsweredPassages => answer
                .hops
                .iter()
                .map(|(_, predicate, d)| format!("{predicate}: {}", d.value))
                .chain(
                    asked
                        .passages
                        .iter()
                        .map(|p| format!("{}#{}", p.chunk.anchor.doc_id, p.chunk.anchor.hash)),
                )
                .collect::<Vec<_>>()
                .join(", "),
            _ => answer.value.clone(),
        };
        Self {
            status: AnswerStatus::name(answer.status).to_owned(),
            value,
            sources: sources(answer, asked),
        }
    }

    /// The outcome as a reviewer who may not read its sources is shown it: its status, the
    /// value and sources withheld.
    fn redacted(self) -> Outcome {
        Outcome {
            status: self.status,
            value: "(withheld: it rests on a page with an ACL)".to_owned(),
            sources: Vec::new(),
        }
    }

    /// Whether two outcomes say the same: the same status and the same value as people read
    /// it (case, spacing and a final period aside).
    pub fn same(&self, other: &Outcome) -> bool {
        self.status == other.status
            && ontoloop_core::knowledge::answer::same_value(&self.value, &other.value)
    }
}

/// A scope as a reviewer reads it: `region=EU`, or `everywhere`.
fn scope_label(scope: &Scope) -> String {
    if scope.is_everywhere() {
        "everywhere".to_owned()
    } else {
        scope.encode()
    }
}

/// The page versions an answer rests on: each hop's evidence and each passage offered.
fn sources(answer: &Answer, asked: &Asked) -> Vec<String> {
    let mut found: BTreeSet<String> = BTreeSet::new();
    for (_, _, decision) in &answer.hops {
        for candidate in decision.evidence.iter().take(1) {
            found.insert(format!(
                "{}@{}",
                candidate.source.source_id, candidate.source.version
            ));
        }
    }
    for passage in &asked.passages {
        found.insert(format!(
            "{}@{}",
            passage.chunk.anchor.doc_id, passage.chunk.anchor.version
        ));
    }
    found.into_iter().collect()
}

/// One question whose answer differs between the live graph and the shadow. An answer resting
/// on a page with an ACL is kept with its status only (the reviewer who reads the record may not
/// read what the asker could).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// The question.
    pub question: String,
    /// The scope it was asked in (empty for everywhere).
    pub scope: String,
    /// Who asked it.
    pub asker: String,
    /// The live graph's answer.
    pub before: Outcome,
    /// The shadow's answer.
    pub after: Outcome,
    /// Whether a page change explains it: the shadow's answer rests on a page version the live
    /// graph had not read, or the live answer on one that is no longer current; or it is
    /// `previewed`.
    pub explained: bool,
    /// Whether an approved ontology proposal's preview said the change answers it: a question
    /// that failed (abstained, or answered by passages) and now gets an answer.
    #[serde(default)]
    pub previewed: bool,
}

/// The replay of the recent questions against the live graph and the shadow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replay {
    /// Distinct questions replayed (the same question of the same caller in the same scope once).
    pub replayed: usize,
    /// Questions whose answers differ, unexplained first, at most [`MAX_SHOWN_DIFFERENCES`].
    pub differences: Vec<Difference>,
    /// Differing answers no page change explains (all of them, shown or not).
    pub unexplained: usize,
    /// Differing answers a page change explains.
    pub explained: usize,
}

impl Replay {
    /// Whether the change may go live by itself.
    pub fn passes(&self) -> bool {
        self.unexplained == 0
    }
}

/// Replays `questions` (newest first) against `live` and `shadow` as of `at`, each as the
/// caller who asked it; a row whose caller or scope will not parse is skipped. Both snapshots
/// rank passages by BM25 alone, so the comparison sees what the graph changed, nothing else.
pub fn replay(
    live: &Snapshot,
    shadow: &Snapshot,
    questions: &[LoggedQuestion],
    answering: Answering,
    at: DateTime<Utc>,
) -> Replay {
    replay_previewed(live, shadow, questions, answering, at, &[])
}

/// [`replay`] of an approved ontology proposal whose preview said it answers the `previewed`
/// failed questions: one of them going from no answer (abstained, or passages) to an answer is
/// what the reviewer approved, so it is explained; any other change still holds it.
pub fn replay_previewed(
    live: &Snapshot,
    shadow: &Snapshot,
    questions: &[LoggedQuestion],
    answering: Answering,
    at: DateTime<Utc>,
    previewed: &[String],
) -> Replay {
    let mut seen: BTreeSet<(&str, &str, &str)> = BTreeSet::new();
    let mut replay = Replay::default();
    let mut differences = Vec::new();
    for logged in questions {
        if !seen.insert((
            logged.question.as_str(),
            logged.scope.as_str(),
            logged.caller.as_str(),
        )) {
            continue;
        }
        let Some(caller) = serde_json::from_str::<Asker>(&logged.caller)
            .ok()
            .and_then(|asker| asker.caller(&logged.tenant))
        else {
            continue;
        };
        let Ok(scope) = Scope::parse(&logged.scope) else {
            continue;
        };
        let ask = |snapshot: &Snapshot| {
            let asking = Asking {
                text: &logged.question,
                scope: scope.clone(),
                design: Design::Ontoloop,
                as_of: at,
                ranking: Some(ontoloop_readmodel::Ranking::Bm25),
            };
            asking::ask_text(snapshot, answering, &caller, asking)
                .map(|(asked, _)| Outcome::of(&asked))
        };
        let (Ok(before), Ok(after)) = (ask(live), ask(shadow)) else {
            continue;
        };
        replay.replayed += 1;
        if before.same(&after) {
            continue;
        }
        let previewed = previewed.contains(&logged.question) && newly_answered(&before, &after);
        let explained = previewed || explained(live, &before, &after);
        if explained {
            replay.explained += 1;
        } else {
            replay.unexplained += 1;
        }
        // A reviewer may not read what the asker could: an answer resting on a page with an
        // ACL is kept without its value or sources, only that it changed.
        let restricted = restricted(live, &before) || restricted(shadow, &after);
        differences.push(Difference {
            question: logged.question.clone(),
            scope: logged.scope.clone(),
            asker: caller.principal().to_owned(),
            before: if restricted {
                before.redacted()
            } else {
                before
            },
            after: if restricted { after.redacted() } else { after },
            explained,
            previewed,
        });
    }
    differences.sort_by_key(|d| d.explained);
    differences.truncate(MAX_SHOWN_DIFFERENCES);
    replay.differences = differences;
    replay
}

/// Whether a question that got no answer (abstained, or passages only) now gets one.
fn newly_answered(before: &Outcome, after: &Outcome) -> bool {
    let unanswered = |status: &str| {
        status == AnswerStatus::name(AnswerStatus::Abstained)
            || status == AnswerStatus::name(AnswerStatus::AnsweredPassages)
    };
    unanswered(&before.status) && !unanswered(&after.status)
}

/// Whether `outcome` rests on a page that not everyone in the tenant may read (a record, which
/// has no ACL, never is).
fn restricted(snapshot: &Snapshot, outcome: &Outcome) -> bool {
    outcome.sources.iter().any(|source| {
        let page = source
            .rsplit_once('@')
            .map_or(source.as_str(), |(page, _)| page);
        snapshot
            .current
            .get(page)
            .is_some_and(|current| !current.acl.is_empty())
    })
}

/// Whether a page change explains a differing answer: the shadow's answer rests on a page
/// version the live graph had not read, or the live answer on a version no longer current.
fn explained(live: &Snapshot, before: &Outcome, after: &Outcome) -> bool {
    let parse = |source: &str| {
        let (page, version) = source.rsplit_once('@')?;
        Some((page.to_owned(), version.parse::<u64>().ok()?))
    };
    let unread = after
        .sources
        .iter()
        .filter_map(|s| parse(s))
        .any(|(page, version)| {
            live.current.contains_key(&page)
                && live.log.get(&page).is_none_or(|read| *read < version)
        });
    let superseded = before
        .sources
        .iter()
        .filter_map(|s| parse(s))
        .any(|(page, version)| {
            live.current
                .get(&page)
                .is_some_and(|current| current.deleted || current.version > version)
        });
    unread || superseded
}

/// What the graph held before a change went live: what a rollback restores.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Previous {
    /// The ontology before, when the change replaced it.
    pub ontology: Option<String>,
    /// Facts the change altered, as they were.
    pub facts: Vec<Fact>,
    /// Facts the change created: a rollback ends them.
    pub created_facts: Vec<u64>,
    /// Entities the change altered or merged away, as they were.
    pub entities: Vec<Entity>,
    /// The extraction log's entries the change wrote, as they were (0: not read).
    #[serde(default)]
    pub log: Vec<(String, u64)>,
}

impl Previous {
    /// The before-images of what `facts` and `entities` (a commit's writes) change in a graph
    /// whose facts are `fact_of` and entities `entity_of`.
    pub fn of<'a>(
        ontology: Option<String>,
        facts: impl IntoIterator<Item = u64>,
        entities: impl IntoIterator<Item = &'a str>,
        fact_of: impl Fn(u64) -> Option<Fact>,
        entity_of: impl Fn(&str) -> Option<Entity>,
    ) -> Self {
        let mut previous = Previous {
            ontology,
            ..Previous::default()
        };
        for id in facts {
            match fact_of(id) {
                Some(fact) => previous.facts.push(fact),
                None => previous.created_facts.push(id),
            }
        }
        let mut seen = BTreeSet::new();
        for id in entities {
            if seen.insert(id.to_owned())
                && let Some(entity) = entity_of(id)
            {
                previous.entities.push(entity);
            }
        }
        previous
    }
}

/// The share of `current` pages a repair would read, by the extraction log `log`.
pub fn repair_share(current: &[PageVersion], log: &BTreeMap<String, u64>) -> f64 {
    if current.is_empty() {
        return 0.0;
    }
    let read = ontoloop_core::knowledge::pages_to_read(
        ontoloop_core::knowledge::MaintenanceMode::Repair,
        current,
        log,
    )
    .len();
    read as f64 / current.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: &str, value: &str, sources: &[&str]) -> Outcome {
        Outcome {
            status: status.to_owned(),
            value: value.to_owned(),
            sources: sources.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn outcomes_compare_as_people_read_them() {
        let a = outcome("ANSWERED", "Payments", &["billing@1"]);
        assert!(a.same(&outcome("ANSWERED", "payments.", &["billing@2"])));
        assert!(!a.same(&outcome(
            "ANSWERED_POSSIBLY_STALE",
            "Payments",
            &["billing@1"]
        )));
        assert!(!a.same(&outcome("ANSWERED", "Ledger", &["billing@1"])));
    }

    #[test]
    fn a_rollback_restores_what_was_altered_and_ends_what_was_created() {
        let previous = Previous::of(
            Some("{}".to_owned()),
            [1, 2, 7],
            ["ent:a", "ent:a", "ent:b"],
            |id| (id < 5).then(|| fact(id)),
            |id| (id == "ent:a").then(|| entity(id)),
        );
        assert_eq!(
            previous.facts.iter().map(|f| f.id).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(previous.created_facts, [7]);
        assert_eq!(
            previous.entities.len(),
            1,
            "each entity once, only known ones"
        );
        let text = serde_json::to_string(&previous).expect("serialises");
        assert_eq!(
            serde_json::from_str::<Previous>(&text).expect("reads back"),
            previous
        );
    }

    fn fact(id: u64) -> Fact {
        Fact {
            id,
            entity: "ent:a".into(),
            predicate: "owned_by".into(),
            object: "Payments".into(),
            source: ontoloop_core::knowledge::graph::SourceRef {
                source_id: "billing".into(),
                version: 1,
                origin: "wiki".into(),
            },
            seen_version: 1,
            authority: 2,
            extracted_at: Utc::now(),
            valid_from: Utc::now(),
            valid_to: None,
            extractor: "rules".into(),
            confidence: 1.0,
            acl: Vec::new(),
            scope: Scope::everywhere(),
        }
    }

    fn entity(id: &str) -> Entity {
        Entity {
            id: id.to_owned(),
            name: "A".into(),
            entity_type: Some("service".into()),
            aliases: ["a".to_owned()].into_iter().collect(),
        }
    }
}
