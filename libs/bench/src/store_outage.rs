//! The PostgreSQL restart drill at full size (issue 41; `tests/tests/store_outage.rs` is the
//! small one): the store goes away while events and Asks flow, then comes back. The whole
//! system runs in process on a PostgreSQL database of the run's own (created, then dropped),
//! reached through a TCP proxy of its own ([`ontoloop_testkit::proxy::Proxy`]), with RabbitMQ
//! under a queue namespace of its own. N generated pages (the scale benchmark's) are ingested
//! through the intake and applied; then a steady flow of events (each moving a service of the
//! catalog's first half to another team) and Asks one at a time (about services of the second
//! half, which never move, so every answer has one right value) runs before, during and after a
//! cut of the proxy (listener closed, every connection dropped, as a restart drops them).
//!
//! What it shows: while the store is away a push is refused with `UNAVAILABLE` and a reason,
//! promptly (how soon after the cut, how many within 100 ms, the slowest), and no call hangs;
//! Asks keep answering from the read models; afterwards pushes are acknowledged again by
//! themselves, and every acknowledged event is applied: none lost. Each push and each Ask is
//! bounded by [`CALL_LIMIT`], so a hang shows as a failure instead of stalling the run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use ontoloop_core::Caller;
use ontoloop_core::events::Event;
use ontoloop_proto::v1;
use ontoloop_settings::Settings;
use ontoloop_testkit::proxy::{Proxy, postgres_proxy};
use ontoloop_testkit::servers::{PgDatabase, amqp_namespace};
use serde::Serialize;
use tokio::sync::watch;

use super::scale::{Quantiles, catalog_body, catalog_page, service};
use ontoloop::client::Clients;
use ontoloop::up::Local;
use ontoloop_store::Store;

/// How big the drill is.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Pages (one service each) ingested before the flow starts.
    pub pages: usize,
    /// Events per second in the flow.
    pub events_per_second: f64,
    /// How long the store stays away.
    pub outage: Duration,
    /// How long the flow runs before the cut, and after the first push acknowledged again.
    pub steady: Duration,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Pages ingested.
    pub pages: usize,
    /// Seconds from the first page pushed until every page was applied.
    pub ingest_secs: f64,
    /// Events per second in the flow.
    pub events_per_second: f64,
    /// Before the cut, the store away, after it came back.
    pub phases: Vec<Phase>,
    /// Pushes refused with `UNAVAILABLE` and a reason, in all.
    pub refused: usize,
    /// The first refusal's reason.
    pub refusal_reason: Option<String>,
    /// Seconds from the cut until the first refusal answered.
    pub first_refusal_after_s: Option<f64>,
    /// The longest a refused push waited for its answer, seconds.
    pub slowest_refusal_s: f64,
    /// Refusals answered within 100 ms.
    pub refused_within_100ms: usize,
    /// Pushes answered with anything but an acknowledgement or `UNAVAILABLE` with a reason.
    pub wrong_refusals: usize,
    /// Pushes and Asks with no answer within [`CALL_LIMIT`]: hangs.
    pub unanswered: usize,
    /// Seconds from the store coming back until a push was acknowledged again.
    pub resumed_after_s: Option<f64>,
    /// Seconds from the store coming back until every event acknowledged before then applied.
    pub backlog_applied_after_s: Option<f64>,
    /// Seconds from the store coming back until every acknowledged event applied (the flow ran
    /// on meanwhile).
    pub all_applied_after_s: Option<f64>,
    /// Events acknowledged in all (the flow's; not the ingest's pages).
    pub acknowledged: usize,
    /// Acknowledged events not applied at the end: the figure that must be 0.
    pub lost: usize,
    /// Whether an Ask waiting for the last acknowledged event answered its new team.
    pub last_event_answered: bool,
    /// What went wrong, the first few of each kind.
    pub problems: Vec<String>,
}

/// One phase of the flow.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// `before`, `store away` or `restored`.
    pub phase: &'static str,
    /// Wall time of the phase.
    pub seconds: f64,
    /// Pushes sent during the phase.
    pub pushes: usize,
    /// Of those, acknowledged.
    pub acknowledged: usize,
    /// Of those, refused (with any code).
    pub refused: usize,
    /// Asks sent during the phase answered with the page's team.
    pub asks_answered: usize,
    /// Asks failed, answered something else, or not answered.
    pub asks_failed: usize,
    /// Every Ask of the phase over loopback gRPC, answered or not.
    pub ask_ms: Quantiles,
}

impl Report {
    /// Whether the drill held: nothing lost, every refusal `UNAVAILABLE` with a reason, no call
    /// hung, every Ask answered, pushes acknowledged again, every acknowledged event applied.
    /// Timings are figures, never failures: a slow machine gives a slow drill.
    pub fn holds(&self) -> bool {
        self.lost == 0
            && self.wrong_refusals == 0
            && self.unanswered == 0
            && self.phases.iter().all(|p| p.asks_failed == 0)
            && self.resumed_after_s.is_some()
            && self.all_applied_after_s.is_some()
            && self.last_event_answered
    }

    /// The table.
    pub fn to_text(&self) -> String {
        let away = self.phases.iter().find(|p| p.phase == AWAY);
        let mut out = format!(
            "store-outage: one tenant of {} generated pages (applied in {:.1} s) on PostgreSQL \
             through a proxy cut for {:.1} s; {} events/s and Asks one at a time throughout\n\n",
            self.pages,
            self.ingest_secs,
            away.map_or(0.0, |p| p.seconds),
            self.events_per_second
        );
        out.push_str(
            "phase      | seconds | pushes | acknowledged | refused | asks answered | asks failed | ask p50 ms | ask p99 ms\n\
             -----------|---------|--------|--------------|---------|---------------|-------------|------------|-----------\n",
        );
        for p in &self.phases {
            out.push_str(&format!(
                "{:<10} | {:>7.1} | {:>6} | {:>12} | {:>7} | {:>13} | {:>11} | {:>10.2} | {:>10.2}\n",
                p.phase,
                p.seconds,
                p.pushes,
                p.acknowledged,
                p.refused,
                p.asks_answered,
                p.asks_failed,
                p.ask_ms.p50,
                p.ask_ms.p99
            ));
        }
        out.push_str(&format!(
            "\nrefused    {} pushes with UNAVAILABLE and a reason, the first {} after the cut, {} \
             within 100 ms, the slowest {:.2} s; {} answered otherwise, {} calls unanswered \
             within {} s\n",
            self.refused,
            seconds(self.first_refusal_after_s),
            self.refused_within_100ms,
            self.slowest_refusal_s,
            self.wrong_refusals,
            self.unanswered,
            CALL_LIMIT.as_secs()
        ));
        if let Some(reason) = &self.refusal_reason {
            out.push_str(&format!("reason     {reason}\n"));
        }
        out.push_str(&format!(
            "resumed    a push acknowledged again {} after the store came back; the events \
             acknowledged before it applied {} after, every acknowledged event {} after\n\
             lost       {} of {} acknowledged events; an Ask waiting for the last one answered \
             its new team: {}\n",
            seconds(self.resumed_after_s),
            seconds(self.backlog_applied_after_s),
            seconds(self.all_applied_after_s),
            self.lost,
            self.acknowledged,
            if self.last_event_answered {
                "yes"
            } else {
                "no"
            }
        ));
        for problem in &self.problems {
            out.push_str(&format!("problem    {problem}\n"));
        }
        out.push_str(if self.holds() {
            "drill      holds\n"
        } else {
            "drill      FAILED\n"
        });
        out
    }
}

/// The longest one push or one Ask may go unanswered before it counts as a hang.
pub const CALL_LIMIT: Duration = Duration::from_secs(60);

/// The longest the drill waits for the system to apply what it was sent, or to take pushes
/// again: generous, so a slow machine gives slow figures rather than a failed run.
const SETTLE_WAIT: Duration = Duration::from_secs(600);

/// The longest the drill waits for the ingest's pages to apply.
const INGEST_WAIT: Duration = Duration::from_secs(3600);

/// Pages pushed at once while ingesting (the scale benchmark's default).
const IN_FLIGHT: usize = 64;

/// Problems kept of each kind.
const SAMPLES: usize = 5;

/// The tenant the drill generates.
const TENANT: &str = "store-outage";

const BEFORE: &str = "before";
const AWAY: &str = "store away";
const RESTORED: &str = "restored";

/// Runs the drill: `settings` with the store on a fresh database of the machine's PostgreSQL
/// (`ONTOLOOP_TEST_DATABASE_URL`) through the proxy and the queue on `amqp_url` under a namespace
/// of its own; the database is dropped after.
pub async fn run(
    mut settings: Settings,
    amqp_url: &str,
    load: Load,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Report> {
    anyhow::ensure!(load.pages >= 2, "--pages must be at least 2");
    anyhow::ensure!(
        load.events_per_second > 0.0 && load.events_per_second <= 10_000.0,
        "--events-per-second must be above 0 and at most 10000"
    );
    anyhow::ensure!(!load.outage.is_zero(), "--outage-seconds must be positive");
    let database = PgDatabase::create()
        .await
        .context("create a PostgreSQL database (ONTOLOOP_TEST_DATABASE_URL)")?;
    let result = async {
        let (proxy, proxied) = postgres_proxy(&database.url)
            .await
            .context("start a proxy to the drill's PostgreSQL database")?;
        progress("starting the system on a fresh PostgreSQL database through a proxy");
        settings.store.url = proxied;
        settings.queue.url = amqp_url.to_owned();
        settings.queue.namespace = amqp_namespace("store-outage");
        let local = Local::start(settings).await?;
        let result = drill(&local, &proxy, load, progress).await;
        let stopped = local.stop().await;
        proxy.cut();
        result.and_then(|report| stopped.map(|()| report))
    }
    .await;
    if let Err(err) = database.drop_now().await {
        tracing::warn!(error = %err, "cannot drop the drill's database");
    }
    result
}

/// Ingests the pages, then runs the flow through the cut and the restore, and counts.
async fn drill(
    local: &Local,
    proxy: &Proxy,
    load: Load,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Report> {
    let clients = Clients::from_addrs(&local.addrs, &local.ctx.settings.tls).await?;
    let store = local.ctx.store.clone();
    let caller = Caller::new(TENANT, "bench")?;
    push(
        &clients,
        &caller,
        &Event::OntologySet {
            ontology: super::scale::ontology(),
        },
    )
    .await
    .context("push the ontology")?;
    progress(&format!("ingesting {} pages", load.pages));
    let started = Instant::now();
    let last = ingest(&clients, &caller, load.pages).await?;
    ontoloop_runtime::wait_for_sequence(&store, TENANT, last, INGEST_WAIT)
        .await
        .context("wait until the pages are applied")?;
    let ingest_secs = started.elapsed().as_secs_f64();
    // The read model built before anything is timed: the first Ask builds it.
    let k = load.pages - 1;
    let answer = answered(&clients, ask(k, last), SETTLE_WAIT)
        .await
        .context("the first Ask after the ingest")?;
    anyhow::ensure!(
        names_owner(k, k, &answer.value),
        "{} answered {:?} after the ingest, not its page's team",
        service(k),
        answer.value
    );
    progress(&format!(
        "{} pages applied in {ingest_secs:.1} s; the read model answers",
        load.pages
    ));

    let (stop, stopped) = watch::channel(false);
    let acks = Arc::new(watch::Sender::new(Acks::default()));
    let flow_started = Instant::now();
    let flowing = tokio::spawn(flow(
        clients.clone(),
        caller.clone(),
        load,
        stopped.clone(),
        Arc::clone(&acks),
    ));
    let asking = tokio::spawn(asks(clients.clone(), load.pages, stopped));
    progress(&format!(
        "flow: {} events/s and Asks one at a time, {} s before the cut",
        load.events_per_second,
        load.steady.as_secs_f64()
    ));
    tokio::time::sleep(load.steady).await;
    proxy.cut();
    let cut = Instant::now();
    progress(&format!(
        "store away: the proxy cut (listener closed, connections dropped) for {} s",
        load.outage.as_secs_f64()
    ));
    tokio::time::sleep(load.outage).await;
    let restored = proxy.restore();
    let restored_at = Instant::now();
    if let Err(err) = restored {
        stop.send_replace(true);
        let _ = tokio::join!(flowing, asking);
        return Err(err).context("restore the proxy to PostgreSQL");
    }
    let backlog = acks.borrow().highest;
    progress(&format!(
        "store back: waiting for pushes to be acknowledged again and for the {backlog} events \
         acknowledged so far to apply"
    ));
    let backlog_watch = {
        let store = store.clone();
        tokio::spawn(async move { applied_by(&store, backlog, restored_at, SETTLE_WAIT).await })
    };
    let mut acked = acks.subscribe();
    let resumed = tokio::time::timeout(
        SETTLE_WAIT,
        acked.wait_for(|acks| acks.last_at.is_some_and(|at| at >= restored_at)),
    )
    .await
    .is_ok_and(|seen| seen.is_ok());
    if resumed {
        progress(&format!(
            "pushes acknowledged again; the flow runs {} s more",
            load.steady.as_secs_f64()
        ));
        tokio::time::sleep(load.steady).await;
    } else {
        progress("no push acknowledged again within the wait; stopping the flow");
    }
    stop.send_replace(true);
    let end = Instant::now();
    let pushes = flowing.await.context("the flow of events")?;
    let asked = asking.await.context("the Asks")?;
    let backlog_applied_after_s = backlog_watch.await.context("the backlog's wait")?;

    let counts = count(&pushes, &asked, flow_started, cut, restored_at, end);
    let acknowledged: Vec<&Push> = pushes.iter().filter(|p| p.seq().is_some()).collect();
    progress(&format!(
        "flow stopped: {} events acknowledged; waiting for every one to apply",
        acknowledged.len()
    ));
    let last = acknowledged.iter().max_by_key(|p| p.seq());
    let highest = last.and_then(|p| p.seq()).unwrap_or(0);
    let all_applied_after_s = applied_by(&store, highest, restored_at, SETTLE_WAIT).await;
    let seqs: Vec<i64> = acknowledged
        .iter()
        .filter_map(|p| p.seq().and_then(|seq| i64::try_from(seq).ok()))
        .collect();
    let states = store
        .intake_states(TENANT, &seqs)
        .await
        .context("read the acknowledged events' states")?;
    let mut problems = counts.problems;
    let mut lost = 0;
    for seq in &seqs {
        let state = states.get(seq).map_or("absent", String::as_str);
        if state != "applied" {
            lost += 1;
            if lost <= SAMPLES {
                problems.push(format!("event {seq} acknowledged, then {state}"));
            }
        }
    }
    let last_event_answered = match last {
        Some(event) => {
            let answer = answered(&clients, ask(event.k, highest), SETTLE_WAIT).await;
            match answer {
                Ok(answer) if names_owner(event.k, event.owner, &answer.value) => true,
                other => {
                    problems.push(format!(
                        "{} after event {highest}: {}",
                        service(event.k),
                        match other {
                            Ok(answer) => format!("answered {:?}", answer.value),
                            Err(err) => format!("{err:#}"),
                        }
                    ));
                    false
                }
            }
        }
        None => false,
    };
    Ok(Report {
        pages: load.pages,
        ingest_secs,
        events_per_second: load.events_per_second,
        phases: counts.phases,
        refused: counts.refused,
        refusal_reason: counts.refusal_reason,
        first_refusal_after_s: counts.first_refusal_after.map(|d| d.as_secs_f64()),
        slowest_refusal_s: counts.slowest_refusal.as_secs_f64(),
        refused_within_100ms: counts.refused_within_100ms,
        wrong_refusals: counts.wrong_refusals,
        unanswered: counts.unanswered,
        resumed_after_s: counts.resumed_after.map(|d| d.as_secs_f64()),
        backlog_applied_after_s,
        all_applied_after_s,
        acknowledged: seqs.len(),
        lost,
        last_event_answered,
        problems,
    })
}

/// What the flow's acknowledgements have reached: the highest number, and when the last came.
#[derive(Debug, Default, Clone, Copy)]
struct Acks {
    highest: u64,
    last_at: Option<Instant>,
}

/// How one push of the flow went.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// Acknowledged with this intake sequence number.
    Acknowledged(u64),
    /// Refused with this code and message.
    Refused(tonic::Code, String),
    /// No answer within [`CALL_LIMIT`].
    Unanswered,
}

/// One push of the flow: service `k` moved to team `owner`.
#[derive(Debug, Clone)]
struct Push {
    k: usize,
    owner: usize,
    sent: Instant,
    took: Duration,
    outcome: Outcome,
}

impl Push {
    fn seq(&self) -> Option<u64> {
        match self.outcome {
            Outcome::Acknowledged(seq) => Some(seq),
            _ => None,
        }
    }
}

/// One Ask of the flow: its failure, if it did not answer its page's team.
#[derive(Debug, Clone)]
struct Asked {
    sent: Instant,
    took: Duration,
    failure: Option<String>,
    unanswered: bool,
}

/// The flow's figures, before the store's states are read.
#[derive(Debug)]
struct Counts {
    phases: Vec<Phase>,
    refused: usize,
    refusal_reason: Option<String>,
    first_refusal_after: Option<Duration>,
    slowest_refusal: Duration,
    refused_within_100ms: usize,
    wrong_refusals: usize,
    unanswered: usize,
    resumed_after: Option<Duration>,
    problems: Vec<String>,
}

/// Counts the flow's pushes and Asks by the phase each was sent in: before `cut`, until
/// `restored`, until `end`. A refusal is right when it is `UNAVAILABLE` with a reason, whenever
/// it comes.
fn count(
    pushes: &[Push],
    asked: &[Asked],
    start: Instant,
    cut: Instant,
    restored: Instant,
    end: Instant,
) -> Counts {
    let phase_of = |at: Instant| usize::from(at >= cut) + usize::from(at >= restored);
    let bounds = [
        (BEFORE, start, cut),
        (AWAY, cut, restored),
        (RESTORED, restored, end),
    ];
    let mut phases: Vec<Phase> = bounds
        .iter()
        .map(|&(phase, from, to)| Phase {
            phase,
            seconds: to.saturating_duration_since(from).as_secs_f64(),
            pushes: 0,
            acknowledged: 0,
            refused: 0,
            asks_answered: 0,
            asks_failed: 0,
            ask_ms: Quantiles::of(Vec::new()),
        })
        .collect();
    let mut counts = Counts {
        phases: Vec::new(),
        refused: 0,
        refusal_reason: None,
        first_refusal_after: None,
        slowest_refusal: Duration::ZERO,
        refused_within_100ms: 0,
        wrong_refusals: 0,
        unanswered: 0,
        resumed_after: None,
        problems: Vec::new(),
    };
    let (mut wrong, mut hung) = (Vec::new(), Vec::new());
    for push in pushes {
        let phase = &mut phases[phase_of(push.sent)];
        phase.pushes += 1;
        let answered_at = push.sent + push.took;
        match &push.outcome {
            Outcome::Acknowledged(_) => {
                phase.acknowledged += 1;
                if answered_at >= restored {
                    let after = answered_at - restored;
                    counts.resumed_after =
                        Some(counts.resumed_after.map_or(after, |r| r.min(after)));
                }
            }
            Outcome::Refused(code, message) => {
                phase.refused += 1;
                if *code == tonic::Code::Unavailable && !message.is_empty() {
                    counts.refused += 1;
                    if push.took < Duration::from_millis(100) {
                        counts.refused_within_100ms += 1;
                    }
                    counts.slowest_refusal = counts.slowest_refusal.max(push.took);
                    let after = answered_at.saturating_duration_since(cut);
                    if counts.first_refusal_after.is_none_or(|first| after < first) {
                        counts.first_refusal_after = Some(after);
                        counts.refusal_reason = Some(message.clone());
                    }
                } else {
                    counts.wrong_refusals += 1;
                    wrong.push(format!("a push refused with {code:?}: {message:?}"));
                }
            }
            Outcome::Unanswered => {
                counts.unanswered += 1;
                hung.push(format!(
                    "a push sent {:.2} s after the cut unanswered within {} s",
                    signed_secs(push.sent, cut),
                    CALL_LIMIT.as_secs()
                ));
            }
        }
    }
    let mut times = vec![Vec::new(); phases.len()];
    let mut failed = Vec::new();
    for ask in asked {
        let at = phase_of(ask.sent);
        times[at].push(ask.took);
        match &ask.failure {
            None => phases[at].asks_answered += 1,
            Some(failure) => {
                phases[at].asks_failed += 1;
                counts.unanswered += usize::from(ask.unanswered);
                failed.push(format!(
                    "an Ask sent {:.2} s after the cut: {failure}",
                    signed_secs(ask.sent, cut)
                ));
            }
        }
    }
    for (phase, times) in phases.iter_mut().zip(times) {
        phase.ask_ms = Quantiles::of(times);
    }
    for kind in [wrong, hung, failed] {
        counts.problems.extend(kind.into_iter().take(SAMPLES));
    }
    counts.phases = phases;
    counts
}

/// Seconds from `from` to `at`, negative when `at` came first.
fn signed_secs(at: Instant, from: Instant) -> f64 {
    match at.checked_duration_since(from) {
        Some(after) => after.as_secs_f64(),
        None => -(from - at).as_secs_f64(),
    }
}

/// The flow of events until `stop`: at each tick one service of the catalog's first half moved
/// to another team, each push a task of its own so that one waiting on the store holds none of
/// the others back.
async fn flow(
    clients: Clients,
    caller: Caller,
    load: Load,
    mut stop: watch::Receiver<bool>,
    acks: Arc<watch::Sender<Acks>>,
) -> Vec<Push> {
    let half = load.pages / 2;
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / load.events_per_second));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pushes = tokio::task::JoinSet::new();
    let mut n = 0usize;
    while !*stop.borrow() {
        tokio::select! {
            _ = stop.changed() => continue,
            _ = ticker.tick() => {}
        }
        let k = (n * 7919) % half;
        let owner = k + n + 1;
        n += 1;
        let (clients, caller, acks) = (clients.clone(), caller.clone(), Arc::clone(&acks));
        pushes.spawn(async move {
            let sent = Instant::now();
            let event = catalog_page(k, owner);
            let outcome =
                match tokio::time::timeout(CALL_LIMIT, push(&clients, &caller, &event)).await {
                    Ok(Ok(seq)) => {
                        acks.send_modify(|acks| {
                            acks.highest = acks.highest.max(seq);
                            acks.last_at = Some(Instant::now());
                        });
                        Outcome::Acknowledged(seq)
                    }
                    Ok(Err(status)) => Outcome::Refused(status.code(), status.message().to_owned()),
                    Err(_) => Outcome::Unanswered,
                };
            Push {
                k,
                owner,
                sent,
                took: sent.elapsed(),
                outcome,
            }
        });
    }
    pushes.join_all().await
}

/// Asks one at a time until `stop`, each about a service of the catalog's second half (which
/// the flow never moves), so its answer is its page's team.
async fn asks(clients: Clients, pages: usize, stop: watch::Receiver<bool>) -> Vec<Asked> {
    let half = pages / 2;
    let mut asked = Vec::new();
    let mut n = 0usize;
    while !*stop.borrow() {
        let k = half + (n * 104_729) % (pages - half);
        n += 1;
        let sent = Instant::now();
        let answer =
            tokio::time::timeout(CALL_LIMIT, clients.retrieval.clone().ask(ask(k, 0))).await;
        let took = sent.elapsed();
        let failure = match &answer {
            Ok(Ok(answer)) if names_owner(k, k, &answer.get_ref().value) => None,
            Ok(Ok(answer)) => Some(format!(
                "{} answered {:?} (status {})",
                service(k),
                answer.get_ref().value,
                answer.get_ref().status
            )),
            Ok(Err(status)) => Some(format!("{:?}: {}", status.code(), status.message())),
            Err(_) => Some(format!("no answer within {} s", CALL_LIMIT.as_secs())),
        };
        asked.push(Asked {
            sent,
            took,
            failure,
            unanswered: answer.is_err(),
        });
    }
    asked
}

/// Pushes pages 0 to `pages` (each owned by its own team), [`IN_FLIGHT`] at a time; the
/// highest sequence number acknowledged.
async fn ingest(clients: &Clients, caller: &Caller, pages: usize) -> anyhow::Result<u64> {
    let mut pushes = futures::stream::iter(0..pages)
        .map(|k| async move { push(clients, caller, &catalog_page(k, k)).await })
        .buffer_unordered(IN_FLIGHT);
    let mut last = 0;
    while let Some(pushed) = pushes.next().await {
        last = last.max(pushed.context("push a page")?);
    }
    Ok(last)
}

/// Seconds from `from` until the tenant's event `seq` is applied (with every one before it: the
/// analyst applies a tenant's events in order); `None` when it is not within `limit`, or failed.
/// A read the store cannot answer yet (it is just back) is tried again.
async fn applied_by(store: &Store, seq: u64, from: Instant, limit: Duration) -> Option<f64> {
    let seq = i64::try_from(seq).ok()?;
    if seq == 0 {
        return Some(0.0);
    }
    loop {
        let left = limit.checked_sub(from.elapsed())?;
        match store.wait_settled(TENANT, seq, left).await {
            Ok(ontoloop_store::Settled::Applied) => return Some(from.elapsed().as_secs_f64()),
            Ok(_) => return None,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Asks `request` until it is answered, polling every 100 ms ([`answered`](super::scale::answered)).
async fn answered(
    clients: &Clients,
    request: v1::AskRequest,
    limit: Duration,
) -> anyhow::Result<v1::Answer> {
    super::scale::answered(clients, request, limit, Duration::from_millis(100)).await
}

/// Pushes `event`: its intake sequence number, or the status it was refused with.
async fn push(clients: &Clients, caller: &Caller, event: &Event) -> Result<u64, tonic::Status> {
    let pushed = ontoloop_proto::convert::event_to_wire(caller, event, chrono::Utc::now());
    Ok(clients
        .telemetry
        .clone()
        .push_event(pushed)
        .await?
        .into_inner()
        .sequence)
}

/// Whether `value` is the team page `k` names as its owner when `owner` owns it.
fn names_owner(k: usize, owner: usize, value: &str) -> bool {
    !value.is_empty()
        && catalog_body(k, owner).contains(&format!("{} is owned by the {value} team.", service(k)))
}

fn ask(k: usize, min_sequence: u64) -> v1::AskRequest {
    v1::AskRequest {
        caller: Some(v1::Caller {
            tenant: TENANT.to_owned(),
            principal: "agent".to_owned(),
        }),
        text: format!("Who owns {}?", service(k)),
        min_sequence,
        ..Default::default()
    }
}

/// Seconds, or "never".
fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "never".to_owned(), |s| format!("{s:.2} s"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_right_only_when_it_is_the_pages_team() {
        let page = catalog_body(7, 3);
        let team = page
            .split(" is owned by the ")
            .nth(1)
            .and_then(|rest| rest.split(" team.").next())
            .expect("the page names its owner");
        assert!(names_owner(7, 3, team));
        assert!(!names_owner(7, 4, team), "another owner's team");
        assert!(!names_owner(7, 3, ""));
        assert!(!names_owner(7, 3, "Rust"));
    }

    fn pushed(sent: Instant, millis: u64, outcome: Outcome) -> Push {
        Push {
            k: 0,
            owner: 0,
            sent,
            took: Duration::from_millis(millis),
            outcome,
        }
    }

    #[test]
    fn the_flow_is_counted_by_the_phase_each_call_was_sent_in() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let (cut, restored, end) = (at(10), at(40), at(50));
        let unavailable = |reason: &str| Outcome::Refused(tonic::Code::Unavailable, reason.into());
        let pushes = [
            pushed(at(1), 5, Outcome::Acknowledged(1)),
            // Sent before the cut, refused after it: counted before, timed from the cut.
            pushed(at(9), 1500, unavailable("the database is unreachable")),
            pushed(at(12), 50, unavailable("for 2000 ms so far")),
            pushed(
                at(13),
                20,
                Outcome::Refused(tonic::Code::Internal, "boom".into()),
            ),
            pushed(at(14), 20, unavailable("")),
            pushed(at(15), 60_000, Outcome::Unanswered),
            // Sent while away, acknowledged just after the restore: the resumption.
            pushed(at(39), 1300, Outcome::Acknowledged(2)),
            pushed(at(41), 10, Outcome::Acknowledged(3)),
        ];
        let asked = [
            Asked {
                sent: at(2),
                took: Duration::from_millis(4),
                failure: None,
                unanswered: false,
            },
            Asked {
                sent: at(20),
                took: Duration::from_millis(8),
                failure: None,
                unanswered: false,
            },
            Asked {
                sent: at(21),
                took: CALL_LIMIT,
                failure: Some("no answer".into()),
                unanswered: true,
            },
        ];
        let counts = count(&pushes, &asked, start, cut, restored, end);
        let by_phase: Vec<_> = counts
            .phases
            .iter()
            .map(|p| (p.phase, p.seconds, p.pushes, p.acknowledged, p.refused))
            .collect();
        assert_eq!(
            by_phase,
            [
                (BEFORE, 10.0, 2, 1, 1),
                (AWAY, 30.0, 5, 1, 3),
                (RESTORED, 10.0, 1, 1, 0)
            ]
        );
        assert_eq!(counts.refused, 2);
        assert_eq!(counts.first_refusal_after, Some(Duration::from_millis(500)));
        assert_eq!(
            counts.refusal_reason.as_deref(),
            Some("the database is unreachable")
        );
        assert_eq!(counts.slowest_refusal, Duration::from_millis(1500));
        assert_eq!(counts.refused_within_100ms, 1);
        assert_eq!(
            counts.wrong_refusals, 2,
            "INTERNAL, and UNAVAILABLE with no reason"
        );
        assert_eq!(counts.unanswered, 2, "a push and an Ask");
        assert_eq!(counts.resumed_after, Some(Duration::from_millis(300)));
        let asks: Vec<_> = counts
            .phases
            .iter()
            .map(|p| (p.asks_answered, p.asks_failed))
            .collect();
        assert_eq!(asks, [(1, 0), (1, 1), (0, 0)]);
        assert_eq!(counts.phases[0].ask_ms.p50, 4.0);
        assert_eq!(counts.problems.len(), 4, "{:?}", counts.problems);
    }

    #[test]
    fn seconds_before_the_cut_are_negative() {
        let cut = Instant::now() + Duration::from_secs(5);
        assert_eq!(signed_secs(cut - Duration::from_secs(2), cut), -2.0);
        assert_eq!(signed_secs(cut + Duration::from_millis(1500), cut), 1.5);
    }
}
