//! `ontoloop bench grow`: does the ontology grow itself? A world's scenario is replayed twice
//! through the running services: once under the world's own ontology (the full-ontology
//! accuracy), once with its predicates (and types) stripped. On the stripped tenant an agent asks
//! every question of the last checkpoint (in natural language; a failure reports a signal), an
//! ontology is proposed from the tenant's pages and the failed questions
//! ([`ontoloop_core::grow`]), a reviewer stand-in approves each predicate a failed question asks
//! for when the facts it would extract agree with one of the world's predicates on at least 80%
//! of a sample, the approved ones go live through the ordinary `ontology.set` path (the gate,
//! whose hold the same reviewer approves), and everything is asked again. Nothing here knows any
//! particular world.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Instant;

use anyhow::Context as _;
use ontoloop_core::Caller;
use ontoloop_core::events::Event;
use ontoloop_core::grow::{self, Page, Proposal};
use ontoloop_core::knowledge::designs::Design;
use ontoloop_core::knowledge::names::Lexicon;
use ontoloop_core::knowledge::{Claim, ExtractionSetup, Ontology, same_value};
use ontoloop_core::world::{Grade, Scenario, TimelineKind, World, grade};
use ontoloop_proto::v1;
use serde::Serialize;

use ontoloop::client::{self, Clients};

use crate::{MAX_WAITS, patiently, push, slug};

/// Share of a sample of a proposed predicate's facts that must agree with one of the world's
/// predicates for the reviewer stand-in to approve it.
pub const APPROVE_AGREEMENT: f64 = 0.8;

/// Facts of a proposed predicate the reviewer stand-in checks, at most (spread over all of them).
pub const SAMPLE: usize = 50;

/// How many times the patterns are listed, a quarter of a second apart, waiting for the
/// failures' signals to arrive.
const SIGNAL_POLLS: u32 = 80;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Give the proposer the world's entity type names.
    pub keep_types: bool,
    /// The scenario replayed (default: the world's first).
    pub scenario: Option<String>,
}

/// One reviewer decision.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// The proposed predicate.
    pub predicate: String,
    /// What it was found from.
    pub from: String,
    /// The world's predicate its facts agree with best (empty: none).
    pub world_predicate: String,
    /// Facts sampled.
    pub sampled: usize,
    /// Share of them the world's predicate states too.
    pub agreement: f64,
    /// Approved or rejected.
    pub approved: bool,
    /// Failed questions its preview says it answers.
    pub answers: usize,
}

/// What a run measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// The world.
    pub world: String,
    /// The scenario replayed.
    pub scenario: String,
    /// The checkpoint step whose asks are asked.
    pub step: u32,
    /// Asks graded (each asked before growth, after it, and under the full ontology).
    pub asks: u64,
    /// Share correct before growth (no ontology).
    pub accuracy_before: f64,
    /// Share correct after the approved proposal went live.
    pub accuracy_after: f64,
    /// Share correct under the world's own ontology.
    pub accuracy_full: f64,
    /// `accuracy_after / accuracy_full`.
    pub after_of_full: f64,
    /// Wrong answers without a hedge, before and after growth together.
    pub wrong_unhedged: u64,
    /// Wrong unhedged before growth.
    pub wrong_unhedged_before: u64,
    /// Wrong unhedged after growth.
    pub wrong_unhedged_after: u64,
    /// Wrong unhedged under the full ontology.
    pub wrong_unhedged_full: u64,
    /// Entity types proposed.
    pub types_proposed: Vec<String>,
    /// Predicates proposed.
    pub proposals_made: u64,
    /// Proposed predicates some failed question asks for: those sent for review.
    pub proposals_reviewed: u64,
    /// Approved by the reviewer stand-in.
    pub proposals_approved: u64,
    /// Rejected by it.
    pub proposals_rejected: u64,
    /// Every decision.
    pub decisions: Vec<Decision>,
    /// Decisions per predicate of the world (`""`: matched none).
    pub decisions_per_world_predicate: BTreeMap<String, u64>,
    /// Most decisions any one predicate of the world took.
    pub max_decisions_per_world_predicate: u64,
    /// How the gate judged the ontology change: `live`, `approved` (held, then approved by the
    /// reviewer stand-in) or `none` (nothing approved).
    pub gate: String,
    /// Distinct questions that failed before growth.
    pub failed_questions: u64,
    /// Of them, answered right after growth.
    pub healed_questions: u64,
    /// Failure signals the analyst recorded (in its patterns) before growth.
    pub signals: u64,
    /// Patterns they formed.
    pub patterns: u64,
    /// Milliseconds from the first failed ask to the first right answer of a question that had
    /// failed (0 when none was healed).
    pub first_failure_to_answer_ms: u64,
    /// Milliseconds the proposal took.
    pub propose_ms: u64,
    /// Questions (ids) with an ask still not answered right after growth but right under the
    /// full ontology: what growth missed.
    pub missed: Vec<String>,
    /// The proposal as made, with every predicate's examples and preview.
    pub proposal: Proposal,
}

struct Runner<'a> {
    world: &'a World,
    clients: Clients,
    run: String,
}

/// One ask at the step: the question's text and what is expected.
struct Asked<'a> {
    question: &'a str,
    text: &'a str,
    expected: &'a str,
}

/// A graded answer.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Graded {
    grade: Grade,
    hedged: bool,
}

impl Runner<'_> {
    fn caller(&self, purpose: &str) -> anyhow::Result<Caller> {
        let tenant = format!("grow-{}-{purpose}-{}", slug(&self.world.name), self.run);
        Ok(Caller::new(&tenant, "bench-agent")?)
    }

    /// Replays the scenario's timeline into `caller`'s tenant (every page read as it comes),
    /// after `ontology` when given; the last intake sequence number.
    async fn replay(
        &mut self,
        scenario: &Scenario,
        caller: &Caller,
        ontology: Option<&serde_json::Value>,
    ) -> anyhow::Result<u64> {
        let first_at = scenario
            .timeline
            .first()
            .map_or_else(chrono::Utc::now, |e| e.at);
        let mut last = 0;
        if let Some(ontology) = ontology {
            let event = Event::OntologySet {
                ontology: ontology.clone(),
            };
            last = push(&mut self.clients, caller, &event, first_at).await?;
        }
        for entry in &scenario.timeline {
            if let Some(event) = entry.kind.event(false) {
                last = push(&mut self.clients, caller, &event, entry.at).await?;
            }
        }
        Ok(last)
    }

    /// Waits until the tenant's event `seq` has applied (or been held by the gate).
    async fn settled(&mut self, caller: &Caller, seq: u64) -> anyhow::Result<()> {
        let analyst = &self.clients.analyst;
        patiently("wait for an event to apply", || {
            let mut analyst = analyst.clone();
            let request = v1::ListMaintenanceRunsRequest {
                caller: client::caller(caller),
                min_sequence: seq,
            };
            async move { analyst.list_maintenance_runs(request).await }
        })
        .await?;
        Ok(())
    }

    async fn ask(
        &mut self,
        caller: &Caller,
        text: &str,
        min_sequence: u64,
        as_of: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<v1::Answer> {
        let retrieval = &self.clients.retrieval;
        patiently("ask", || {
            let mut retrieval = retrieval.clone();
            let request = v1::AskRequest {
                caller: client::caller(caller),
                text: text.to_owned(),
                min_sequence,
                as_of: Some(ontoloop_proto::convert::timestamp(as_of)),
                design: Design::Ontoloop.name().to_owned(),
                passage_ranking: v1::PassageRanking::Unspecified as i32,
                scope: String::new(),
            };
            async move { retrieval.ask(request).await }
        })
        .await
    }

    /// Asks every ask, graded, with the instant each was answered.
    async fn ask_all(
        &mut self,
        caller: &Caller,
        asks: &[Asked<'_>],
        min_sequence: u64,
        as_of: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<Vec<(Graded, Instant)>> {
        let mut out = Vec::new();
        for ask in asks {
            let answer = self.ask(caller, ask.text, min_sequence, as_of).await?;
            let value = (answer.status != v1::AnswerStatus::Abstained as i32
                && !answer.value.is_empty())
            .then_some(answer.value.as_str());
            let hedged = answer.status == v1::AnswerStatus::AnsweredPossiblyStale as i32
                || answer.status == v1::AnswerStatus::ConflictOpen as i32;
            out.push((
                Graded {
                    grade: grade(ask.expected, value),
                    hedged,
                },
                Instant::now(),
            ));
        }
        Ok(out)
    }
}

/// Where the analyst's dashboard listens, for the gate's held changes.
pub struct Dashboard {
    /// Its HTTP address.
    pub addr: std::net::SocketAddr,
}

/// Runs the benchmark against `clients`; `setup` is the extraction the system reads with (the
/// reviewer stand-in reads the pages with it too), `dashboard` where held changes are decided.
pub async fn run(
    world: &World,
    clients: Clients,
    setup: &ExtractionSetup,
    dashboard: &Dashboard,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Report> {
    let scenario = match &options.scenario {
        Some(name) => world
            .parsed
            .iter()
            .find(|s| &s.name == name)
            .with_context(|| format!("no scenario {name:?} in the world"))?,
        None => world.parsed.first().context("the world has no scenario")?,
    };
    let (step, as_of) = scenario
        .timeline
        .iter()
        .filter_map(|e| match e.kind {
            TimelineKind::Checkpoint { step } => Some((step, e.at)),
            _ => None,
        })
        .next_back()
        .context("the scenario has no checkpoint")?;
    let asks: Vec<Asked<'_>> = world
        .questions
        .iter()
        .filter(|q| !q.wants_passages())
        .flat_map(|q| {
            q.asks
                .iter()
                .filter(|a| a.step == step && a.needs_scope.is_none() && a.expect.is_none())
                .map(|a| Asked {
                    question: &q.id,
                    text: &a.text,
                    expected: &a.expected,
                })
        })
        .collect();
    let mut runner = Runner {
        world,
        clients,
        run: format!("{:x}", chrono::Utc::now().timestamp_micros()),
    };
    let mut report = Report {
        world: world.name.clone(),
        scenario: scenario.name.clone(),
        step,
        asks: asks.len() as u64,
        ..Report::default()
    };

    progress(&format!(
        "full ontology: replaying {} timeline entries of {}",
        scenario.timeline.len(),
        scenario.name
    ));
    let full = runner.caller("full")?;
    let seq = runner
        .replay(scenario, &full, Some(&world.ontology))
        .await?;
    progress(&format!(
        "full ontology: asking {} asks of step {step}",
        asks.len()
    ));
    let answers = runner.ask_all(&full, &asks, seq, as_of).await?;
    (report.accuracy_full, report.wrong_unhedged_full) = tally(&answers);

    progress("stripped: replaying with no ontology");
    let grown = runner.caller("grown")?;
    let seq = runner.replay(scenario, &grown, None).await?;
    progress("stripped: the agent asks");
    let before = runner.ask_all(&grown, &asks, seq, as_of).await?;
    (report.accuracy_before, report.wrong_unhedged_before) = tally(&before);
    let first_failure = before
        .iter()
        .find(|(g, _)| g.grade != Grade::Correct)
        .map(|(_, at)| *at);
    let failed: Vec<&str> = asks
        .iter()
        .zip(&before)
        .filter(|(_, (g, _))| g.grade != Grade::Correct)
        .map(|(a, _)| a.text)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    report.failed_questions = failed.len() as u64;
    // Signals reach the analyst off the answers' path: counted once they stop arriving.
    let mut last_count = None;
    for _ in 0..SIGNAL_POLLS {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        let patterns = runner
            .clients
            .analyst
            .list_patterns(v1::ListPatternsRequest {
                caller: client::caller(&grown),
                limit: 0,
            })
            .await
            .context("list patterns")?
            .into_inner()
            .patterns;
        report.patterns = patterns.len() as u64;
        report.signals = patterns.iter().map(|p| p.signal_count).sum();
        if report.signals > 0 && last_count == Some(report.signals) {
            break;
        }
        last_count = Some(report.signals);
    }

    let pages = current_pages(scenario);
    let page_refs: Vec<Page<'_>> = pages
        .iter()
        .map(|(id, (title, body))| Page { id, title, body })
        .collect();
    let known_types = if options.keep_types {
        world_types(&world.ontology)
    } else {
        Vec::new()
    };
    progress(&format!(
        "proposing an ontology from {} pages and {} failed questions",
        page_refs.len(),
        failed.len()
    ));
    let started = Instant::now();
    let proposal = grow::propose(
        &page_refs,
        &failed,
        &grow::Options {
            known_types,
            ..grow::Options::default()
        },
        setup.encoder().map(|e| e.as_ref() as _),
    );
    report.propose_ms = started.elapsed().as_millis() as u64;
    report.types_proposed = proposal.types.iter().map(|t| t.name.clone()).collect();
    report.proposal = proposal.clone();
    report.proposals_made = proposal.predicates.len() as u64;

    let authority = world_authority(&world.ontology);
    report.decisions = review(&proposal, world, setup, &page_refs, &authority)?;
    report.proposals_reviewed = report.decisions.len() as u64;
    report.proposals_approved = report.decisions.iter().filter(|d| d.approved).count() as u64;
    report.proposals_rejected = report.proposals_reviewed - report.proposals_approved;
    for d in &report.decisions {
        *report
            .decisions_per_world_predicate
            .entry(d.world_predicate.clone())
            .or_default() += 1;
    }
    report.max_decisions_per_world_predicate = report
        .decisions_per_world_predicate
        .iter()
        .filter(|(w, _)| !w.is_empty())
        .map(|(_, n)| *n)
        .max()
        .unwrap_or_default();
    let approved: BTreeSet<&str> = report
        .decisions
        .iter()
        .filter(|d| d.approved)
        .map(|d| d.predicate.as_str())
        .collect();
    report.gate = "none".to_owned();
    let mut seq = seq;
    if let Some(ontology) = proposal.ontology(|p| approved.contains(p.name.as_str()), &authority) {
        progress(&format!(
            "applying {} approved predicates (ontology.set)",
            approved.len()
        ));
        let ontology = Event::OntologySet { ontology };
        seq = push(&mut runner.clients, &grown, &ontology, as_of).await?;
        // The change is applied or held once the event settles.
        runner.settled(&grown, seq).await?;
        report.gate = settle_gate(dashboard, grown.tenant()).await?;
        // A patch after the decision: asks that wait for it see the approved change.
        let patch = Event::GraphMaintain {
            mode: "patch".to_owned(),
        };
        seq = push(&mut runner.clients, &grown, &patch, as_of).await?;
        runner.settled(&grown, seq).await?;
    }
    progress("the agent asks again");
    let after = runner.ask_all(&grown, &asks, seq, as_of).await?;
    (report.accuracy_after, report.wrong_unhedged_after) = tally(&after);
    report.wrong_unhedged = report.wrong_unhedged_before + report.wrong_unhedged_after;
    report.after_of_full = if report.accuracy_full > 0.0 {
        report.accuracy_after / report.accuracy_full
    } else {
        0.0
    };
    let healed: Vec<&Instant> = before
        .iter()
        .zip(&after)
        .filter(|((b, _), (a, _))| b.grade != Grade::Correct && a.grade == Grade::Correct)
        .map(|(_, (_, at))| at)
        .collect();
    let healed_texts: BTreeSet<&str> = asks
        .iter()
        .zip(before.iter().zip(&after))
        .filter(|(_, ((b, _), (a, _)))| b.grade != Grade::Correct && a.grade == Grade::Correct)
        .map(|(ask, _)| ask.text)
        .collect();
    report.healed_questions = healed_texts.len() as u64;
    report.missed = asks
        .iter()
        .zip(answers.iter().zip(&after))
        .filter(|(_, ((f, _), (a, _)))| f.grade == Grade::Correct && a.grade != Grade::Correct)
        .map(|(ask, _)| ask.question.to_owned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if let (Some(first), Some(answered)) = (first_failure, healed.first()) {
        report.first_failure_to_answer_ms = answered.duration_since(first).as_millis() as u64;
    }
    Ok(report)
}

/// The share correct and the wrong unhedged of graded answers.
fn tally(answers: &[(Graded, Instant)]) -> (f64, u64) {
    let correct = answers
        .iter()
        .filter(|(g, _)| g.grade == Grade::Correct)
        .count();
    let wrong_unhedged = answers
        .iter()
        .filter(|(g, _)| g.grade == Grade::Wrong && !g.hedged)
        .count() as u64;
    (correct as f64 / answers.len().max(1) as f64, wrong_unhedged)
}

/// The pages the scenario leaves current: doc id to (title, body).
fn current_pages(scenario: &Scenario) -> BTreeMap<String, (String, String)> {
    let mut pages = BTreeMap::new();
    for entry in &scenario.timeline {
        match &entry.kind {
            TimelineKind::DocUpsert {
                doc_id,
                title,
                body,
                ..
            } => {
                pages.insert(doc_id.clone(), (title.clone(), body.clone()));
            }
            TimelineKind::DocDelete { doc_id } => {
                pages.remove(doc_id);
            }
            TimelineKind::SourceListing { .. } => {}
            _ => {}
        }
    }
    pages
}

/// The world's entity type names (its predicates' subject and object types).
fn world_types(ontology: &serde_json::Value) -> Vec<String> {
    let mut types = BTreeSet::new();
    for p in ontology["predicates"].as_array().into_iter().flatten() {
        for field in ["subject_type", "object_type"] {
            for t in p[field].as_str().unwrap_or_default().split('|') {
                let t = t.trim().to_lowercase();
                if !matches!(t.as_str(), "" | "any" | "text" | "number") {
                    types.insert(t);
                }
            }
        }
    }
    types.into_iter().collect()
}

/// The world's authority ranks (origins, not predicates: kept when predicates are stripped).
fn world_authority(ontology: &serde_json::Value) -> BTreeMap<String, i32> {
    ontology["authority"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), i32::try_from(v.as_i64()?).ok()?)))
        .collect()
}

/// The reviewer stand-in: each proposed predicate some failed question asks for is read from
/// the pages (with the whole reviewed proposal, as it would be live) and a sample of its facts
/// compared with what the world's ontology reads from the same pages.
fn review(
    proposal: &Proposal,
    world: &World,
    setup: &ExtractionSetup,
    pages: &[Page<'_>],
    authority: &BTreeMap<String, i32>,
) -> anyhow::Result<Vec<Decision>> {
    let reviewed: BTreeSet<&str> = proposal
        .predicates
        .iter()
        .filter(|p| !p.answers.is_empty())
        .map(|p| p.name.as_str())
        .collect();
    let Some(doc) = proposal.ontology(|p| reviewed.contains(p.name.as_str()), authority) else {
        return Ok(Vec::new());
    };
    let proposed = setup.compile(Ontology::from_value(doc).context("the proposed ontology")?);
    let reference = setup.compile(world.ontology().context("the world's ontology")?);
    let lexicon = Lexicon::default();
    let mut theirs: Vec<Claim> = Vec::new();
    let mut ours: Vec<Claim> = Vec::new();
    for page in pages {
        theirs.extend(
            reference
                .extraction()
                .claims(&reference, page.body, &lexicon),
        );
        ours.extend(proposed.extraction().claims(&proposed, page.body, &lexicon));
    }
    let world_predicates: Vec<String> = reference
        .predicates()
        .iter()
        .map(|p| p.name.clone())
        .collect();
    let mut decisions = Vec::new();
    for p in proposal
        .predicates
        .iter()
        .filter(|p| reviewed.contains(p.name.as_str()))
    {
        let mut facts: Vec<(String, String)> = ours
            .iter()
            .filter(|c| c.predicate == p.name)
            .map(|c| (c.subject.name().to_owned(), c.object.clone()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let step = facts.len().div_ceil(SAMPLE).max(1);
        facts = facts.into_iter().step_by(step).collect();
        let mut best = (String::new(), 0.0);
        for w in &world_predicates {
            let agree = facts
                .iter()
                .filter(|(s, o)| {
                    theirs.iter().any(|c| {
                        &c.predicate == w
                            && same_name(c.subject.name(), s)
                            && same_object(&c.object, o)
                    })
                })
                .count();
            let share = agree as f64 / facts.len().max(1) as f64;
            if share > best.1 {
                best = (w.clone(), share);
            }
        }
        decisions.push(Decision {
            predicate: p.name.clone(),
            from: p.from.clone(),
            world_predicate: best.0,
            sampled: facts.len(),
            agreement: best.1,
            approved: !facts.is_empty() && best.1 >= APPROVE_AGREEMENT,
            answers: p.answers.len(),
        });
    }
    Ok(decisions)
}

fn words_of(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && *w != "the")
        .map(str::to_owned)
        .collect()
}

/// Two spellings of one subject: the same words, or one's words all among the other's
/// ("Routing" and "Routing engine").
fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (words_of(a), words_of(b));
    !a.is_empty()
        && !b.is_empty()
        && (a.iter().all(|w| b.contains(w)) || b.iter().all(|w| a.contains(w)))
}

fn same_object(a: &str, b: &str) -> bool {
    same_value(a, b) || {
        let (a, b) = (words_of(a), words_of(b));
        !a.is_empty() && a == b
    }
}

/// Decides the tenant's newest change the gate holds, if it holds one: approved by the reviewer
/// stand-in, who approved the proposal it applies. Returns how the gate judged it.
async fn settle_gate(dashboard: &Dashboard, tenant: &str) -> anyhow::Result<String> {
    let who = format!("tenant={tenant}&reviewer=bench-reviewer");
    let listed = http(dashboard.addr, "GET", &format!("/api/gate?{who}"), None).await?;
    let changes = listed["changes"].as_array().cloned().unwrap_or_default();
    let Some(newest) = changes
        .iter()
        .max_by_key(|c| c["id"].as_i64().unwrap_or_default())
    else {
        return Ok("live".to_owned());
    };
    if newest["status"].as_str() != Some("held") {
        return Ok(newest["status"].as_str().unwrap_or("live").to_owned());
    }
    let body = serde_json::json!({
        "tenant": tenant,
        "reviewer": "bench-reviewer",
        "change_id": newest["id"],
        "decision": "approve",
    });
    http(dashboard.addr, "POST", "/api/gate/decide", Some(&body)).await?;
    for _ in 0..MAX_WAITS {
        let listed = http(dashboard.addr, "GET", &format!("/api/gate?{who}"), None).await?;
        let status = listed["changes"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["id"] == newest["id"]))
            .and_then(|c| c["status"].as_str())
            .unwrap_or_default()
            .to_owned();
        if status != "held" {
            return Ok(status);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    anyhow::bail!("the held ontology change was not applied")
}

/// One HTTP/1.1 request to the dashboard (loopback, auth off), its JSON answer.
async fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> anyhow::Result<serde_json::Value> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let body = body.map(serde_json::Value::to_string).unwrap_or_default();
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .context("connect to the dashboard")?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let text = String::from_utf8_lossy(&response);
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    if !head.starts_with("HTTP/1.1 2") {
        anyhow::bail!(
            "{method} {path}: {}",
            head.lines().next().unwrap_or_default()
        );
    }
    serde_json::from_str(rest.trim()).with_context(|| format!("{method} {path}: read the answer"))
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

impl Report {
    /// The report as text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "bench grow: world {}, scenario {}, {} asks of step {}",
            self.world, self.scenario, self.asks, self.step
        );
        let _ = writeln!(
            out,
            "accuracy: before {}  after {}  full ontology {}  (after = {} of full)",
            pct(self.accuracy_before),
            pct(self.accuracy_after),
            pct(self.accuracy_full),
            pct(self.after_of_full)
        );
        let _ = writeln!(
            out,
            "wrong unhedged: before {}  after {}  full {}",
            self.wrong_unhedged_before, self.wrong_unhedged_after, self.wrong_unhedged_full
        );
        let _ = writeln!(out, "types proposed: {}", self.types_proposed.join(", "));
        let _ = writeln!(
            out,
            "proposals: {} made, {} reviewed (a failed question asks for them), {} approved, {} rejected; gate: {}",
            self.proposals_made,
            self.proposals_reviewed,
            self.proposals_approved,
            self.proposals_rejected,
            self.gate
        );
        let _ = writeln!(out, "reviewer decisions:");
        for d in &self.decisions {
            let _ = writeln!(
                out,
                "  {:<8} {:<28} ({}) agrees with {:<20} on {} of {} sampled; answers {} failed questions",
                if d.approved { "approve" } else { "reject" },
                d.predicate,
                d.from,
                if d.world_predicate.is_empty() {
                    "nothing"
                } else {
                    &d.world_predicate
                },
                pct(d.agreement),
                d.sampled,
                d.answers
            );
        }
        let per: Vec<String> = self
            .decisions_per_world_predicate
            .iter()
            .map(|(w, n)| format!("{}: {n}", if w.is_empty() { "(none)" } else { w }))
            .collect();
        let _ = writeln!(out, "decisions per world predicate: {}", per.join(", "));
        let _ = writeln!(
            out,
            "signals: {} in {} patterns; {} questions failed, {} answered after growth; first failure to answer: {} ms; proposal: {} ms",
            self.signals,
            self.patterns,
            self.failed_questions,
            self.healed_questions,
            self.first_failure_to_answer_ms,
            self.propose_ms
        );
        if !self.missed.is_empty() {
            let _ = writeln!(
                out,
                "missed (right under the full ontology, not after growth): {}",
                self.missed.join(", ")
            );
        }
        out
    }
}
