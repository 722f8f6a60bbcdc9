//! Isolation of identifiers between tenants, through the services as a client sees them:
//! intake sequence numbers are counted per tenant and scoped to it (another tenant's number
//! answers NOT_FOUND with the text of a number that never existed, on every read that takes one); on PostgreSQL and
//! RabbitMQ, two tenants' signals whose tenant and key join to the same text are both kept, and
//! an AMQP event carrying another tenant's `seq` goes to the dead-letter queue with the reason
//! and settles nothing; the analyst's metrics name at most a bounded number of tenants.

use std::time::Duration;

use std::collections::BTreeSet;

use ontoloop_core::{ServiceKind, topics};
use ontoloop_observability::metrics::{OTHER, TENANT_LABELS};
use ontoloop_proto::v1;
use ontoloop_queue::{Message, REASON_HEADER};
use ontoloop_store::intake_state;
use ontoloop_tests::{Clients, Sandbox, caller, ontology, wait_until};
use tonic::Code;

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"default":1}}"#;

fn doc(id: &str, body: &str) -> v1::event::Kind {
    ontoloop_tests::doc(id, "wiki", body, &[], 0.0)
}

fn lookup(tenant: &str, min_sequence: u64) -> v1::LookupRequest {
    v1::LookupRequest {
        caller: caller(tenant, "alice"),
        entity: "Billing".into(),
        predicate_path: vec!["owned_by".into()],
        min_sequence,
        ..Default::default()
    }
}

/// What each read that takes a sequence number answers `tenant` about `seq`: code and text of
/// Lookup, Ask and ListMaintenanceRuns.
async fn reads(c: &Clients, tenant: &str, seq: u64) -> Vec<(Code, String)> {
    let status = |r: Result<(), tonic::Status>| match r {
        Ok(()) => (Code::Ok, String::new()),
        Err(status) => (status.code(), status.message().to_owned()),
    };
    let lookup = c.retrieval.clone().lookup(lookup(tenant, seq)).await;
    let ask = c
        .retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(tenant, "alice"),
            text: "Who owns Billing?".into(),
            min_sequence: seq,
            ..Default::default()
        })
        .await;
    let runs = c
        .analyst
        .clone()
        .list_maintenance_runs(v1::ListMaintenanceRunsRequest {
            caller: caller(tenant, "alice"),
            min_sequence: seq,
        })
        .await;
    vec![
        status(lookup.map(|_| ())),
        status(ask.map(|_| ())),
        status(runs.map(|_| ())),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenants_sequence_number_is_not_found_like_one_that_never_existed() {
    let sandbox = Sandbox::embedded(&[("retrieval.read_your_writes_timeout_ms", "3000")]).await;
    let c = sandbox.clients();
    // Numbers are counted per tenant: `other`'s event does not move the victim's count.
    let own = c
        .push_all("other", "integration", [ontology(ONTOLOGY)])
        .await;
    let applied = c
        .push_all(
            "victim",
            "integration",
            [
                ontology(ONTOLOGY),
                doc("billing", "Billing is owned by the Orion team."),
            ],
        )
        .await;
    assert_eq!((own, applied), (1, 2));
    // A tenant without an ontology: its page applies (read under the empty one), its record
    // value for a predicate it never defined is refused, with a reason naming that predicate.
    let refused = c
        .push_all(
            "lonely",
            "integration",
            [
                doc("billing", "Billing is owned by Orion."),
                v1::event::Kind::RecordSet(v1::RecordSet {
                    source: "record:hr".into(),
                    entity: "Ledger".into(),
                    predicate: "lonely_secret".into(),
                    value: "Atlas".into(),
                    effective_from: None,
                    scope: String::new(),
                }),
            ],
        )
        .await;
    assert_eq!(refused, 2);
    let victim_reads = reads(&c, "victim", applied).await;
    assert!(
        victim_reads.iter().all(|(code, _)| *code == Code::Ok),
        "the owner reads after its own event: {victim_reads:?}"
    );
    let lonely_reads = reads(&c, "lonely", refused).await;
    assert!(
        lonely_reads
            .iter()
            .all(|(code, text)| *code == Code::FailedPrecondition
                && text.contains("\"lonely_secret\" is not in the ontology")),
        "the owner learns why its event was refused: {lonely_reads:?}"
    );

    // The other tenant (whose own events stop at 1) asks about both tenants' number 2, and about
    // a number that never existed.
    let never = applied.max(refused) + 1_000;
    assert_eq!(reads(&c, "other", never).await, not_found(never));
    for seq in [applied, refused] {
        let answered = reads(&c, "other", seq).await;
        assert_eq!(
            answered,
            not_found(seq),
            "another tenant's number reads exactly like a number that never existed"
        );
        assert!(
            answered
                .iter()
                .all(|(_, text)| !text.contains("lonely") && !text.contains("victim")),
            "{answered:?}"
        );
    }
    sandbox.shutdown().await.expect("clean shutdown");
}

/// What [`reads`] answers about a number that never existed.
fn not_found(seq: u64) -> Vec<(Code, String)> {
    let text = format!("no intake event with sequence number {seq}");
    vec![(Code::NotFound, text); 3]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_and_forged_sequence_numbers_stay_with_their_tenant_on_postgres_and_rabbitmq() {
    let (sandbox, database) = Sandbox::on_servers("isolation", &[]).await;
    let c = sandbox.clients();

    // Tenant `a` with key `b-c` and tenant `a-b` with key `c`: both taken in, both kept.
    let signal = |tenant: &str, key: &str, entity: &str| v1::Signal {
        caller: caller(tenant, "agent"),
        r#type: v1::SignalType::EntityMissing as i32,
        query: format!("Who owns {entity}?"),
        entity: entity.into(),
        agent_id: "agent".into(),
        idempotency_key: key.into(),
        ..Default::default()
    };
    for (tenant, key, entity) in [("a", "b-c", "Project Kite"), ("a-b", "c", "Project Wren")] {
        let ack = c
            .telemetry
            .clone()
            .report_signal(signal(tenant, key, entity))
            .await
            .expect("accepted")
            .into_inner();
        assert!(!ack.duplicate, "{tenant}/{key} is new");
    }
    let both = wait_until(Duration::from_secs(20), || {
        let c = c.clone();
        async move {
            let a = c.patterns("a", "x").await;
            let ab = c.patterns("a-b", "x").await;
            a.iter().any(|p| p.key == "project kite") && ab.iter().any(|p| p.key == "project wren")
        }
    })
    .await;
    assert!(both, "each tenant sees its own signal's pattern");
    assert!(
        c.patterns("a-b", "x")
            .await
            .iter()
            .all(|p| p.key != "project kite"),
        "and only its own"
    );

    // The victim's event is accepted but not yet applied (its pending intake entry), its
    // publish in flight: leased for an hour, so the outbox relay leaves it alone and only the
    // forged messages could settle it.
    let store = sandbox.ctx.store.clone();
    let now = chrono::Utc::now();
    let victim_seq = store
        .intake_accept(
            "victim",
            None,
            "doc.upsert",
            "{}",
            now,
            Some(now + chrono::Duration::hours(1)),
            None,
        )
        .await
        .expect("append")
        .seq;
    // An integration publishes events for `attacker` carrying the victim's number: one valid,
    // one malformed.
    let forged = format!(
        r#"{{"tenant":"attacker","seq":{victim_seq},"at":"2026-09-01T00:00:00Z","type":"ontology.set","ontology":{ONTOLOGY}}}"#
    );
    let malformed = format!(r#"{{"tenant":"attacker","seq":{victim_seq},"type":"doc.upsert"}}"#);
    let queue = sandbox.ctx.queue.clone();
    for (id, body) in [("forged-1", &forged), ("forged-2", &malformed)] {
        queue
            .publish(topics::EVENTS, Message::with_id(id, body.as_str()))
            .await
            .expect("publish");
    }
    let mut dead = queue
        .consume_dead_letters(topics::EVENTS)
        .await
        .expect("dlq");
    let mut reasons = std::collections::BTreeMap::new();
    while reasons.len() < 2 {
        let letter = tokio::time::timeout(Duration::from_secs(20), dead.next())
            .await
            .expect("the dead letters arrive")
            .expect("open")
            .expect("delivery");
        let reason = letter
            .message
            .headers
            .get(REASON_HEADER)
            .cloned()
            .unwrap_or_default();
        reasons.insert(letter.message.id.clone(), reason);
        letter.ack().await.expect("ack");
    }
    drop(dead);
    assert_eq!(
        reasons["forged-1"],
        format!("sequence number {victim_seq} is not an intake event of tenant attacker")
    );
    assert!(
        reasons["forged-2"].starts_with("invalid event"),
        "{reasons:?}"
    );
    assert_eq!(
        store
            .intake_state("victim", victim_seq)
            .await
            .expect("read"),
        Some((intake_state::PENDING.to_owned(), None)),
        "the victim's event is neither applied nor failed by the forged ones"
    );
    assert_eq!(
        store.knowledge_version("attacker").await.expect("version"),
        0,
        "the forged event had no effect"
    );

    // The same event without a forged number applies.
    let honest = forged.replace(&format!(r#""seq":{victim_seq},"#), "");
    queue
        .publish(topics::EVENTS, Message::with_id("honest-1", honest))
        .await
        .expect("publish");
    let applied = wait_until(Duration::from_secs(20), || {
        let store = store.clone();
        async move {
            store
                .knowledge_version("attacker")
                .await
                .is_ok_and(|v| v == 1)
        }
    })
    .await;
    assert!(applied, "an honest event of the same tenant applies");
    sandbox.shutdown().await.expect("clean shutdown");
    database.drop_now().await.expect("drop test database");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_analysts_metrics_name_a_bounded_number_of_tenants() {
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let tenants: Vec<String> = (0..TENANT_LABELS + 5)
        .map(|n| format!("metered-{n:02}"))
        .collect();
    for tenant in &tenants {
        let seq = c
            .push_all(
                tenant,
                "integration",
                [
                    ontology(ONTOLOGY),
                    doc("billing", "Billing is owned by the Orion team."),
                ],
            )
            .await;
        c.retrieval
            .clone()
            .lookup(lookup(tenant, seq))
            .await
            .expect("applied");
    }
    let metrics = ontoloop_tests::http_get(sandbox.http_addr(ServiceKind::Analyst), "/metrics")
        .await
        .expect("metrics");
    let labels: BTreeSet<&str> = metrics
        .lines()
        .filter(|line| line.starts_with("ontoloop_analyst_region_fresh_ratio{"))
        .filter_map(|line| line.split("tenant=\"").nth(1)?.split('"').next())
        .collect();
    assert!(
        labels.len() <= TENANT_LABELS + 1,
        "{} tenant label values: {labels:?}",
        labels.len()
    );
    assert!(labels.contains(OTHER), "{metrics}");
    let summed =
        format!("ontoloop_analyst_region_fresh_ratio{{tenant=\"{OTHER}\",region=\"service\"}} 1");
    assert!(
        metrics.lines().any(|line| line == summed),
        "the tenants past the bound are summed under `other`: {metrics}"
    );
    sandbox.shutdown().await.expect("clean shutdown");
}
