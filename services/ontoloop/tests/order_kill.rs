//! Per-tenant order with two replicas: two `ontoloop up` processes on one PostgreSQL database
//! and one RabbitMQ namespace (so two analysts take turns at one events queue), 500 entities
//! each set twice in quick succession — a page written twice and a system-of-record value set
//! twice — pushed through both intakes, and one process killed with SIGKILL half way. A push the
//! dead process does not acknowledge is retried on the other with its idempotency key. Every
//! entity ends at its second value: events apply in intake order whichever replica takes them,
//! so the second page version is the second text and the record ends at the second value.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use ontoloop_proto::v1;
use ontoloop_proto::v1::retrieval_service_client::RetrievalServiceClient;
use ontoloop_proto::v1::telemetry_service_client::TelemetryServiceClient;
use ontoloop_testkit::process::{Up, ports_env};
use ontoloop_testkit::servers::{PgDatabase, amqp_namespace, amqp_url};
use tonic::transport::Channel;

const BIN: &str = env!("CARGO_BIN_EXE_ontoloop");
const ENTITIES: usize = 500;
const TENANT: &str = "order";
const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]},
  {"name":"runs_in","subject_type":"service","object_type":"zone","patterns":["{s} runs in {o}."]}
],"authority":{"default":1}}"#;

/// One `ontoloop up` of the pair, with its telemetry and retrieval clients.
struct Replica {
    up: Up,
    telemetry: TelemetryServiceClient<Channel>,
    retrieval: RetrievalServiceClient<Channel>,
}

fn port(ports: &[(String, String)], service: &str) -> String {
    ports
        .iter()
        .find(|(k, _)| *k == format!("ONTOLOOP__SERVICES__{service}_PORT"))
        .map(|(_, v)| v.clone())
        .expect("port")
}

fn channel(port: &str) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(1))
        .timeout(Duration::from_secs(10))
        .connect_lazy()
}

fn start(store_url: &str, namespace: &str) -> Replica {
    let ports = ports_env();
    let mut command = Command::new(BIN);
    command
        .arg("up")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ONTOLOOP__STORE__URL", store_url)
        .env("ONTOLOOP__QUEUE__URL", amqp_url())
        .env("ONTOLOOP__QUEUE__NAMESPACE", namespace)
        .envs(ports.iter().cloned());
    Replica {
        up: Up::start(command),
        telemetry: TelemetryServiceClient::new(channel(&port(&ports, "TELEMETRY"))),
        retrieval: RetrievalServiceClient::new(channel(&port(&ports, "RETRIEVAL"))),
    }
}

fn caller() -> Option<v1::Caller> {
    Some(v1::Caller {
        tenant: TENANT.into(),
        principal: "loader".into(),
    })
}

fn event(key: String, kind: v1::event::Kind) -> v1::Event {
    v1::Event {
        caller: caller(),
        idempotency_key: key,
        kind: Some(kind),
        ..Default::default()
    }
}

/// The two events of entity `i`'s `round` (0 first, 1 second): its page and its record value.
fn events(i: usize, round: usize) -> [v1::Event; 2] {
    let team = ["First", "Second"][round];
    let zone = ["zone-a", "zone-b"][round];
    [
        event(
            format!("doc-{i}-{round}"),
            v1::event::Kind::DocUpsert(v1::DocUpsert {
                doc_id: format!("svc-{i}"),
                title: format!("svc-{i}"),
                origin: "catalog".into(),
                body: format!("Service{i} is owned by the {team} team."),
                ..Default::default()
            }),
        ),
        event(
            format!("rec-{i}-{round}"),
            v1::event::Kind::RecordSet(v1::RecordSet {
                source: "cmdb".into(),
                entity: format!("Service{i}"),
                predicate: "runs_in".into(),
                value: zone.into(),
                effective_from: None,
                scope: String::new(),
            }),
        ),
    ]
}

/// Pushes `event` on `first`, and while it is not acknowledged on `second` and `first` in turn
/// (after the kill one of them never answers), for up to a minute; returns its sequence number.
async fn push(
    first: &mut TelemetryServiceClient<Channel>,
    second: &mut TelemetryServiceClient<Channel>,
    event: v1::Event,
) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut tries = 0u32;
    loop {
        let client = if tries.is_multiple_of(2) {
            &mut *first
        } else {
            &mut *second
        };
        match client.push_event(event.clone()).await {
            Ok(ack) => return ack.into_inner().sequence,
            Err(status) => {
                assert!(
                    Instant::now() < deadline,
                    "{} never acknowledged: {status}",
                    event.idempotency_key
                );
                tries += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn lookup(
    retrieval: &mut RetrievalServiceClient<Channel>,
    entity: &str,
    predicate: &str,
    min_sequence: u64,
) -> String {
    let answer = retrieval
        .lookup(v1::LookupRequest {
            caller: caller(),
            entity: entity.into(),
            predicate_path: vec![predicate.into()],
            min_sequence,
            ..Default::default()
        })
        .await
        .expect("lookup answers")
        .into_inner();
    answer.value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_apply_each_tenants_events_in_intake_order() {
    let started = Instant::now();
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let namespace = amqp_namespace("order");
    let a = start(&database.url, &namespace);
    let b = start(&database.url, &namespace);
    let (mut a_up, b_up) = (a.up, b.up);
    let (a_telemetry, mut b_telemetry, mut b_retrieval) = (a.telemetry, b.telemetry, b.retrieval);

    let ontology = b_telemetry
        .push_event(event(
            "ontology".into(),
            v1::event::Kind::OntologySet(v1::OntologySet {
                ontology_json: ONTOLOGY.into(),
            }),
        ))
        .await
        .expect("ontology accepted")
        .into_inner()
        .sequence;
    let _ = lookup(&mut b_retrieval, "nothing", "owned_by", ontology).await;

    // Each entity's two rounds are pushed one after the other (the second only once the first is
    // acknowledged, so it has the higher number); entities go concurrently, alternately through
    // the two intakes. Half way, process A is killed.
    let pushed = Arc::new(Mutex::new(BTreeMap::<usize, u64>::new()));
    let pushing = {
        let pushed = pushed.clone();
        let (a_telemetry, b_telemetry) = (a_telemetry.clone(), b_telemetry.clone());
        tokio::spawn(async move {
            futures::stream::iter(0..ENTITIES)
                .map(|i| {
                    let (mut a, mut b) = (a_telemetry.clone(), b_telemetry.clone());
                    let pushed = pushed.clone();
                    async move {
                        let (first, second) = if i.is_multiple_of(2) {
                            (&mut a, &mut b)
                        } else {
                            (&mut b, &mut a)
                        };
                        let mut last = 0;
                        for round in 0..2 {
                            for event in events(i, round) {
                                last = last.max(push(first, second, event).await);
                            }
                        }
                        pushed.lock().expect("lock").insert(i, last);
                    }
                })
                .buffer_unordered(16)
                .collect::<Vec<()>>()
                .await;
        })
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while pushed.lock().expect("lock").len() < ENTITIES / 2 {
        assert!(Instant::now() < deadline, "pushes are not acknowledged");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    a_up.child.kill().expect("SIGKILL replica A");
    a_up.child.wait().expect("reap it");
    let killed_at = pushed.lock().expect("lock").len();
    pushing.await.expect("pusher");
    let pushed = pushed.lock().expect("lock").clone();
    assert_eq!(pushed.len(), ENTITIES, "every entity's events acknowledged");
    let highest = pushed.values().copied().max().unwrap_or_default();

    let store_settings = ontoloop_settings::Loader::new()
        .env_vars([])
        .set("store.url", database.url.as_str())
        .load()
        .expect("settings");
    let store = ontoloop_store::Store::connect(&store_settings.store)
        .await
        .expect("open the store");
    // The surviving replica applies what A held when it died (redelivered) and the rest; in
    // intake order, the highest number settled means every lower one is.
    let settled = store
        .wait_settled(
            TENANT,
            i64::try_from(highest).expect("seq"),
            Duration::from_secs(180),
        )
        .await
        .expect("wait");
    assert_eq!(settled, ontoloop_store::Settled::Applied);
    // Read through the surviving replica.
    let mut wrong = Vec::new();
    for i in 0..ENTITIES {
        let entity = format!("Service{i}");
        let team = lookup(&mut b_retrieval, &entity, "owned_by", highest).await;
        let zone = lookup(&mut b_retrieval, &entity, "runs_in", highest).await;
        if team != "Second" || zone != "zone-b" {
            wrong.push(format!("{entity}: owned_by {team:?}, runs_in {zone:?}"));
        }
    }
    // Page versions follow the order of intake: version 2 of each page is the second text.
    let knowledge = store.load_knowledge(TENANT).await.expect("knowledge");
    let mut versions_out_of_order = 0;
    let mut versions: BTreeMap<&str, Vec<(u64, &str)>> = BTreeMap::new();
    for page in &knowledge.pages {
        versions
            .entry(page.source_id.as_str())
            .or_default()
            .push((page.version, page.body.as_str()));
    }
    for list in versions.values_mut() {
        list.sort_unstable();
        let bodies: Vec<bool> = list.iter().map(|(_, b)| b.contains("Second")).collect();
        if bodies != [false, true] {
            versions_out_of_order += 1;
        }
    }
    println!(
        "{ENTITIES} entities set twice through two replicas, A killed after {killed_at} \
         entities: {} wrong final values, {versions_out_of_order} pages with versions out of \
         intake order, {} pages; {:.1} s",
        wrong.len(),
        versions.len(),
        started.elapsed().as_secs_f64()
    );
    let mut b_up = b_up;
    b_up.child.kill().expect("stop replica B");
    let _ = b_up.child.wait();
    store.close().await.expect("close");
    assert!(
        wrong.is_empty(),
        "entities not at their second value: {wrong:?}"
    );
    assert_eq!(versions.len(), ENTITIES, "one page per entity");
    assert_eq!(
        versions_out_of_order, 0,
        "page versions follow intake order"
    );
    database.drop_now().await.expect("drop test database");
}
