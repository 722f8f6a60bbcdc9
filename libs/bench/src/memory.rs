//! The memory benchmark: the whole system in this process, many tenants each with a small
//! generated ontology and a few pages, then failure signals (through the telemetry intake's
//! `ReportSignals` stream, in batches) and Asks (gRPC) spread over the tenants, with the
//! process's resident memory (`VmRSS`) sampled as the load goes.
//!
//! The load is cut into [`SLICES`] equal slices, each with its share of signals and Asks. The
//! first slice is the warm-up: every tenant's caches fill there (read models, knowledge, HR
//! records, healer stages), the store's page cache and the allocator's arenas grow to their
//! working size. The first sample is taken after it, then one after each later slice, each once
//! the analyst has recorded every signal sent (a queue backlog is the intake outrunning the
//! analyst on a busy machine, not memory the services keep); the run
//! passes when the last sample is at most [`MAX_GROWTH`] above the first. Every service runs in
//! this process, so the resident size is all of them together (and the client): an upper bound
//! of the analyst's and retrieval's own.

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::Context as _;
use futures::StreamExt as _;
use ontoloop_core::Caller;
use ontoloop_core::events::Event;
use ontoloop_proto::v1;
use serde::Serialize;

use ontoloop::client::Clients;

/// Slices the load is cut into; the first is the warm-up, a sample follows each of the others
/// and the warm-up itself (so as many samples as slices).
pub const SLICES: u64 = 10;

/// Growth allowed from the first sample after the warm-up to the last (10 %).
pub const MAX_GROWTH: f64 = 0.10;

/// Signals one `ReportSignals` stream carries.
const BATCH: u64 = 500;

/// Distinct signal subjects per tenant (the load repeats them, as real agents do).
const SUBJECTS: u64 = 20;

/// Services (and so pages) generated per tenant.
const PAGES: usize = 3;

/// Asks and signal streams in flight at once.
const IN_FLIGHT: usize = 4;

/// How big the run is.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Tenants, each with its own ontology and pages.
    pub tenants: usize,
    /// Failure signals reported in all.
    pub signals: u64,
    /// Asks in all.
    pub asks: u64,
}

/// One sample of the curve.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Its place on the curve (0: right after the warm-up).
    pub point: u64,
    /// Signals sent so far.
    pub signals: u64,
    /// Asks sent so far.
    pub asks: u64,
    /// Resident memory of the process, MiB.
    pub rss_mb: f64,
    /// Seconds spent waiting, before the sample, for the analyst to record every signal sent.
    pub drain_secs: f64,
}

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryReport {
    /// Tenants loaded.
    pub tenants: usize,
    /// Resident memory before any load (system started, tenants not yet loaded), MiB.
    pub idle_rss_mb: f64,
    /// Resident memory once every tenant's ontology and pages were applied, MiB.
    pub loaded_rss_mb: f64,
    /// The curve, from the end of the warm-up to the end of the load.
    pub samples: Vec<Sample>,
    /// Last sample over first.
    pub ratio: f64,
    /// Signals per second over the whole load (Asks interleaved).
    pub signals_per_second: f64,
    /// Signals the intake refused or could not take (counted, not retried).
    pub signal_errors: u64,
    /// Asks that failed (counted, not retried).
    pub ask_errors: u64,
    /// Seconds the load took.
    pub load_secs: f64,
}

impl MemoryReport {
    /// Whether the last sample stayed within [`MAX_GROWTH`] of the first.
    pub fn flat(&self) -> bool {
        self.ratio <= 1.0 + MAX_GROWTH
    }

    /// The report as the command prints it.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "memory: every service in one process (SQLite store, in-process queue unless told \
             otherwise); resident size is all of them together"
        );
        let _ = writeln!(
            out,
            "tenants {}: idle {:.1} MB, after loading their ontologies and pages {:.1} MB",
            self.tenants, self.idle_rss_mb, self.loaded_rss_mb
        );
        let _ = writeln!(
            out,
            "warm-up: the first 1/{SLICES} of the signals and Asks; point 0 is sampled right after it"
        );
        let _ = writeln!(
            out,
            "each sample waits until the analyst recorded every signal sent (drain_s): a backlog \
             in the queue is the intake outrunning the analyst, not memory kept"
        );
        let _ = writeln!(
            out,
            "{:>5}  {:>10}  {:>8}  {:>8}  {:>7}",
            "point", "signals", "asks", "rss_mb", "drain_s"
        );
        for s in &self.samples {
            let _ = writeln!(
                out,
                "{:>5}  {:>10}  {:>8}  {:>8.1}  {:>7.1}",
                s.point, s.signals, s.asks, s.rss_mb, s.drain_secs
            );
        }
        let (start, end) = (
            self.samples.first().map_or(0.0, |s| s.rss_mb),
            self.samples.last().map_or(0.0, |s| s.rss_mb),
        );
        let _ = writeln!(
            out,
            "start {start:.1} MB, end {end:.1} MB, end/start {:.3} (limit {:.2}): {}",
            self.ratio,
            1.0 + MAX_GROWTH,
            if self.flat() { "flat" } else { "GREW" }
        );
        let _ = writeln!(
            out,
            "load took {:.0} s ({:.0} signals/s with Asks interleaved); {} signals and {} Asks failed",
            self.load_secs, self.signals_per_second, self.signal_errors, self.ask_errors
        );
        out
    }
}

/// Resident memory of this process in MiB (`VmRSS`); 0 where /proc is unavailable.
pub fn rss_mb() -> f64 {
    status_mb("VmRSS:")
}

/// Peak resident set size of this process in MiB (`VmHWM`); 0 where /proc is unavailable.
pub fn peak_rss_mb() -> f64 {
    status_mb("VmHWM:")
}

/// One kB field of `/proc/self/status`, in MiB; 0 where it cannot be read.
fn status_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Signals the analyst in this process has recorded (its `ontoloop_analyst_signals_total`; the
/// benchmark's signals are all `entity_missing`).
fn recorded_signals() -> u64 {
    let metrics = ontoloop_observability::metrics::global();
    let recorded: f64 = ontoloop_core::Severity::ALL
        .iter()
        .map(|severity| {
            metrics.value(
                "ontoloop_analyst_signals_total",
                &[
                    ("type", ontoloop_core::SignalType::EntityMissing.name()),
                    ("severity", severity.name()),
                ],
            )
        })
        .sum();
    recorded as u64
}

/// Waits until the analyst recorded `sent` signals or [`DRAIN_LIMIT`] passed; seconds waited.
async fn drain(sent: u64) -> f64 {
    let started = Instant::now();
    while recorded_signals() < sent && started.elapsed() < DRAIN_LIMIT {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    started.elapsed().as_secs_f64()
}

/// The longest a sample waits for the analyst to catch up.
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// The generated ontology every tenant gets: services owned by teams and written in languages.
fn ontology() -> serde_json::Value {
    serde_json::json!({
        "predicates": [
            {"name": "owned_by", "subject_type": "service", "object_type": "team",
             "patterns": ["{s} is owned by the {o} team."]},
            {"name": "written_in", "subject_type": "service", "object_type": "language",
             "patterns": ["{s} is written in {o}."]}
        ],
        "authority": {"default": 1}
    })
}

/// Tenant `t`'s service `k` (a name of letters, as the extraction patterns expect).
fn service(t: usize, k: usize) -> String {
    format!("Svc{}{}", letters(t), letters(k))
}

/// `n` spelled in letters (`0` is `a`, `26` is `ba`).
pub(crate) fn letters(mut n: usize) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'a' + u8::try_from(n % 26).unwrap_or(0));
        n /= 26;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

fn tenant(t: usize) -> String {
    format!("mem-{t:04}")
}

/// Tenant `t`'s benchmark caller on the wire.
fn wire_caller(t: usize) -> v1::Caller {
    v1::Caller {
        tenant: tenant(t),
        principal: "bench".to_owned(),
    }
}

/// Pushes tenant `t`'s ontology and pages; the sequence number of the last.
async fn seed(clients: &Clients, t: usize) -> anyhow::Result<u64> {
    let caller = Caller::new(&tenant(t), "bench")?;
    let now = chrono::Utc::now();
    let mut events = vec![Event::OntologySet {
        ontology: ontology(),
    }];
    for k in 0..PAGES {
        let name = service(t, k);
        events.push(Event::DocUpsert {
            doc_id: format!("svc-{k}"),
            title: name.clone(),
            origin: "wiki".to_owned(),
            body: format!(
                "{name} is owned by the Team{} team. {name} is written in Rust.",
                letters(t + k)
            ),
            acl: Vec::new(),
            hold: false,
            confidence: None,
            effective_from: None,
        });
    }
    let mut last = 0;
    for event in &events {
        last = clients
            .telemetry
            .clone()
            .push_event(ontoloop_proto::convert::event_to_wire(&caller, event, now))
            .await
            .with_context(|| format!("push {} of {}", event.kind(), tenant(t)))?
            .into_inner()
            .sequence;
    }
    Ok(last)
}

/// Signal number `n` of the run: tenant round robin, a bounded set of subjects per tenant.
fn signal(tenants: usize, n: u64) -> v1::Signal {
    let t = usize::try_from(n % tenants as u64).unwrap_or(0);
    let subject = (n / tenants as u64) % SUBJECTS;
    v1::Signal {
        caller: Some(wire_caller(t)),
        r#type: v1::SignalType::EntityMissing as i32,
        query: format!("who owns Ghost{}?", letters(subject as usize)),
        entity: format!("Ghost{}", letters(subject as usize)),
        agent_id: "bench-agent".to_owned(),
        idempotency_key: format!("mem-{n}"),
        ..Default::default()
    }
}

/// Ask number `n` of the run: tenant round robin, one of its services.
fn ask(tenants: usize, n: u64) -> v1::AskRequest {
    let t = usize::try_from(n % tenants as u64).unwrap_or(0);
    let k = usize::try_from((n / tenants as u64) % PAGES as u64).unwrap_or(0);
    v1::AskRequest {
        caller: Some(wire_caller(t)),
        text: format!("Who owns {}?", service(t, k)),
        ..Default::default()
    }
}

/// Reports signals `from..to` in streams of [`BATCH`]; the signals refused or lost.
async fn send_signals(clients: &Clients, tenants: usize, from: u64, to: u64) -> u64 {
    let batches: Vec<(u64, u64)> = (from..to)
        .step_by(BATCH as usize)
        .map(|start| (start, (start + BATCH).min(to)))
        .collect();
    futures::stream::iter(batches)
        .map(|(start, end)| {
            let mut telemetry = clients.telemetry.clone();
            async move {
                let stream = futures::stream::iter((start..end).map(move |n| signal(tenants, n)));
                match telemetry.report_signals(stream).await {
                    Ok(ack) => {
                        let ack = ack.into_inner();
                        (end - start).saturating_sub(ack.accepted + ack.duplicates)
                    }
                    Err(status) => {
                        tracing::warn!(error = %status, "a signal stream failed");
                        end - start
                    }
                }
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .fold(0, |sum, failed| async move { sum + failed })
        .await
}

/// Asks `from..to`; the number that failed.
async fn send_asks(clients: &Clients, tenants: usize, from: u64, to: u64) -> u64 {
    futures::stream::iter(from..to)
        .map(|n| {
            let mut retrieval = clients.retrieval.clone();
            async move {
                match retrieval.ask(ask(tenants, n)).await {
                    Ok(_) => 0,
                    Err(status) => {
                        tracing::debug!(error = %status, "an ask failed");
                        1
                    }
                }
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .fold(0, |sum, failed| async move { sum + failed })
        .await
}

/// Runs the load through `clients` (a system in this process), reporting progress lines.
pub async fn run(
    clients: &Clients,
    load: Load,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<MemoryReport> {
    anyhow::ensure!(load.tenants > 0, "--tenants must be at least 1");
    let idle_rss_mb = rss_mb();
    progress(&format!(
        "seeding {} tenants ({PAGES} pages each)",
        load.tenants
    ));
    let seeded: Vec<anyhow::Result<(usize, u64)>> = futures::stream::iter(0..load.tenants)
        .map(|t| async move { seed(clients, t).await.map(|seq| (t, seq)) })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    // Every tenant's pages applied before the load: an Ask waiting for its last sequence.
    for result in seeded {
        let (t, seq) = result?;
        let mut request = ask(load.tenants, t as u64);
        request.min_sequence = seq;
        clients
            .retrieval
            .clone()
            .ask(request)
            .await
            .with_context(|| format!("ask {} once its pages are applied", tenant(t)))?;
    }
    let loaded_rss_mb = rss_mb();
    progress(&format!(
        "seeded: {loaded_rss_mb:.1} MB; load of {} signals and {} Asks in {SLICES} slices",
        load.signals, load.asks
    ));
    let started = Instant::now();
    let (mut signals, mut asks) = (0u64, 0u64);
    let (mut signal_errors, mut ask_errors) = (0u64, 0u64);
    let mut samples = Vec::new();
    for slice in 1..=SLICES {
        let (signals_to, asks_to) = (load.signals * slice / SLICES, load.asks * slice / SLICES);
        // Signals and Asks of the slice interleaved in steps, as a live system sees them.
        let steps = 20u64;
        for step in 1..=steps {
            let s_to = signals + (signals_to - signals) * step / steps;
            let a_to = asks + (asks_to - asks) * step / steps;
            let s_from = signals + (signals_to - signals) * (step - 1) / steps;
            let a_from = asks + (asks_to - asks) * (step - 1) / steps;
            let (s_failed, a_failed) = tokio::join!(
                send_signals(clients, load.tenants, s_from, s_to),
                send_asks(clients, load.tenants, a_from, a_to)
            );
            signal_errors += s_failed;
            ask_errors += a_failed;
        }
        (signals, asks) = (signals_to, asks_to);
        let drain_secs = drain(signals.saturating_sub(signal_errors)).await;
        let rss = rss_mb();
        progress(&format!(
            "slice {slice}/{SLICES}: {signals} signals, {asks} asks, {rss:.1} MB after a drain of \
             {drain_secs:.1} s, {:.0} s",
            started.elapsed().as_secs_f64()
        ));
        samples.push(Sample {
            point: slice - 1,
            signals,
            asks,
            rss_mb: rss,
            drain_secs,
        });
    }
    let load_secs = started.elapsed().as_secs_f64();
    let first = samples.first().map_or(0.0, |s| s.rss_mb);
    let last = samples.last().map_or(0.0, |s| s.rss_mb);
    Ok(MemoryReport {
        tenants: load.tenants,
        idle_rss_mb,
        loaded_rss_mb,
        ratio: if first > 0.0 { last / first } else { 0.0 },
        samples,
        signals_per_second: signals as f64 / load_secs.max(f64::EPSILON),
        signal_errors,
        ask_errors,
        load_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_letters_and_the_load_is_spread_over_tenants_and_subjects() {
        assert_eq!(letters(0), "a");
        assert_eq!(letters(27), "bb");
        let subjects: std::collections::BTreeSet<String> =
            (0..10_000).map(|n| signal(7, n).entity).collect();
        assert_eq!(subjects.len() as u64, SUBJECTS);
        let tenants: std::collections::BTreeSet<String> = (0..100)
            .filter_map(|n| ask(7, n).caller.map(|c| c.tenant))
            .collect();
        assert_eq!(tenants.len(), 7);
    }
}
