//! Bounded per-tenant caches, through the services as a client sees them: with
//! `cache.read_models.max_entries = 10`, 50 tenants asking (twice round) all get their own right
//! answer, evicted tenants being rebuilt from the store, while retrieval's
//! `ontoloop_cache_entries{cache="retrieval_read_models"}` never exceeds 10.

use std::net::SocketAddr;

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::{Sandbox, caller, ontology};

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"default":1}}"#;

const TENANTS: usize = 50;
const BUDGET: usize = 10;

/// Tenant `n`'s team: a name of letters only, different per tenant.
fn team(n: usize) -> String {
    let letter = |i: usize| char::from(b'a' + u8::try_from(i % 26).expect("a letter"));
    format!("Orion{}{}", letter(n / 26), letter(n))
}

/// The read-model gauge as retrieval's `/metrics` shows it.
async fn entries(http: SocketAddr) -> usize {
    let metrics = ontoloop_tests::http_get(http, "/metrics")
        .await
        .expect("metrics");
    let line = metrics
        .lines()
        .find(|line| line.starts_with("ontoloop_cache_entries{cache=\"retrieval_read_models\"}"))
        .unwrap_or_else(|| panic!("no read-model gauge in {metrics}"));
    line.rsplit(' ')
        .next()
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as usize)
        .unwrap_or_else(|| panic!("unreadable gauge line {line:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_tenants_asking_under_a_budget_of_ten_get_right_answers_and_ten_read_models() {
    let budget = BUDGET.to_string();
    let sandbox = Sandbox::embedded(&[("cache.read_models.max_entries", budget.as_str())]).await;
    let c = sandbox.clients();
    let http = sandbox.http_addr(ServiceKind::Retrieval);
    let tenants: Vec<String> = (0..TENANTS).map(|n| format!("cached-{n:02}")).collect();
    let mut sequences = Vec::new();
    for (n, tenant) in tenants.iter().enumerate() {
        let body = format!("Billing is owned by the {} team.", team(n));
        let seq = c
            .push_all(
                tenant,
                "integration",
                [
                    ontology(ONTOLOGY),
                    ontoloop_tests::doc("billing", "wiki", &body, &[], 0.0),
                ],
            )
            .await;
        sequences.push(seq);
    }
    let mut most = 0;
    // Round one builds every tenant's read model; round two asks the evicted ones again, which
    // are rebuilt from the store.
    for round in 0..2 {
        for (n, tenant) in tenants.iter().enumerate() {
            let answer = c
                .retrieval
                .clone()
                .lookup(v1::LookupRequest {
                    caller: caller(tenant, "alice"),
                    entity: "Billing".into(),
                    predicate_path: vec!["owned_by".into()],
                    min_sequence: sequences[n],
                    ..Default::default()
                })
                .await
                .unwrap_or_else(|err| panic!("round {round}, {tenant}: {err}"))
                .into_inner();
            assert_eq!(answer.value, team(n), "round {round}, {tenant}");
            let kept = entries(http).await;
            assert!(
                kept <= BUDGET,
                "round {round}, {tenant}: {kept} read models kept"
            );
            most = most.max(kept);
        }
    }
    assert_eq!(
        most, BUDGET,
        "the cache filled up to its budget and no further"
    );
    sandbox.shutdown().await.expect("clean shutdown");
}
