//! Questions about the knowledge as a whole, end to end through the services on PostgreSQL and
//! RabbitMQ (issue 40): a small world of our own (`tests/fixtures/fleet-overview.events.json`,
//! two groups of systems with their teams and leads, and a page revised once) is pushed through
//! the intake; "what are the main themes?" is answered with the two groups, each named by its
//! central entities and cited by the facts that tie it, and "how does X relate to Y?" with the
//! shortest chain of facts between them, every step cited by page and version (the version
//! cited states the step's value, and holds the sentence when the evidence carries one).

use std::path::PathBuf;
use std::time::Duration;

use ontoloop_core::Caller;
use ontoloop_core::events::Event;
use ontoloop_proto::v1;
use ontoloop_tests::{Clients, Sandbox, caller};

const T: &str = "fleet";

/// A page version's text, by (page, version).
type Bodies = Vec<((String, u64), String)>;

/// The fixture's events, in order, and each page version's text.
fn fixture() -> (Vec<Event>, Bodies) {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/fleet-overview.events.json");
    let text = std::fs::read_to_string(path).expect("fixture");
    let values: Vec<serde_json::Value> = serde_json::from_str(&text).expect("a JSON array");
    let events: Vec<Event> = values
        .into_iter()
        .map(|v| serde_json::from_value(v).expect("an event"))
        .collect();
    let mut bodies: Bodies = Vec::new();
    for event in &events {
        if let Event::DocUpsert { doc_id, body, .. } = event {
            let version = bodies.iter().filter(|((id, _), _)| id == doc_id).count() as u64 + 1;
            bodies.push(((doc_id.clone(), version), body.clone()));
        }
    }
    (events, bodies)
}

async fn ask(c: &Clients, text: &str, min_sequence: u64) -> v1::Answer {
    c.retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(T, "alice"),
            text: text.into(),
            min_sequence,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|status| panic!("{text}: {status:?}"))
        .into_inner()
}

/// Each hop's (predicate, value, page, version), checked against the text of that page version:
/// it states the value (the span the step rests on is found there) and, when the evidence carries
/// the sentence it was read from, that sentence.
fn cited<'a>(
    answer: &'a v1::Answer,
    bodies: &[((String, u64), String)],
) -> Vec<(&'a str, &'a str, &'a str, u64)> {
    answer
        .hops
        .iter()
        .map(|hop| {
            let evidence = hop.evidence.first().unwrap_or_else(|| panic!("{hop:?}"));
            let body = bodies
                .iter()
                .find(|((id, version), _)| {
                    *id == evidence.source_id && *version == evidence.source_version
                })
                .map(|(_, body)| body.as_str())
                .unwrap_or_else(|| panic!("no such page version: {evidence:?}"));
            assert!(
                body.contains(&hop.value),
                "{}@{} states the step's value: {hop:?}",
                evidence.source_id,
                evidence.source_version
            );
            assert!(
                evidence.excerpt.is_empty() || body.contains(&evidence.excerpt),
                "the sentence cited is in the version cited: {evidence:?}"
            );
            (
                hop.predicate.as_str(),
                hop.value.as_str(),
                evidence.source_id.as_str(),
                evidence.source_version,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_themes_and_how_two_things_relate_are_answered_with_citations() {
    let (sandbox, database) = Sandbox::on_servers("overview", &[]).await;
    let c = sandbox.clients();
    let (events, bodies) = fixture();
    let pusher = Caller::new(T, "integration").expect("caller");
    let mut seq = 0;
    for event in &events {
        seq = c
            .telemetry
            .clone()
            .push_event(ontoloop_proto::convert::event_to_wire(
                &pusher,
                event,
                chrono::Utc::now(),
            ))
            .await
            .expect("pushed")
            .into_inner()
            .sequence;
    }
    let applied =
        ontoloop_runtime::wait_for_sequence(&sandbox.ctx.store, T, seq, Duration::from_secs(30))
            .await;
    assert!(applied.is_ok(), "{applied:?}");

    // The global question: the two groups, each named by its most tied entities.
    let themes = ask(&c, "What are the main themes?", seq).await;
    assert_eq!(
        themes.status,
        v1::AnswerStatus::Answered as i32,
        "{themes:?}"
    );
    let named: Vec<&str> = themes.value.split("; ").collect();
    assert_eq!(named.len(), 2, "two groups: {themes:?}");
    assert!(
        named
            .iter()
            .any(|t| t.contains("Ledger") && !t.contains("Beacon"))
            && named
                .iter()
                .any(|t| t.contains("Beacon") && !t.contains("Ledger")),
        "each group is named by its own central systems: {named:?}"
    );
    let steps = cited(&themes, &bodies);
    let pages: Vec<&str> = steps.iter().map(|(_, _, page, _)| *page).collect();
    assert!(
        pages.contains(&"payments-runbook") && pages.contains(&"search-runbook"),
        "each group is cited by the facts that tie it: {steps:?}"
    );

    // Two hops from a person to a system: the team she leads maintains it.
    let lead = ask(&c, "How does Ana Ruiz relate to Kite?", seq).await;
    assert_eq!(lead.status, v1::AnswerStatus::Answered as i32, "{lead:?}");
    assert_eq!(
        cited(&lead, &bodies),
        [
            ("led_by", "Ana Ruiz", "payments-runbook", 1),
            ("maintained_by", "Quartz", "payments-runbook", 1),
        ],
        "{lead:?}"
    );
    assert_eq!(
        lead.value, "Quartz —led_by→ Ana Ruiz; Kite —maintained_by→ Quartz",
        "{lead:?}"
    );

    // Through a revised page: the step cites the version that states it now.
    let region = ask(&c, "How is Kite connected to the South region?", seq).await;
    assert_eq!(
        region.status,
        v1::AnswerStatus::Answered as i32,
        "{region:?}"
    );
    assert_eq!(
        cited(&region, &bodies),
        [
            ("depends_on", "Ledger", "payments-runbook", 1),
            ("hosted_in", "South", "ledger-notes", 2),
        ],
        "{region:?}"
    );

    // Nothing ties the two groups: no chain is made up, the question goes on as any other.
    let apart = ask(&c, "How does Kite relate to Comet?", seq).await;
    assert!(
        !apart.value.contains('→') && apart.hops.iter().all(|h| h.value != "Comet"),
        "{apart:?}"
    );

    sandbox.shutdown().await.expect("clean shutdown");
    database.drop_now().await.expect("drop test database");
}
