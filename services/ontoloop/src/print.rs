//! Everything the command line prints: each result as text for a person, or with `--json` as
//! one JSON document for a script. Commands compute; this module only formats. An answer's JSON
//! is the gRPC reply as `ontoloop_proto::json` writes it, the same the MCP tools answer with.

use ontoloop::mcp::render::scope_label;
use ontoloop::status::{ServiceStatus, TenantStatus};
use ontoloop_proto::json::{citation_status_name, rfc3339 as instant};
use ontoloop_proto::v1;

/// Prints a reply or a report as one line of JSON.
fn json_line(reply: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(reply)?);
    Ok(())
}

/// Prints an answer: value, status, hedges, and provenance per hop (or the passages given).
pub fn answer(answer: &v1::Answer, json: bool) -> anyhow::Result<()> {
    let status = v1::AnswerStatus::try_from(answer.status)
        .map(|s| s.as_str_name())
        .unwrap_or("UNKNOWN");
    if json {
        return json_line(answer);
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
            let scope = scope_label(&v.scope);
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

/// Prints the passages a search found: each with its citation, score and the entities it names.
pub fn found(found: &v1::SearchResponse, json: bool) -> anyhow::Result<()> {
    if json {
        return json_line(found);
    }
    let ranking = v1::PassageRanking::try_from(found.ranking)
        .map(|r| r.as_str_name())
        .unwrap_or("UNKNOWN");
    println!("{} passages  [{ranking}]", found.hits.len());
    for hit in &found.hits {
        let Some(p) = &hit.passage else {
            continue;
        };
        println!(
            "  {:.3}  {} — {}@{}, characters {}..{}",
            p.score, p.title, p.source_id, p.source_version, p.start, p.end
        );
        println!("    {}", p.text);
        if !hit.entities.is_empty() {
            let names: Vec<&str> = hit.entities.iter().map(|e| e.name.as_str()).collect();
            println!("    names: {}", names.join(", "));
        }
        println!(
            "    later: ontoloop cite {}@{} {} --span {}..{}",
            p.source_id, p.source_version, p.chunk_hash, p.start, p.end
        );
    }
    Ok(())
}

/// Prints a citation's resolution: its status and the passage now.
pub fn citation(resolution: &v1::CitationResolution, json: bool) -> anyhow::Result<()> {
    let status = citation_status_name(resolution.status);
    if json {
        return json_line(resolution);
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
        json_line(response)?;
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
pub fn patterns(response: &v1::ListPatternsResponse, json: bool) -> anyhow::Result<()> {
    let patterns = &response.patterns;
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
        return json_line(response);
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
    Ok(())
}

/// Prints one proposed update (`review next`), or that the queue is empty.
pub fn update(update: Option<&v1::ProposedUpdate>, json: bool) -> anyhow::Result<()> {
    if json {
        /// `{"update": ...}`, null when the queue is empty.
        #[derive(serde::Serialize)]
        struct Next<'a> {
            update: Option<&'a v1::ProposedUpdate>,
        }
        return json_line(&Next { update });
    }
    let Some(u) = update else {
        println!("the review queue is empty");
        return Ok(());
    };
    let sources: Vec<&str> = u.sources.iter().map(|s| s.source_id.as_str()).collect();
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
    Ok(())
}

/// Prints an ontology proposal as `ontoloop ontology propose` found it queued (after the
/// intake's `sequence`): each predicate with its types, patterns, an example and its preview;
/// with `json`, `{"sequence", "update", "proposal"}` (`proposal` is the update's `after` read as
/// JSON).
pub fn ontology_proposal(
    sequence: u64,
    update: Option<&v1::ProposedUpdate>,
    json: bool,
) -> anyhow::Result<()> {
    let proposal: Option<ontoloop_core::grow::Proposal> =
        update.and_then(|u| serde_json::from_str(&u.after).ok());
    if json {
        #[derive(serde::Serialize)]
        struct Proposed<'a> {
            sequence: u64,
            update: Option<&'a v1::ProposedUpdate>,
            proposal: Option<&'a ontoloop_core::grow::Proposal>,
        }
        return json_line(&Proposed {
            sequence,
            update,
            proposal: proposal.as_ref(),
        });
    }
    let (Some(u), Some(proposal)) = (update, proposal) else {
        println!(
            "no ontology proposal waits for review: the pages state no recurring field or \
             statement the ontology lacks (sequence {sequence})"
        );
        return Ok(());
    };
    println!(
        "{}  [{}; priority {:.2}] {} predicate(s); answers {} failed question(s)",
        u.id,
        u.reason,
        u.priority,
        proposal.predicates.len(),
        u.impact_radius
    );
    for p in &proposal.predicates {
        let subject = p.subject.as_deref().unwrap_or(&p.subject_type);
        println!(
            "  {}  {subject} → {}  ({}; {} subjects)",
            p.name, p.object_type, p.from, p.subjects
        );
        for pattern in &p.patterns {
            println!("    pattern: {pattern}");
        }
        if let Some(example) = p.examples.first() {
            println!("    e.g. {example}");
        }
        let facts: Vec<String> = p
            .facts
            .iter()
            .take(3)
            .map(|f| format!("{} → {} ({})", f.subject, f.object, f.page))
            .collect();
        if !facts.is_empty() {
            println!("    would add: {}", facts.join("; "));
        }
        for question in &p.answers {
            println!("    answers: {question}");
        }
    }
    println!(
        "decide with: ontoloop review decide {} approve|reject|defer --as TENANT/REVIEWER, or \
         modify --value '{{\"drop\":[NAME],\"rename\":{{\"NAME\":\"NEW\"}}}}' (or on the dashboard)",
        u.id
    );
    Ok(())
}

/// Prints a plate: the dimension counts, then one line per item with why it is there.
pub fn plate(plate: &v1::PlateResponse, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(plate)?);
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
pub fn status(
    report: &[ServiceStatus],
    extraction: &str,
    tenants: &[TenantStatus],
    json: bool,
) -> anyhow::Result<()> {
    if json {
        #[derive(serde::Serialize)]
        struct Report<'a> {
            services: &'a [ServiceStatus],
            extraction: &'a str,
            tenants: &'a [TenantStatus],
        }
        let report = Report {
            services: report,
            extraction,
            tenants,
        };
        return json_line(&report);
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
    for tenant in tenants {
        for line in tenant_lines(tenant) {
            println!("{line}");
        }
    }
    Ok(())
}

/// A tenant's summary as `ontoloop status` prints it: its figures on one line, its predicates
/// on the next; or why it could not be had.
fn tenant_lines(tenant: &TenantStatus) -> Vec<String> {
    let Some(figures) = &tenant.summary else {
        let error = tenant.error.as_deref().unwrap_or("no summary");
        return vec![format!("tenant {}: UNAVAILABLE ({error})", tenant.tenant)];
    };
    let mut backlog = format!("backlog {}", figures.backlog);
    if figures.failed_events > 0 {
        backlog.push_str(&format!(" ({} failed)", figures.failed_events));
    }
    let predicates = if figures.predicates.is_empty() {
        "none (no ontology set: pages answer with passages)".to_owned()
    } else {
        figures.predicates.join(", ")
    };
    vec![
        format!(
            "tenant {}: {} pages ({} versions) · {} facts · {} entities · last ingest {} · {backlog}",
            tenant.tenant,
            figures.pages,
            figures.page_versions,
            figures.facts,
            figures.entities,
            figures.last_ingest.as_deref().unwrap_or("never"),
        ),
        format!("  predicates ({}): {predicates}", figures.predicates.len()),
    ]
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

/// Prints what `ontoloop ingest FOLDER` did: the counts, each file not read with the reason, the
/// files of other formats and hidden entries not read, and how to read the run's writes.
pub fn ingested(summary: &ontoloop::ingest::Summary, json: bool) -> anyhow::Result<()> {
    if json {
        return json_line(summary);
    }
    let rate = if summary.pushed_seconds > 0.0 {
        (summary.pushed + summary.unchanged + summary.failed.len()) as f64 / summary.pushed_seconds
    } else {
        0.0
    };
    let commits = summary
        .commits
        .map(|n| format!("{n} commits, "))
        .unwrap_or_default();
    let what = if summary.mode == "git" {
        "file versions"
    } else {
        "files"
    };
    println!(
        "ingested {}: {commits}{} {what}: {} pushed, {} unchanged, {} deleted, {} failed \
         in {:.1}s ({rate:.0} files/s)",
        summary.root,
        summary.files,
        summary.pushed,
        summary.unchanged,
        summary.deleted,
        summary.failed.len(),
        summary.pushed_seconds,
    );
    if !summary.failed.is_empty() {
        println!("not read or not pushed:");
        for failure in &summary.failed {
            println!("  {}: {}", failure.path, failure.reason);
        }
    }
    if !summary.other_formats.is_empty() {
        let others: Vec<String> = summary
            .other_formats
            .iter()
            .map(|(ext, n)| format!("{ext} {n}"))
            .collect();
        println!(
            "not read, other formats (--text-ext reads one as text): {}",
            others.join(", ")
        );
    }
    if summary.hidden > 0 {
        println!(
            "not read, hidden (names starting with .): {}",
            summary.hidden
        );
    }
    if let Some(why) = &summary.store_unlisted {
        println!(
            "compared with the state file only: the store could not be listed ({why}); a \
             lost state file means pushing every file again"
        );
    }
    if let Some(seconds) = summary.applied_seconds {
        println!(
            "all applied {seconds:.1}s after the start (last sequence number {})",
            summary.last_sequence
        );
    } else if summary.last_sequence > 0 {
        if let Some(why) = &summary.applied_unknown {
            println!("applied: unknown ({why})");
        }
        println!(
            "last sequence number {0} (pass --min-sequence {0} to read your writes)",
            summary.last_sequence
        );
    }
    Ok(())
}

/// Prints that `ontoloop ingest --watch` follows the folder now.
pub fn watching(root: &std::path::Path, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::json!({"watching": root.display().to_string()})
        );
    } else {
        println!("watching {} for changes (Ctrl-C stops)", root.display());
    }
}

/// Prints one burst of changes `ontoloop ingest --watch` pushed (nothing when none).
pub fn ingest_change(summary: &ontoloop::ingest::Summary, json: bool) -> anyhow::Result<()> {
    if summary.changed.is_empty() && summary.failed.is_empty() {
        return Ok(());
    }
    if json {
        println!(
            "{}",
            serde_json::json!({
                "changed": summary.changed,
                "pushed": summary.pushed,
                "deleted": summary.deleted,
                "failed": summary.failed,
                "last_sequence": summary.last_sequence,
            })
        );
        return Ok(());
    }
    for failure in &summary.failed {
        println!("not read: {}: {}", failure.path, failure.reason);
    }
    if !summary.changed.is_empty() {
        println!(
            "pushed {}, deleted {}: {} (last sequence number {})",
            summary.pushed,
            summary.deleted,
            summary.changed.join(", "),
            summary.last_sequence
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_prints_its_figures_then_its_predicates_or_why_it_has_none() {
        let summary = v1::TenantSummaryResponse {
            pages: 3,
            page_versions: 5,
            facts: 7,
            entities: 4,
            predicates: vec!["price".into(), "owned_by".into()],
            last_ingest: Some(ontoloop_proto::convert::timestamp(
                chrono::DateTime::from_timestamp(1_772_355_600, 0).expect("an instant"),
            )),
            backlog: 2,
            failed_events: 1,
            knowledge_version: 9,
        };
        assert_eq!(
            tenant_lines(&TenantStatus::answered("acme", &summary)),
            [
                "tenant acme: 3 pages (5 versions) · 7 facts · 4 entities · last ingest \
                 2026-03-01T09:00:00Z · backlog 2 (1 failed)",
                "  predicates (2): price, owned_by",
            ]
        );
        let empty = v1::TenantSummaryResponse::default();
        assert_eq!(
            tenant_lines(&TenantStatus::answered("new", &empty)),
            [
                "tenant new: 0 pages (0 versions) · 0 facts · 0 entities · last ingest never · \
                 backlog 0",
                "  predicates (0): none (no ontology set: pages answer with passages)",
            ]
        );
        assert_eq!(
            tenant_lines(&TenantStatus::failed("acme", "connect: refused".into())),
            ["tenant acme: UNAVAILABLE (connect: refused)"]
        );
    }
}
