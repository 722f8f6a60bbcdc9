//! The loop end to end on the machine's PostgreSQL and RabbitMQ: ten agents ask about a project
//! the graph does not know; their signals cluster into one missing-entity pattern; the analyst
//! discovers the project in the connected project records; the next ask succeeds with provenance
//! pointing at that source. Prints the signal-to-heal latency.

use std::time::{Duration, Instant};

use ontoloop_proto::v1;
use ontoloop_tests::{Records, Sandbox, ontology, wait_until};

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"project","object_type":"team","patterns":["{s} is owned by the {o} team."]},
  {"name":"does","subject_type":"project","object_type":"text","patterns":["{s} is our {o}."]}],
  "authority":{"project-record":4,"default":2}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_project_is_discovered_and_answered_with_provenance() {
    let tenant = format!("loop{}", std::process::id());
    let records = Records::new(
        &tenant,
        &[(
            "kite.md",
            "# Project Kite\nProject Kite is our drone survey pilot. Project Kite is owned by the Atlas team.\n",
        )],
    );
    let (sandbox, database) = Sandbox::on_servers(
        "loop",
        &records.and(&[
            // This test shows the heal-at-once path; `review.rs` shows proposals below it.
            ("analyst.propose_at", "critical"),
        ]),
    )
    .await;
    let c = sandbox.clients();
    let (mut telemetry, mut retrieval) = (c.telemetry.clone(), c.retrieval.clone());
    let caller = |principal: &str| ontoloop_tests::caller(&tenant, principal);
    let setup = [
        ontology(ONTOLOGY),
        v1::event::Kind::DocUpsert(v1::DocUpsert {
            doc_id: "portfolio".into(),
            title: "Portfolio".into(),
            origin: "wiki".into(),
            body: "Project Wren is owned by the Helix team.".into(),
            ..Default::default()
        }),
    ];
    let last = c.push_all(&tenant, "ops", setup).await;
    let lookup = |principal: &str, min_sequence: u64| v1::LookupRequest {
        caller: caller(principal),
        entity: "Project Kite".into(),
        predicate_path: vec!["owned_by".into()],
        min_sequence,
        ..Default::default()
    };

    // Ten agents ask and fail (retrieval signals each failure), then each reports it too.
    let started = Instant::now();
    for n in 0..10 {
        let agent = format!("agent-{n}");
        let answer = retrieval
            .lookup(lookup(&agent, last))
            .await
            .expect("lookup")
            .into_inner();
        assert_eq!(
            answer.status,
            v1::AnswerStatus::Abstained as i32,
            "unknown before healing (ask {n}): {:?}",
            answer.value
        );
    }
    for n in 0..10 {
        let agent = format!("agent-{n}");
        telemetry
            .report_signal(v1::Signal {
                caller: caller(&agent),
                r#type: v1::SignalType::EntityMissing as i32,
                query: "Who owns project kite?".into(),
                entity: if n % 2 == 0 {
                    "Project Kite".into()
                } else {
                    "project  kite".into()
                },
                agent_id: agent.clone(),
                idempotency_key: format!("{agent}-kite"),
                ..Default::default()
            })
            .await
            .expect("signal");
    }

    // The next ask succeeds, with provenance pointing at the project record.
    let healed = c
        .wait_for_answer(lookup("agent-0", 0), "Atlas", Duration::from_secs(30))
        .await;
    let latency = started.elapsed();
    assert!(healed, "the analyst healed the missing project");
    println!(
        "signal-to-heal latency: {} ms (from the first signal to the first successful ask)",
        latency.as_millis()
    );
    let answer = retrieval
        .lookup(lookup("agent-3", 0))
        .await
        .expect("lookup")
        .into_inner();
    assert_eq!(answer.status, v1::AnswerStatus::Answered as i32);
    assert_eq!(answer.evidence[0].source_id, "project-record:kite.md");
    assert_eq!(answer.evidence[0].origin, "project-record");

    // One pattern, across spellings, from every agent; critical, so healed at once.
    let list = || c.patterns(&tenant, "reviewer");
    let healed = wait_until(Duration::from_secs(30), || async {
        list()
            .await
            .iter()
            .any(|p| p.key == "project kite" && p.status == "healed")
    })
    .await;
    let patterns = list().await;
    assert!(
        healed,
        "the critical pattern was healed at once: {patterns:?}"
    );
    let kite: Vec<_> = patterns
        .iter()
        .filter(|p| p.key == "project kite")
        .collect();
    assert_eq!(kite.len(), 1, "{patterns:?}");
    assert_eq!(kite[0].kind, "missing_entity");
    assert!(kite[0].agent_count >= 10, "{kite:?}");
    assert_eq!(kite[0].severity, v1::Severity::Critical as i32);
    assert_eq!(kite[0].status, "healed", "{kite:?}");
    println!(
        "signal-to-heal latency recorded by the analyst: {} ms (first signal to records read)",
        kite[0].signal_to_heal_ms
    );
    sandbox.shutdown().await.expect("clean shutdown");
    database.drop_now().await.expect("drop test database");
}
