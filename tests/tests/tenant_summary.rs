//! A tenant's summary, end to end on the embedded default: what `TenantSummary` answers (pages,
//! facts, entities, the ontology's predicates, the last ingest, the backlog) after an ontology
//! and pages are pushed, a page revised and one deleted; an event accepted but not yet published
//! counts as backlog; another tenant sees only its own zeros; the dashboard's `/api/summary` and
//! the HTTP gateway answer the same figures.

use std::time::Duration;

use chrono::Utc;
use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_tests::http::send;
use ontoloop_tests::{Clients, Sandbox, caller, doc, http_get, ontology};

const T: &str = "summit";

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
  {"name":"owned_by","subject_type":"feature","object_type":"team","patterns":["The {s} feature is owned by the {o} team."]}],
  "authority":{"default":2}}"#;

async fn summary(c: &Clients, tenant: &str, min_sequence: u64) -> v1::TenantSummaryResponse {
    c.analyst
        .clone()
        .tenant_summary(v1::TenantSummaryRequest {
            caller: caller(tenant, "rita"),
            min_sequence,
        })
        .await
        .unwrap_or_else(|status| panic!("summary of {tenant}: {status:?}"))
        .into_inner()
}

/// The figures that do not depend on the clock: pages, versions, facts, entities, backlog,
/// failed events.
fn counts(s: &v1::TenantSummaryResponse) -> [u64; 6] {
    [
        s.pages,
        s.page_versions,
        s.facts,
        s.entities,
        s.backlog,
        s.failed_events,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_counts_what_was_pushed_and_what_waits() {
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();

    // Nothing stored yet: zeros, no ontology, never ingested.
    let empty = summary(&c, T, 0).await;
    assert_eq!(counts(&empty), [0; 6]);
    assert!(empty.predicates.is_empty() && empty.last_ingest.is_none());
    assert_eq!(empty.knowledge_version, 0);

    let before = Utc::now();
    let seq = c
        .push_all(
            T,
            "integration",
            [
                ontology(ONTOLOGY),
                doc(
                    "pricing",
                    "pricing-page",
                    "The Pro plan costs €49 per month. The Starter plan costs €19 per month.",
                    &[],
                    0.0,
                ),
                doc(
                    "kite",
                    "wiki",
                    "The Kite feature is owned by the Platform team.",
                    &[],
                    0.0,
                ),
                doc(
                    "notes",
                    "wiki",
                    "Meeting notes with no facts in them.",
                    &[],
                    0.0,
                ),
                // The Pro plan's price changes: 49 no longer holds.
                doc(
                    "pricing",
                    "pricing-page",
                    "The Pro plan costs €59 per month. The Starter plan costs €19 per month.",
                    &[],
                    0.0,
                ),
                v1::event::Kind::DocDelete(v1::DocDelete {
                    doc_id: "notes".into(),
                }),
            ],
        )
        .await;
    let after = Utc::now();

    let held = summary(&c, T, seq).await;
    // Two pages live (pricing, kite; notes is deleted); five versions (pricing twice, kite,
    // notes and its deletion); three facts hold (Pro 59, Starter 19, Kite's owner); four entities
    // (two plans, a feature, a team); nothing waits.
    assert_eq!(counts(&held), [2, 5, 3, 4, 0, 0], "{held:?}");
    assert_eq!(held.predicates, ["price", "owned_by"]);
    let last = held.last_ingest.as_ref().expect("a last ingest");
    let last = chrono::DateTime::from_timestamp(last.seconds, 0).expect("an instant");
    assert!(
        last >= before - chrono::Duration::seconds(1) && last <= after,
        "{last} not within {before}..{after}"
    );
    assert!(held.knowledge_version >= 1);

    // An event accepted but not yet published (its accepter's lease holds the relay off): the
    // backlog counts it, the knowledge does not change.
    let now = Utc::now();
    let body = serde_json::json!({
        "tenant": T, "at": now.to_rfc3339(), "type": "doc.upsert", "doc_id": "later",
        "title": "later", "origin": "wiki", "body": "Not yet applied."
    });
    sandbox
        .ctx
        .store
        .intake_accept(
            T,
            None,
            "doc.upsert",
            &body.to_string(),
            now,
            Some(now + chrono::Duration::hours(1)),
            None,
        )
        .await
        .expect("an event accepted");
    let waiting = summary(&c, T, 0).await;
    assert_eq!(counts(&waiting), [2, 5, 3, 4, 1, 0], "{waiting:?}");
    assert_eq!(
        waiting.last_ingest, held.last_ingest,
        "only applied events count"
    );

    // Another tenant learns nothing of this one.
    assert_eq!(counts(&summary(&c, "elsewhere", 0).await), [0; 6]);

    // The dashboard's header block reads the same figures.
    let page = http_get(
        sandbox.http_addr(ServiceKind::Analyst),
        &format!("/api/summary?tenant={T}&reviewer=rita"),
    )
    .await
    .expect("the dashboard answers");
    let page: serde_json::Value = serde_json::from_str(&page).expect("JSON");
    assert_eq!(
        (
            &page["pages"],
            &page["facts"],
            &page["entities"],
            &page["backlog"]
        ),
        (
            &serde_json::json!(2),
            &serde_json::json!(3),
            &serde_json::json!(4),
            &serde_json::json!(1)
        ),
        "{page}"
    );
    assert_eq!(page["predicates"], serde_json::json!(["price", "owned_by"]));

    // So does the HTTP gateway, which serves every unary RPC (64-bit counts as strings, as the
    // proto3 JSON mapping writes them).
    let request = serde_json::json!({"caller": {"tenant": T, "principal": "rita"}});
    let answer = send(
        sandbox.http_addr(ServiceKind::Analyst),
        "POST",
        "/ontoloop.v1.AnalystService/TenantSummary",
        &[],
        Some(&request.to_string()),
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let json = answer.json();
    assert_eq!(
        (&json["pages"], &json["backlog"], &json["predicates"]),
        (
            &serde_json::json!("2"),
            &serde_json::json!("1"),
            &serde_json::json!(["price", "owned_by"])
        ),
        "{json}"
    );

    tokio::time::timeout(Duration::from_secs(30), sandbox.shutdown())
        .await
        .expect("stops in time")
        .expect("stops cleanly");
}
