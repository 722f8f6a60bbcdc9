//! Bounded per-tenant caches, through the services as a client sees them: with
//! `cache.read_models.max_entries = 10`, 50 tenants asking (twice round) all get their own right
//! answer, evicted tenants being rebuilt from the store, while the process's (retrieval's and the
//! firewall's) `ontoloop_cache_entries{cache="read_models"}` never exceeds 10. The analyst's
//! knowledge and HR records, the healer's stages and retrieval's org views are held to a budget
//! the same way, and an evicted tenant answers as if it had stayed.

use std::net::SocketAddr;

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::{Sandbox, caller, ontology};

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"default":1}}"#;

/// The cache gauges live in the process's one metrics registry, which every sandbox of this file
/// shares: the tests run one at a time so each reads its own system's.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
        .find(|line| line.starts_with("ontoloop_cache_entries{cache=\"read_models\"}"))
        .unwrap_or_else(|| panic!("no read-model gauge in {metrics}"));
    line.rsplit(' ')
        .next()
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as usize)
        .unwrap_or_else(|| panic!("unreadable gauge line {line:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_tenants_asking_under_a_budget_of_ten_get_right_answers_and_ten_read_models() {
    let _alone = ONE_AT_A_TIME.lock().await;
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

/// One of a service's `ontoloop_cache_entries{cache=...}` gauges, 0 before it is first set.
async fn gauge(http: SocketAddr, cache: &str) -> usize {
    let metrics = ontoloop_tests::http_get(http, "/metrics")
        .await
        .expect("metrics");
    let prefix = format!("ontoloop_cache_entries{{cache=\"{cache}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .map_or(0, |value| {
            value
                .trim()
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("unreadable gauge {cache}: {value:?}"))
                as usize
        })
}

fn hr(kind: v1::HrEventType, person: &str, manager: &str) -> v1::event::Kind {
    v1::event::Kind::Hr(v1::HrEvent {
        r#type: kind as i32,
        person_id: person.into(),
        name: person.to_uppercase(),
        team: "core".into(),
        role: "engineer".into(),
        manager_id: manager.into(),
        ..Default::default()
    })
}

fn restructure() -> v1::event::Kind {
    v1::event::Kind::Hr(v1::HrEvent {
        r#type: v1::HrEventType::OrgRestructure as i32,
        teams: vec![v1::HrTeam {
            id: "core".into(),
            name: "Core".into(),
            parent: String::new(),
        }],
        ..Default::default()
    })
}

fn item(assignee: &str) -> v1::event::Kind {
    v1::event::Kind::WorkItem(v1::WorkItemUpsert {
        item_id: "INC-1".into(),
        title: "Billing is down".into(),
        assignee: assignee.into(),
        service: "billing".into(),
        severity: "critical".into(),
        scope: "bugs".into(),
        source_type: "servicenow".into(),
        created_at: None,
        acl: Vec::new(),
    })
}

/// Answers once the tenant's event `seq` was applied (an error names a refused one).
async fn owner(c: &ontoloop_tests::Clients, tenant: &str, seq: u64) -> String {
    c.retrieval
        .clone()
        .lookup(v1::LookupRequest {
            caller: caller(tenant, "alice"),
            entity: "Billing".into(),
            predicate_path: vec!["owned_by".into()],
            min_sequence: seq,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|err| panic!("{tenant} at {seq}: {err}"))
        .into_inner()
        .value
}

/// The plate of `tenant`'s p1 as of `at` (fixed, so the temporal weight does not move between
/// two asks).
async fn plate(
    c: &ontoloop_tests::Clients,
    tenant: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> v1::PlateResponse {
    c.retrieval
        .clone()
        .plate(v1::PlateRequest {
            caller: caller(tenant, "p1"),
            limit: 0,
            as_of: Some(ontoloop_proto::convert::timestamp(at)),
        })
        .await
        .unwrap_or_else(|err| panic!("plate of {tenant}: {err}"))
        .into_inner()
}

/// The analyst's knowledge and HR records, the healer's stages and retrieval's org views, each
/// under a budget of four tenants while twelve are driven: every gauge stays within it, and a
/// tenant evicted from each answers as before (its next page version, HR event and plate are
/// what they would have been had it stayed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_per_tenant_cache_keeps_its_budget_and_evicted_tenants_answer_the_same() {
    let _alone = ONE_AT_A_TIME.lock().await;
    const SMALL: usize = 4;
    const DRIVEN: usize = 12;
    let small = SMALL.to_string();
    let sandbox = Sandbox::embedded(&[
        ("cache.knowledge.max_entries", small.as_str()),
        ("cache.hr_records.max_entries", small.as_str()),
        ("cache.heal_stages.max_entries", small.as_str()),
        ("cache.org_views.max_entries", small.as_str()),
        // Every signal is acted on, so each tenant's pattern takes a stage.
        ("analyst.heal_at", "low"),
        ("analyst.propose_at", "low"),
    ])
    .await;
    let c = sandbox.clients();
    let analyst = sandbox.http_addr(ServiceKind::Analyst);
    let retrieval = sandbox.http_addr(ServiceKind::Retrieval);
    let tenants: Vec<String> = (0..DRIVEN).map(|n| format!("budget-{n:02}")).collect();
    let mut plates = Vec::new();
    // After every item is created: asked as of an hour from now.
    let at = chrono::Utc::now() + chrono::Duration::hours(1);
    for (n, tenant) in tenants.iter().enumerate() {
        let body = format!("Billing is owned by the {} team.", team(n));
        let seq = c
            .push_all(
                tenant,
                "integration",
                [
                    ontology(ONTOLOGY),
                    ontoloop_tests::doc("billing", "wiki", &body, &[], 0.0),
                    restructure(),
                    hr(v1::HrEventType::EmployeeHired, "p1", ""),
                    item("p1"),
                ],
            )
            .await;
        assert_eq!(owner(&c, tenant, seq).await, team(n), "{tenant}");
        plates.push(plate(&c, tenant, at).await);
        c.telemetry
            .clone()
            .report_signal(v1::Signal {
                caller: caller(tenant, "agent"),
                r#type: v1::SignalType::EntityMissing as i32,
                query: "who owns Ghost?".into(),
                entity: "Ghost".into(),
                agent_id: "agent".into(),
                idempotency_key: format!("{tenant}-ghost"),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|err| panic!("signal of {tenant}: {err}"));
        for (addr, cache) in [
            (analyst, "analyst_knowledge"),
            (analyst, "analyst_hr_records"),
            (analyst, "analyst_heal_stages"),
            (retrieval, "retrieval_org_views"),
        ] {
            let kept = gauge(addr, cache).await;
            assert!(kept <= SMALL, "{tenant}: {kept} entries in {cache}");
        }
    }
    for cache in ["analyst_knowledge", "analyst_hr_records"] {
        assert_eq!(gauge(analyst, cache).await, SMALL, "{cache} filled up");
    }
    assert_eq!(gauge(retrieval, "retrieval_org_views").await, SMALL);
    let stages_filled = ontoloop_tests::wait_until(std::time::Duration::from_secs(20), || async {
        gauge(analyst, "analyst_heal_stages").await == SMALL
    })
    .await;
    assert!(stages_filled, "the healer's stages filled up to the budget");
    // Round two: the first tenants were evicted everywhere. Their next page version, their next
    // hire (which needs the team and the manager from the records) and their plates come out as
    // if they had stayed.
    for (n, tenant) in tenants.iter().enumerate() {
        assert_eq!(
            plate(&c, tenant, at).await,
            plates[n],
            "{tenant}'s plate after its org view was rebuilt"
        );
        let body = format!("Billing is owned by the {} team.", team(n + DRIVEN));
        let seq = c
            .push_all(
                tenant,
                "integration",
                [
                    ontoloop_tests::doc("billing", "wiki", &body, &[], 0.0),
                    hr(v1::HrEventType::EmployeeHired, "p2", "p1"),
                ],
            )
            .await;
        assert_eq!(
            owner(&c, tenant, seq).await,
            team(n + DRIVEN),
            "{tenant}'s second version, and its hire under p1, applied after reload"
        );
        for (addr, cache) in [
            (analyst, "analyst_knowledge"),
            (analyst, "analyst_hr_records"),
            (analyst, "analyst_heal_stages"),
            (retrieval, "retrieval_org_views"),
        ] {
            let kept = gauge(addr, cache).await;
            assert!(
                kept <= SMALL,
                "round two, {tenant}: {kept} entries in {cache}"
            );
        }
    }
    sandbox.shutdown().await.expect("clean shutdown");
}
