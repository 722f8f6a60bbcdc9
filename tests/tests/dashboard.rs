//! The review dashboard in a real browser (headless Chromium from Debian, installed by
//! `scripts/install-browser.sh`): two financial updates wait for review; a reviewer opens the
//! analyst's dashboard, approves one and rejects the other; the store holds exactly those two
//! decisions, the approved value is in the graph and the rejected one is not. Screenshots are
//! kept in `target/test-artifacts/`.

use std::time::Duration;

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::browser::{Browser, artifact_path};
use ontoloop_tests::{Records, Sandbox, ontology};

const WAIT: Duration = Duration::from_secs(15);

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"budget","subject_type":"project","object_type":"number","patterns":["{s} has a budget of {o}."]}],
  "authority":{"project-record":4,"default":2}}"#;

fn row(id: &str) -> String {
    format!(r#"#queue [data-update-id="{id}"]"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_approves_and_rejects_in_the_browser() {
    let tenant = "acme";
    let records = Records::new(
        tenant,
        &[
            (
                "kite.md",
                "# Project Kite\nProject Kite has a budget of 40000.\n",
            ),
            (
                "lark.md",
                "# Project Lark\nProject Lark has a budget of 900.\n",
            ),
        ],
    );
    let sandbox = Sandbox::embedded(&records.and(&[("supervisor.seed", "11")])).await;
    let c = sandbox.clients();
    let (mut telemetry, mut retrieval) = (c.telemetry.clone(), c.retrieval.clone());
    let caller = |principal: &str| ontoloop_tests::caller(tenant, principal);
    let pushed = c
        .push(tenant, "ops", ontology(ONTOLOGY))
        .await
        .expect("push");
    let lookup = |project: &str| v1::LookupRequest {
        caller: caller("alice"),
        entity: project.into(),
        predicate_path: vec!["budget".into()],
        min_sequence: pushed,
        ..Default::default()
    };
    retrieval
        .lookup(lookup("Project Kite"))
        .await
        .expect("the ontology is applied");
    for project in ["Project Kite", "Project Lark"] {
        for n in 0..3 {
            telemetry
                .report_signal(v1::Signal {
                    caller: caller(&format!("agent-{n}")),
                    r#type: v1::SignalType::EntityMissing as i32,
                    query: format!("what is the budget of {project}?"),
                    entity: project.into(),
                    agent_id: format!("agent-{n}"),
                    idempotency_key: format!("{project}-{n}"),
                    ..Default::default()
                })
                .await
                .expect("signal");
        }
    }
    let ids = sandbox
        .review_ids(tenant, &["Project Kite", "Project Lark"], WAIT)
        .await;
    let (kite, lark) = (ids[0].clone(), ids[1].clone());

    let browser = Browser::launch()
        .await
        .expect("headless Chromium (run scripts/install-browser.sh)");
    let dashboard = sandbox.http_addr(ServiceKind::Analyst);
    browser
        .goto(&format!(
            "http://{dashboard}/?tenant={tenant}&reviewer=alice"
        ))
        .await
        .expect("the dashboard loads");
    browser
        .wait_for(&row(&kite), WAIT)
        .await
        .expect("Kite's row");
    browser
        .wait_for(&row(&lark), WAIT)
        .await
        .expect("Lark's row");
    assert_eq!(browser.text("#queue-count").await.expect("count"), "2");
    let text = browser.text(&row(&kite)).await.expect("row text");
    assert!(text.contains("40000") && text.contains("budget"), "{text}");
    browser
        .screenshot(artifact_path("dashboard-queue.png").expect("artifact dir"))
        .await
        .expect("screenshot");

    browser
        .click(&format!(r#"{} button[data-action="approve"]"#, row(&kite)))
        .await
        .expect("approve");
    browser
        .wait_for_text("#status", &format!("approved {kite}"), WAIT)
        .await
        .expect("approved");
    browser
        .click(&format!(r#"{} button[data-action="reject"]"#, row(&lark)))
        .await
        .expect("reject");
    browser
        .wait_for_text("#status", &format!("rejected {lark}"), WAIT)
        .await
        .expect("rejected");
    browser
        .wait_for_text("#queue", "queue is empty", WAIT)
        .await
        .expect("the queue empties");
    browser
        .screenshot(artifact_path("dashboard-decided.png").expect("artifact dir"))
        .await
        .expect("screenshot");
    browser.click("#tab-patterns").await.expect("patterns tab");
    browser
        .wait_for(r#"tr[data-pattern-id="missing_entity:project kite"]"#, WAIT)
        .await
        .expect("the patterns page lists the pattern");
    browser
        .click("#tab-freshness")
        .await
        .expect("freshness tab");
    browser
        .wait_for(r#"tr[data-region="project"]"#, WAIT)
        .await
        .expect("freshness by region");
    browser
        .screenshot(artifact_path("dashboard-freshness.png").expect("artifact dir"))
        .await
        .expect("screenshot");
    browser.close().await.expect("close the browser");

    // Exactly those decisions, applied as decided.
    let decisions = sandbox
        .ctx
        .store
        .decisions(tenant, 10)
        .await
        .expect("decisions");
    let mut seen: Vec<(String, String, String)> = decisions
        .iter()
        .map(|d| (d.update_id.clone(), d.decision.clone(), d.reviewer.clone()))
        .collect();
    seen.sort();
    let mut expected = vec![
        (kite.clone(), "approve".to_owned(), "alice".to_owned()),
        (lark.clone(), "reject".to_owned(), "alice".to_owned()),
    ];
    expected.sort();
    assert_eq!(seen, expected);
    let status = |id: String| {
        let store = sandbox.ctx.store.clone();
        async move {
            store
                .update(tenant, &id)
                .await
                .expect("read")
                .expect("exists")
                .status
        }
    };
    assert_eq!(status(kite.clone()).await, "applied");
    assert_eq!(status(lark.clone()).await, "rejected");
    let kite_budget = retrieval
        .lookup(lookup("Project Kite"))
        .await
        .expect("lookup")
        .into_inner();
    assert_eq!(kite_budget.value, "40000");
    let lark_budget = retrieval
        .lookup(lookup("Project Lark"))
        .await
        .expect("lookup")
        .into_inner();
    assert_eq!(
        lark_budget.status,
        v1::AnswerStatus::Abstained as i32,
        "{lark_budget:?}"
    );
    sandbox.shutdown().await.expect("clean shutdown");
}
