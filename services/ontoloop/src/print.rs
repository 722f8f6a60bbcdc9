//! Everything the command line prints: each result as text for a person, or with `--json` as
//! one JSON document for a script. Commands compute; this module only formats.

use ontoloop::bench::plate::PlateReport;
use ontoloop::bench::signals::SignalsReport;
use ontoloop::mcp::wire::instant;
use ontoloop::org::GenReport;
use ontoloop::status::ServiceStatus;
use ontoloop_proto::v1;

/// Prints an answer: value, status, hedges, and provenance per hop (or the passages given).
pub fn answer(answer: &v1::Answer, json: bool) -> anyhow::Result<()> {
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
            "passages": answer.passages.iter().map(|p| serde_json::json!({
                "source": format!("{}@{}", p.source_id, p.source_version), "title": p.title,
                "origin": p.origin, "headings": p.headings, "text": p.text,
                "chunk_hash": p.chunk_hash, "start": p.start, "end": p.end, "score": p.score,
                "similarity": p.similarity,
            })).collect::<Vec<_>>(),
            "upcoming": answer.upcoming.iter().map(|e| serde_json::json!({
                "value": e.value, "effective_from": instant(e.valid_from.as_ref()),
                "source": format!("{}@{}", e.source_id, e.source_version), "origin": e.origin,
            })).collect::<Vec<_>>(),
            "scoped": answer.scoped.iter().map(|v| serde_json::json!({
                "scope": v.scope, "value": v.value,
                "evidence": v.evidence.iter().map(|e| format!("{}@{}", e.source_id, e.source_version)).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        println!("{value}");
        return Ok(());
    }
    if answer.status == v1::AnswerStatus::Abstained as i32 {
        println!("abstained: {}", answer.abstain_reason);
        return Ok(());
    }
    if answer.status == v1::AnswerStatus::AnsweredPassages as i32 {
        println!("no fact answers this; these passages may  [{status}]");
        for p in &answer.passages {
            println!(
                "  {} — {}@{}, characters {}..{}",
                p.title, p.source_id, p.source_version, p.start, p.end
            );
            println!("    {}", p.text);
            println!(
                "    later: ontoloop cite {}@{} {} --span {}..{}",
                p.source_id, p.source_version, p.chunk_hash, p.start, p.end
            );
        }
        return Ok(());
    }
    if answer.status == v1::AnswerStatus::NeedsScope as i32 {
        println!("the value depends on the scope; ask with --scope  [{status}]");
        for v in &answer.scoped {
            let scope = ontoloop::mcp::wire::scope_label(&v.scope);
            let cited: Vec<String> = v
                .evidence
                .iter()
                .map(|e| format!("{}@{}", e.source_id, e.source_version))
                .collect();
            println!("  {scope}: {}  ({})", v.value, cited.join(", "));
        }
        return Ok(());
    }
    println!("{}  [{status}]", answer.value);
    if answer.values.len() > 1 {
        println!("  open conflict between: {}", answer.values.join(", "));
    }
    for hedge in &answer.hedges {
        println!("  possibly stale ({}): {}", hedge.code, hedge.message);
    }
    for e in &answer.upcoming {
        let from = instant(e.valid_from.as_ref()).unwrap_or_default();
        println!(
            "  changes to {:?} from {from} (announced by {}@{}, {})",
            e.value, e.source_id, e.source_version, e.origin
        );
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

/// Prints a citation's resolution: its status and the passage now.
pub fn citation(resolution: &v1::CitationResolution, json: bool) -> anyhow::Result<()> {
    let status = ontoloop::mcp::wire::citation_status(resolution.status);
    if json {
        let value = serde_json::json!({
            "status": status,
            "passage": resolution.passage.as_ref().map(|p| serde_json::json!({
                "source": format!("{}@{}", p.source_id, p.source_version), "title": p.title,
                "headings": p.headings, "text": p.text, "chunk_hash": p.chunk_hash,
                "start": p.start, "end": p.end,
            })),
            "applied_sequence": resolution.applied_sequence,
        });
        println!("{value}");
        return Ok(());
    }
    match &resolution.passage {
        Some(p) => {
            println!(
                "{status}: {}@{} [{}..{}] (hash {})",
                p.source_id, p.source_version, p.start, p.end, p.chunk_hash
            );
            println!("  {}", p.text);
        }
        None => println!("{status}"),
    }
    Ok(())
}

/// Prints firewall verdicts; returns whether the answer passed.
pub fn verdicts(response: &v1::ValidateResponse, json: bool) -> anyhow::Result<bool> {
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

/// Prints the patterns the analyst found, one line each.
pub fn patterns(patterns: &[v1::Pattern], json: bool) {
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

/// Prints one proposed update (`review next`), or that the queue is empty.
pub fn update(update: Option<&v1::ProposedUpdate>, json: bool) {
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

/// Prints what `gen-org` loaded.
pub fn gen_org(report: &GenReport, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
        return Ok(());
    }
    for (tenant, people, items, facts, version) in &report.tenants {
        println!(
            "{tenant}: {people} people, {items} work items, {facts} product facts (org version {version})"
        );
    }
    println!(
        "generated in {:.2} s, loaded in {:.2} s; items are dated relative to {} (use --as-of {} with `ontoloop plate`)",
        report.generate_secs,
        report.load_secs,
        report.now.to_rfc3339(),
        report.now.to_rfc3339()
    );
    Ok(())
}

/// Prints a plate: the dimension counts, then one line per item with why it is there.
pub fn plate(plate: &v1::PlateResponse, json: bool) -> anyhow::Result<()> {
    if json {
        let items: Vec<serde_json::Value> = plate
            .items
            .iter()
            .map(|item| {
                serde_json::json!({
                    "item_id": item.item_id,
                    "title": item.title,
                    "assignee": item.assignee,
                    "service": item.service,
                    "severity": item.severity,
                    "scope": item.scope,
                    "source_type": item.source_type,
                    "created_at": item.created_at.map(|t| t.seconds),
                    "score": item.score,
                    "admitted_by": item.admitted_by,
                    "weights": item.weights,
                })
            })
            .collect();
        let dimensions: Vec<serde_json::Value> = plate
            .dimensions
            .iter()
            .map(|d| serde_json::json!({"name": d.name, "candidates_after": d.candidates_after}))
            .collect();
        let out = serde_json::json!({
            "org_version": plate.org_version,
            "dimensions": dimensions,
            "items": items,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let counts: Vec<String> = plate
        .dimensions
        .iter()
        .map(|d| format!("{} {}", d.name, d.candidates_after))
        .collect();
    println!("candidates after each dimension: {}", counts.join(" → "));
    if plate.items.is_empty() {
        println!("nothing on this plate");
    }
    for (rank, item) in plate.items.iter().enumerate() {
        let weight = |name: &str| item.weights.get(name).copied().unwrap_or_default();
        println!(
            "{:>3}. {:<12} {:<8} {:<10} {:<15} score {:.3} (temporal {:.3} × authority {:.2} × severity {:.2}) via {}",
            rank + 1,
            item.item_id,
            item.severity,
            item.scope,
            item.source_type,
            item.score,
            weight("temporal"),
            weight("authority"),
            weight("severity"),
            item.admitted_by.join("+"),
        );
        println!(
            "     {} · assignee {} · service {}",
            item.title,
            if item.assignee.is_empty() {
                "-"
            } else {
                &item.assignee
            },
            if item.service.is_empty() {
                "-"
            } else {
                &item.service
            },
        );
    }
    println!("(org version {})", plate.org_version);
    Ok(())
}

/// Prints the report as text lines or as `{"services":[...]}`.
pub fn status(report: &[ServiceStatus], extraction: &str, json: bool) -> anyhow::Result<()> {
    if json {
        #[derive(serde::Serialize)]
        struct Report<'a> {
            services: &'a [ServiceStatus],
            extraction: &'a str,
        }
        let report = Report {
            services: report,
            extraction,
        };
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    for service in report {
        match &service.error {
            Some(error) => println!(
                "{:<10} {:<22} {} ({error})",
                service.name, service.addr, service.status
            ),
            None => println!(
                "{:<10} {:<22} {}",
                service.name, service.addr, service.status
            ),
        }
    }
    println!("extraction {extraction}");
    Ok(())
}

/// Prints what `ingest` pushed and the sequence number to read the writes at.
pub fn pushed(events: usize, last: u64) {
    println!(
        "pushed {events} events; last sequence number {last} (pass --min-sequence {last} to read your writes)"
    );
}

/// Prints a reported signal's acknowledgement: accepted or duplicate, and its severity.
pub fn signal_ack(ack: &v1::SignalAck) {
    let severity = v1::Severity::try_from(ack.severity)
        .map(|s| s.as_str_name())
        .unwrap_or("UNKNOWN");
    println!(
        "{}{severity}",
        if ack.duplicate {
            "duplicate; "
        } else {
            "accepted; "
        }
    );
}

/// Prints what a review decision did.
pub fn decided(update: &str, decision: &str, outcome: &v1::DecideResponse) {
    if outcome.already_decided {
        println!("{update} was already decided; nothing changed");
    } else if outcome.applied {
        println!("{update}: {decision} recorded and applied to the graph");
    } else {
        println!("{update}: {decision} recorded");
    }
}

/// Prints the migrations the store has applied.
pub fn migrations(applied: &[String]) {
    println!("migrations applied: {}", applied.join(", "));
}

/// Prints where `ontoloop up` serves each service.
pub fn up_banner(
    store_url: &str,
    queue_url: &str,
    https: bool,
    services: &[(
        ontoloop_core::ServiceKind,
        std::net::SocketAddr,
        std::net::SocketAddr,
    )],
) {
    println!(
        "ontoloop up: store {} · queue {}",
        ontoloop_store::redact(store_url),
        ontoloop_store::redact(queue_url)
    );
    let scheme = if https { "https" } else { "http" };
    for (kind, addr, http) in services {
        let extra = if *kind == ontoloop_core::ServiceKind::Analyst {
            format!(" · dashboard {scheme}://{http}/")
        } else {
            String::new()
        };
        println!(
            "  {:<10} listening on {addr} · metrics {scheme}://{http}/metrics{extra}",
            kind.name()
        );
    }
    println!("ready: `ontoloop status` from another shell; Ctrl-C stops everything");
}

/// Prints how calls are authenticated in dev mode.
pub fn dev_auth(secret_file: &str) {
    println!(
        "auth: dev mode (loopback only): tokens are signed with the secret in {secret_file}; the \
         CLI signs its own from it, other clients get one from `ontoloop token issue`; sign in \
         to the dashboard with `ontoloop token issue --tenant T --principal YOU --role reviewer`"
    );
}

/// Prints that `ontoloop up` has stopped.
pub fn stopped() {
    println!("ontoloop stopped");
}

/// Prints the signals benchmark's report.
pub fn bench_signals(report: &SignalsReport, preload: bool, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
        return Ok(());
    }
    let what = if preload {
        "the analyst alone, from a loaded queue"
    } else {
        "end to end, publishing while the analyst consumes"
    };
    println!("signals through RabbitMQ into the analyst's store ({what})");
    println!("signals   per second   lost   duplicated   published (confirmed) per second");
    println!(
        "{:>7}   {:>10.0}   {:>4}   {:>10}   {:>10.0}",
        report.signals,
        report.per_second,
        report.lost,
        report.duplicated,
        report.published_per_second
    );
    Ok(())
}

/// Prints the plate benchmark's report.
pub fn bench_plate(report: &PlateReport, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
        return Ok(());
    }
    println!(
        "plate on {} people / {} items, {} callers",
        report.people, report.items, report.callers
    );
    println!(
        "  oracle mismatches {}  p50 {:.3} ms  p99 {:.3} ms  {:.0} plates/s  peak RSS {:.0} MiB",
        report.oracle_mismatches, report.p50_ms, report.p99_ms, report.qps, report.peak_rss_mb
    );
    println!(
        "  loopback gRPC, auth on (HS256 bearer): p50 {:.3} ms  p99 {:.3} ms",
        report.p50_auth_ms, report.p99_auth_ms
    );
    for (people, ms) in &report.rebuild_ms {
        println!("  org graph rebuild at {people} people: {ms:.1} ms");
    }
    println!(
        "  first load {:.0} ms; employee.transferred visible after {:.1} ms (median of {}, slowest {:.1} ms)",
        report.load_ms,
        report.event_to_visible_ms,
        ontoloop::bench::plate::TRANSFERS,
        report.event_to_visible_max_ms
    );
    println!(
        "  precision vs oracle: plate {:.3}, BM25 baseline {:.3}",
        report.precision, report.baseline_precision
    );
    Ok(())
}

/// Prints the drift benchmark's report, and where the CSV of every answer went.
pub fn bench_drift(
    report: &ontoloop::bench::drift::Report,
    world: &ontoloop_testkit::world::World,
    mode: ontoloop::bench::drift::Mode,
    extraction: &str,
    csv: &std::path::Path,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        let mut value = serde_json::to_value(report)?;
        if let Some(fields) = value.as_object_mut() {
            fields.insert("extraction".to_owned(), extraction.into());
        }
        println!("{value}");
    } else {
        println!("extraction: {extraction}");
        print!("{}", report.to_text(world, mode));
        println!(
            "every answer, with the expected value and why: {}",
            csv.display()
        );
    }
    Ok(())
}

/// Prints the firewall benchmark's report.
pub fn bench_firewall(
    report: &ontoloop::bench::firewall::Report,
    world: &ontoloop_testkit::world::World,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        println!("{}", report.to_json()?);
    } else {
        print!("{}", report.to_text(world));
    }
    Ok(())
}
