//! The outage benchmark (issue 13): Ask and Validate latency over loopback gRPC while RabbitMQ
//! is unreachable. The whole system runs in process on a PostgreSQL database of the run's own
//! (created, then dropped) and reaches RabbitMQ through a TCP proxy of its own
//! ([`ontoloop_testkit::proxy::Proxy`]). A world is loaded through the intake and applied; then
//! the world's questions are asked and its labelled claims (the firewall benchmark's set: true,
//! stale, draft, invented) validated, one call after the other, in three phases: the broker up,
//! the proxy cut (listener closed, connections dropped), the proxy restored. The abstentions and
//! blocks these answers reveal are signals, which retrieval and the firewall hand to their
//! bounded off-request-path buffer (`ontoloop_runtime::signals::Background`): while the broker
//! is away the buffer's task waits on publishes, the buffer fills and reports are dropped and
//! counted, and no answer should wait. The acceptance figure: each call's p99 with the broker
//! cut within [`LIMIT`] times its p99 with it up.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ontoloop_core::world::World;
use ontoloop_core::{Caller, Severity, SignalType};
use ontoloop_proto::v1;
use ontoloop_settings::Settings;
use ontoloop_testkit::proxy::Proxy;
use ontoloop_testkit::servers::{PgDatabase, amqp_namespace};
use serde::Serialize;

use crate::percentile;
use ontoloop::client::{self, Clients};
use ontoloop::up::Local;

/// The most a phase's p99 may be, as a multiple of the p99 with the broker up.
pub const LIMIT: f64 = 2.0;

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The world's name.
    pub world: String,
    /// Calls of each kind per phase.
    pub requests: usize,
    /// Distinct questions asked (cycled through).
    pub questions: usize,
    /// Distinct labelled claims validated (cycled through).
    pub claims: usize,
    /// Broker up, broker cut, restored.
    pub phases: Vec<Phase>,
    /// Ask's p99 with the broker cut over its p99 with it up.
    pub ask_ratio: f64,
    /// Validate's p99 with the broker cut over its p99 with it up.
    pub validate_ratio: f64,
    /// The acceptance limit of both ratios.
    pub limit: f64,
}

/// One phase's latencies (microseconds) and what became of the signals reported meanwhile.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// `broker up`, `broker cut` or `restored`.
    pub phase: &'static str,
    /// Ask, p50.
    pub ask_p50_us: u64,
    /// Ask, p99.
    pub ask_p99_us: u64,
    /// Validate (one claim), p50.
    pub validate_p50_us: u64,
    /// Validate, p99.
    pub validate_p99_us: u64,
    /// Signals the intake took in during the phase (`ontoloop_signals_reported_total`).
    pub signals_reported: u64,
    /// Signals retrieval and the firewall dropped because their buffer was full
    /// (`ontoloop_signals_dropped_total`).
    pub signals_dropped: u64,
    /// Wall time of the phase, in seconds.
    pub seconds: f64,
}

impl Report {
    /// Whether both ratios are within the limit.
    pub fn holds(&self) -> bool {
        within(self.ask_ratio, self.limit) && within(self.validate_ratio, self.limit)
    }

    /// The table.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "outage benchmark on {}: {} Ask and {} Validate calls per phase over loopback gRPC \
             ({} questions, {} labelled claims, cycled), PostgreSQL + RabbitMQ through a proxy\n\n",
            self.world, self.requests, self.requests, self.questions, self.claims
        );
        out.push_str(
            "phase       | ask p50 ms | ask p99 ms | validate p50 ms | validate p99 ms | signals reported | signals dropped | seconds\n\
             ------------|------------|------------|-----------------|-----------------|------------------|-----------------|--------\n",
        );
        for p in &self.phases {
            out.push_str(&format!(
                "{:<11} | {:>10.2} | {:>10.2} | {:>15.2} | {:>15.2} | {:>16} | {:>15} | {:>7.1}\n",
                p.phase,
                ms(p.ask_p50_us),
                ms(p.ask_p99_us),
                ms(p.validate_p50_us),
                ms(p.validate_p99_us),
                p.signals_reported,
                p.signals_dropped,
                p.seconds
            ));
        }
        out.push_str(&format!(
            "\np99 broker cut / broker up: Ask {:.2}x, Validate {:.2}x (limit {:.0}x): {}\n",
            self.ask_ratio,
            self.validate_ratio,
            self.limit,
            if self.holds() { "holds" } else { "EXCEEDED" }
        ));
        out
    }
}

/// Runs the benchmark: `settings` with the store on a fresh database of the machine's PostgreSQL
/// and the queue on `amqp_url` (an `amqp://` URL) through the proxy, `requests` calls of each
/// kind per phase.
pub async fn run(
    mut settings: Settings,
    world: &World,
    amqp_url: &str,
    requests: usize,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Report> {
    anyhow::ensure!(requests > 0, "--requests must be positive");
    let (upstream, _) = ontoloop_testkit::proxy::amqp_url_through(amqp_url, 0)?;
    let upstream: SocketAddr = tokio::net::lookup_host(&upstream)
        .await
        .with_context(|| format!("resolve RabbitMQ's address {upstream}"))?
        .next()
        .with_context(|| format!("RabbitMQ's address {upstream} resolves to nothing"))?;
    let proxy = Proxy::start(upstream)
        .await
        .context("start the proxy to RabbitMQ")?;
    let (_, proxied) = ontoloop_testkit::proxy::amqp_url_through(amqp_url, proxy.port())?;
    let database = PgDatabase::create()
        .await
        .context("create a PostgreSQL database (ONTOLOOP_TEST_DATABASE_URL)")?;
    progress("starting the system on a fresh PostgreSQL database and RabbitMQ through a proxy");
    settings.store.url = database.url.clone();
    settings.queue.url = proxied;
    settings.queue.namespace = amqp_namespace("outage");
    let result = match Local::start(settings.clone()).await {
        Ok(local) => {
            let result = measure(&local, &proxy, world, &settings, requests, progress).await;
            let stopped = local.stop().await;
            result.and_then(|report| stopped.map(|()| report))
        }
        Err(err) => Err(err),
    };
    proxy.cut();
    if let Err(err) = database.drop_now().await {
        tracing::warn!(error = %err, "cannot drop the benchmark's database");
    }
    result
}

/// Loads the world, then times the three phases.
async fn measure(
    local: &Local,
    proxy: &Proxy,
    world: &World,
    settings: &Settings,
    requests: usize,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Report> {
    let mut clients = Clients::from_addrs(&local.addrs, &local.ctx.settings.tls).await?;
    let scenario = super::drift::patched_scenario(world)?;
    progress(&format!(
        "loading scenario {} through the intake",
        scenario.name
    ));
    let started = Instant::now();
    let (caller, seq) =
        super::drift::replay_only(world, clients.clone(), scenario, "outage").await?;
    ontoloop_runtime::wait_for_sequence(
        &local.ctx.store,
        caller.tenant(),
        seq,
        Duration::from_secs(600),
    )
    .await
    .context("wait until the world is applied")?;
    progress(&format!(
        "applied {seq} intake events in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    let set = super::firewall::labelled_set(
        world,
        scenario,
        &mut clients,
        &caller,
        seq,
        settings.retrieval.hedge_below_authority,
    )
    .await?;
    let asks = questions(world, &caller);
    let claims: Vec<v1::ValidateRequest> = set
        .iter()
        .map(|labelled| v1::ValidateRequest {
            caller: client::caller(&caller),
            input: Some(v1::validate_request::Input::Claims(v1::ClaimList {
                claims: vec![labelled.claim.clone()],
            })),
            ..Default::default()
        })
        .collect();
    anyhow::ensure!(!asks.is_empty(), "the world has no questions to ask");
    anyhow::ensure!(!claims.is_empty(), "the world gave no claims to validate");
    // Every read model built before anything is timed.
    timed(&mut clients, &asks, &claims, asks.len().max(claims.len())).await?;
    let mut phases = Vec::new();
    progress(&format!("broker up: {requests} Ask and Validate calls"));
    phases.push(phase("broker up", &mut clients, &asks, &claims, requests).await?);
    proxy.cut();
    progress(&format!(
        "broker cut (proxy closed, connections dropped): {requests} Ask and Validate calls"
    ));
    phases.push(phase("broker cut", &mut clients, &asks, &claims, requests).await?);
    proxy.restore().context("restore the proxy to RabbitMQ")?;
    progress(&format!("restored: {requests} Ask and Validate calls"));
    phases.push(phase("restored", &mut clients, &asks, &claims, requests).await?);
    Ok(Report {
        world: world.name.clone(),
        requests,
        questions: asks.len(),
        claims: claims.len(),
        ask_ratio: ratio(phases[1].ask_p99_us, phases[0].ask_p99_us),
        validate_ratio: ratio(phases[1].validate_p99_us, phases[0].validate_p99_us),
        phases,
        limit: LIMIT,
    })
}

/// Every ask of every question of the world, as natural-language Ask requests.
fn questions(world: &World, caller: &Caller) -> Vec<v1::AskRequest> {
    world
        .questions
        .iter()
        .flat_map(|q| q.asks.iter())
        .map(|ask| v1::AskRequest {
            caller: client::caller(caller),
            text: ask.text.clone(),
            ..Default::default()
        })
        .collect()
}

/// One phase: `requests` Ask and Validate calls, alternating, so both see the same moments of
/// the phase; with the signals counters' movement over it.
async fn phase(
    name: &'static str,
    clients: &mut Clients,
    asks: &[v1::AskRequest],
    claims: &[v1::ValidateRequest],
    requests: usize,
) -> anyhow::Result<Phase> {
    let (reported, dropped) = (signals_reported(), signals_dropped());
    let started = Instant::now();
    let (mut ask, mut validate) = timed(clients, asks, claims, requests)
        .await
        .with_context(|| format!("phase {name}"))?;
    let seconds = started.elapsed().as_secs_f64();
    ask.sort_unstable();
    validate.sort_unstable();
    Ok(Phase {
        phase: name,
        ask_p50_us: percentile(&ask, 0.50),
        ask_p99_us: percentile(&ask, 0.99),
        validate_p50_us: percentile(&validate, 0.50),
        validate_p99_us: percentile(&validate, 0.99),
        signals_reported: (signals_reported() - reported).max(0.0) as u64,
        signals_dropped: (signals_dropped() - dropped).max(0.0) as u64,
        seconds,
    })
}

/// `requests` Ask and Validate calls, cycling through `asks` and `claims`; each call's wall time
/// in microseconds. A failed call is an error: the system must answer whether or not the broker
/// is there.
async fn timed(
    clients: &mut Clients,
    asks: &[v1::AskRequest],
    claims: &[v1::ValidateRequest],
    requests: usize,
) -> anyhow::Result<(Vec<u64>, Vec<u64>)> {
    let mut ask = Vec::with_capacity(requests);
    let mut validate = Vec::with_capacity(requests);
    for i in 0..requests {
        let request = asks[i % asks.len()].clone();
        let started = Instant::now();
        clients.retrieval.ask(request).await.context("ask")?;
        ask.push(started.elapsed().as_micros() as u64);
        let request = claims[i % claims.len()].clone();
        let started = Instant::now();
        clients
            .firewall
            .validate(request)
            .await
            .context("validate")?;
        validate.push(started.elapsed().as_micros() as u64);
    }
    Ok((ask, validate))
}

/// Signals taken in by the intake so far, all types and severities.
fn signals_reported() -> f64 {
    let metrics = ontoloop_observability::metrics::global();
    SignalType::ALL
        .iter()
        .flat_map(|kind| Severity::ALL.iter().map(move |severity| (kind, severity)))
        .map(|(kind, severity)| {
            metrics.value(
                "ontoloop_signals_reported_total",
                &[("type", kind.name()), ("severity", severity.name())],
            )
        })
        .sum()
}

/// Signals retrieval and the firewall dropped so far, their buffer full.
fn signals_dropped() -> f64 {
    let metrics = ontoloop_observability::metrics::global();
    ["retrieval", "firewall"]
        .iter()
        .map(|reporter| metrics.value("ontoloop_signals_dropped_total", &[("reporter", reporter)]))
        .sum()
}

/// `phase` over `base`; infinite when `base` is 0 and `phase` is not.
fn ratio(phase: u64, base: u64) -> f64 {
    match (phase, base) {
        (0, 0) => 1.0,
        (_, 0) => f64::INFINITY,
        (phase, base) => phase as f64 / base as f64,
    }
}

fn within(ratio: f64, limit: f64) -> bool {
    ratio.is_finite() && ratio <= limit
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_hold_up_to_the_limit_only() {
        assert_eq!(ratio(300, 150), 2.0);
        assert!(within(ratio(300, 150), LIMIT));
        assert!(!within(ratio(301, 150), LIMIT));
        assert_eq!(ratio(0, 0), 1.0);
        assert!(!within(ratio(5, 0), LIMIT));
    }
}
