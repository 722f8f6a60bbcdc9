//! Everything `ontoloop-bench` prints: each report as text for a person, or with `--json` as
//! one JSON document for a script. Benchmarks compute; this module only formats.

use ontoloop_bench::drift::{Mode, Report as DriftReport};
use ontoloop_bench::firewall::Report as FirewallReport;
use ontoloop_bench::org::GenReport;
use ontoloop_bench::plate::PlateReport;
use ontoloop_bench::signals::SignalsReport;
use ontoloop_core::world::World;

/// Prints a report as one line of JSON.
fn json_line(report: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(report)?);
    Ok(())
}

/// Prints a report as one line of JSON with `--json`, else as the text `text` writes.
pub fn report<R: serde::Serialize>(
    report: &R,
    json: bool,
    text: impl FnOnce(&R) -> String,
) -> anyhow::Result<()> {
    if json {
        return json_line(report);
    }
    print!("{}", text(report));
    Ok(())
}

/// Prints what `gen-org` loaded.
pub fn gen_org(report: &GenReport, json: bool) -> anyhow::Result<()> {
    if json {
        return json_line(report);
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

/// Prints the signals benchmark's report.
pub fn bench_signals(report: &SignalsReport, preload: bool, json: bool) -> anyhow::Result<()> {
    if json {
        return json_line(report);
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
        return json_line(report);
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
        ontoloop_bench::plate::TRANSFERS,
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
    report: &DriftReport,
    world: &World,
    mode: Mode,
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
pub fn bench_firewall(report: &FirewallReport, world: &World, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", report.to_json()?);
    } else {
        print!("{}", report.to_text(world));
    }
    Ok(())
}
