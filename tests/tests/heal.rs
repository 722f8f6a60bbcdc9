//! Healing a region at once: a critical stale-sector pattern makes the analyst re-extract the
//! pages changed since the graph read them (a repair run), a critical contradiction pattern
//! rebuilds the graph from every current page; a missing relationship type stays open for a
//! human. Each pattern records what was done.

use std::time::Duration;

use ontoloop_proto::v1;
use ontoloop_tests::{Sandbox, ontology, wait_until};

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"project","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"default":2}}"#;

fn doc(body: &str, hold: bool) -> v1::event::Kind {
    v1::event::Kind::DocUpsert(v1::DocUpsert {
        doc_id: "portfolio".into(),
        title: "Portfolio".into(),
        origin: "wiki".into(),
        body: body.into(),
        hold,
        ..Default::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critical_region_patterns_are_repaired_or_rebuilt_at_once() {
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let (mut telemetry, analyst) = (c.telemetry.clone(), c.analyst.clone());
    let caller = |principal: &str| ontoloop_tests::caller("acme", principal);
    let events = [
        ontology(ONTOLOGY),
        doc("Project Wren is owned by the Helix team.", false),
        // A newer version stored but not read: the graph lags its page.
        doc("Project Wren is owned by the Birch team.", true),
    ];
    let last = c.push_all("acme", "ops", events).await;
    let runs = |min_sequence: u64| {
        let mut analyst = analyst.clone();
        async move {
            analyst
                .list_maintenance_runs(v1::ListMaintenanceRunsRequest {
                    caller: caller("ops"),
                    min_sequence,
                })
                .await
                .expect("runs")
                .into_inner()
                .runs
        }
    };
    let before = runs(last).await;
    assert!(
        before
            .iter()
            .all(|r| r.mode != "repair" && r.mode != "rebuild"),
        "{before:?}"
    );

    // Eleven signals from six agents make each pattern critical.
    for (kind, field, subject) in [
        (v1::SignalType::TemporalStale, "sector", "projects"),
        (v1::SignalType::ConfidenceDrop, "entity", "Project Wren"),
        (
            v1::SignalType::RelationshipUnknown,
            "relationship",
            "sponsored_by",
        ),
    ] {
        for n in 0..11 {
            let agent = format!("agent-{}", n % 6);
            let mut signal = v1::Signal {
                caller: caller(&agent),
                r#type: kind as i32,
                query: format!("who owns project wren? ({n})"),
                agent_id: agent.clone(),
                idempotency_key: format!("{field}-{n}"),
                ..Default::default()
            };
            match field {
                "sector" => signal.sector = subject.into(),
                "entity" => signal.entity = subject.into(),
                _ => signal.relationship = subject.into(),
            }
            telemetry.report_signal(signal).await.expect("signal");
        }
    }

    let healed = wait_until(Duration::from_secs(30), || {
        let runs = runs(0);
        async move {
            let runs = runs.await;
            runs.iter().any(|r| r.mode == "repair") && runs.iter().any(|r| r.mode == "rebuild")
        }
    })
    .await;
    let after = runs(0).await;
    assert!(healed, "a repair run and a rebuild run: {after:?}");
    let repair = after.iter().find(|r| r.mode == "repair").expect("repair");
    assert_eq!(
        repair.pages_read, 1,
        "the repair read only the changed page: {repair:?}"
    );

    // The run is recorded when the graph is rewritten; the pattern's status a moment later.
    let settled = wait_until(Duration::from_secs(10), || async {
        let patterns = c.patterns("acme", "ops").await;
        ["stale_sector", "contradiction"].iter().all(|kind| {
            patterns
                .iter()
                .any(|p| p.kind == *kind && p.status == "healed")
        })
    })
    .await;
    let patterns = c.patterns("acme", "ops").await;
    assert!(settled, "both region patterns healed: {patterns:?}");
    let status = |kind: &str| {
        patterns
            .iter()
            .find(|p| p.kind == kind)
            .map(|p| (p.status.clone(), p.action.clone()))
            .unwrap_or_else(|| panic!("no {kind} pattern: {patterns:?}"))
    };
    let (stale, stale_action) = status("stale_sector");
    assert_eq!(stale, "healed");
    assert!(stale_action.contains("re-extracted"), "{stale_action}");
    let (contradiction, contradiction_action) = status("contradiction");
    assert_eq!(contradiction, "healed");
    assert!(
        contradiction_action.contains("rebuilt"),
        "{contradiction_action}"
    );
    let (relationship, _) = status("missing_relationship_type");
    assert_eq!(
        relationship, "open",
        "an ontology change is left to a human"
    );
    sandbox.shutdown().await.expect("clean shutdown");
}
