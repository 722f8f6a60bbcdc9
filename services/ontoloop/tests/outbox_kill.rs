//! Acknowledged means kept, on the embedded default: `ontoloop up` (SQLite + the in-process
//! queue) is killed with SIGKILL while 1,000 events are being pushed, then started again on the
//! same store. The client pushes what was not acknowledged again, with the same idempotency keys.
//! Every acknowledged event is applied exactly once: the in-process queue lost what it held at
//! the kill, and the restarted intake's outbox relay published it again.

use std::collections::{BTreeMap, HashMap};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use ontoloop_proto::v1;
use ontoloop_proto::v1::telemetry_service_client::TelemetryServiceClient;
use ontoloop_testkit::process::{Up, ports_env};

const BIN: &str = env!("CARGO_BIN_EXE_ontoloop");
const EVENTS: usize = 1_000;
const TENANT: &str = "outbox-kill";
const ONTOLOGY: &str = r#"{"predicates":[{"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],"authority":{"default":1}}"#;

fn up(store_url: &str, ports: &[(String, String)]) -> Up {
    let mut command = Command::new(BIN);
    command
        .arg("up")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ONTOLOOP__STORE__URL", store_url)
        .envs(ports.iter().cloned());
    Up::start(command)
}

fn event(key: String, kind: v1::event::Kind) -> v1::Event {
    v1::Event {
        caller: Some(v1::Caller {
            tenant: TENANT.into(),
            principal: "loader".into(),
        }),
        idempotency_key: key,
        kind: Some(kind),
        ..Default::default()
    }
}

fn doc(i: usize) -> v1::Event {
    event(
        format!("doc-{i}"),
        v1::event::Kind::DocUpsert(v1::DocUpsert {
            doc_id: format!("svc-{i}"),
            title: format!("svc-{i}"),
            origin: "catalog".into(),
            body: format!("Service {i} is owned by the Team{} team.", i % 10),
            ..Default::default()
        }),
    )
}

async fn client(port: &str) -> TelemetryServiceClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(1))
        .timeout(Duration::from_secs(10))
        .connect_lazy();
    TelemetryServiceClient::new(channel)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_up_mid_intake_loses_no_acknowledged_event() {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    let store_url = format!("sqlite://{}/outbox.db?mode=rwc", dir.path().display());
    let ports = ports_env();
    let telemetry_port = ports
        .iter()
        .find(|(k, _)| k == "ONTOLOOP__SERVICES__TELEMETRY_PORT")
        .map(|(_, v)| v.clone())
        .expect("telemetry port");
    let mut first = up(&store_url, &ports);
    let telemetry = client(&telemetry_port).await;
    let store_settings = ontoloop_settings::Loader::new()
        .env_vars([])
        .set("store.url", store_url.as_str())
        .load()
        .expect("settings");
    let store = ontoloop_store::Store::connect(&store_settings.store)
        .await
        .expect("open the store");
    let ontology = telemetry
        .clone()
        .push_event(event(
            "ontology".into(),
            v1::event::Kind::OntologySet(v1::OntologySet {
                ontology_json: ONTOLOGY.into(),
            }),
        ))
        .await
        .expect("ontology accepted")
        .into_inner();
    // Documents applied before their ontology would be refused, not lost.
    let ready = store
        .wait_settled(
            TENANT,
            i64::try_from(ontology.sequence).expect("seq"),
            Duration::from_secs(30),
        )
        .await
        .expect("wait");
    assert_eq!(ready, ontoloop_store::Settled::Applied);

    // Acknowledged pushes: idempotency key's index -> sequence number.
    let acked: Arc<Mutex<BTreeMap<usize, u64>>> = Arc::default();
    let pushing = {
        let (telemetry, acked) = (telemetry.clone(), acked.clone());
        tokio::spawn(async move {
            futures::stream::iter(0..EVENTS)
                .map(|i| {
                    let mut telemetry = telemetry.clone();
                    let acked = acked.clone();
                    async move {
                        if let Ok(ack) = telemetry.push_event(doc(i)).await {
                            acked
                                .lock()
                                .expect("lock")
                                .insert(i, ack.into_inner().sequence);
                        }
                    }
                })
                .buffer_unordered(16)
                .collect::<Vec<()>>()
                .await;
        })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().expect("lock").len() < 300 {
        assert!(Instant::now() < deadline, "pushes are not acknowledged");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    first.child.kill().expect("SIGKILL ontoloop up");
    first.child.wait().expect("reap it");
    pushing.await.expect("pusher");
    let acked_at_kill = acked.lock().expect("lock").clone();

    let mut unapplied_at_kill = 0;
    for seq in acked_at_kill.values() {
        let state = store
            .intake_state(TENANT, i64::try_from(*seq).expect("seq"))
            .await
            .expect("state");
        if state.is_none_or(|(s, _)| s != "applied") {
            unapplied_at_kill += 1;
        }
    }

    // The same store, a new process; the client retries what was never acknowledged.
    let mut second = up(&store_url, &ports);
    let mut telemetry = client(&telemetry_port).await;
    let mut retried_duplicates = 0;
    for i in 0..EVENTS {
        if acked_at_kill.contains_key(&i) {
            continue;
        }
        let ack = telemetry
            .push_event(doc(i))
            .await
            .expect("accepted after restart")
            .into_inner();
        retried_duplicates += u64::from(ack.duplicate);
        acked.lock().expect("lock").insert(i, ack.sequence);
    }
    let acked = acked.lock().expect("lock").clone();
    assert_eq!(acked.len(), EVENTS, "every event acknowledged in the end");

    // Every acknowledged event is applied; none twice.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut states: HashMap<u64, String> = HashMap::new();
    loop {
        for seq in acked.values() {
            if states.get(seq).is_some_and(|s| s != "pending") {
                continue;
            }
            let state = store
                .intake_state(TENANT, i64::try_from(*seq).expect("seq"))
                .await
                .expect("state")
                .map_or_else(|| "missing".to_owned(), |(s, _)| s);
            states.insert(*seq, state);
        }
        if states.values().all(|s| s != "pending") || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let runs = store.maintenance_runs(TENANT).await.expect("runs");
    let mut runs_per_seq: HashMap<i64, usize> = HashMap::new();
    for run in &runs {
        *runs_per_seq.entry(run.seq).or_default() += 1;
    }
    let knowledge = store.load_knowledge(TENANT).await.expect("knowledge");
    let mut versions_per_page: HashMap<&str, usize> = HashMap::new();
    for page in &knowledge.pages {
        *versions_per_page
            .entry(page.source_id.as_str())
            .or_default() += 1;
    }
    second.child.kill().expect("stop the second process");
    let _ = second.child.wait();

    let applied = states.values().filter(|s| *s == "applied").count();
    let lost = acked.len() - applied;
    let duplicated = runs_per_seq.values().filter(|n| **n > 1).count()
        + versions_per_page.values().filter(|n| **n > 1).count();
    println!(
        "acknowledged before the kill {}, of them unapplied at the kill {unapplied_at_kill}; \
         retried after restart {} (answered duplicate {retried_duplicates}); \
         applied {applied}, lost {lost}, duplicated {duplicated}; pages {}; {:.1} s",
        acked_at_kill.len(),
        EVENTS - acked_at_kill.len(),
        versions_per_page.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(lost, 0, "states of lost events: {states:?}");
    assert_eq!(duplicated, 0, "no event applied twice");
    assert_eq!(versions_per_page.len(), EVENTS, "one page per event");
}
