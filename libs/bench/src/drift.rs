//! The drift benchmark: replays every scenario of a world file through the running services
//! (events through the telemetry intake, answers from retrieval, costs from the analyst), asks
//! every question at every checkpoint with every design, and grades as WORLD-FORMAT.md says.
//! Nothing here knows any particular world.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use anyhow::Context as _;
use ontoloop_core::Caller;
use ontoloop_core::events::Event;
use ontoloop_core::knowledge::designs::Design;
use ontoloop_core::world::{Grade, Scenario, TimelineKind, World, grade};
use ontoloop_proto::v1;
use serde::Serialize;

use ontoloop::client::{self, Clients};

use crate::{patiently, push, slug};

mod grading;
mod report;

use grading::{grade_ask, shown_value};

/// Structured asks use the question's entity and hops; natural-language asks only its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Entity and predicate path.
    Structured,
    /// Question text only.
    Nl,
}

/// One row of the results table.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    /// Design name.
    pub design: String,
    /// Scenario name.
    pub scenario: String,
    /// Correct answers.
    pub all_correct: u64,
    /// Answers.
    pub all_total: u64,
    /// Correct answers among drifted asks.
    pub drifted_correct: u64,
    /// Drifted asks.
    pub drifted_total: u64,
    /// Wrong and not hedged.
    pub wrong_unhedged: u64,
    /// Wrong but hedged.
    pub wrong_hedged: u64,
    /// No value.
    pub abstain: u64,
    /// Correct but hedged.
    pub hedged_when_right: u64,
    /// Correct answers (the base of hedged-when-right).
    pub right_total: u64,
    /// Answers citing (in evidence or passages) a page deleted by then.
    pub cited_deleted: u64,
    /// Asks that name a value announced for after their checkpoint.
    pub upcoming_expected: u64,
    /// Of those, answers that noted it (`Answer.upcoming`).
    pub upcoming_noted: u64,
    /// Answers that noted an upcoming change where the ask names none.
    pub upcoming_unexpected: u64,
    /// Asks whose values differ by scope and that name none (`needs_scope`).
    pub needs_scope_expected: u64,
    /// Of those, answers NEEDS_SCOPE with exactly the expected scopes and values.
    pub needs_scope_exact: u64,
    /// Answers NEEDS_SCOPE where the ask expects one value.
    pub needs_scope_unexpected: u64,
}

/// Questions no slot answers, graded by the passages ontoloop offered (natural-language mode).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PassageRow {
    /// Scenario name.
    pub scenario: String,
    /// Asks.
    pub asked: u64,
    /// Asks answered `ANSWERED_PASSAGES`.
    pub answered: u64,
    /// Asks with the expected passage among the first three offered (the service's default
    /// ranking: fused when it has the sentence-encoder model, else BM25).
    pub found_in_top3: u64,
    /// The same with passages ranked by BM25 alone.
    pub found_in_top3_bm25: u64,
    /// The same with passages ranked by sentence-embedding similarity alone; `None` when the
    /// service ranked none of the asks so (no model, or the vectors not built yet).
    pub found_in_top3_dense: Option<u64>,
    /// The same with both fused by reciprocal rank; `None` without the model.
    pub found_in_top3_fused: Option<u64>,
    /// Asks offered a passage of a page deleted by then.
    pub cited_deleted: u64,
}

/// One row of the cost table.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// Approach and scenario, for example `patch (Fresh)`.
    pub approach: String,
    /// Drift event: 0 is the initial load, `after` a run after the whole timeline.
    pub event: String,
    /// Pages read.
    pub pages_read: u64,
    /// Estimated tokens (characters / 4).
    pub est_tokens: u64,
    /// Graph writes.
    pub graph_writes: u64,
}

/// A repaired graph compared with a rebuilt one.
#[derive(Debug, Clone, Serialize)]
pub struct RepairCheck {
    /// Scenario repaired.
    pub scenario: String,
    /// Pages the repair read.
    pub repair_pages_read: u64,
    /// Pages that exist.
    pub pages_total: u64,
    /// Correct graph-only answers at the last checkpoint after the repair.
    pub repair_correct: u64,
    /// Correct graph-only answers at the last checkpoint after a full rebuild.
    pub rebuild_correct: u64,
    /// Asks at the last checkpoint.
    pub asks: u64,
}

/// One graded answer, for the CSV.
#[derive(Debug, Clone)]
pub struct Graded {
    design: String,
    scenario: String,
    step: u32,
    question: String,
    ask: String,
    expected: String,
    answer: String,
    grade: Grade,
    hedged: bool,
    drifted: bool,
    why: String,
}

/// Everything one run produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Results, per design and scenario.
    pub rows: Vec<Row>,
    /// Maintenance costs.
    pub costs: Vec<Cost>,
    /// Repair against rebuild.
    pub repair: Vec<RepairCheck>,
    /// Passage recall, per scenario (only for worlds with questions no slot answers).
    pub passages: Vec<PassageRow>,
    #[serde(skip)]
    answers: Vec<Graded>,
    #[serde(skip)]
    world: String,
}

struct Runner<'a> {
    world: &'a World,
    clients: Clients,
    mode: Mode,
    run: String,
    as_of: Option<chrono::DateTime<chrono::Utc>>,
    /// The scope the current ask names (`Ask::scope`), given as the lookup's in structured
    /// mode (in natural-language mode the question's words name it); empty: none.
    scope: String,
}

impl Runner<'_> {
    fn caller(&self, scenario: &str, shadow: &str) -> anyhow::Result<Caller> {
        let tenant = format!(
            "bench-{}-{}{}-{}",
            slug(&self.world.name),
            slug(scenario),
            shadow,
            self.run
        );
        Ok(Caller::new(&tenant, "bench")?)
    }

    async fn ask(
        &mut self,
        caller: &Caller,
        design: Design,
        entity: &str,
        hops: &[String],
        text: &str,
        min_sequence: u64,
    ) -> anyhow::Result<v1::Answer> {
        // Questions are asked as of the checkpoint's time, which a world may put in the future.
        let as_of = self.as_of.map(ontoloop_proto::convert::timestamp);
        let (mode, scope, retrieval) = (self.mode, &self.scope, &self.clients.retrieval);
        patiently("ask", || {
            let mut retrieval = retrieval.clone();
            let caller = client::caller(caller);
            let design = design.name().to_owned();
            let (entity, hops, text, scope) = (
                entity.to_owned(),
                hops.to_vec(),
                text.to_owned(),
                scope.clone(),
            );
            async move {
                match mode {
                    Mode::Structured => {
                        retrieval
                            .lookup(v1::LookupRequest {
                                caller,
                                entity,
                                predicate_path: hops,
                                min_sequence,
                                as_of,
                                design,
                                query: text,
                                scope,
                            })
                            .await
                    }
                    Mode::Nl => {
                        retrieval
                            .ask(v1::AskRequest {
                                caller,
                                text,
                                min_sequence,
                                as_of,
                                design,
                                passage_ranking: v1::PassageRanking::Unspecified as i32,
                                // In natural-language mode the question's own words name the
                                // scope.
                                scope: String::new(),
                            })
                            .await
                    }
                }
            }
        })
        .await
    }

    /// Asks `text` of ontoloop with passages ranked by `ranking`; `None` when the service
    /// cannot rank so (no sentence-encoder model: FAILED_PRECONDITION).
    async fn ask_ranked(
        &mut self,
        caller: &Caller,
        text: &str,
        min_sequence: u64,
        ranking: v1::PassageRanking,
    ) -> anyhow::Result<Option<v1::Answer>> {
        let request = v1::AskRequest {
            caller: client::caller(caller),
            text: text.to_owned(),
            min_sequence,
            as_of: self.as_of.map(ontoloop_proto::convert::timestamp),
            design: Design::Ontoloop.name().to_owned(),
            passage_ranking: ranking as i32,
            scope: String::new(),
        };
        match self.clients.retrieval.ask(request).await {
            Ok(answer) => Ok(Some(answer.into_inner())),
            Err(status) if status.code() == tonic::Code::FailedPrecondition => Ok(None),
            Err(status) => Err(status).context("ask"),
        }
    }

    /// Replays a scenario's timeline into a fresh tenant. `maintain` names a maintenance run to
    /// push before each checkpoint after the first (a rebuild shadow); `ask` asks the questions.
    async fn replay(
        &mut self,
        scenario: &Scenario,
        caller: &Caller,
        maintain: Option<&str>,
        ask: bool,
        report: &mut Report,
    ) -> anyhow::Result<(BTreeMap<u64, String>, u64)> {
        let ontology = Event::OntologySet {
            ontology: self.world.ontology.clone(),
        };
        let first_at = scenario
            .timeline
            .first()
            .map_or_else(chrono::Utc::now, |e| e.at);
        let mut last = push(&mut self.clients, caller, &ontology, first_at).await?;
        let mut interval_of: BTreeMap<u64, String> = BTreeMap::new();
        let mut interval = 0u32;
        let mut loaded = false;
        let mut pushed_since = false;
        let mut pages = Pages::default();
        for entry in &scenario.timeline {
            pages.follow(&entry.kind);
            match &entry.kind {
                TimelineKind::Checkpoint { step } => {
                    if let Some(mode) = maintain
                        && loaded
                        && pushed_since
                    {
                        last =
                            push(&mut self.clients, caller, &maintenance(mode), entry.at).await?;
                        interval_of.insert(last, interval.to_string());
                    }
                    if ask {
                        let deleted = pages.deleted();
                        self.ask_step(scenario, caller, (*step, entry.at), last, &deleted, report)
                            .await?;
                    }
                    loaded = true;
                    pushed_since = false;
                    interval += 1;
                }
                kind => {
                    // Before the first checkpoint every page is read (the initial load); after it
                    // the scenario's graph policy decides whether a changed page is re-read.
                    let hold =
                        loaded && (maintain.is_some() || scenario.graph != "patch-changed-pages");
                    if let Some(event) = kind.event(hold) {
                        last = push(&mut self.clients, caller, &event, entry.at).await?;
                        interval_of.insert(last, interval.to_string());
                        pushed_since = true;
                    }
                }
            }
        }
        Ok((interval_of, last))
    }

    /// Asks every ask of `step` (at its checkpoint's time) with every design; an ask of a
    /// question no slot answers only of ontoloop in natural-language mode, graded by passages.
    async fn ask_step(
        &mut self,
        scenario: &Scenario,
        caller: &Caller,
        (step, at): (u32, chrono::DateTime<chrono::Utc>),
        min_sequence: u64,
        deleted: &BTreeSet<String>,
        report: &mut Report,
    ) -> anyhow::Result<()> {
        self.as_of = Some(at);
        for question in &self.world.questions {
            if question.wants_passages() && self.mode != Mode::Nl {
                continue;
            }
            for ask in question.asks.iter().filter(|a| a.step == step) {
                self.scope = ask.scope.clone().unwrap_or_default();
                let asked = Asked {
                    scenario: &scenario.name,
                    step,
                    question: &question.id,
                    deleted,
                };
                if let Some(expected) = &ask.passage {
                    let answer = self
                        .ask(caller, Design::Ontoloop, "", &[], &ask.text, min_sequence)
                        .await?;
                    record_passage(report, &asked, ask, expected, &answer);
                    let mut by_ranking = Vec::new();
                    for ranking in [
                        v1::PassageRanking::Bm25,
                        v1::PassageRanking::Dense,
                        v1::PassageRanking::Fused,
                    ] {
                        let found = self
                            .ask_ranked(caller, &ask.text, min_sequence, ranking)
                            .await?
                            .map(|answer| found_in_top3(&answer, expected));
                        by_ranking.push(found);
                    }
                    record_rankings(report, &asked, &by_ranking);
                    continue;
                }
                for design in Design::ALL {
                    let answer = self
                        .ask(
                            caller,
                            design,
                            &ask.entity,
                            &question.hops,
                            &ask.text,
                            min_sequence,
                        )
                        .await?;
                    record(report, design.name(), &asked, ask, &answer);
                }
            }
        }
        Ok(())
    }

    /// Replays `scenario` for `caller` as [`Runner::replay`] does, then records what the
    /// maintenance it triggered cost, labelled `approach (scenario)`.
    async fn replay_costed(
        &mut self,
        scenario: &Scenario,
        caller: &Caller,
        maintain: Option<&str>,
        ask: bool,
        approach: &str,
        report: &mut Report,
    ) -> anyhow::Result<()> {
        let (interval_of, _) = self.replay(scenario, caller, maintain, ask, report).await?;
        let label = format!("{approach} ({})", scenario.name);
        self.costs(caller, &label, &interval_of, report).await?;
        Ok(())
    }

    async fn costs(
        &mut self,
        caller: &Caller,
        approach: &str,
        interval_of: &BTreeMap<u64, String>,
        report: &mut Report,
    ) -> anyhow::Result<Vec<v1::MaintenanceRun>> {
        let min_sequence = interval_of.keys().max().copied().unwrap_or_default();
        let runs = self
            .clients
            .analyst
            .list_maintenance_runs(v1::ListMaintenanceRunsRequest {
                caller: client::caller(caller),
                min_sequence,
            })
            .await
            .context("list maintenance runs")?
            .into_inner()
            .runs;
        let mut per_event: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
        for run in &runs {
            let Some(event) = interval_of.get(&run.sequence).cloned() else {
                continue;
            };
            let slot = per_event.entry(event).or_default();
            slot.0 += run.pages_read;
            slot.1 += run.est_tokens;
            slot.2 += run.graph_writes;
        }
        let mut events: Vec<_> = per_event.into_iter().collect();
        events.sort_by_key(|(event, _)| event.parse::<u32>().unwrap_or(u32::MAX));
        for (event, (pages_read, est_tokens, graph_writes)) in events {
            report.costs.push(Cost {
                approach: approach.to_owned(),
                event,
                pages_read,
                est_tokens,
                graph_writes,
            });
        }
        Ok(runs)
    }

    async fn graph_correct_at_last_step(
        &mut self,
        scenario: &Scenario,
        caller: &Caller,
        min_sequence: u64,
    ) -> anyhow::Result<(u64, u64)> {
        let last_step = scenario
            .timeline
            .iter()
            .filter_map(|e| match e.kind {
                TimelineKind::Checkpoint { step } => Some(step),
                _ => None,
            })
            .max()
            .unwrap_or_default();
        self.as_of = scenario.timeline.last().map(|e| e.at);
        let (mut correct, mut asks) = (0, 0);
        for question in self.world.questions.iter().filter(|q| !q.wants_passages()) {
            for ask in question.asks.iter().filter(|a| a.step == last_step) {
                self.scope = ask.scope.clone().unwrap_or_default();
                let answer = self
                    .ask(
                        caller,
                        Design::GraphOnly,
                        &ask.entity,
                        &question.hops,
                        &ask.text,
                        min_sequence,
                    )
                    .await?;
                asks += 1;
                if grade_ask(ask, &answer) == Grade::Correct {
                    correct += 1;
                }
            }
        }
        Ok((correct, asks))
    }
}

/// The pages of a scenario's timeline, live and deleted, as it is replayed.
#[derive(Default)]
struct Pages {
    /// Live page id → origin.
    live: BTreeMap<String, String>,
    /// Every page id ever upserted.
    seen: BTreeSet<String>,
}

impl Pages {
    fn follow(&mut self, kind: &TimelineKind) {
        match kind {
            TimelineKind::DocUpsert { doc_id, origin, .. } => {
                self.live.insert(doc_id.clone(), origin.clone());
                self.seen.insert(doc_id.clone());
            }
            TimelineKind::DocDelete { doc_id } => {
                self.live.remove(doc_id);
            }
            TimelineKind::SourceListing { origin, doc_ids } => {
                self.live
                    .retain(|id, from| from != origin || doc_ids.contains(id));
            }
            _ => {}
        }
    }

    /// Pages deleted by now (a page upserted again after its deletion is live).
    fn deleted(&self) -> BTreeSet<String> {
        self.seen
            .iter()
            .filter(|id| !self.live.contains_key(*id))
            .cloned()
            .collect()
    }
}

/// Where an ask was asked: scenario, step, question, and the pages deleted by then.
struct Asked<'a> {
    scenario: &'a str,
    step: u32,
    question: &'a str,
    deleted: &'a BTreeSet<String>,
}

/// Whether `answer` cites a page of `deleted`: in its evidence, a hop's or a passage.
fn cites_deleted(answer: &v1::Answer, deleted: &BTreeSet<String>) -> bool {
    answer
        .evidence
        .iter()
        .chain(answer.hops.iter().flat_map(|h| &h.evidence))
        .map(|e| &e.source_id)
        .chain(answer.passages.iter().map(|p| &p.source_id))
        .any(|id| deleted.contains(id))
}

/// The row of `rows` that `is_it` picks, made by `new` and added at the end when there is none.
fn row_of<T>(rows: &mut Vec<T>, is_it: impl Fn(&T) -> bool, new: impl FnOnce() -> T) -> &mut T {
    let index = match rows.iter().position(is_it) {
        Some(i) => i,
        None => {
            rows.push(new());
            rows.len() - 1
        }
    };
    &mut rows[index]
}

/// Whether the expected passage is among the first three `answer` offers.
fn found_in_top3(answer: &v1::Answer, expected: &ontoloop_core::world::ExpectedPassage) -> bool {
    answer
        .passages
        .iter()
        .take(3)
        .any(|p| expected.matches(&p.source_id, &p.text))
}

/// The passage row of `scenario`, added when missing.
fn passage_row<'r>(report: &'r mut Report, scenario: &str) -> &'r mut PassageRow {
    row_of(
        &mut report.passages,
        |r| r.scenario == scenario,
        || PassageRow {
            scenario: scenario.to_owned(),
            ..PassageRow::default()
        },
    )
}

/// Counts an ask's recall under each ranking (BM25, dense, fused; `None`: not available).
fn record_rankings(report: &mut Report, asked: &Asked<'_>, found: &[Option<bool>]) {
    let row = passage_row(report, asked.scenario);
    let [bm25, dense, fused] = found else {
        return;
    };
    row.found_in_top3_bm25 += u64::from(bm25.unwrap_or(false));
    // A ranking that answered any ask counts (an ask it could not rank counts as a miss); one
    // that answered none stays n/a.
    let add = |held: &mut Option<u64>, found: &Option<bool>| {
        if let Some(found) = found {
            *held = Some(held.unwrap_or(0) + u64::from(*found));
        }
    };
    add(&mut row.found_in_top3_dense, dense);
    add(&mut row.found_in_top3_fused, fused);
}

/// Grades an ask of a question no slot answers by the passages ontoloop offered.
fn record_passage(
    report: &mut Report,
    asked: &Asked<'_>,
    ask: &ontoloop_core::world::Ask,
    expected: &ontoloop_core::world::ExpectedPassage,
    answer: &v1::Answer,
) {
    let row = passage_row(report, asked.scenario);
    let found = found_in_top3(answer, expected);
    let deleted = cites_deleted(answer, asked.deleted);
    row.asked += 1;
    row.answered += u64::from(answer.status == v1::AnswerStatus::AnsweredPassages as i32);
    row.found_in_top3 += u64::from(found);
    row.cited_deleted += u64::from(deleted);
    let offered: Vec<String> = answer
        .passages
        .iter()
        .map(|p| {
            format!(
                "{}@{} [{}..{}]",
                p.source_id, p.source_version, p.start, p.end
            )
        })
        .collect();
    report.answers.push(Graded {
        design: Design::Ontoloop.name().to_owned(),
        scenario: asked.scenario.to_owned(),
        step: asked.step,
        question: asked.question.to_owned(),
        ask: ask.text.clone(),
        expected: format!("passage of {}: {}", expected.doc_id, expected.contains),
        answer: offered.join(" "),
        grade: match (found, offered.is_empty()) {
            (true, _) => Grade::Correct,
            (false, true) => Grade::Abstain,
            (false, false) => Grade::Wrong,
        },
        hedged: false,
        drifted: ask.drifted,
        why: if offered.is_empty() {
            answer.abstain_reason.clone()
        } else {
            String::new()
        },
    });
}

fn record(
    report: &mut Report,
    design: &str,
    asked: &Asked<'_>,
    ask: &ontoloop_core::world::Ask,
    answer: &v1::Answer,
) {
    let Asked {
        scenario,
        step,
        question,
        deleted,
    } = *asked;
    let graded = grade_ask(ask, answer);
    let hedged = answer.status == v1::AnswerStatus::AnsweredPossiblyStale as i32
        || answer.status == v1::AnswerStatus::ConflictOpen as i32;
    let why = if graded == Grade::Abstain {
        answer.abstain_reason.clone()
    } else {
        let mut why = answer
            .evidence
            .first()
            .map(|e| {
                format!(
                    "{}@{} ({}, authority {})",
                    e.source_id, e.source_version, e.origin, e.authority
                )
            })
            .unwrap_or_default();
        for hedge in &answer.hedges {
            let _ = write!(why, "; {}: {}", hedge.code, hedge.message);
        }
        why
    };
    let row = row_of(
        &mut report.rows,
        |r| r.design == design && r.scenario == scenario,
        || Row {
            design: design.to_owned(),
            scenario: scenario.to_owned(),
            ..Row::default()
        },
    );
    row.all_total += 1;
    row.cited_deleted += u64::from(cites_deleted(answer, deleted));
    match &ask.upcoming {
        Some(announced) => {
            row.upcoming_expected += 1;
            row.upcoming_noted += u64::from(
                answer
                    .upcoming
                    .iter()
                    .any(|e| grade(announced, Some(&e.value)) == Grade::Correct),
            );
        }
        None => row.upcoming_unexpected += u64::from(!answer.upcoming.is_empty()),
    }
    let needs_scope = answer.status == v1::AnswerStatus::NeedsScope as i32;
    if ask.needs_scope.is_some() {
        row.needs_scope_expected += 1;
        row.needs_scope_exact += u64::from(graded == Grade::Correct);
    } else {
        row.needs_scope_unexpected += u64::from(needs_scope);
    }
    if ask.drifted {
        row.drifted_total += 1;
    }
    match graded {
        Grade::Correct => {
            row.all_correct += 1;
            row.right_total += 1;
            if ask.drifted {
                row.drifted_correct += 1;
            }
            if hedged {
                row.hedged_when_right += 1;
            }
        }
        Grade::Wrong if hedged => row.wrong_hedged += 1,
        Grade::Wrong => row.wrong_unhedged += 1,
        Grade::Abstain => row.abstain += 1,
    }
    report.answers.push(Graded {
        design: design.to_owned(),
        scenario: scenario.to_owned(),
        step,
        question: question.to_owned(),
        ask: ask.text.clone(),
        expected: ask.expected.clone(),
        answer: shown_value(answer),
        grade: graded,
        hedged,
        drifted: ask.drifted,
        why,
    });
}

/// The `graph.maintain` event asking for `mode` (patch, repair, rebuild).
fn maintenance(mode: &str) -> Event {
    Event::GraphMaintain {
        mode: mode.to_owned(),
    }
}

/// Runs the whole benchmark against `clients`.
pub async fn run(
    world: &World,
    clients: Clients,
    mode: Mode,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Report> {
    let mut runner = Runner {
        world,
        clients,
        mode,
        run: format!("{:x}", chrono::Utc::now().timestamp_micros()),
        as_of: None,
        scope: String::new(),
    };
    let mut report = Report::empty(world);
    for scenario in &world.parsed {
        progress(&format!(
            "scenario {} ({}): replaying {} timeline entries",
            scenario.name,
            scenario.graph,
            scenario.timeline.len()
        ));
        let caller = runner.caller(&scenario.name, "")?;
        let approach = match scenario.graph.as_str() {
            "patch-changed-pages" => "patch",
            "system-of-record" => "record-patch",
            _ => "none",
        };
        runner
            .replay_costed(scenario, &caller, None, true, approach, &mut report)
            .await?;
        if scenario.graph == "patch-changed-pages" {
            progress(&format!(
                "scenario {}: rebuilding after every event, for the cost comparison",
                scenario.name
            ));
            let shadow = runner.caller(&scenario.name, "-rebuild")?;
            runner
                .replay_costed(
                    scenario,
                    &shadow,
                    Some("rebuild"),
                    false,
                    "rebuild",
                    &mut report,
                )
                .await?;
        }
        if scenario.graph == "none" {
            progress(&format!(
                "scenario {}: repairing the graph that missed every event, and rebuilding it to compare",
                scenario.name
            ));
            let at = scenario
                .timeline
                .last()
                .map_or_else(chrono::Utc::now, |e| e.at);
            let seq = push(&mut runner.clients, &caller, &maintenance("repair"), at).await?;
            let (repair_correct, asks) = runner
                .graph_correct_at_last_step(scenario, &caller, seq)
                .await?;
            let runs = runner
                .costs(
                    &caller,
                    &format!("repair ({})", scenario.name),
                    &BTreeMap::from([(seq, "after".to_owned())]),
                    &mut report,
                )
                .await?;
            let repair_run = runs.iter().find(|r| r.sequence == seq);
            let shadow = runner.caller(&scenario.name, "-rebuilt")?;
            let (_, last_shadow) = runner
                .replay(scenario, &shadow, None, false, &mut report)
                .await?;
            let rebuild_seq =
                push(&mut runner.clients, &shadow, &maintenance("rebuild"), at).await?;
            let (rebuild_correct, _) = runner
                .graph_correct_at_last_step(scenario, &shadow, rebuild_seq.max(last_shadow))
                .await?;
            report.repair.push(RepairCheck {
                scenario: scenario.name.clone(),
                repair_pages_read: repair_run.map_or(0, |r| r.pages_read),
                pages_total: repair_run.map_or(0, |r| r.pages_total),
                repair_correct,
                rebuild_correct,
                asks,
            });
        }
    }
    // Rows in design order, then scenario order.
    let order = |r: &Row| {
        let d = Design::ALL
            .iter()
            .position(|d| d.name() == r.design)
            .unwrap_or(usize::MAX);
        let s = world
            .parsed
            .iter()
            .position(|s| s.name == r.scenario)
            .unwrap_or(usize::MAX);
        (d, s)
    };
    report.rows.sort_by_key(order);
    Ok(report)
}

/// The world's first scenario whose graph patches the pages that changed, else its first: the
/// one a benchmark that needs a loaded tenant, not drift, replays.
pub fn patched_scenario(world: &World) -> anyhow::Result<&Scenario> {
    world
        .parsed
        .iter()
        .find(|s| s.graph == "patch-changed-pages")
        .or_else(|| world.parsed.first())
        .context("the world has no scenario")
}

/// Replays one scenario into a fresh tenant without asking anything; returns the tenant's caller
/// and the last intake sequence number (pass it as `min_sequence`).
pub async fn replay_only(
    world: &World,
    clients: Clients,
    scenario: &Scenario,
    purpose: &str,
) -> anyhow::Result<(Caller, u64)> {
    let mut runner = Runner {
        world,
        clients,
        mode: Mode::Structured,
        run: format!("{:x}", chrono::Utc::now().timestamp_micros()),
        as_of: None,
        scope: String::new(),
    };
    let caller = runner.caller(&scenario.name, &format!("-{purpose}"))?;
    let mut scratch = Report::empty(world);
    let (_, last) = runner
        .replay(scenario, &caller, None, false, &mut scratch)
        .await?;
    Ok((caller, last))
}
