//! The PostgreSQL restart drill, at a small size: the store goes away while a client pushes
//! events and an agent asks, then comes back. A TCP proxy of the test's own stands between the
//! services and the machine's PostgreSQL (which is never stopped) and is cut — listener closed,
//! every connection dropped, as a restart drops them — then restored on the same port. While it
//! is away a push is refused with UNAVAILABLE and a reason: the first to find it away after the
//! store's connect timeout (5 s by default), the others at once (`ontoloop_store`'s reach); Asks
//! keep answering from the read models; afterwards everything resumes by itself and every
//! acknowledged event is applied: none lost. The figures are printed.

use std::time::{Duration, Instant};

use ontoloop_proto::v1;
use ontoloop_testkit::proxy::postgres_proxy;
use ontoloop_tests::{PgDatabase, Sandbox, amqp_namespace, amqp_url, caller, settings, wait_until};

const TENANT: &str = "store-outage";
const ONTOLOGY: &str = r#"{"predicates":[{"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],"authority":{"default":1}}"#;

/// How long the store stays unreachable.
const OUTAGE: Duration = Duration::from_secs(8);

/// The longest a refused push may take: the store's connect timeout (the default, 5 s) and
/// some room for a slow machine.
const REFUSED_WITHIN: Duration = Duration::from_secs(8);

fn doc(i: usize) -> v1::event::Kind {
    v1::event::Kind::DocUpsert(v1::DocUpsert {
        doc_id: format!("svc-{i}"),
        title: format!("svc-{i}"),
        origin: "catalog".into(),
        body: format!("Service{i} is owned by the Team{} team.", i % 7),
        ..Default::default()
    })
}

fn ask(i: usize) -> v1::AskRequest {
    v1::AskRequest {
        caller: caller(TENANT, "agent"),
        text: format!("Who owns Service{i}?"),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_restart_refuses_pushes_promptly_keeps_answering_and_loses_nothing() {
    let database = PgDatabase::create().await.expect("PostgreSQL answers");
    let (proxy, store_url) = postgres_proxy(&database.url)
        .await
        .expect("the proxy listens in front of the test database");
    let namespace = amqp_namespace("store-outage");
    let sandbox = Sandbox::start(settings(&[
        ("store.url", store_url.as_str()),
        ("queue.url", amqp_url().as_str()),
        ("queue.namespace", namespace.as_str()),
    ]))
    .await
    .expect("the system starts through the proxy");
    let clients = sandbox.clients();
    let ontology = v1::event::Kind::OntologySet(v1::OntologySet {
        ontology_json: ONTOLOGY.into(),
    });
    clients
        .push(TENANT, "admin", ontology)
        .await
        .expect("ontology");
    let mut acknowledged: Vec<u64> = Vec::new();
    for i in 0..20 {
        acknowledged.push(clients.push(TENANT, "loader", doc(i)).await.expect("push"));
    }
    let before = ask(19);
    let answered = wait_until(Duration::from_secs(60), || {
        let mut retrieval = clients.retrieval.clone();
        let request = before.clone();
        async move {
            retrieval
                .ask(request)
                .await
                .is_ok_and(|a| a.into_inner().value == "Team5")
        }
    })
    .await;
    assert!(answered, "the pages are answered before the outage");

    // The store goes away, as a restart takes it, while a client pushes and an agent asks.
    proxy.cut();
    let cut_at = Instant::now();
    let pushing = {
        let clients = clients.clone();
        tokio::spawn(async move {
            let (mut acknowledged, mut refused) = (Vec::new(), Vec::new());
            let mut k = 20;
            while cut_at.elapsed() < OUTAGE {
                let pushed = Instant::now();
                match clients.push(TENANT, "loader", doc(k)).await {
                    // Acknowledged means kept: it counts like any other.
                    Ok(seq) => acknowledged.push(seq),
                    Err(status) => refused.push((status, cut_at.elapsed(), pushed.elapsed())),
                }
                k += 1;
            }
            (acknowledged, refused, k)
        })
    };
    let asking = {
        let clients = clients.clone();
        tokio::spawn(async move {
            let (mut answered, mut failed) = (0usize, Vec::new());
            while cut_at.elapsed() < OUTAGE {
                for i in [3, 11, 19] {
                    match clients.retrieval.clone().ask(ask(i)).await {
                        Ok(answer) if answer.get_ref().value == format!("Team{}", i % 7) => {
                            answered += 1
                        }
                        other => failed.push(format!("{other:?}")),
                    }
                }
            }
            (answered, failed)
        })
    };
    let (accepted, refusals, mut k) = pushing.await.expect("pusher");
    let (asks_answered, asks_failed) = asking.await.expect("asker");
    let accepted_while_down = accepted.len();
    acknowledged.extend(accepted);
    for (status, _, _) in &refusals {
        assert_eq!(
            status.code(),
            tonic::Code::Unavailable,
            "a push while the store is away: {status:?}"
        );
        assert!(!status.message().is_empty(), "refused with a reason");
    }
    let refused = refusals.len();
    let first_refusal = refusals.first().map(|(_, at, _)| *at);
    let slowest = refusals
        .iter()
        .map(|(_, _, took)| *took)
        .max()
        .unwrap_or_default();
    let quick = refusals
        .iter()
        .filter(|(_, _, took)| *took < Duration::from_millis(100))
        .count();
    proxy.restore().expect("the proxy listens again");
    let restored_at = Instant::now();

    // Resumes by itself: pushes are acknowledged again, then every acknowledged event applies.
    let mut resumed: Option<Duration> = None;
    while restored_at.elapsed() < Duration::from_secs(60) {
        if let Ok(seq) = clients.push(TENANT, "loader", doc(k)).await {
            acknowledged.push(seq);
            resumed = Some(restored_at.elapsed());
            break;
        }
        k += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let store = sandbox.ctx.store.clone();
    let last = *acknowledged.iter().max().expect("pushes");
    let settled = store
        .wait_settled(TENANT, last as i64, Duration::from_secs(120))
        .await
        .expect("wait");
    let mut lost = 0usize;
    for seq in &acknowledged {
        match store.intake_state(TENANT, *seq as i64).await {
            Ok(Some((state, _))) if state == "applied" => {}
            _ => lost += 1,
        }
    }
    let after = clients
        .retrieval
        .clone()
        .ask(v1::AskRequest {
            min_sequence: last,
            ..ask(k)
        })
        .await;
    sandbox.shutdown().await.expect("clean shutdown");
    let _ = database.drop_now().await;

    println!(
        "store away {:.1} s: {refused} pushes refused (the first after {:.2} s, the slowest \
         {:.2} s, {quick} within 100 ms), {accepted_while_down} acknowledged meanwhile; \
         {asks_answered} Asks answered and {} failed meanwhile; pushes acknowledged again {:.2} s \
         after it came back; {} events acknowledged in all, {lost} lost",
        OUTAGE.as_secs_f64(),
        first_refusal.unwrap_or_default().as_secs_f64(),
        slowest.as_secs_f64(),
        asks_failed.len(),
        resumed.unwrap_or_default().as_secs_f64(),
        acknowledged.len(),
    );
    assert!(refused > 0, "pushes are refused while the store is away");
    // Only a push that finds the store newly away waits out the connect timeout; the others
    // meanwhile are refused at once.
    assert!(
        quick * 10 >= refused * 9,
        "{quick} of {refused} refusals within 100 ms"
    );
    assert!(
        slowest <= REFUSED_WITHIN,
        "no push waits past {REFUSED_WITHIN:?}: the slowest took {slowest:?}"
    );
    assert!(
        asks_answered > 0 && asks_failed.is_empty(),
        "Asks answer from the read models while the store is away: {asks_answered} answered, \
         failed: {asks_failed:?}"
    );
    assert!(
        resumed.is_some(),
        "pushes are acknowledged again by themselves"
    );
    assert_eq!(settled, ontoloop_store::Settled::Applied);
    assert_eq!(lost, 0, "every acknowledged event is applied");
    let after = after.expect("asked after the outage").into_inner();
    assert_eq!(after.value, format!("Team{}", k % 7), "{after:?}");
}
