//! The scale benchmark: one tenant of N generated pages under an ontology of its own (no world
//! file), ingested through the telemetry intake, then a steady stream of single-page events while
//! agents ask and validate.
//!
//! Each page (about 1.2 KB) names its own service, the team that owns it, its language and its
//! region, among sentences that state nothing the ontology knows. Ingest is timed from the first
//! push to the moment an Ask that waits for the last page's sequence number answers; one
//! Validate is then timed apart (it builds the read model only if no other call has: in one
//! process the firewall shares retrieval's). Under load,
//! every event moves one service to another team; its event → visible time runs from the push to
//! the first Ask (waiting for the event's sequence number) that answers the new team. Asks and
//! Validates of ten claims run beside the events, one at a time each, and are timed over
//! loopback gRPC. Each event's time is also split where it went: until the intake acknowledged
//! the push (accepted), and until the analyst had settled it in the store (applied, seen at the
//! first commit after it); the rest is the read model's catch-up and the answer. After the
//! stream, searches (k = 10) are timed one at a time, ranked by BM25 and then fused. The
//! binary runs every call with a bearer (`auth.mode = "jwt"`), as agents call.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use ontoloop_core::Caller;
use ontoloop_core::events::Event;
use ontoloop_core::knowledge::PageVersion;
use ontoloop_proto::v1;
use serde::Serialize;

use super::memory::letters;
use ontoloop::client::Clients;
use ontoloop_store::Store;

/// The tenant the benchmark generates.
pub const TENANT: &str = "scale";

/// Events watched for visibility at once (see [`events`]).
const WATCHERS: usize = 32;

/// The longest the benchmark waits for the analyst to apply every page it pushed.
const INGEST_WAIT: Duration = Duration::from_secs(3600);

/// The longest the benchmark waits, from the end of the ingest, for the tenant's dense index to
/// cover every passage: the scale issue's goal (the figure says "not within" beyond it).
const DENSE_WAIT: Duration = Duration::from_secs(1800);

/// Searches timed of each ranking, one at a time, after the stream.
const SEARCHES: usize = 1000;

/// Teams the services are spread over.
const TEAMS: usize = 500;

/// Languages and regions the pages name.
const LANGUAGES: [&str; 6] = ["Rust", "Go", "Java", "Python", "Kotlin", "Elixir"];
const REGIONS: [&str; 4] = ["Frankfurt", "Dublin", "Virginia", "Tokyo"];

/// How big the run is.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Pages (one service each).
    pub pages: usize,
    /// Single-page events per second once ingested.
    pub events_per_second: f64,
    /// How long the steady stream runs.
    pub seconds: u64,
    /// Pushes kept in flight while ingesting.
    pub in_flight: usize,
}

/// Median and 99th percentile, milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Quantiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
}

impl Quantiles {
    pub(crate) fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let at = |q: f64| -> f64 {
            if samples.is_empty() {
                return 0.0;
            }
            let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
            samples[rank - 1].as_secs_f64() * 1000.0
        };
        Self {
            p50: at(0.50),
            p99: at(0.99),
        }
    }
}

/// The benchmark's result, in the shape the issue names.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleReport {
    /// Pages ingested.
    pub pages: usize,
    /// Pages per second from the first push until every page answered.
    pub ingest_pages_per_s: f64,
    /// Sentences of the pages the semantic stage scored through the encoder during the ingest
    /// (the ones some predicate could take; 0 without a model).
    pub ingest_sentences_scored: u64,
    /// Texts the process's sentence encoder sent to its model during the ingest: those
    /// sentences' readings not in its cache, passages the read models embedded, and what the
    /// analyst encodes of the signals the bench's own questions raised (none without a model).
    pub ingest_texts_encoded: Option<u64>,
    /// Those texts per second of the ingest.
    pub encoded_texts_per_s: Option<f64>,
    /// Pushing the same pages again until the last answered, seconds.
    pub reingest_secs: f64,
    /// Sentences scored through the encoder for the same pages again (an unchanged page is not
    /// read again: 0).
    pub reingest_sentences_scored: u64,
    /// Texts the encoder sent to its model meanwhile.
    pub reingest_texts_encoded: Option<u64>,
    /// Seconds from the end of the ingest until the tenant's dense index (built in the
    /// background as pages arrive) covered every passage; `None` when it did not within
    /// [`DENSE_WAIT`], is off (above its limit) or the process has no model.
    pub dense_covered_after_s: Option<f64>,
    /// The dense index at the end of the run (`None` when the run was given no read models).
    pub dense: Option<ontoloop_readmodel::DenseCoverage>,
    /// Push of a single-page event to the first Ask answering its value.
    pub event_to_visible_ms: Quantiles,
    /// Push of a single-page event to the intake's acknowledgement.
    pub event_to_accepted_ms: Quantiles,
    /// Push of a single-page event to the analyst's commit settling it (read off the store at
    /// the first commit after it; empty when the run was given no store).
    pub event_to_applied_ms: Quantiles,
    /// Ask over loopback gRPC while events flow.
    pub ask_ms: Quantiles,
    /// Validate of ten claims while events flow.
    pub validate_ms: Quantiles,
    /// Search (k = 10) ranked by BM25, after the stream, one at a time.
    pub search_bm25_ms: Quantiles,
    /// Search (k = 10) ranked by both lists fused, after the stream, one at a time.
    pub search_fused_ms: Quantiles,
    /// The ranking the service used for the fused searches (BM25 alone while the tenant's
    /// dense index does not cover it).
    pub search_fused_ranking: String,
    /// Searches of each ranking, and how many of them failed.
    pub searches: usize,
    /// The first Validate after the ingest, before the stream: it builds the tenant's read model
    /// if no other call has (in one process the firewall shares the one retrieval built answering
    /// the ingest's last Ask), so the stream's quantiles are of a model that only catches up.
    pub first_validate_ms: f64,
    /// Resident memory of this process (every service and the client) at the end, MiB.
    pub rss_mb: f64,
    /// The most this process held resident at any moment of the run (`VmHWM`), MiB: the
    /// ingest and the read model's first catch-up over it included.
    pub peak_rss_mb: f64,
    /// Size of the store on disk, MiB (0 when the store is not a SQLite file).
    pub store_mb: f64,
    /// Events pushed under load, and how many never became visible.
    pub events: usize,
    /// Events not visible before the run ended (each counted at the run's end in the quantiles).
    pub events_not_visible: usize,
    /// Asks and Validates made under load, and how many failed.
    pub asks: usize,
    /// Validates made under load.
    pub validates: usize,
    /// Calls that failed under load, and searches that failed.
    pub errors: usize,
}

impl ScaleReport {
    /// How far the dense index got, in words.
    fn dense_line(&self) -> String {
        use ontoloop_readmodel::DenseState;
        match (self.dense_covered_after_s, self.dense) {
            (Some(after), Some(dense)) => format!(
                "covers every passage {after:.1} s after the ingest ({} passages)",
                dense.passages
            ),
            (_, None) => "not measured (the run was given no read models)".to_owned(),
            (None, Some(dense)) if dense.state == DenseState::Off => {
                "off: no model, or more passages than it holds (BM25 alone ranks)".to_owned()
            }
            (None, Some(dense)) => format!(
                "not covering every passage within {} s of the ingest: {:?}, {} passages held, \
                 {} pages waiting",
                DENSE_WAIT.as_secs(),
                dense.state,
                dense.passages,
                dense.waiting_pages
            ),
        }
    }

    /// The report as a table.
    pub fn to_text(&self) -> String {
        format!(
            "scale: one tenant of {} generated pages, every service in this process\n\
             ingest            {:>9.0} pages/s   ({} sentences scored by the encoder; {} texts \
             encoded, {} a second)\n\
             same pages again  {:>9.1} s         ({} sentences scored; {} texts encoded)\n\
             dense index       {}\n\
             event -> visible  p50 {:>8.1} ms   p99 {:>8.1} ms   ({} events, {} not visible)\n\
               accepted        p50 {:>8.1} ms   p99 {:>8.1} ms\n\
               applied         p50 {:>8.1} ms   p99 {:>8.1} ms\n\
             ask               p50 {:>8.2} ms   p99 {:>8.2} ms   ({} asks)\n\
             validate (10)     p50 {:>8.2} ms   p99 {:>8.2} ms   ({} validates; the first, \
             before the stream, {:.0} ms)\n\
             search bm25       p50 {:>8.2} ms   p99 {:>8.2} ms   ({} searches, k = 10, after the \
             stream)\n\
             search fused      p50 {:>8.2} ms   p99 {:>8.2} ms   (ranked {})\n\
             rss {:.1} MB (peak {:.1} MB), store {:.1} MB, {} calls failed\n",
            self.pages,
            self.ingest_pages_per_s,
            self.ingest_sentences_scored,
            shown(self.ingest_texts_encoded),
            self.encoded_texts_per_s
                .map_or_else(|| "none".to_owned(), |r| format!("{r:.0}")),
            self.reingest_secs,
            self.reingest_sentences_scored,
            shown(self.reingest_texts_encoded),
            self.dense_line(),
            self.event_to_visible_ms.p50,
            self.event_to_visible_ms.p99,
            self.events,
            self.events_not_visible,
            self.event_to_accepted_ms.p50,
            self.event_to_accepted_ms.p99,
            self.event_to_applied_ms.p50,
            self.event_to_applied_ms.p99,
            self.ask_ms.p50,
            self.ask_ms.p99,
            self.asks,
            self.validate_ms.p50,
            self.validate_ms.p99,
            self.validates,
            self.first_validate_ms,
            self.search_bm25_ms.p50,
            self.search_bm25_ms.p99,
            self.searches,
            self.search_fused_ms.p50,
            self.search_fused_ms.p99,
            self.search_fused_ranking,
            self.rss_mb,
            self.peak_rss_mb,
            self.store_mb,
            self.errors,
        )
    }
}

/// The generated ontology: services owned by teams, written in languages, running in regions.
pub(crate) fn ontology() -> serde_json::Value {
    serde_json::json!({
        "predicates": [
            {"name": "owned_by", "subject_type": "service", "object_type": "team",
             "patterns": ["{s} is owned by the {o} team."]},
            {"name": "written_in", "subject_type": "service", "object_type": "language",
             "patterns": ["{s} is written in {o}."]},
            {"name": "runs_in", "subject_type": "service", "object_type": "region",
             "patterns": ["{s} runs in {o}."]}
        ],
        "authority": {"default": 1}
    })
}

pub(crate) fn service(k: usize) -> String {
    format!("Svc{}", letters(k))
}

fn team(n: usize) -> String {
    format!("Team{}", letters(n % TEAMS))
}

/// Page `k` with its owner `owner`: about 1.2 KB, three sentences the ontology reads among
/// paragraphs that state nothing it knows.
pub(crate) fn catalog_page(k: usize, owner: usize) -> Event {
    Event::DocUpsert {
        doc_id: catalog_id(k),
        title: service(k),
        origin: "catalog".to_owned(),
        body: catalog_body(k, owner),
        acl: Vec::new(),
        hold: false,
        confidence: None,
        effective_from: None,
    }
}

/// Page `k`'s id.
pub(crate) fn catalog_id(k: usize) -> String {
    format!("svc-{k}")
}

/// Version 1 of page `k` ([`catalog_id`], titled by its [`service`]) reading `body`, written at
/// `written`, for the benchmarks that build a graph in process.
pub(crate) fn catalog_version(
    k: usize,
    body: String,
    written: chrono::DateTime<chrono::Utc>,
) -> PageVersion {
    PageVersion {
        source_id: catalog_id(k),
        version: 1,
        title: service(k),
        origin: "catalog".to_owned(),
        body,
        updated_at: written,
        acl: Vec::new(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

/// Page `k`'s text (see [`catalog_page`]).
pub(crate) fn catalog_body(k: usize, owner: usize) -> String {
    let name = service(k);
    format!(
        "# {name}\n\n{name} is owned by the {team} team. {name} is written in {language}. \
         {name} runs in {region}.\n\n\
         ## Operations\n\nDeployments go out during working hours after the change has been \
         reviewed by two people. Alerts page the on-call engineer, who acknowledges them within \
         fifteen minutes and writes down what was done in the incident channel. Dashboards show \
         request rates, error rates and latency percentiles for the last day and the last week.\n\n\
         ## Support\n\nQuestions from other groups arrive through the shared request form and \
         are answered within two working days. Runbooks describe how to restart workers, how to \
         drain traffic before maintenance and how to restore from the nightly backup. Capacity \
         is reviewed every quarter against the forecast, and unused resources are released.\n\n\
         ## History\n\nThe first version was written as an internal tool and later opened to \
         every product. Its interfaces are versioned, and older versions are kept for six \
         months after a replacement ships. Page {k} of the catalog.\n",
        team = team(owner),
        language = LANGUAGES[k % LANGUAGES.len()],
        region = REGIONS[k % REGIONS.len()],
    )
}

fn wire_caller() -> v1::Caller {
    v1::Caller {
        tenant: TENANT.to_owned(),
        principal: "bench".to_owned(),
    }
}

fn ask(k: usize, min_sequence: u64) -> v1::AskRequest {
    v1::AskRequest {
        caller: Some(wire_caller()),
        text: format!("Who owns {}?", service(k)),
        min_sequence,
        ..Default::default()
    }
}

/// A search for what a service's page says beside its facts, ranked `ranking`.
fn search(k: usize, ranking: v1::PassageRanking) -> v1::SearchRequest {
    v1::SearchRequest {
        caller: Some(wire_caller()),
        query: format!("how are {} workers restarted", service(k)),
        k: 10,
        ranking: ranking.into(),
        ..Default::default()
    }
}

/// Ten claims about services, true or not as the generated pages make them.
fn validate(k: usize, pages: usize) -> v1::ValidateRequest {
    let claims = (0..10)
        .map(|i| {
            let s = (k + i * 7919) % pages;
            v1::Claim {
                subject: service(s),
                predicate: if i % 2 == 0 { "written_in" } else { "runs_in" }.to_owned(),
                object: if i % 2 == 0 {
                    LANGUAGES[(s + i) % LANGUAGES.len()]
                } else {
                    REGIONS[s % REGIONS.len()]
                }
                .to_owned(),
                ..Default::default()
            }
        })
        .collect();
    v1::ValidateRequest {
        caller: Some(wire_caller()),
        input: Some(v1::validate_request::Input::Claims(v1::ClaimList {
            claims,
        })),
        ..Default::default()
    }
}

async fn push(clients: &Clients, caller: &Caller, event: &Event) -> anyhow::Result<u64> {
    let pushed = ontoloop_proto::convert::event_to_wire(caller, event, chrono::Utc::now());
    Ok(clients
        .telemetry
        .clone()
        .push_event(pushed)
        .await
        .with_context(|| format!("push {}", event.kind()))?
        .into_inner()
        .sequence)
}

/// Pushes the load's pages, `in_flight` at a time, reporting every 10,000; the highest
/// sequence number acknowledged.
async fn push_pages(
    clients: &Clients,
    caller: &Caller,
    load: &Load,
    started: Instant,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<u64> {
    let mut last = 0u64;
    let mut done = 0usize;
    let mut pushes = futures::stream::iter(0..load.pages)
        .map(|k| {
            let caller = caller.clone();
            async move { push(clients, &caller, &catalog_page(k, k)).await }
        })
        .buffer_unordered(load.in_flight.max(1));
    while let Some(seq) = pushes.next().await {
        last = last.max(seq?);
        done += 1;
        if done.is_multiple_of(10_000) {
            progress(&format!(
                "{done} pages pushed, {:.0} s",
                started.elapsed().as_secs_f64()
            ));
        }
    }
    Ok(last)
}

/// How many texts the encoder took between two readings of its count (none without one).
fn since(before: Option<u64>, after: Option<u64>) -> Option<u64> {
    Some(after?.saturating_sub(before?))
}

/// A count, or "not counted".
fn shown(count: Option<u64>) -> String {
    count.map_or_else(|| "not counted".to_owned(), |n| n.to_string())
}

/// Runs the load through `clients` (a system in this process), reporting progress lines;
/// `store` (the system's) tells when each event under load was applied, `store_mb` measures it
/// at the end, `encoded` reads how many texts the process's sentence encoder has taken, and
/// `read_models` (the system's) tell how far the tenant's dense index got.
pub async fn run(
    clients: &Clients,
    store: Option<&Store>,
    read_models: Option<std::sync::Arc<ontoloop_readmodel::Snapshots>>,
    load: Load,
    store_mb: impl Fn() -> f64,
    encoded: impl Fn() -> Option<u64>,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ScaleReport> {
    // Each line says what the process holds, so the moment of its peak can be told.
    let progress = &mut |line: &str| {
        progress(&format!(
            "{line} [rss {:.0} MiB, peak {:.0} MiB]",
            super::memory::rss_mb(),
            super::memory::peak_rss_mb()
        ));
    };
    anyhow::ensure!(load.pages > 0, "--pages must be at least 1");
    anyhow::ensure!(
        load.events_per_second > 0.0 && load.events_per_second <= 10_000.0,
        "--events-per-second must be above 0 and at most 10000"
    );
    let caller = Caller::new(TENANT, "bench")?;
    let ontology_seq = push(
        clients,
        &caller,
        &Event::OntologySet {
            ontology: ontology(),
        },
    )
    .await?;
    visible(clients, ask(0, ontology_seq), Duration::from_secs(60))
        .await
        .context("wait for the ontology")?;

    progress(&format!("ingesting {} pages", load.pages));
    let scored = ontoloop_core::knowledge::semantic::sentences_scored_by_encoder;
    let (encoded_before, scored_before) = (encoded(), scored());
    let started = Instant::now();
    let last = push_pages(clients, &caller, &load, started, progress).await?;
    let pushed_secs = started.elapsed().as_secs_f64();
    progress(&format!(
        "{} pages pushed in {pushed_secs:.1} s; waiting for the analyst to apply them",
        load.pages
    ));
    let answer = visible(clients, ask(load.pages - 1, last), INGEST_WAIT)
        .await
        .context("wait for every page")?;
    progress(&format!(
        "who owns {}? {:?} (status {}, {})",
        service(load.pages - 1),
        answer.value,
        answer.status,
        answer.abstain_reason
    ));
    let ingest_secs = started.elapsed().as_secs_f64();
    let ingest_pages_per_s = load.pages as f64 / ingest_secs.max(1e-9);
    let ingest_texts_encoded = since(encoded_before, encoded());
    let ingest_sentences_scored = scored() - scored_before;
    progress(&format!(
        "ingested: pushed in {pushed_secs:.1} s, visible after {ingest_secs:.1} s \
         ({ingest_pages_per_s:.0} pages/s); sentences scored by the encoder: \
         {ingest_sentences_scored}; texts sent to it: {}",
        shown(ingest_texts_encoded)
    ));

    let dense_watch = read_models
        .clone()
        .map(|models| tokio::spawn(dense_covered(models)));

    // The same pages again: an unchanged page is not read again, so nothing is encoded.
    progress(&format!("ingesting the same {} pages again", load.pages));
    let (encoded_before, scored_before) = (encoded(), scored());
    let again = Instant::now();
    let last = push_pages(clients, &caller, &load, again, progress).await?;
    visible(clients, ask(load.pages - 1, last), INGEST_WAIT)
        .await
        .context("wait for the same pages again")?;
    let reingest_secs = again.elapsed().as_secs_f64();
    let reingest_texts_encoded = since(encoded_before, encoded());
    let reingest_sentences_scored = scored() - scored_before;
    progress(&format!(
        "ingested again in {reingest_secs:.1} s; sentences scored by the encoder: \
         {reingest_sentences_scored}; texts sent to it: {}",
        shown(reingest_texts_encoded)
    ));

    let first = Instant::now();
    clients
        .firewall
        .clone()
        .validate(validate(0, load.pages))
        .await
        .context("the first validate")?;
    let first_validate_ms = first.elapsed().as_secs_f64() * 1000.0;
    progress(&format!(
        "first validate (the read model built, if no other call built it) in {first_validate_ms:.0} ms"
    ));
    progress(&format!(
        "steady stream: {} events/s for {} s while agents ask and validate",
        load.events_per_second, load.seconds
    ));
    let until = Instant::now() + Duration::from_secs(load.seconds);
    let pushed = std::sync::Arc::new(Pushed::default());
    let (events, asks, validates, applied) = tokio::join!(
        events(clients, &caller, load, until, &pushed),
        asks(clients, load.pages, until),
        validates(clients, load.pages, until),
        applied(store, &pushed, until),
    );
    let (visible, accepted, not_visible, event_errors) = events;
    let (ask_times, ask_errors) = asks;
    let (validate_times, validate_errors) = validates;
    let dense_covered_after_s = match dense_watch {
        Some(watch) => {
            progress("waiting for the dense index to cover every passage");
            watch.await.ok().flatten()
        }
        None => None,
    };
    progress(&format!(
        "searches: {SEARCHES} ranked by BM25, then {SEARCHES} fused, one at a time"
    ));
    let (bm25_times, bm25_errors, _) =
        searches(clients, load.pages, v1::PassageRanking::Bm25).await;
    let (fused_times, fused_errors, fused_ranking) =
        searches(clients, load.pages, v1::PassageRanking::Fused).await;
    let dense = match &read_models {
        Some(models) => Some(models.recent(TENANT).await?.dense_coverage()),
        None => None,
    };
    progress(&format!("dense index: {dense:?}"));
    Ok(ScaleReport {
        pages: load.pages,
        ingest_pages_per_s,
        ingest_sentences_scored,
        ingest_texts_encoded,
        encoded_texts_per_s: ingest_texts_encoded.map(|n| n as f64 / ingest_secs.max(1e-9)),
        reingest_secs,
        reingest_sentences_scored,
        reingest_texts_encoded,
        dense_covered_after_s,
        dense,
        events: visible.len(),
        events_not_visible: not_visible,
        event_to_visible_ms: Quantiles::of(visible),
        event_to_accepted_ms: Quantiles::of(accepted),
        event_to_applied_ms: Quantiles::of(applied),
        asks: ask_times.len(),
        ask_ms: Quantiles::of(ask_times),
        validates: validate_times.len(),
        validate_ms: Quantiles::of(validate_times),
        first_validate_ms,
        searches: bm25_times.len(),
        search_bm25_ms: Quantiles::of(bm25_times),
        search_fused_ms: Quantiles::of(fused_times),
        search_fused_ranking: fused_ranking,
        rss_mb: super::memory::rss_mb(),
        peak_rss_mb: super::memory::peak_rss_mb(),
        store_mb: store_mb(),
        errors: event_errors + ask_errors + validate_errors + bm25_errors + fused_errors,
    })
}

/// Asks `request` (which waits for its `min_sequence`) until it is answered: an Ask whose wait
/// ran out (`UNAVAILABLE`, the analyst still behind) is asked again, up to `limit` in all.
/// Seconds until the tenant's dense index covers every passage, read each second from now; `None`
/// when it is off or does not within [`DENSE_WAIT`].
async fn dense_covered(models: std::sync::Arc<ontoloop_readmodel::Snapshots>) -> Option<f64> {
    let started = Instant::now();
    while started.elapsed() < DENSE_WAIT {
        if let Ok(model) = models.recent(TENANT).await {
            let coverage = model.dense_coverage();
            drop(model);
            if coverage.complete() {
                return Some(started.elapsed().as_secs_f64());
            }
            if coverage.state == ontoloop_readmodel::DenseState::Off {
                return None;
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    None
}

/// Asks `request` until it is answered, polling every 10 ms ([`answered`]).
async fn visible(
    clients: &Clients,
    request: v1::AskRequest,
    limit: Duration,
) -> anyhow::Result<v1::Answer> {
    answered(clients, request, limit, Duration::from_millis(10)).await
}

/// Asks `request` until it is answered: an Ask refused as `UNAVAILABLE` (the analyst is behind
/// and its wait for `min_sequence` ran out, or the store is away) or `RESOURCE_EXHAUSTED`
/// (retrieval is at its limit of calls in flight) is asked again after `poll`, within `limit`.
pub(crate) async fn answered(
    clients: &Clients,
    request: v1::AskRequest,
    limit: Duration,
    poll: Duration,
) -> anyhow::Result<v1::Answer> {
    let started = Instant::now();
    loop {
        match clients.retrieval.clone().ask(request.clone()).await {
            Ok(answer) => return Ok(answer.into_inner()),
            Err(status)
                if matches!(
                    status.code(),
                    tonic::Code::Unavailable | tonic::Code::ResourceExhausted
                ) && started.elapsed() < limit =>
            {
                tokio::time::sleep(poll).await;
            }
            Err(status) => return Err(anyhow::Error::new(status).context("ask")),
        }
    }
}

/// Events pushed under load and not yet seen applied: each one's number and when its push
/// began.
#[derive(Default)]
struct Pushed(std::sync::Mutex<std::collections::BTreeMap<i64, Instant>>);

impl Pushed {
    fn insert(&self, seq: u64, started: Instant) {
        if let Ok(seq) = i64::try_from(seq) {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(seq, started);
        }
    }

    /// Whether every event pushed so far was seen applied.
    fn is_empty(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_empty()
    }

    /// Takes out every event numbered below `pending` (the lowest still pending), with the
    /// time from its push to `now`.
    fn settled_below(&self, pending: i64, now: Instant) -> Vec<Duration> {
        let mut held = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let still = held.split_off(&pending);
        let done = std::mem::replace(&mut *held, still);
        done.into_values().map(|started| now - started).collect()
    }
}

/// When each pushed event was applied: at each commit the store reports (and at least every
/// 50 ms), the lowest number still pending says which of them are settled, the analyst
/// settling a tenant's events in order. One read per commit, whatever the events in flight.
async fn applied(store: Option<&Store>, pushed: &Pushed, until: Instant) -> Vec<Duration> {
    let Some(store) = store else {
        return Vec::new();
    };
    let mut commits = store.commits();
    let mut times = Vec::new();
    // Past the stream's end, as long as its watchers may still wait.
    let end = until + Duration::from_secs(30);
    while Instant::now() < end {
        tokio::select! {
            _ = commits.changed() => {}
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        let Ok(lowest) = store
            .intake_pending_numbers_before(TENANT, i64::MAX, 1)
            .await
        else {
            continue;
        };
        times.extend(
            pushed.settled_below(lowest.first().copied().unwrap_or(i64::MAX), Instant::now()),
        );
        if Instant::now() >= until && pushed.is_empty() {
            break;
        }
    }
    times
}

/// The steady stream: every tick moves one service to another team, each event watched until
/// an Ask answers its new team. Returns the times (an event never seen counts as the time until
/// the end of the wait), the intake's acknowledgements, those not seen, and the calls that
/// failed.
async fn events(
    clients: &Clients,
    caller: &Caller,
    load: Load,
    until: Instant,
    pushed: &std::sync::Arc<Pushed>,
) -> (Vec<Duration>, Vec<Duration>, usize, usize) {
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / load.events_per_second));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut watchers = tokio::task::JoinSet::new();
    // Watchers asking at once: each event's time runs from its push whether or not its watcher
    // had to wait for a turn, and the benchmark's own Asks never crowd out the agents'.
    let turns = std::sync::Arc::new(tokio::sync::Semaphore::new(WATCHERS));
    let mut n = 0usize;
    while Instant::now() < until {
        ticker.tick().await;
        // Services in a stride over the catalog, each to a team it never had.
        let k = (n * 7919) % load.pages;
        let owner = k + TEAMS / 2 + n;
        n += 1;
        let (clients, caller, turns) = (clients.clone(), caller.clone(), turns.clone());
        let pushed = std::sync::Arc::clone(pushed);
        watchers.spawn(async move {
            let started = Instant::now();
            let seq = push(&clients, &caller, &catalog_page(k, owner)).await?;
            let accepted = started.elapsed();
            pushed.insert(seq, started);
            let _turn = turns.acquire_owned().await?;
            let expected = team(owner);
            // The first answer with the new team: min_sequence waits for the event itself; an
            // answer still naming the old team (never, when the wait works) is asked again.
            let deadline = started + Duration::from_secs(30);
            loop {
                let answer = visible(&clients, ask(k, seq), Duration::from_secs(30))
                    .await
                    .context("ask")?;
                if answer.value.contains(&expected) {
                    return Ok::<_, anyhow::Error>((accepted, Some(started.elapsed())));
                }
                if Instant::now() > deadline {
                    eprintln!(
                        "bench: {} never answered {expected} (answered {:?}, status {})",
                        service(k),
                        answer.value,
                        answer.status
                    );
                    return Ok((accepted, None));
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
    }
    let (mut visible, mut accepted, mut not_visible, mut errors) = (Vec::new(), Vec::new(), 0, 0);
    while let Some(joined) = watchers.join_next().await {
        if let Ok(Ok((took, _))) = &joined {
            accepted.push(*took);
        }
        match joined {
            Ok(Ok((_, Some(time)))) => visible.push(time),
            Ok(Ok((_, None))) => not_visible += 1,
            Ok(Err(err)) => {
                tracing::warn!(error = %format!("{err:#}"), "an event under load failed");
                errors += 1;
            }
            Err(_) => errors += 1,
        }
    }
    (visible, accepted, not_visible, errors)
}

/// Asks one at a time about services across the catalog until `until`.
async fn asks(clients: &Clients, pages: usize, until: Instant) -> (Vec<Duration>, usize) {
    let retrieval = &clients.retrieval;
    one_at_a_time(until, |n| {
        let (mut retrieval, request) = (retrieval.clone(), ask((n * 104_729) % pages, 0));
        async move { retrieval.ask(request).await }
    })
    .await
}

/// Validates of ten claims, one at a time, until `until`.
async fn validates(clients: &Clients, pages: usize, until: Instant) -> (Vec<Duration>, usize) {
    let firewall = &clients.firewall;
    one_at_a_time(until, |n| {
        let (mut firewall, request) = (firewall.clone(), validate((n * 15_485_863) % pages, pages));
        async move { firewall.validate(request).await }
    })
    .await
}

/// [`SEARCHES`] searches ranked `ranking`, one at a time, over services across the catalog: the
/// time of each that succeeded, how many failed, and the ranking the service said it used.
async fn searches(
    clients: &Clients,
    pages: usize,
    ranking: v1::PassageRanking,
) -> (Vec<Duration>, usize, String) {
    let (mut times, mut errors, mut used) = (Vec::with_capacity(SEARCHES), 0, String::new());
    for n in 0..SEARCHES {
        let request = search((n * 104_729) % pages, ranking);
        let started = Instant::now();
        match clients.retrieval.clone().search(request).await {
            Ok(found) => {
                times.push(started.elapsed());
                used = found.into_inner().ranking().as_str_name().to_owned();
            }
            Err(_) => errors += 1,
        }
    }
    (times, errors, used)
}

/// Sends call `n` that `call` makes (0, 1, 2, ...) one at a time until `until`: the time of
/// each that succeeded (from sending to its answer), and how many failed.
async fn one_at_a_time<T, Call>(
    until: Instant,
    mut call: impl FnMut(usize) -> Call,
) -> (Vec<Duration>, usize)
where
    Call: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let (mut times, mut errors, mut n) = (Vec::new(), 0, 0usize);
    while Instant::now() < until {
        let sent = call(n);
        n += 1;
        let started = Instant::now();
        match sent.await {
            Ok(_) => times.push(started.elapsed()),
            Err(_) => errors += 1,
        }
    }
    (times, errors)
}

/// Size of the files of a SQLite store (`sqlite://PATH?...`: the database, its WAL and shared
/// memory), MiB; 0 for any other store.
pub fn sqlite_mb(url: &str) -> f64 {
    let Some(rest) = url.strip_prefix("sqlite://") else {
        return 0.0;
    };
    let path = rest.split('?').next().unwrap_or(rest);
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{path}{suffix}")).ok())
        .map(|m| m.len() as f64)
        .sum::<f64>()
        / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_about_the_size_the_issue_names_and_state_three_facts() {
        let Event::DocUpsert { body, title, .. } = catalog_page(12_345, 7) else {
            panic!("a page is a doc.upsert");
        };
        assert!((1000..1500).contains(&body.len()), "{}", body.len());
        assert!(body.contains(&format!("{title} is owned by the {} team.", team(7))));
        assert!(body.contains(&format!("{title} is written in")));
        assert!(body.contains(&format!("{title} runs in")));
    }

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let q = Quantiles::of((1..=100).map(Duration::from_millis).collect());
        assert_eq!((q.p50, q.p99), (50.0, 99.0));
        assert_eq!(Quantiles::of(Vec::new()).p99, 0.0);
    }

    #[test]
    fn events_below_the_lowest_pending_number_are_the_settled_ones() {
        let pushed = Pushed::default();
        let start = Instant::now();
        for seq in [5, 6, 8] {
            pushed.insert(seq, start);
        }
        let now = start + Duration::from_millis(40);
        // 7 still pending: 5 and 6 are settled, 8 waits.
        assert_eq!(
            pushed.settled_below(7, now),
            vec![Duration::from_millis(40); 2]
        );
        assert!(
            pushed.settled_below(7, now).is_empty(),
            "each is taken once"
        );
        // Nothing pending (the store says so with no number): the rest is settled.
        assert_eq!(pushed.settled_below(i64::MAX, now).len(), 1);
    }

    #[test]
    fn names_are_distinct_words() {
        assert_ne!(service(0), service(26));
        assert!(service(100_000).chars().all(|c| c.is_ascii_alphabetic()));
    }
}
