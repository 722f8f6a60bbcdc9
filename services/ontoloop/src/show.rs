//! Printing answers, reading event files and running benchmarks for the command line.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use ontoloop_core::events::Event;
use ontoloop_core::world::World;
use ontoloop_proto::v1;
use ontoloop_settings::Settings;

use crate::bench::drift::{self, Mode};
use crate::client::Clients;
use crate::up::Local;

/// Prints an answer: value, status, hedges, and provenance per hop.
pub fn print_answer(answer: &v1::Answer, json: bool) -> anyhow::Result<()> {
    let status = v1::AnswerStatus::try_from(answer.status)
        .map(|s| s.as_str_name())
        .unwrap_or("UNKNOWN");
    if json {
        let value = serde_json::json!({
            "status": status,
            "value": answer.value,
            "values": answer.values,
            "entity": answer.entity,
            "predicate_path": answer.predicate_path,
            "abstain_reason": answer.abstain_reason,
            "hedges": answer.hedges.iter().map(|h| serde_json::json!({"code": h.code, "message": h.message, "source_id": h.source_id})).collect::<Vec<_>>(),
            "hops": answer.hops.iter().map(|h| serde_json::json!({
                "entity": h.entity, "predicate": h.predicate, "value": h.value,
                "evidence": h.evidence.iter().map(|e| serde_json::json!({
                    "source": format!("{}@{}", e.source_id, e.source_version), "origin": e.origin,
                    "authority": e.authority, "value": e.value, "graph": e.extracted_at.is_some(),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "applied_sequence": answer.applied_sequence,
        });
        println!("{value}");
        return Ok(());
    }
    if answer.status == v1::AnswerStatus::Abstained as i32 {
        println!("abstained: {}", answer.abstain_reason);
        return Ok(());
    }
    println!("{}  [{status}]", answer.value);
    if answer.values.len() > 1 {
        println!("  open conflict between: {}", answer.values.join(", "));
    }
    for hedge in &answer.hedges {
        println!("  possibly stale ({}): {}", hedge.code, hedge.message);
    }
    for hop in &answer.hops {
        println!("  {} —{}→ {}", hop.entity, hop.predicate, hop.value);
        for e in &hop.evidence {
            let kind = if e.extracted_at.is_some() {
                "graph"
            } else {
                "page"
            };
            println!(
                "    {:<5} {}@{} ({}, authority {}): {:?}",
                kind, e.source_id, e.source_version, e.origin, e.authority, e.value
            );
        }
    }
    Ok(())
}

/// Events in a file: a world file (ontology plus the first scenario's timeline), a JSON array
/// of events, or one event per line.
pub fn events_from_file(text: &str) -> anyhow::Result<Vec<(Event, Option<DateTime<Utc>>)>> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') && trimmed.contains("\"ontoloop.world/v1\"") {
        let world = World::parse(text)?;
        let mut events = vec![(
            Event::OntologySet {
                ontology: world.ontology.clone(),
            },
            None,
        )];
        if let Some(scenario) = world.parsed.first() {
            for entry in &scenario.timeline {
                if let Some(event) = entry.kind.event(false) {
                    events.push((event, Some(entry.at)));
                }
            }
        }
        return Ok(events);
    }
    let values: Vec<serde_json::Value> = if trimmed.starts_with('[') {
        serde_json::from_str(text).context("parse the JSON array")?
    } else {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("line {}", i + 1)))
            .collect::<anyhow::Result<_>>()?
    };
    values
        .into_iter()
        .enumerate()
        .map(|(i, mut value)| {
            let at = value
                .as_object_mut()
                .and_then(|o| o.remove("at"))
                .map(|v| {
                    serde_json::from_value::<DateTime<Utc>>(v)
                        .with_context(|| format!("event {i}: at"))
                })
                .transpose()?;
            let event: Event =
                serde_json::from_value(value).with_context(|| format!("event {i}"))?;
            event.validate().with_context(|| format!("event {i}"))?;
            Ok((event, at))
        })
        .collect()
}

/// `ontoloop bench drift`.
pub async fn bench_drift(
    settings: Settings,
    world_path: &Path,
    mode: Mode,
    json: bool,
    target: bool,
    csv: Option<PathBuf>,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(world_path)
        .with_context(|| format!("read {}", world_path.display()))?;
    let world = World::parse(&text)?;
    let mut progress = |line: &str| eprintln!("bench: {line}");
    let (report, local, _dir) = if target {
        let clients = Clients::from_settings(&settings).await?;
        (
            drift::run(&world, clients, mode, &mut progress).await?,
            None,
            None,
        )
    } else {
        let dir = tempfile::tempdir().context("create a temporary directory")?;
        let mut embedded = settings.clone();
        embedded.store.url = format!("sqlite://{}/bench.db?mode=rwc", dir.path().display());
        embedded.queue.url = "memory".to_owned();
        progress("starting an embedded system (SQLite in a temporary directory, in-process queue)");
        let local = Local::start(embedded).await?;
        let clients = Clients::from_addrs(&local.addrs).await?;
        (
            drift::run(&world, clients, mode, &mut progress).await?,
            Some(local),
            Some(dir),
        )
    };
    if let Some(local) = local {
        local.stop().await?;
    }
    let mode_name = if mode == Mode::Structured {
        "structured"
    } else {
        "nl"
    };
    let csv = csv.unwrap_or_else(|| {
        PathBuf::from(format!("target/bench/drift-{}-{mode_name}.csv", world.name))
    });
    if let Some(dir) = csv.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    std::fs::write(&csv, report.to_csv()).with_context(|| format!("write {}", csv.display()))?;
    if json {
        println!("{}", report.to_json()?);
    } else {
        print!("{}", report.to_text(&world, mode));
        println!(
            "every answer, with the expected value and why: {}",
            csv.display()
        );
    }
    Ok(())
}

/// Prints firewall verdicts; returns whether the answer passed.
pub fn print_verdicts(response: &v1::ValidateResponse, json: bool) -> anyhow::Result<bool> {
    let pass = response.overall == v1::Verdict::Pass as i32;
    let coverage = response.coverage.unwrap_or_default();
    if json {
        let value = serde_json::json!({
            "overall": if pass { "PASS" } else { "BLOCK" },
            "coverage": {"sentences": coverage.sentences, "checkable": coverage.checkable, "unrecognised": coverage.unrecognised},
            "verdicts": response.verdicts.iter().map(|v| serde_json::json!({
                "sentence": v.sentence,
                "claim": v.claim.as_ref().map(|c| serde_json::json!({"subject": c.subject, "predicate": c.predicate, "object": c.object})),
                "verdict": if v.verdict == v1::Verdict::Pass as i32 { "PASS" } else { "BLOCK" },
                "reasons": v.reasons.iter().map(|r| serde_json::json!({"code": r.code, "message": r.message})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        println!("{value}");
        return Ok(pass);
    }
    println!(
        "{}  ({} of {} sentences checkable, {} passed unchecked)",
        if pass { "PASS" } else { "BLOCK" },
        coverage.checkable,
        coverage.sentences,
        coverage.unrecognised
    );
    for v in &response.verdicts {
        let verdict = if v.verdict == v1::Verdict::Pass as i32 {
            "pass "
        } else {
            "BLOCK"
        };
        let what = v
            .claim
            .as_ref()
            .map(|c| format!("{} —{}→ {}", c.subject, c.predicate, c.object))
            .unwrap_or_default();
        println!("  {verdict} {what}  {}", v.sentence);
        for r in &v.reasons {
            println!("        {}: {}", r.code, r.message);
        }
    }
    Ok(pass)
}

/// `ontoloop bench firewall`: always on an embedded system, since it also times the firewall in
/// process.
pub async fn bench_firewall(
    settings: Settings,
    world_path: &Path,
    json: bool,
    rounds: usize,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(world_path)
        .with_context(|| format!("read {}", world_path.display()))?;
    let world = World::parse(&text)?;
    let mut progress = |line: &str| eprintln!("bench: {line}");
    let dir = tempfile::tempdir().context("create a temporary directory")?;
    let mut embedded = settings.clone();
    embedded.store.url = format!("sqlite://{}/bench.db?mode=rwc", dir.path().display());
    embedded.queue.url = "memory".to_owned();
    progress("starting an embedded system (SQLite in a temporary directory, in-process queue)");
    let local = Local::start(embedded).await?;
    let clients = Clients::from_addrs(&local.addrs).await?;
    let validator = ontoloop_firewall::Validator::new(
        local.ctx.clone(),
        ontoloop_readmodel::Snapshots::new(local.ctx.store.clone()),
    )?;
    let report = crate::bench::firewall::run(
        &world,
        clients,
        &validator,
        rounds,
        settings.retrieval.hedge_below_authority,
        &mut progress,
    )
    .await?;
    local.stop().await?;
    if json {
        println!("{}", report.to_json()?);
    } else {
        print!("{}", report.to_text(&world));
    }
    Ok(())
}

/// Prints patterns, most severe first.
/// Prints one proposed update (`review next`), or that the queue is empty.
pub fn print_update(update: Option<&v1::ProposedUpdate>, json: bool) {
    let Some(u) = update else {
        if json {
            println!("{}", serde_json::json!({ "update": null }));
        } else {
            println!("the review queue is empty");
        }
        return;
    };
    let sources: Vec<&str> = u.sources.iter().map(|s| s.source_id.as_str()).collect();
    if json {
        println!(
            "{}",
            serde_json::json!({ "update": {
                "id": u.id, "pattern_id": u.pattern_id, "entity": u.entity,
                "predicate": u.predicate, "before": u.before, "after": u.after,
                "confidence": u.confidence, "confidence_variance": u.confidence_variance,
                "impact_radius": u.impact_radius, "domain": u.domain, "sources": sources,
                "priority": u.priority, "affected_queries": u.affected_queries,
                "reason": u.reason,
            }})
        );
        return;
    }
    let before = if u.before.is_empty() {
        "(new)"
    } else {
        u.before.as_str()
    };
    println!("{}  [{}; priority {:.2}]", u.id, u.reason, u.priority);
    println!(
        "  {} · {}: {} -> {}",
        u.entity, u.predicate, before, u.after
    );
    println!(
        "  confidence {:.2} ± {:.3} · domain {} · {} recent queries",
        u.confidence, u.confidence_variance, u.domain, u.impact_radius
    );
    println!("  sources: {}", sources.join(", "));
    for query in &u.affected_queries {
        println!("  asked: {query}");
    }
    println!(
        "decide with: ontoloop review decide {} approve|reject|modify --value V|defer --as TENANT/PRINCIPAL",
        u.id
    );
}

pub fn print_patterns(patterns: &[v1::Pattern], json: bool) {
    let severity = |p: &v1::Pattern| {
        v1::Severity::try_from(p.severity)
            .map(|s| {
                s.as_str_name()
                    .trim_start_matches("SEVERITY_")
                    .to_lowercase()
            })
            .unwrap_or_default()
    };
    if json {
        let value: Vec<_> = patterns
            .iter()
            .map(|p| serde_json::json!({"id": p.id, "kind": p.kind, "key": p.key, "signals": p.signal_count, "agents": p.agent_count, "severity": severity(p), "status": p.status, "action": p.action, "signal_to_heal_ms": p.signal_to_heal_ms}))
            .collect();
        println!("{}", serde_json::json!({ "patterns": value }));
        return;
    }
    if patterns.is_empty() {
        println!("no patterns in the window");
    }
    for p in patterns {
        println!(
            "{:<9} {:<26} {:<30} {:>4} signals from {:>3} agents  {} {}",
            severity(p),
            p.kind,
            p.key,
            p.signal_count,
            p.agent_count,
            p.status,
            p.action
        );
    }
}
