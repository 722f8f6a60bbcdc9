//! The gate before a change of the whole graph goes live, end to end on the embedded default:
//! agents ask (retrieval keeps their questions in the query log); a clean rebuild replays them
//! against the live graph and its shadow, finds no answer changed and goes live by itself; a
//! broken ontology change (its price predicate lost in an edit) is held with the answers that
//! differ, shown on the analyst's dashboard in a real browser, approved there by a reviewer, and
//! rolled back with `graph.maintain` mode `rollback`, which restores the previous answers.

use std::time::Duration;

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::browser::{Browser, artifact_path};
use ontoloop_tests::{Clients, Sandbox, caller, ontology, wait_until};

const WAIT: Duration = Duration::from_secs(20);

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"pricing-page":3,"wiki":2,"default":1}}"#;

/// The same ontology with its price predicate lost in an edit.
const BROKEN: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"pricing-page":3,"wiki":2,"default":1}}"#;

const QUESTIONS: [&str; 3] = [
    "How much does the Pro plan cost?",
    "How much does the Team plan cost?",
    "Who owns Billing?",
];

async fn ask(c: &Clients, tenant: &str, text: &str, min_sequence: u64) -> v1::Answer {
    c.retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(tenant, "agent-1"),
            text: text.into(),
            min_sequence,
            ..Default::default()
        })
        .await
        .expect("ask")
        .into_inner()
}

/// Each question's status and value.
async fn answers(c: &Clients, tenant: &str, min_sequence: u64) -> Vec<(i32, String)> {
    let mut all = Vec::new();
    for text in QUESTIONS {
        let answer = ask(c, tenant, text, min_sequence).await;
        all.push((answer.status, answer.value));
    }
    all
}

fn maintain(mode: &str) -> v1::event::Kind {
    v1::event::Kind::GraphMaintain(v1::GraphMaintain { mode: mode.into() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_ontology_change_is_held_shown_approved_and_rolled_back() {
    let tenant = "acme";
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let store = sandbox.ctx.store.clone();
    c.push(tenant, "ops", ontology(ONTOLOGY))
        .await
        .expect("ontology");
    for (id, origin, body) in [
        (
            "pricing",
            "pricing-page",
            "The Pro plan costs €42 per month. The Team plan costs €99 per month.",
        ),
        ("billing", "wiki", "Billing is owned by the Payments team."),
    ] {
        c.push(
            tenant,
            "ops",
            ontoloop_tests::doc(id, origin, body, &[], 0.0),
        )
        .await
        .expect("page");
    }
    let applied = c
        .push(tenant, "ops", maintain("patch"))
        .await
        .expect("patch");
    let before = answers(&c, tenant, applied).await;
    assert_eq!(
        before.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>(),
        ["42", "99", "Payments"],
        "{before:?}"
    );
    // The query log is written behind the answers.
    assert!(
        wait_until(WAIT, || {
            let store = store.clone();
            async move {
                store
                    .recent_questions(tenant, 100)
                    .await
                    .is_ok_and(|q| q.len() >= QUESTIONS.len())
            }
        })
        .await,
        "the questions reach the query log"
    );

    // A clean rebuild changes no answer: it goes live by itself.
    let rebuilt = c
        .push(tenant, "ops", maintain("rebuild"))
        .await
        .expect("rebuild");
    assert_eq!(answers(&c, tenant, rebuilt).await, before);
    let changes = store.gate_changes(tenant, 10).await.expect("changes");
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(
        (changes[0].kind.as_str(), changes[0].status.as_str()),
        ("rebuild", "live")
    );
    assert_eq!(changes[0].replayed, 3, "{changes:?}");

    // A broken ontology change would lose both prices: it is held, the answers stay.
    let broken = c
        .push(tenant, "ops", ontology(BROKEN))
        .await
        .expect("broken ontology");
    assert_eq!(answers(&c, tenant, broken).await, before);
    let changes = store.gate_changes(tenant, 10).await.expect("changes");
    let held = &changes[0];
    assert_eq!(
        (held.kind.as_str(), held.status.as_str()),
        ("ontology", "held"),
        "{held:?}"
    );
    let differences: serde_json::Value =
        serde_json::from_str(&held.differences).expect("differences are JSON");
    let differing: Vec<&str> = differences
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|d| d["question"].as_str())
        .collect();
    assert_eq!(differing.len(), 2, "{differences}");
    assert!(differing.contains(&QUESTIONS[0]) && differing.contains(&QUESTIONS[1]));
    assert!(
        differences
            .as_array()
            .expect("a list")
            .iter()
            .all(|d| d["explained"] == false),
        "no page changed: {differences}"
    );

    // The reviewer sees the differing answers on the dashboard and approves.
    let browser = Browser::launch()
        .await
        .expect("headless Chromium (run scripts/install-browser.sh)");
    let dashboard = sandbox.http_addr(ServiceKind::Analyst);
    browser
        .goto(&format!(
            "http://{dashboard}/?tenant={tenant}&reviewer=alice#gate"
        ))
        .await
        .expect("the dashboard loads");
    let change = format!(r#"#gate [data-change-id="{}"]"#, held.id);
    browser
        .wait_for(&change, WAIT)
        .await
        .expect("the held change");
    assert_eq!(browser.text("#gate-count").await.expect("count"), "1");
    let shown = browser.text(&change).await.expect("the change's text");
    assert!(
        shown.contains(QUESTIONS[0]) && shown.contains("answered: 42"),
        "{shown}"
    );
    browser
        .screenshot(artifact_path("dashboard-gate-held.png").expect("artifact dir"))
        .await
        .expect("screenshot");
    browser
        .click(&format!(r#"{change} button[data-action="approve"]"#))
        .await
        .expect("approve");
    browser
        .wait_for_text("#status", &format!("approved change {}", held.id), WAIT)
        .await
        .expect("approved");
    browser
        .wait_for_text(&change, "approved by alice", WAIT)
        .await
        .expect("the change shows it approved");
    assert_eq!(browser.text("#gate-count").await.expect("count"), "0");
    browser.close().await.expect("close the browser");

    // Approved, it is live: the prices are gone, the owner stays.
    let approved = store
        .gate_change(tenant, held.id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(
        (approved.status.as_str(), approved.decided_by.as_str()),
        ("approved", "alice")
    );
    let after = wait_for_answers(&c, tenant, |a| a[0].1.is_empty()).await;
    assert_ne!(after[0].0, v1::AnswerStatus::Answered as i32, "{after:?}");
    assert_eq!(after[2].1, "Payments");

    // A rollback restores the graph from before the change: the previous answers.
    let rolled = c
        .push(tenant, "ops", maintain("rollback"))
        .await
        .expect("rollback");
    assert_eq!(answers(&c, tenant, rolled).await, before);
    let changes = store.gate_changes(tenant, 10).await.expect("changes");
    assert_eq!(changes[0].status, "rolled_back", "{changes:?}");
    // The clean rebuild before it is what a second rollback undoes; nothing before that.
    let second = c
        .push(tenant, "ops", maintain("rollback"))
        .await
        .expect("second rollback");
    let third = c
        .push(tenant, "ops", maintain("rollback"))
        .await
        .expect("third");
    let refused = c
        .retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(tenant, "agent-1"),
            text: QUESTIONS[2].into(),
            min_sequence: third,
            ..Default::default()
        })
        .await
        .expect_err("the third rollback has nothing to undo");
    assert!(
        refused.message().contains("nothing to roll back"),
        "refused with its reason: {refused:?}"
    );
    assert_eq!(answers(&c, tenant, second).await, before);
    sandbox.shutdown().await.expect("clean shutdown");
}

/// Asks until `done` holds of the answers (retrieval catches up with the approved change).
async fn wait_for_answers(
    c: &Clients,
    tenant: &str,
    done: impl Fn(&[(i32, String)]) -> bool,
) -> Vec<(i32, String)> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let got = answers(c, tenant, 0).await;
        if done(&got) || tokio::time::Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
