//! The plate benchmark: a generated world (N people, K work items, one tenant) loaded into a
//! fresh store, the whole system running in process on loopback ports, and the `Plate` RPC
//! measured for a thousand callers against the independent oracle (`ontoloop_testkit::oracle`).
//!
//! It reports the oracle mismatches, the latency percentiles of one client and the throughput
//! of several concurrent ones over loopback gRPC, the same latency with authentication on (the
//! store restarted with `auth.mode = "jwt"`, an HS256 secret generated for the run, each call
//! carrying its caller's token), the peak resident memory of the process (the
//! services with their graphs, plus the generated world the benchmark holds), the org-graph
//! rebuild time at 10,000 and 100,000 people, the event-to-visible latency of an
//! `employee.transferred` pushed through the telemetry intake, and, beside the plate, a flat
//! baseline: BM25 over the items' text (tantivy, the same index `ontoloop-readmodel` serves,
//! with the same permission filter) asked the same question, with its precision against the
//! oracle.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ontoloop_core::knowledge::PageVersion;
use ontoloop_org::Caller;
use ontoloop_org::filters::Plate;
use ontoloop_org::hr::OrgRecords;
use ontoloop_org::items::WorkItem;
use ontoloop_org::org::OrgGraph;
use ontoloop_proto::v1;
use ontoloop_readmodel::PageIndex;
use ontoloop_settings::Settings;
use ontoloop_testkit::generate::{WorldSpec, generate};
use ontoloop_testkit::plate::{matches_oracle, oracle_for, plate_request};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use serde::Serialize;
use tonic::metadata::{Ascii, MetadataValue};

use crate::org::GenSpec;
use crate::percentile;
use ontoloop::client::{Bearer, Clients};
use ontoloop::up::Local;

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct PlateReport {
    /// Plates (of `callers`) that differ from the oracle in items, order, weights or counts.
    pub oracle_mismatches: u64,
    /// Median latency of one Plate over loopback gRPC, one client.
    pub p50_ms: f64,
    /// 99th percentile of the same.
    pub p99_ms: f64,
    /// Median latency of the same plates with `auth.mode = "jwt"`, each call carrying its
    /// caller's HS256 bearer.
    pub p50_auth_ms: f64,
    /// 99th percentile of the same.
    pub p99_auth_ms: f64,
    /// Plates per second with several concurrent clients.
    pub qps: f64,
    /// Peak resident memory of the process (VmHWM) after serving every plate.
    pub peak_rss_mb: f64,
    /// Org-graph rebuild (build from HR records) by number of people.
    pub rebuild_ms: BTreeMap<String, f64>,
    /// Share of each plate's items that the oracle's plate holds (precision at the oracle's
    /// plate size), averaged over callers with a non-empty plate.
    pub precision: f64,
    /// The same for the BM25 baseline's top k over item text, k the oracle's plate size.
    pub baseline_precision: f64,
    /// People in the world.
    pub people: usize,
    /// Work items in the world.
    pub items: usize,
    /// Callers measured.
    pub callers: usize,
    /// Retrieval's first load of the tenant from the store (graphs and index).
    pub load_ms: f64,
    /// From pushing an `employee.transferred` to `Ask` naming the new manager: the median of
    /// [`TRANSFERS`] transfers of different people, one after the other.
    pub event_to_visible_ms: f64,
    /// The slowest of those transfers (the first pays for the analyst's first read of the HR
    /// records).
    pub event_to_visible_max_ms: f64,
}

/// Transfers timed from the intake to a visible answer.
pub const TRANSFERS: usize = 5;

/// Callers measured one by one.
const CALLERS: usize = 1000;
/// Concurrent clients of the throughput run.
const CONCURRENCY: usize = 4;
/// Requests of the throughput run.
const THROUGHPUT_REQUESTS: usize = 8000;

/// Runs the benchmark on the store the settings name (use a fresh one) and the in-process
/// queue.
pub async fn run(settings: Settings, people: usize, items: usize) -> anyhow::Result<PlateReport> {
    let spec = GenSpec {
        people,
        items,
        services: (people / 10).max(1),
        tenants: 1,
        seed: 1,
    };
    let world = crate::org::world(&spec);
    let tenant = world
        .tenants
        .first()
        .context("the generated world has no tenant")?;
    let plate_settings = settings.plate.clone();
    let with_auth = settings.clone();
    let local = Local::start(settings).await?;
    ontoloop_testkit::load::load(&local.ctx.store, &world).await?;
    let mut clients = Clients::from_addrs(&local.addrs, &local.ctx.settings.tls).await?;

    let mut rng = StdRng::seed_from_u64(17);
    let people_ids: Vec<&str> = tenant.org.people().map(|p| p.id.as_str()).collect();
    let callers: Vec<Caller> = (0..CALLERS)
        .filter_map(|_| people_ids.choose(&mut rng))
        .filter_map(|id| Caller::new(&tenant.tenant, id).ok())
        .collect();
    let request = |caller: &Caller| plate_request(caller, world.now, 0);

    let started = Instant::now();
    if let Some(first) = callers.first() {
        clients
            .retrieval
            .plate(request(first))
            .await
            .map_err(|status| anyhow::anyhow!("plate: {}: {}", status.code(), status.message()))?;
    }
    let load_ms = ms(started.elapsed());

    let mut latencies = Vec::with_capacity(callers.len());
    let mut mismatches = 0;
    let mut oracles: Vec<(Caller, Plate)> = Vec::with_capacity(callers.len());
    let mut precision = Mean::default();
    for caller in &callers {
        let started = Instant::now();
        let got = clients
            .retrieval
            .plate(request(caller))
            .await
            .map_err(|status| anyhow::anyhow!("plate: {}: {}", status.code(), status.message()))?
            .into_inner();
        latencies.push(started.elapsed());
        let want = oracle_for(&world, tenant, caller, None, &plate_settings);
        if let Err(difference) = matches_oracle(&got, &want) {
            mismatches += 1;
            if mismatches <= 3 {
                eprintln!("plate of {caller:?} differs from the oracle: {difference}");
            }
        }
        if !want.items.is_empty() {
            let expected: HashSet<&str> = want.items.iter().map(|i| i.id.as_str()).collect();
            let hits = got
                .items
                .iter()
                .take(want.items.len())
                .filter(|i| expected.contains(i.item_id.as_str()))
                .count();
            precision.add(hits as f64 / want.items.len() as f64);
        }
        oracles.push((caller.clone(), want));
    }
    latencies.sort_unstable();

    let qps = throughput(&clients, &callers, &request).await?;
    let peak_rss_mb = super::memory::peak_rss_mb();
    let mut transfers = Vec::with_capacity(TRANSFERS);
    for nth in 0..TRANSFERS {
        transfers.push(transfer_latency(&mut clients, &tenant.tenant, &tenant.org, nth).await?);
    }
    transfers.sort_by(f64::total_cmp);
    let baseline_precision = baseline(&world.items, &tenant.org, &oracles)?;
    local.stop().await?;
    let with_auth = latency_with_auth(with_auth, &callers, &request).await?;

    let mut rebuild_ms = BTreeMap::new();
    for size in [10_000, 100_000] {
        rebuild_ms.insert(size.to_string(), rebuild_time(size));
    }
    Ok(PlateReport {
        oracle_mismatches: mismatches,
        p50_ms: ms(percentile(&latencies, 0.50)),
        p99_ms: ms(percentile(&latencies, 0.99)),
        p50_auth_ms: ms(percentile(&with_auth, 0.50)),
        p99_auth_ms: ms(percentile(&with_auth, 0.99)),
        qps,
        peak_rss_mb,
        rebuild_ms,
        precision: precision.value(),
        baseline_precision,
        people,
        items,
        callers: callers.len(),
        load_ms,
        event_to_visible_ms: transfers
            .get(transfers.len() / 2)
            .copied()
            .unwrap_or_default(),
        event_to_visible_max_ms: transfers.last().copied().unwrap_or_default(),
    })
}

/// The latency of every caller's plate, one after the other, on the store `settings` name
/// restarted with `auth.mode = "jwt"` and a secret of the run's own, each call carrying its
/// caller's token; sorted.
async fn latency_with_auth(
    mut settings: Settings,
    callers: &[Caller],
    request: &(dyn Fn(&Caller) -> v1::PlateRequest + Sync),
) -> anyhow::Result<Vec<Duration>> {
    settings.auth = super::auth::jwt(&settings.auth);
    let bearers = callers
        .iter()
        .map(|caller| {
            let token = super::auth::token(&settings.auth, caller.tenant(), caller.principal())?;
            format!("Bearer {token}")
                .parse::<MetadataValue<Ascii>>()
                .context("a token as a header value")
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let local = Local::start(settings).await?;
    let mut clients =
        Clients::from_addrs_with(&local.addrs, &local.ctx.settings.tls, Bearer::default()).await?;
    let call = |caller: &Caller, bearer: &MetadataValue<Ascii>| {
        let mut call = tonic::Request::new(request(caller));
        call.metadata_mut().insert("authorization", bearer.clone());
        call
    };
    // The first plate loads the tenant from the store; it is not timed.
    if let (Some(caller), Some(bearer)) = (callers.first(), bearers.first()) {
        clients
            .retrieval
            .plate(call(caller, bearer))
            .await
            .map_err(|status| anyhow::anyhow!("plate: {}: {}", status.code(), status.message()))?;
    }
    let mut latencies = Vec::with_capacity(callers.len());
    for (caller, bearer) in callers.iter().zip(&bearers) {
        let started = Instant::now();
        clients
            .retrieval
            .plate(call(caller, bearer))
            .await
            .map_err(|status| anyhow::anyhow!("plate: {}: {}", status.code(), status.message()))?;
        latencies.push(started.elapsed());
    }
    local.stop().await?;
    latencies.sort_unstable();
    Ok(latencies)
}

/// Plates per second from [`CONCURRENCY`] clients sharing [`THROUGHPUT_REQUESTS`] requests.
async fn throughput(
    clients: &Clients,
    callers: &[Caller],
    request: &(dyn Fn(&Caller) -> v1::PlateRequest + Sync),
) -> anyhow::Result<f64> {
    if callers.is_empty() {
        return Ok(0.0);
    }
    let started = Instant::now();
    let per_client = THROUGHPUT_REQUESTS / CONCURRENCY;
    let mut tasks = Vec::new();
    for c in 0..CONCURRENCY {
        let mut client = clients.retrieval.clone();
        let requests: Vec<v1::PlateRequest> = (0..per_client)
            .map(|i| request(&callers[(c * per_client + i) % callers.len()]))
            .collect();
        tasks.push(tokio::spawn(async move {
            for request in requests {
                client.plate(request).await?;
            }
            Ok::<_, tonic::Status>(())
        }));
    }
    for task in tasks {
        task.await
            .context("throughput client panicked")?
            .map_err(|status| anyhow::anyhow!("plate: {}: {}", status.code(), status.message()))?;
    }
    Ok((per_client * CONCURRENCY) as f64 / started.elapsed().as_secs_f64())
}

/// Pushes `employee.transferred` for the `nth` person (of `org` as generated) who has a manager
/// other than the top of the organisation, moving them under the top, and times until `Ask`
/// names the new manager.
pub async fn transfer_latency(
    clients: &mut Clients,
    tenant: &str,
    org: &OrgRecords,
    nth: usize,
) -> anyhow::Result<f64> {
    let top = org
        .people()
        .find(|p| p.manager.is_none())
        .context("nobody at the top of the organisation")?;
    let Some(mover) = org
        .people()
        .filter(|p| p.manager.as_ref().is_some_and(|m| *m != top.id))
        .nth(nth)
    else {
        return Ok(0.0);
    };
    let caller = Some(v1::Caller {
        tenant: tenant.to_owned(),
        principal: "hr-system".to_owned(),
    });
    let question = format!("Who does {} report to?", mover.id);
    let started = Instant::now();
    clients
        .telemetry
        .push_event(v1::Event {
            caller: caller.clone(),
            at: None,
            idempotency_key: String::new(),
            kind: Some(v1::event::Kind::Hr(v1::HrEvent {
                r#type: v1::HrEventType::EmployeeTransferred as i32,
                person_id: mover.id.clone(),
                team: mover.team.clone(),
                manager_id: top.id.clone(),
                ..Default::default()
            })),
        })
        .await
        .map_err(|status| anyhow::anyhow!("push: {}: {}", status.code(), status.message()))?;
    let deadline = started + Duration::from_secs(30);
    loop {
        let answer = clients
            .retrieval
            .ask(v1::AskRequest {
                caller: caller.clone(),
                text: question.clone(),
                ..Default::default()
            })
            .await
            .map_err(|status| anyhow::anyhow!("ask: {}: {}", status.code(), status.message()))?
            .into_inner();
        if answer.hops.first().is_some_and(|hop| hop.value == top.id) {
            return Ok(ms(started.elapsed()));
        }
        if Instant::now() > deadline {
            anyhow::bail!("the transfer was not visible within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The flat baseline: BM25 over each item's text (title, assignee, service, severity, scope,
/// source), restricted to what the caller may read, asked "what is on NAME's plate" with the
/// caller's name, id, role and team; precision at the oracle's plate size.
fn baseline(
    items: &[WorkItem],
    org: &OrgRecords,
    oracles: &[(Caller, Plate)],
) -> anyhow::Result<f64> {
    let names: HashMap<&str, &str> = org
        .people()
        .map(|p| (p.id.as_str(), p.name.as_str()))
        .collect();
    let pages: Vec<PageVersion> = items
        .iter()
        .map(|item| {
            let assignee = item.assignee.as_deref().unwrap_or("nobody");
            PageVersion {
                source_id: item.id.clone(),
                version: 1,
                title: item.title.clone(),
                origin: "work-item".to_owned(),
                body: format!(
                    "assigned to {} {assignee} on service {} severity {} scope {} from {}",
                    names.get(assignee).copied().unwrap_or(""),
                    item.service.as_deref().unwrap_or("none"),
                    item.severity.name(),
                    item.scope.as_str(),
                    item.source.as_str(),
                ),
                updated_at: item.created_at,
                acl: item.acl.clone(),
                confidence: 1.0,
                deleted: false,
                effective_from: None,
            }
        })
        .collect();
    let index = PageIndex::build(&pages).context("build the BM25 baseline index")?;
    let mut precision = Mean::default();
    for (caller, want) in oracles {
        if want.items.is_empty() {
            continue;
        }
        let Some(person) = org.person(caller.principal()) else {
            continue;
        };
        let team = org.team(&person.team).map_or("", |t| t.name.as_str());
        let query = format!(
            "What is on the plate of {} ({}), {} in {team}?",
            person.name, person.id, person.role
        );
        let k = want.items.len();
        let expected: HashSet<&str> = want.items.iter().map(|i| i.id.as_str()).collect();
        let found = index.search(&query, k, caller);
        let hits = found
            .iter()
            .filter(|id| expected.contains(id.as_str()))
            .count();
        precision.add(hits as f64 / k as f64);
    }
    Ok(precision.value())
}

/// Median of five builds of the org graph of a generated organisation of `people` people.
fn rebuild_time(people: usize) -> f64 {
    let world = generate(&WorldSpec {
        seed: 3,
        tenants: 1,
        people,
        services: 0,
        items: 0,
        ..WorldSpec::default()
    });
    let Some(tenant) = world.tenants.first() else {
        return 0.0;
    };
    let mut times: Vec<Duration> = (0..5)
        .map(|_| {
            let started = Instant::now();
            let graph = OrgGraph::build(&tenant.org);
            let elapsed = started.elapsed();
            drop(graph);
            elapsed
        })
        .collect();
    times.sort_unstable();
    ms(times[times.len() / 2])
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A running mean.
#[derive(Debug, Default)]
struct Mean {
    sum: f64,
    count: u64,
}

impl Mean {
    fn add(&mut self, value: f64) {
        self.sum += value;
        self.count += 1;
    }

    fn value(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }
}
