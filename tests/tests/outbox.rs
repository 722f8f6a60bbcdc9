//! Acknowledged means kept, on PostgreSQL + RabbitMQ with the broker unreachable for a while: a
//! TCP proxy of the test's own stands between the services and RabbitMQ (the machine's broker is
//! never stopped) and is cut — listener closed, every connection dropped — for a few seconds in
//! the middle of events and signals pushed through the intake with client retries, then
//! restored. Every acknowledged event and signal is applied exactly once: what the intake
//! recorded while the broker was away waited in the outbox and the relay published it. The cut
//! also kills the analyst's consumers (their channels close): its health goes NOT_SERVING, and
//! SERVING again once they run again. And the permanent errors: text with a NUL byte is refused
//! at the intake with INVALID_ARGUMENT naming the field; an event published straight to RabbitMQ
//! whose text PostgreSQL refuses is dead-lettered at once with the store's reason.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use ontoloop_core::{ServiceKind, topics};
use ontoloop_proto::v1;
use ontoloop_runtime::CancellationToken;
use ontoloop_testkit::proxy::amqp_proxy;
use ontoloop_tests::{PgDatabase, Sandbox, amqp_namespace, caller, settings, wait_until};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Events and signals pushed (each); the issue's full run is `make outbox-long`.
fn count() -> usize {
    std::env::var("ONTOLOOP_OUTBOX_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300)
}

/// How long the broker stays unreachable.
fn outage() -> Duration {
    Duration::from_millis(
        std::env::var("ONTOLOOP_OUTBOX_OUTAGE_MS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(4_000),
    )
}

const TENANT: &str = "outbox";
const ONTOLOGY: &str = r#"{"predicates":[{"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],"authority":{"default":1}}"#;

fn doc(i: usize) -> v1::Event {
    v1::Event {
        caller: caller(TENANT, "loader"),
        idempotency_key: format!("doc-{i}"),
        kind: Some(v1::event::Kind::DocUpsert(v1::DocUpsert {
            doc_id: format!("svc-{i}"),
            title: format!("svc-{i}"),
            origin: "catalog".into(),
            body: format!("Service {i} is owned by the Team{} team.", i % 10),
            ..Default::default()
        })),
        ..Default::default()
    }
}

fn signal(i: usize) -> v1::Signal {
    v1::Signal {
        caller: caller(TENANT, "agent"),
        r#type: v1::SignalType::EntityMissing as i32,
        query: format!("who owns service {}?", i % 50),
        entity: format!("service {}", i % 50),
        agent_id: format!("agent-{}", i % 7),
        idempotency_key: format!("sig-{i}"),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_broker_outage_loses_and_repeats_no_acknowledged_event_or_signal() {
    let started = Instant::now();
    let n = count();
    // The machine's broker (ONTOLOOP_TEST_AMQP_URL), reached through the proxy.
    let (proxy, amqp) = amqp_proxy(&ontoloop_testkit::servers::amqp_url())
        .await
        .expect("the proxy listens");
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let namespace = amqp_namespace("outbox");
    let sandbox = Sandbox::start(settings(&[
        ("store.url", database.url.as_str()),
        ("queue.url", amqp.as_str()),
        ("queue.namespace", namespace.as_str()),
        ("queue.publish_timeout_ms", "300"),
        ("queue.backoff_initial_ms", "100"),
        ("queue.backoff_max_ms", "500"),
        ("queue.connect_attempts", "3"),
    ]))
    .await
    .expect("the system starts through the proxy");
    let clients = sandbox.clients();
    let ontology_seq = clients
        .push(
            TENANT,
            "admin",
            v1::event::Kind::OntologySet(v1::OntologySet {
                ontology_json: ONTOLOGY.into(),
            }),
        )
        .await
        .expect("ontology");
    // Documents pushed before their ontology is applied would be refused, not lost.
    let store = sandbox.ctx.store.clone();
    let ready = store
        .wait_settled(TENANT, ontology_seq as i64, Duration::from_secs(20))
        .await
        .expect("wait");
    assert_eq!(ready, ontoloop_store::Settled::Applied);

    // Client retries: each push is sent again (same idempotency key) until acknowledged.
    let events: Arc<Mutex<BTreeMap<usize, u64>>> = Arc::default();
    let signals: Arc<Mutex<BTreeMap<usize, bool>>> = Arc::default();
    let retries = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let pushing = {
        let (clients, events, signals, retries) = (
            clients.clone(),
            events.clone(),
            signals.clone(),
            retries.clone(),
        );
        tokio::spawn(async move {
            futures::stream::iter(0..2 * n)
                .map(|j| {
                    let (clients, events, signals, retries) = (
                        clients.clone(),
                        events.clone(),
                        signals.clone(),
                        retries.clone(),
                    );
                    async move {
                        let deadline = Instant::now() + Duration::from_secs(40);
                        while Instant::now() < deadline {
                            let ok = if j % 2 == 0 {
                                let i = j / 2;
                                match clients.telemetry.clone().push_event(doc(i)).await {
                                    Ok(ack) => {
                                        let ack = ack.into_inner();
                                        events.lock().expect("lock").insert(i, ack.sequence);
                                        true
                                    }
                                    Err(_) => false,
                                }
                            } else {
                                let i = j / 2;
                                match clients.telemetry.clone().report_signal(signal(i)).await {
                                    Ok(ack) => {
                                        let duplicate = ack.into_inner().duplicate;
                                        signals.lock().expect("lock").insert(i, duplicate);
                                        true
                                    }
                                    Err(_) => false,
                                }
                            };
                            if ok {
                                return;
                            }
                            retries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                })
                .buffer_unordered(16)
                .collect::<Vec<()>>()
                .await;
        })
    };
    // The analyst's health, as a prober sees it, every 50 ms: the changes in order.
    let statuses: Arc<Mutex<Vec<ServingStatus>>> = Arc::default();
    let probing = CancellationToken::new();
    let prober = {
        let (statuses, probing) = (statuses.clone(), probing.clone());
        let mut health = HealthClient::new(sandbox.channel(ServiceKind::Analyst));
        tokio::spawn(async move {
            while !probing.is_cancelled() {
                let status = health
                    .check(tonic_health::pb::HealthCheckRequest {
                        service: ServiceKind::Analyst.grpc_name().to_owned(),
                    })
                    .await
                    .map_or(ServingStatus::Unknown, |r| r.into_inner().status());
                {
                    let mut seen = statuses.lock().expect("lock");
                    if seen.last() != Some(&status) {
                        seen.push(status);
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    // The broker goes away a third of the way in, for the outage, then comes back.
    let third = 2 * n / 3;
    let ok = wait_until(Duration::from_secs(30 + n as u64 / 40), || {
        let done = events.lock().expect("lock").len() + signals.lock().expect("lock").len();
        async move { done >= third }
    })
    .await;
    assert!(ok, "pushes are acknowledged before the outage");
    proxy.cut();
    let cut_at = Instant::now();
    let during = {
        let before = events.lock().expect("lock").len() + signals.lock().expect("lock").len();
        tokio::time::sleep(outage()).await;
        events.lock().expect("lock").len() + signals.lock().expect("lock").len() - before
    };
    proxy.restore().expect("the proxy listens again");
    let outage_len = cut_at.elapsed();
    pushing.await.expect("pusher");
    let serving_again = wait_until(Duration::from_secs(20), || {
        let statuses = statuses.clone();
        async move { statuses.lock().expect("lock").last() == Some(&ServingStatus::Serving) }
    })
    .await;
    probing.cancel();
    prober.await.expect("prober");
    let statuses = statuses.lock().expect("lock").clone();
    let events = events.lock().expect("lock").clone();
    let signals = signals.lock().expect("lock").clone();
    assert_eq!(events.len(), n, "every event acknowledged in the end");
    assert_eq!(signals.len(), n, "every signal acknowledged in the end");

    // Applied exactly once: every event's number settled applied, one run and one page each;
    // every signal recorded by the analyst once.
    // A debug build's analyst applies some tens of documents a second.
    // (One indexed read of the tenant's pending rows per look, not one read per event: at the
    // full size the waiting must not load the store the analyst is writing to.)
    let settled = wait_until(Duration::from_secs(40 + n as u64 / 10), || {
        let store = store.clone();
        async move {
            let none_pending = store
                .intake_pending_before(TENANT, i64::MAX, 1)
                .await
                .is_ok_and(|pending| pending.is_empty());
            none_pending
                && store
                    .inbox_count(topics::SIGNALS)
                    .await
                    .is_ok_and(|c| c >= n as u64)
        }
    })
    .await;
    // Applied; still pending (acknowledged, not yet applied when the wait ended); the rest lost.
    let (mut applied_events, mut pending_events) = (0, 0);
    for seq in events.values() {
        match store.intake_state(TENANT, *seq as i64).await {
            Ok(Some((s, _))) if s == "applied" => applied_events += 1,
            Ok(Some((s, _))) if s == "pending" => pending_events += 1,
            _ => {}
        }
    }
    let runs = store.maintenance_runs(TENANT).await.expect("runs");
    let mut runs_per_seq: HashMap<i64, usize> = HashMap::new();
    for run in &runs {
        *runs_per_seq.entry(run.seq).or_default() += 1;
    }
    let knowledge = store.load_knowledge(TENANT).await.expect("knowledge");
    let mut versions: HashMap<&str, usize> = HashMap::new();
    for page in &knowledge.pages {
        *versions.entry(page.source_id.as_str()).or_default() += 1;
    }
    let recorded_signals = store.inbox_count(topics::SIGNALS).await.expect("count");
    let backlog = store.outbox_backlog().await.expect("backlog");
    let metrics = ontoloop_observability::metrics::global();
    let relayed_events = metrics.value(
        "ontoloop_outbox_relayed_total",
        &[("queue", topics::EVENTS)],
    );
    let relayed_signals = metrics.value(
        "ontoloop_outbox_relayed_total",
        &[("queue", topics::SIGNALS)],
    );
    sandbox.shutdown().await.expect("clean shutdown");
    let _ = database.drop_now().await;

    let duplicated_events = runs_per_seq.values().filter(|c| **c > 1).count()
        + versions.values().filter(|c| **c > 1).count();
    let lost_events = n - applied_events - pending_events;
    let lost_signals = n.saturating_sub(recorded_signals as usize);
    let duplicated_signals = (recorded_signals as usize).saturating_sub(n);
    println!(
        "{n} events + {n} signals, broker cut for {:.1} s ({during} acknowledged meanwhile), \
         {} client retries; events: applied {applied_events}, still pending {pending_events}, lost {lost_events}, duplicated \
         {duplicated_events}; signals: applied {recorded_signals}, lost {lost_signals}, \
         duplicated {duplicated_signals}; relayed {relayed_events} events, {relayed_signals} \
         signals; outbox left {backlog:?}; analyst health {statuses:?}; {:.1} s",
        outage_len.as_secs_f64(),
        retries.load(std::sync::atomic::Ordering::Relaxed),
        started.elapsed().as_secs_f64(),
    );
    assert!(settled, "everything acknowledged was applied");
    let down = statuses
        .iter()
        .position(|s| *s == ServingStatus::NotServing);
    assert!(
        down.is_some_and(|at| statuses[at..].contains(&ServingStatus::Serving)),
        "the analyst said NOT_SERVING while its consumers were down, then SERVING: {statuses:?}"
    );
    assert!(
        serving_again,
        "SERVING again after the outage: {statuses:?}"
    );
    assert_eq!(lost_events, 0);
    assert_eq!(pending_events, 0);
    assert_eq!(duplicated_events, 0);
    assert_eq!(lost_signals, 0);
    assert_eq!(duplicated_signals, 0);
    assert!(
        during > 0,
        "the intake kept acknowledging while the broker was away"
    );
    assert!(
        relayed_events + relayed_signals > 0.0,
        "the relay published what the outage left"
    );
}

/// Text PostgreSQL cannot keep (a NUL byte) is refused at the intake with INVALID_ARGUMENT naming
/// the field, for events and signals alike, and nothing is recorded.
#[tokio::test]
async fn a_nul_byte_is_refused_at_the_intake_naming_the_field() {
    let sandbox = Sandbox::embedded(&[]).await;
    let clients = sandbox.clients();
    let mut event = doc(0);
    if let Some(v1::event::Kind::DocUpsert(upsert)) = event.kind.as_mut() {
        upsert.body = "Service 0 is owned by the \u{0} team.".into();
    }
    let refused = clients
        .telemetry
        .clone()
        .push_event(event)
        .await
        .expect_err("a NUL byte in the body is refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(
        refused.message().starts_with("body: "),
        "{}",
        refused.message()
    );
    assert!(refused.message().contains("NUL"), "{}", refused.message());

    let mut bad = signal(0);
    bad.query = "who owns \u{0}?".into();
    let refused = clients
        .telemetry
        .clone()
        .report_signal(bad)
        .await
        .expect_err("a NUL byte in the query is refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(
        refused.message().starts_with("query: "),
        "{}",
        refused.message()
    );
    assert_eq!(
        sandbox
            .ctx
            .store
            .intake_state(TENANT, 1)
            .await
            .expect("state"),
        None,
        "nothing recorded"
    );
    let backlog = sandbox.ctx.store.outbox_backlog().await.expect("backlog");
    assert_eq!(backlog, ontoloop_store::OutboxBacklog::default());
    sandbox.shutdown().await.expect("shutdown");
}

/// An event published straight to RabbitMQ whose text PostgreSQL refuses (a NUL byte) is a
/// permanent error: dead-lettered at once with the store's reason, not retried, and the events
/// after it are still applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_postgres_refuses_is_dead_lettered_at_once() {
    let (sandbox, database) = Sandbox::on_servers("outbox-nul", &[]).await;
    let clients = sandbox.clients();
    let tenant = "outbox-nul";
    let seq = clients
        .push(
            tenant,
            "admin",
            v1::event::Kind::OntologySet(v1::OntologySet {
                ontology_json: ONTOLOGY.into(),
            }),
        )
        .await
        .expect("ontology");
    let store = sandbox.ctx.store.clone();
    assert_eq!(
        store
            .wait_settled(tenant, seq as i64, Duration::from_secs(20))
            .await
            .expect("wait"),
        ontoloop_store::Settled::Applied
    );
    let queue = sandbox.ctx.queue.clone();
    let run = format!("{:x}", std::process::id());
    let bad_id = format!("nul-{run}");
    let body = |doc: &str, text: &str| {
        serde_json::json!({
            "tenant": tenant, "at": "2026-09-01T00:00:00Z", "type": "doc.upsert",
            "doc_id": doc, "origin": "catalog", "body": text,
        })
        .to_string()
    };
    queue
        .publish(
            topics::EVENTS,
            ontoloop_queue::Message::with_id(
                &bad_id,
                body("bad", "Service 1 is owned by the \u{0} team."),
            ),
        )
        .await
        .expect("publish");
    queue
        .publish(
            topics::EVENTS,
            ontoloop_queue::Message::with_id(
                format!("nul-next-{run}"),
                body("good", "Service 2 is owned by the Atlas team."),
            ),
        )
        .await
        .expect("publish");
    let started = Instant::now();
    let mut dead = queue
        .consume_dead_letters(topics::EVENTS)
        .await
        .expect("dlq");
    let reason = loop {
        let letter = tokio::time::timeout(Duration::from_secs(20), dead.next())
            .await
            .expect("the dead letter arrives")
            .expect("open")
            .expect("delivery");
        let mine = letter.message.id == bad_id;
        let reason = letter
            .message
            .headers
            .get(ontoloop_queue::REASON_HEADER)
            .cloned();
        letter.ack().await.expect("ack");
        if mine {
            break reason.unwrap_or_default();
        }
    };
    let took = started.elapsed();
    drop(dead);
    let next_applied = wait_until(Duration::from_secs(20), || {
        let store = store.clone();
        async move {
            store
                .load_knowledge(tenant)
                .await
                .is_ok_and(|k| k.facts.iter().any(|f| f.object == "Atlas"))
        }
    })
    .await;
    println!("dead-lettered after {:.2} s: {reason}", took.as_secs_f64());
    sandbox.shutdown().await.expect("shutdown");
    let _ = database.drop_now().await;
    assert!(reason.contains("the store refuses the data"), "{reason}");
    assert!(
        !reason.contains("failed 5 times"),
        "at once, not after retries: {reason}"
    );
    assert!(next_applied, "the event after it is applied");
}
