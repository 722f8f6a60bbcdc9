//! The whole system on the machine's PostgreSQL and RabbitMQ: all four services serve, an
//! integration's AMQP events reach the knowledge in the store, a malformed one lands in the
//! dead-letter queue with its reason while the next is still applied, and a shutdown in the
//! middle of a burst of signals loses nothing: a restarted system records every one exactly once.

use std::collections::HashSet;
use std::time::Duration;

use ontoloop_core::{ServiceKind, topics};
use ontoloop_queue::{AmqpQueue, Message, Queue, REASON_HEADER};
use ontoloop_tests::{PgDatabase, Sandbox, server_settings, settings, wait_until};

const BURST: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_system_runs_on_postgres_and_rabbitmq() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let system_settings = server_settings(&database, "system", &[("queue.prefetch", "16")]);
    let sandbox = Sandbox::start(system_settings.clone())
        .await
        .expect("system starts");
    assert_eq!(sandbox.ctx.queue.kind(), "amqp");

    // Every service answers its health check through the CLI's own code path.
    let mut probe = system_settings.clone();
    probe.services.retrieval_port = sandbox.addr(ServiceKind::Retrieval).port();
    probe.services.firewall_port = sandbox.addr(ServiceKind::Firewall).port();
    probe.services.telemetry_port = sandbox.addr(ServiceKind::Telemetry).port();
    probe.services.analyst_port = sandbox.addr(ServiceKind::Analyst).port();
    let report = ontoloop::status::check_all(&probe, Duration::from_secs(5)).await;
    assert!(report.iter().all(|s| s.status == "SERVING"), "{report:?}");

    // An integration publishes straight to RabbitMQ, as the docs describe.
    let integration = AmqpQueue::connect(&system_settings.queue.url, &system_settings.queue)
        .await
        .expect("broker answers");
    let run = format!("{:x}", std::process::id());
    let bad_id = format!("sys-bad-{run}");
    integration
        .publish(topics::EVENTS, Message::with_id(&bad_id, "{truncated"))
        .await
        .expect("publish");
    let tenant = format!("sys-{run}");
    let ontology = r#"{"predicates":[{"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],"authority":{"default":1}}"#;
    let events = [
        format!(
            r#"{{"tenant":"{tenant}","at":"2026-09-01T00:00:00Z","type":"ontology.set","ontology":{ontology}}}"#
        ),
        format!(
            r#"{{"tenant":"{tenant}","at":"2026-09-01T00:00:00Z","type":"doc.upsert","doc_id":"svc","origin":"catalog","body":"Payments service is owned by the Atlas team."}}"#
        ),
    ];
    for (i, body) in events.iter().enumerate() {
        integration
            .publish(
                topics::EVENTS,
                Message::with_id(format!("sys-{run}-{i}"), body.as_str()),
            )
            .await
            .expect("publish");
    }
    let store = sandbox.ctx.store.clone();
    let applied = wait_until(Duration::from_secs(20), || {
        let (store, tenant) = (store.clone(), tenant.clone());
        async move {
            store
                .load_knowledge(&tenant)
                .await
                .is_ok_and(|k| k.facts.iter().any(|f| f.object == "Atlas"))
        }
    })
    .await;
    assert!(
        applied,
        "events after a malformed one are applied to the knowledge in PostgreSQL"
    );

    // The malformed one is in the dead-letter queue with its reason.
    let mut dead = integration
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
        let reason = letter.message.headers.get(REASON_HEADER).cloned();
        // Dead letters of earlier runs are settled and skipped.
        letter.ack().await.expect("ack");
        if mine {
            break reason;
        }
    };
    drop(dead);
    assert!(reason.unwrap_or_default().contains("invalid event"));

    // A burst of signals, with a shutdown in the middle of it.
    let ids: Vec<String> = (0..BURST).map(|n| format!("sys-burst-{run}-{n}")).collect();
    for id in &ids {
        integration
            .publish(
                topics::SIGNALS,
                Message::with_id(id, r#"{"type":"entity_missing"}"#),
            )
            .await
            .expect("publish");
    }
    let store = sandbox.ctx.store.clone();
    wait_until(Duration::from_secs(20), || {
        let store = store.clone();
        async move {
            store
                .inbox(topics::SIGNALS, 100_000)
                .await
                .is_ok_and(|rows| rows.len() > 20)
        }
    })
    .await;
    sandbox
        .shutdown()
        .await
        .expect("clean shutdown in the middle of a burst");

    // A new system on the same database and broker picks up where the old one stopped.
    let restarted = Sandbox::start(system_settings)
        .await
        .expect("system restarts");
    let store = restarted.ctx.store.clone();
    let wanted: HashSet<String> = ids.iter().cloned().collect();
    let all_in = wait_until(Duration::from_secs(60), || {
        let (store, wanted) = (store.clone(), wanted.clone());
        async move {
            store
                .inbox(topics::SIGNALS, 100_000)
                .await
                .is_ok_and(|rows| {
                    rows.iter()
                        .filter(|r| wanted.contains(&r.message_id))
                        .count()
                        == wanted.len()
                })
        }
    })
    .await;
    assert!(
        all_in,
        "every message of the burst is recorded after the restart"
    );
    let rows = store.inbox(topics::SIGNALS, 100_000).await.expect("read");
    let burst_rows = rows
        .iter()
        .filter(|r| wanted.contains(&r.message_id))
        .count();
    assert_eq!(burst_rows, BURST, "each message is recorded exactly once");
    restarted.shutdown().await.expect("clean shutdown");
    database.drop_now().await.expect("drop test database");
}

#[tokio::test]
async fn an_unreachable_store_or_broker_is_an_error_not_a_panic() {
    let unreachable_store = settings(&[
        ("store.url", "postgres://postgres@127.0.0.1:1/ontoloop"),
        ("store.connect_attempts", "2"),
        ("store.connect_timeout_ms", "200"),
        ("store.backoff_initial_ms", "10"),
    ]);
    let err = Sandbox::start(unreachable_store)
        .await
        .err()
        .expect("no database on port 1");
    assert!(
        format!("{err:#}").contains("unreachable after 2 attempts"),
        "{err:#}"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = format!("sqlite://{}/x.db?mode=rwc", dir.path().display());
    let unreachable_broker = settings(&[
        ("store.url", &sqlite),
        ("queue.url", "amqp://guest:guest@127.0.0.1:1/%2f"),
        ("queue.connect_attempts", "2"),
        ("queue.backoff_initial_ms", "10"),
    ]);
    let err = Sandbox::start(unreachable_broker)
        .await
        .err()
        .expect("no broker on port 1");
    assert!(
        format!("{err:#}").contains("unreachable after 2 attempts"),
        "{err:#}"
    );
}
