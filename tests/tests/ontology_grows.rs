//! The ontology grows itself through the services (issue 40), on the embedded default and a small
//! world of our own: a water utility's pump records (`pump-id`, `firmware`, `keeper`, `status`
//! fields) pushed with no ontology.
//!
//! 1. Three agents ask which firmware three pumps run: passages answer, and each question is a
//!    missing relationship type signal;
//! 2. the three form one `firmware` pattern of medium severity, which triggers relationship
//!    discovery: an ontology proposal holding the predicate that answers them, always sent to a
//!    human (critical domain), its impact radius the three questions;
//! 3. the dashboard shows it in a real headless Chromium, with the predicate's types, examples
//!    and preview;
//! 4. the reviewer approves it there;
//! 5. the gate replays the recent questions against the live graph and a shadow under the new
//!    ontology and lets it go live (the questions that change are those the preview answers);
//! 6. the same question is answered with its value and evidence, and the pattern is healed,
//!    timed from its first signal.
//!
//! And on request (`graph.maintain` mode `propose-ontology`): every predicate the pages give,
//! reviewed, edited (one dropped, one renamed) and applied; a bad edit is refused with its
//! reason. And an approved proposal that changes an answer its preview does not account for
//! ("What do we know about Pump 3?" gains a slot) is held at the gate; approved there, it goes
//! live and its pattern heals.

use std::time::Duration;

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::browser::{Browser, artifact_path};
use ontoloop_tests::{Clients, Sandbox, caller, doc, http, wait_until};

const WAIT: Duration = Duration::from_secs(30);

/// The pumps: number, name, firmware, keeper, status.
const PUMPS: [(u32, &str, &str, &str, &str); 3] = [
    (3, "Intake pump", "v1.4", "ali", "running"),
    (4, "Booster pump", "v2.0", "bo", "standby"),
    (5, "Sludge pump", "v0.9", "ali", "running"),
];

fn record(n: u32, name: &str, firmware: &str, keeper: &str, status: &str) -> String {
    format!(
        "pump-id: {n}\nname: {name}\nfirmware: \"{firmware}\"\nkeeper: \"@{keeper}\"\n\
         status: {status}\ncommissioned: 2019-0{n}-01\n"
    )
}

fn firmware_question(n: u32) -> String {
    format!("Which firmware version does Pump {n} run?")
}

/// Pushes the pump records; the last intake sequence number.
async fn push_pumps(c: &Clients, tenant: &str) -> u64 {
    let mut seq = 0;
    for (n, name, firmware, keeper, status) in PUMPS {
        let body = record(n, name, firmware, keeper, status);
        seq = c
            .push(
                tenant,
                "integration",
                doc(&format!("pumps/{n}.yaml"), "inventory", &body, &[], 0.0),
            )
            .await
            .expect("page");
    }
    seq
}

async fn ask(c: &Clients, tenant: &str, agent: &str, text: &str, min_sequence: u64) -> v1::Answer {
    c.retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(tenant, agent),
            text: text.into(),
            min_sequence,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|status| panic!("{text}: {status:?}"))
        .into_inner()
}

/// The pending ontology proposal at the head of the review queue (ontology first), if any.
async fn next_proposal(c: &Clients, tenant: &str) -> Option<v1::ProposedUpdate> {
    c.analyst
        .clone()
        .next_review(v1::NextReviewRequest {
            caller: caller(tenant, "rita"),
            expertise: vec!["ontology".into()],
        })
        .await
        .expect("next review")
        .into_inner()
        .update
        .filter(|u| u.domain == "ontology")
}

fn pattern<'a>(patterns: &'a [v1::Pattern], id: &str) -> Option<&'a v1::Pattern> {
    patterns.iter().find(|p| p.id == id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_questions_grow_the_ontology_through_review_and_the_gate() {
    let tenant = "waterworks";
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let store = sandbox.ctx.store.clone();
    let seq = push_pumps(&c, tenant).await;

    // 1. Three agents ask the firmware of three pumps: no predicate, so passages, and a signal.
    for (agent, n) in [("agent-1", 3), ("agent-2", 4), ("agent-3", 5)] {
        let answer = ask(&c, tenant, agent, &firmware_question(n), seq).await;
        assert_eq!(
            answer.status,
            v1::AnswerStatus::AnsweredPassages as i32,
            "{answer:?}"
        );
        assert!(answer.value.is_empty(), "{answer:?}");
    }

    // 2. One pattern of the three; at medium severity it triggers relationship discovery.
    let id = "missing_relationship_type:firmware";
    let proposed = wait_until(WAIT, || {
        let c = c.clone();
        async move {
            pattern(&c.patterns(tenant, "ops").await, id).is_some_and(|p| p.status == "proposed")
        }
    })
    .await;
    let patterns = c.patterns(tenant, "ops").await;
    assert!(
        proposed,
        "the firmware pattern drafts a proposal: {patterns:?}"
    );
    let firmware = pattern(&patterns, id).expect("the pattern");
    assert_eq!(firmware.signal_count, 3, "{firmware:?}");
    assert_eq!(
        firmware.severity,
        v1::Severity::Medium as i32,
        "{firmware:?}"
    );
    let update = next_proposal(&c, tenant)
        .await
        .expect("a proposal to review");
    assert_eq!(
        update.reason, "critical_domain",
        "an ontology change: {update:?}"
    );
    assert_eq!(update.pattern_id, id);
    assert_eq!(
        update.predicate, "firmware",
        "only what answers its questions"
    );
    assert_eq!(update.impact_radius, 3, "{update:?}");
    let mut asked: Vec<String> = update.affected_queries.clone();
    asked.sort();
    assert_eq!(asked, [3, 4, 5].map(firmware_question));

    // 3. The reviewer sees it on the dashboard, with its types, examples and preview.
    let browser = Browser::launch()
        .await
        .expect("headless Chromium (run scripts/install-browser.sh)");
    let dashboard = sandbox.http_addr(ServiceKind::Analyst);
    browser
        .goto(&format!(
            "http://{dashboard}/?tenant={tenant}&reviewer=rita#queue"
        ))
        .await
        .expect("the dashboard loads");
    let row = format!(r#"[data-update-id="{}"]"#, update.id);
    let predicate = format!(r#"{row} section[data-predicate="firmware"]"#);
    browser
        .wait_for(&predicate, WAIT)
        .await
        .expect("the proposal's predicate");
    let shown = browser.text(&row).await.expect("the proposal's text");
    for expected in [
        "ontology: 1 predicate",
        "firmware",
        "version",
        "firmware: \"v1.4\"",
        "v2.0",
        "Which firmware version does Pump 4 run?",
        "3 failed questions it would answer",
    ] {
        assert!(shown.contains(expected), "{expected:?} in {shown}");
    }
    browser
        .screenshot(artifact_path("dashboard-ontology-proposal.png").expect("artifact dir"))
        .await
        .expect("screenshot");

    // 4. It is approved there.
    browser
        .click(&format!(r#"{row} button[data-action="approve"]"#))
        .await
        .expect("approve");
    browser
        .wait_for_text("#status", &format!("approved {}", update.id), WAIT)
        .await
        .expect("approved");
    browser.close().await.expect("close the browser");

    // 5. The gate replayed the recent questions and let the change go live: the questions
    // whose answers changed are those the approved preview said it answers.
    let changes = store.gate_changes(tenant, 10).await.expect("gate records");
    let change = changes
        .first()
        .expect("the ontology change passed the gate");
    assert_eq!(
        (change.kind.as_str(), change.status.as_str()),
        ("ontology", "live"),
        "{change:?}"
    );
    assert!(change.replayed >= 3, "{change:?}");
    let differences: serde_json::Value =
        serde_json::from_str(&change.differences).expect("differences are JSON");
    let differences = differences.as_array().expect("a list");
    assert!(!differences.is_empty(), "{change:?}");
    assert!(
        differences.iter().all(|d| d["previewed"] == true),
        "{differences:?}"
    );

    // 6. The question is answered now, with the page that states it as evidence. A first
    // ontology ranks every origin alike (1), below `hedge_below_authority`, so the answer says
    // that no source of higher authority states it.
    let answered = wait_until(WAIT, || {
        let c = c.clone();
        async move {
            let answer = ask(&c, tenant, "agent-1", &firmware_question(3), 0).await;
            answer.value == "v1.4"
        }
    })
    .await;
    let answer = ask(&c, tenant, "agent-1", &firmware_question(3), 0).await;
    assert!(answered, "{answer:?}");
    assert_eq!(
        answer.status,
        v1::AnswerStatus::AnsweredPossiblyStale as i32,
        "{answer:?}"
    );
    let hedges: Vec<&str> = answer.hedges.iter().map(|h| h.code.as_str()).collect();
    assert_eq!(hedges, ["low_authority_only"], "{answer:?}");
    assert_eq!(answer.predicate_path, ["firmware"]);
    let evidence = answer.evidence.first().expect("evidence");
    assert_eq!(evidence.source_id, "pumps/3.yaml", "{answer:?}");
    assert!(evidence.extracted_at.is_some(), "a fact of the graph");
    // The pattern is healed, timed from its first signal to the change going live.
    let patterns = c.patterns(tenant, "ops").await;
    let healed = pattern(&patterns, id).expect("the pattern");
    assert_eq!(healed.status, "healed", "{healed:?}");
    assert!(healed.signal_to_heal_ms > 0, "{healed:?}");
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ontology_proposed_on_request_is_edited_by_its_reviewer_and_set() {
    let tenant = "utility";
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    push_pumps(&c, tenant).await;
    let maintain =
        |mode: &str| v1::event::Kind::GraphMaintain(v1::GraphMaintain { mode: mode.into() });
    let refused = c
        .push(tenant, "admin", maintain("propose-ontologies"))
        .await
        .expect_err("no such mode");
    assert!(
        refused.message().contains("propose-ontology"),
        "{refused:?}"
    );
    let seq = c
        .push(tenant, "admin", maintain("propose-ontology"))
        .await
        .expect("asked for");
    let runs = c
        .analyst
        .clone()
        .list_maintenance_runs(v1::ListMaintenanceRunsRequest {
            caller: caller(tenant, "admin"),
            min_sequence: seq,
        })
        .await
        .expect("runs")
        .into_inner()
        .runs;
    let run = runs
        .iter()
        .find(|r| r.mode == "propose-ontology")
        .unwrap_or_else(|| panic!("{runs:?}"));
    assert_eq!(run.pages_read, 3, "{run:?}");
    let update = next_proposal(&c, tenant).await.expect("a proposal");
    assert_eq!(update.reason, "critical_domain");
    assert!(update.pattern_id.is_empty(), "asked for: {update:?}");
    let names: Vec<&str> = update.predicate.split(", ").collect();
    for name in ["firmware", "keeper", "status"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }

    let decide = |decision: v1::Decision, value: &str| {
        let mut analyst = c.analyst.clone();
        let request = v1::DecideRequest {
            caller: caller(tenant, "rita"),
            update_id: update.id.clone(),
            decision: decision as i32,
            new_value: value.into(),
            ..Default::default()
        };
        async move { analyst.decide(request).await }
    };
    // A bad edit is refused with its reason, and the proposal stays in the queue.
    for (bad, says) in [
        (r#"{"drop":["voltage"]}"#, "not a predicate of the proposal"),
        (r#"{"rename":{"keeper":"Kept By"}}"#, "not a predicate name"),
        ("keeper", "an edit"),
    ] {
        let refused = decide(v1::Decision::Modify, bad)
            .await
            .expect_err("a bad edit");
        assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
        assert!(refused.message().contains(says), "{says}: {refused:?}");
    }
    // The reviewer keeps the firmware and renames the keeper; the rest is dropped.
    let drop: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !["firmware", "keeper"].contains(n))
        .collect();
    let edit = serde_json::json!({"drop": drop, "rename": {"keeper": "kept_by"}}).to_string();
    let decided = decide(v1::Decision::Modify, &edit)
        .await
        .expect("a valid edit")
        .into_inner();
    assert!(decided.applied, "{decided:?}");
    let answered = wait_until(WAIT, || {
        let c = c.clone();
        async move {
            let answer = ask(&c, tenant, "agent-1", &firmware_question(4), 0).await;
            answer.value == "v2.0"
        }
    })
    .await;
    assert!(answered, "the firmware predicate is set");
    let ontology = sandbox
        .ctx
        .store
        .load_knowledge(tenant)
        .await
        .expect("knowledge")
        .ontology
        .expect("an ontology is set");
    let ontology: serde_json::Value = serde_json::from_str(&ontology).expect("JSON");
    let mut set: Vec<&str> = ontology["predicates"]
        .as_array()
        .expect("predicates")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    set.sort();
    assert_eq!(set, ["firmware", "kept_by"]);
    assert!(next_proposal(&c, tenant).await.is_none(), "decided");
    sandbox.shutdown().await.expect("clean shutdown");
}

/// Posts `body` to the dashboard at `addr` (auth off: the body names the tenant and reviewer).
async fn post(addr: std::net::SocketAddr, path: &str, body: &str) -> http::Answer {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to the dashboard");
    stream
        .write_all(http::request(addr, "POST", path, &[], Some(body)).as_bytes())
        .await
        .expect("send");
    let mut text = String::new();
    stream.read_to_string(&mut text).await.expect("read");
    http::Answer::parse(&text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_proposal_held_at_the_gate_heals_its_pattern_when_the_gate_approves_it() {
    let tenant = "sewerworks";
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let store = sandbox.ctx.store.clone();
    let seq = push_pumps(&c, tenant).await;
    // Besides the three failed questions, one about a pump as a whole, answered already: the new
    // slot changes its answer, which the proposal's preview does not account for.
    let about = ask(&c, tenant, "agent-4", "What do we know about Pump 3?", seq).await;
    assert_eq!(
        about.status,
        v1::AnswerStatus::AnsweredPassages as i32,
        "{about:?}"
    );
    for (agent, n) in [("agent-1", 3), ("agent-2", 4), ("agent-3", 5)] {
        ask(&c, tenant, agent, &firmware_question(n), seq).await;
    }
    let id = "missing_relationship_type:firmware";
    let proposed = wait_until(WAIT, || {
        let c = c.clone();
        async move {
            pattern(&c.patterns(tenant, "ops").await, id).is_some_and(|p| p.status == "proposed")
        }
    })
    .await;
    assert!(proposed, "{:?}", c.patterns(tenant, "ops").await);
    let update = next_proposal(&c, tenant).await.expect("a proposal");
    assert!(
        wait_until(WAIT, || {
            let store = store.clone();
            async move {
                store
                    .recent_questions(tenant, 100)
                    .await
                    .is_ok_and(|q| q.len() >= 4)
            }
        })
        .await,
        "the questions reach the query log"
    );
    c.analyst
        .clone()
        .decide(v1::DecideRequest {
            caller: caller(tenant, "rita"),
            update_id: update.id.clone(),
            decision: v1::Decision::Approve as i32,
            ..Default::default()
        })
        .await
        .expect("approved");

    // Held: the about-answer changed, and no page change or preview explains it.
    let changes = store.gate_changes(tenant, 10).await.expect("gate records");
    let held = changes.first().expect("a gate record");
    assert_eq!(
        (held.kind.as_str(), held.status.as_str()),
        ("ontology", "held"),
        "{held:?}"
    );
    let differences: serde_json::Value =
        serde_json::from_str(&held.differences).expect("differences are JSON");
    let unexplained: Vec<&str> = differences
        .as_array()
        .expect("a list")
        .iter()
        .filter(|d| d["explained"] == false)
        .filter_map(|d| d["question"].as_str())
        .collect();
    assert_eq!(
        unexplained,
        ["What do we know about Pump 3?"],
        "{differences}"
    );
    let waiting = pattern(&c.patterns(tenant, "ops").await, id)
        .expect("the pattern")
        .clone();
    assert_eq!(waiting.status, "proposed", "{waiting:?}");

    // The reviewer approves the held change at the gate: it goes live, the pattern heals.
    let dashboard = sandbox.http_addr(ServiceKind::Analyst);
    let body = serde_json::json!({
        "tenant": tenant, "reviewer": "rita", "change_id": held.id, "decision": "approve"
    })
    .to_string();
    let answer = post(dashboard, "/api/gate/decide", &body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let healed = pattern(&c.patterns(tenant, "ops").await, id)
        .expect("the pattern")
        .clone();
    assert_eq!(healed.status, "healed", "{healed:?}");
    assert!(healed.signal_to_heal_ms > 0, "{healed:?}");
    let answered = wait_until(WAIT, || {
        let c = c.clone();
        async move {
            ask(&c, tenant, "agent-1", &firmware_question(3), 0)
                .await
                .value
                == "v1.4"
        }
    })
    .await;
    assert!(answered, "the firmware predicate is live");
    sandbox.shutdown().await.expect("clean shutdown");
}
