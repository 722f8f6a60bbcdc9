//! The supervised half of the loop on the machine's PostgreSQL and RabbitMQ: signals about a
//! project the graph lacks reach medium severity; the analyst drafts one update per slot its
//! connected source states; the supervisor applies the ordinary one at once (logged) and queues
//! the financial one and the one its sources disagree on for a reviewer. Reviewers defer, approve
//! (twice: applied once) and modify; every decision and the learned rates are in the store.

use std::time::Duration;

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::{Records, Sandbox, ontology, wait_until};
use sea_orm::{ConnectionTrait, Database, Statement};

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"project","object_type":"team","patterns":["{s} is owned by the {o} team."]},
  {"name":"budget","subject_type":"project","object_type":"number","patterns":["{s} has a budget of {o}."]},
  {"name":"launch_window","subject_type":"project","object_type":"text","patterns":["{s} launches in {o}."]}],
  "authority":{"project-record":4,"default":2}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_supervisor_routes_updates_and_reviewers_decide_them_once() {
    let tenant = format!("review{}", std::process::id());
    let records = Records::new(
        &tenant,
        &[
            (
                "kite.md",
                "# Project Kite\nProject Kite is owned by the Atlas team. Project Kite has a budget of 40000.\n",
            ),
            // Two records that disagree on the launch window: a high-variance update.
            (
                "kite-plan.md",
                "# Kite plan\nProject Kite launches in March.\n",
            ),
            (
                "kite-memo.md",
                "# Kite memo\nProject Kite launches in June.\n",
            ),
        ],
    );
    let (sandbox, database) = Sandbox::on_servers(
        "review",
        &records.and(&[
            // Nothing ordinary is sampled, so what reaches the queue is there by rule.
            ("supervisor.base_rate", "0"),
            ("supervisor.min_rate", "0"),
            ("supervisor.seed", "7"),
        ]),
    )
    .await;
    let c = sandbox.clients();
    let (mut telemetry, mut retrieval, analyst) =
        (c.telemetry.clone(), c.retrieval.clone(), c.analyst.clone());
    let caller = |principal: &str| ontoloop_tests::caller(&tenant, principal);
    let pushed = c
        .push(&tenant, "ops", ontology(ONTOLOGY))
        .await
        .expect("push");

    // The ontology is in place before anyone asks.
    retrieval
        .lookup(v1::LookupRequest {
            caller: caller("ops"),
            entity: "Project Kite".into(),
            predicate_path: vec!["owned_by".into()],
            min_sequence: pushed,
            ..Default::default()
        })
        .await
        .expect("lookup after the ontology");

    // Three agents miss Project Kite: medium severity, below the heal-at-once threshold.
    for n in 0..3 {
        let agent = format!("agent-{n}");
        telemetry
            .report_signal(v1::Signal {
                caller: caller(&agent),
                r#type: v1::SignalType::EntityMissing as i32,
                query: format!("what is the budget of project kite? ({n})"),
                entity: "Project Kite".into(),
                agent_id: agent.clone(),
                idempotency_key: format!("{agent}-kite"),
                ..Default::default()
            })
            .await
            .expect("signal");
    }
    let lookup = |predicate: &str| v1::LookupRequest {
        caller: caller("agent-0"),
        entity: "Project Kite".into(),
        predicate_path: vec![predicate.into()],
        min_sequence: pushed,
        ..Default::default()
    };

    // The ordinary update (owner) was applied without a human.
    let owner_applied = c
        .wait_for_answer(lookup("owned_by"), "Atlas", Duration::from_secs(30))
        .await;
    if !owner_applied {
        eprintln!(
            "DEBUG updates {:?}",
            sandbox.ctx.store.updates(&tenant, 50).await
        );
        eprintln!(
            "DEBUG patterns {:?}",
            sandbox.ctx.store.pattern_statuses(&tenant).await
        );
        eprintln!(
            "DEBUG answer {:?}",
            retrieval.lookup(lookup("owned_by")).await
        );
    }
    assert!(owner_applied, "the supervisor applied the ordinary update");
    let auto: Vec<_> = sandbox
        .ctx
        .store
        .updates(&tenant, 50)
        .await
        .expect("updates")
        .into_iter()
        .filter(|u| u.reason == "auto")
        .collect();
    assert_eq!(auto.len(), 1, "{auto:?}");
    assert_eq!(
        (auto[0].predicate.as_str(), auto[0].status.as_str()),
        ("owned_by", "applied")
    );

    // The financial update waits for a reviewer; a financial expert gets it first.
    let next = |expertise: Vec<String>| {
        let mut analyst = analyst.clone();
        let caller = caller("rita");
        async move {
            analyst
                .next_review(v1::NextReviewRequest { caller, expertise })
                .await
                .expect("next review")
                .into_inner()
                .update
        }
    };
    let queued = wait_until(Duration::from_secs(30), || {
        let store = sandbox.ctx.store.clone();
        let tenant = tenant.clone();
        async move {
            store
                .review_queue(&tenant, 10)
                .await
                .is_ok_and(|q| q.len() == 2)
        }
    })
    .await;
    assert!(queued, "two updates wait for review");
    let budget = next(vec!["financial".into()]).await.expect("an update");
    assert_eq!(
        (
            budget.predicate.as_str(),
            budget.after.as_str(),
            budget.before.as_str()
        ),
        ("budget", "40000", "")
    );
    assert_eq!(
        (budget.domain.as_str(), budget.reason.as_str()),
        ("financial", "critical_domain")
    );
    assert_eq!(budget.confidence, 1.0);
    assert_eq!(budget.sources[0].source_id, "project-record:kite.md");
    // The queries recorded when the update was drafted: the agents' (and retrieval's own
    // abstention on the first lookup), as many as had arrived by then.
    assert!(budget.impact_radius >= 2, "{budget:?}");
    assert_eq!(budget.affected_queries.len() as u32, budget.impact_radius);
    assert!(
        budget
            .affected_queries
            .iter()
            .any(|q| q.starts_with("what is the budget of project kite?")),
        "{budget:?}"
    );
    let launch = next(vec![]).await.expect("an update");
    assert_eq!(
        launch.reason, "high_variance",
        "the sources disagree: {launch:?}"
    );
    assert_eq!(launch.confidence_variance, 0.25);
    assert!(
        launch.priority > budget.priority,
        "variance raises priority"
    );

    // Deferred: back of the queue (still pending, decision kept).
    let decide = |id: &str, decision: v1::Decision, value: &str| {
        let mut analyst = analyst.clone();
        let request = v1::DecideRequest {
            caller: caller("rita"),
            update_id: id.to_owned(),
            decision: decision as i32,
            new_value: value.to_owned(),
            note: "checked with finance".into(),
        };
        async move { analyst.decide(request).await.expect("decide").into_inner() }
    };
    let deferred = decide(&launch.id, v1::Decision::Defer, "").await;
    assert!(!deferred.applied && !deferred.already_decided);

    // Approved twice at once: applied exactly once.
    let (first, second) = tokio::join!(
        decide(&budget.id, v1::Decision::Approve, ""),
        decide(&budget.id, v1::Decision::Approve, "")
    );
    assert_eq!(
        u8::from(first.applied) + u8::from(second.applied),
        1,
        "{first:?} {second:?}"
    );
    assert!(first.already_decided || second.already_decided);
    let answer = retrieval
        .lookup(lookup("budget"))
        .await
        .expect("lookup")
        .into_inner();
    assert_eq!(answer.value, "40000");
    assert_eq!(answer.evidence[0].source_id, "project-record:kite.md");

    // Modified: the reviewer's value is what the graph holds.
    let modified = decide(&launch.id, v1::Decision::Modify, "April").await;
    assert!(modified.applied);
    let answer = retrieval
        .lookup(lookup("launch_window"))
        .await
        .expect("lookup")
        .into_inner();
    assert_eq!(answer.value, "April");
    assert!(next(vec![]).await.is_none(), "the queue is empty");

    // The store holds every decision, each update once in the graph, and the learned rates.
    let db = Database::connect(&database.url).await.expect("connect");
    let count = |sql: String| {
        let db = &db;
        async move {
            let row = db
                .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
                .await
                .expect("query")
                .expect("a row");
            row.try_get_by_index::<i64>(0).expect("count")
        }
    };
    assert_eq!(
        count(format!(
            "SELECT count(*) FROM review_decision WHERE tenant = '{tenant}'"
        ))
        .await,
        3,
        "defer, one approval (the second changed nothing), modify"
    );
    assert_eq!(
        count(format!(
            "SELECT count(*) FROM fact WHERE tenant = '{tenant}' AND predicate = 'budget'"
        ))
        .await,
        1,
        "the approved budget reached the graph once"
    );
    let rates = sandbox
        .ctx
        .store
        .supervisor_rates(&tenant)
        .await
        .expect("rates");
    let financial = rates
        .iter()
        .find(|r| r.domain == "financial")
        .expect("the financial category learned");
    assert_eq!((financial.approvals, financial.rejections), (1, 0));
    let general = rates
        .iter()
        .find(|r| r.domain == "general")
        .expect("the modified category learned");
    assert_eq!((general.approvals, general.rejections), (0, 1));

    // The pattern says what was done.
    let patterns = c.patterns(&tenant, "rita").await;
    let kite = patterns
        .iter()
        .find(|p| p.key == "project kite")
        .expect("the pattern");
    assert_eq!(kite.status, "proposed", "{kite:?}");
    assert!(kite.action.contains("proposed 3 update"), "{}", kite.action);

    // Metrics: the analyst's HTTP port speaks the Prometheus text format.
    let metrics = ontoloop_tests::http_get(sandbox.http_addr(ServiceKind::Analyst), "/metrics")
        .await
        .expect("metrics");
    assert!(
        metrics.contains("# TYPE ontoloop_analyst_review_queue_depth gauge"),
        "{metrics}"
    );
    assert!(
        metrics.contains("ontoloop_analyst_review_queue_depth 0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("ontoloop_analyst_signals_total{"),
        "{metrics}"
    );
    // The patterns acted on, counted by status from the healer's records.
    let proposed =
        format!("ontoloop_analyst_patterns{{tenant=\"{tenant}\",status=\"proposed\"}} 1");
    assert!(metrics.lines().any(|line| line == proposed), "{metrics}");

    sandbox.shutdown().await.expect("clean shutdown");
    database.drop_now().await.expect("drop test database");
}
