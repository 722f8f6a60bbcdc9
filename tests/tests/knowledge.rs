//! The ingest path end to end on the embedded default: events through the telemetry intake,
//! across the queue, applied by the analyst (the one writer), answered by retrieval with
//! read-your-writes, provenance and permissions; bad events are refused with a reason and the
//! events after them still apply.

use std::time::Duration;

use ontoloop_core::topics;
use ontoloop_proto::v1;
use ontoloop_queue::{Message, REASON_HEADER};
use ontoloop_tests::{Clients, Sandbox, caller, ontology, wait_until};
use tonic::Code;

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"record":4,"pricing-page":3,"wiki":2,"default":1}}"#;

fn doc(id: &str, origin: &str, body: &str, acl: &[&str]) -> v1::event::Kind {
    ontoloop_tests::doc(id, origin, body, acl, 0.0)
}

async fn push(c: &Clients, tenant: &str, kind: v1::event::Kind) -> Result<u64, tonic::Status> {
    c.push(tenant, "integration", kind).await
}

async fn lookup(
    c: &Clients,
    tenant: &str,
    principal: &str,
    entity: &str,
    predicate: &str,
    min_sequence: u64,
) -> Result<v1::Answer, tonic::Status> {
    c.retrieval
        .clone()
        .lookup(v1::LookupRequest {
            caller: caller(tenant, principal),
            entity: entity.into(),
            predicate_path: vec![predicate.into()],
            min_sequence,
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner())
}

/// The pricing page, saying what the Pro plan costs.
fn pricing(euros: u32) -> v1::event::Kind {
    doc(
        "pricing",
        "pricing-page",
        &format!("The Pro plan costs €{euros} per month."),
        &[],
    )
}

/// The embedded system with the ontology set for `tenant`.
async fn with_ontology(tenant: &str) -> (Sandbox, Clients) {
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    push(&c, tenant, ontology(ONTOLOGY))
        .await
        .expect("ontology");
    (sandbox, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_pushed_is_answered_with_provenance_right_after() {
    let t = "acme";
    let (sandbox, c) = with_ontology(t).await;
    let seq = push(&c, t, pricing(49)).await.expect("doc");
    let answer = lookup(&c, t, "alice", "Pro plan", "price", seq)
        .await
        .expect("answer");
    assert_eq!(answer.value, "49");
    assert_eq!(answer.status, v1::AnswerStatus::Answered as i32);
    assert_eq!(answer.applied_sequence, seq);
    let winner = &answer.evidence[0];
    assert_eq!(
        (
            winner.source_id.as_str(),
            winner.source_version,
            winner.origin.as_str(),
            winner.authority
        ),
        ("pricing", 1, "pricing-page", 3)
    );

    // The same body again is not a new version.
    let again = push(&c, t, pricing(49)).await.expect("doc");
    let answer = lookup(&c, t, "alice", "pro", "price", again)
        .await
        .expect("answer");
    assert!(
        answer.evidence.iter().all(|e| e.source_version == 1),
        "{:?}",
        answer.evidence
    );

    // A new version is read right after it is pushed; the old value stays in history.
    let seq = push(&c, t, pricing(59)).await.expect("doc");
    let answer = lookup(&c, t, "alice", "PRO", "price", seq)
        .await
        .expect("answer");
    assert_eq!(answer.value, "59");
    assert_eq!(answer.evidence[0].source_version, 2);

    // A lower-authority page that still says the old value does not win, and does not hedge.
    let seq = push(
        &c,
        t,
        doc("wiki-faq", "wiki", "The Pro plan costs €49 per month.", &[]),
    )
    .await
    .expect("doc");
    let answer = lookup(&c, t, "alice", "Pro", "price", seq)
        .await
        .expect("answer");
    assert_eq!(
        (answer.value.as_str(), answer.status),
        ("59", v1::AnswerStatus::Answered as i32)
    );

    // A system-of-record value outranks every page, whatever spelling it uses.
    let seq = push(
        &c,
        t,
        v1::event::Kind::RecordSet(v1::RecordSet {
            source: "record:billing".into(),
            entity: "pro plan".into(),
            predicate: "price".into(),
            value: "64".into(),
            effective_from: None,
            scope: String::new(),
        }),
    )
    .await
    .expect("record");
    let answer = lookup(&c, t, "alice", "Pro", "price", seq)
        .await
        .expect("answer");
    assert_eq!(answer.value, "64");
    assert_eq!(answer.evidence[0].origin, "record");

    // The maintenance runs are listed with their cost.
    let runs = c
        .analyst
        .clone()
        .list_maintenance_runs(v1::ListMaintenanceRunsRequest {
            caller: caller(t, "ops"),
            min_sequence: seq,
        })
        .await
        .expect("runs")
        .into_inner()
        .runs;
    assert_eq!(
        runs.iter()
            .filter(|r| r.mode == "patch")
            .map(|r| r.pages_read)
            .sum::<u64>(),
        3
    );
    assert!(
        runs.iter()
            .any(|r| r.mode == "record-patch" && r.pages_read == 0 && r.graph_writes > 0)
    );
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_event_is_refused_with_its_reason_and_the_next_one_applies() {
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let t = "acme";
    // Before any ontology a page applies, read under the empty one: the lookup that waits for
    // it gets past the wait and names the slot no ontology defines yet (a refused event would
    // answer FAILED_PRECONDITION with its reason).
    let early = push(&c, t, doc("a", "wiki", "x", &[]))
        .await
        .expect("accepted by the intake");
    let err = lookup(&c, t, "alice", "Pro", "price", early)
        .await
        .expect_err("no slot price yet");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().contains("\"price\" is not in the ontology"),
        "{}",
        err.message()
    );
    // A record value for a predicate no ontology defines yet is refused with its reason, not
    // lost silently.
    let record = |predicate: &str, value: &str| {
        v1::event::Kind::RecordSet(v1::RecordSet {
            source: "record:billing".into(),
            entity: "Pro".into(),
            predicate: predicate.into(),
            value: value.into(),
            effective_from: None,
            scope: String::new(),
        })
    };
    let early = push(&c, t, record("price", "49"))
        .await
        .expect("the intake cannot know the ontology");
    let err = lookup(&c, t, "alice", "Pro", "price", early)
        .await
        .expect_err("refused");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(
        err.message().contains("\"price\" is not in the ontology"),
        "{}",
        err.message()
    );

    push(&c, t, ontology(ONTOLOGY)).await.expect("ontology");
    let bad = push(&c, t, record("colour", "red"))
        .await
        .expect("the intake cannot know the ontology");
    let good = push(&c, t, pricing(49)).await.expect("doc");
    let err = lookup(&c, t, "alice", "Pro", "price", bad)
        .await
        .expect_err("refused event");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("colour"), "{}", err.message());
    assert_eq!(
        lookup(&c, t, "alice", "Pro", "price", good)
            .await
            .expect("applied")
            .value,
        "49"
    );
    // The refused events are in the dead-letter queue with their reasons.
    let mut dead = sandbox
        .ctx
        .queue
        .consume_dead_letters(topics::EVENTS)
        .await
        .expect("dlq");
    let mut reasons = Vec::new();
    for _ in 0..2 {
        let letter = tokio::time::timeout(Duration::from_secs(10), dead.next())
            .await
            .expect("dead letter")
            .expect("open")
            .expect("delivery");
        reasons.push(
            letter
                .message
                .headers
                .get(REASON_HEADER)
                .cloned()
                .unwrap_or_default(),
        );
        letter.ack().await.expect("ack");
    }
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("\"price\" is not in the ontology")),
        "{reasons:?}"
    );
    assert!(reasons.iter().any(|r| r.contains("colour")), "{reasons:?}");
    drop(dead);

    // Malformed events never reach the queue: the intake names the field.
    let err = push(&c, t, doc("", "wiki", "x", &[]))
        .await
        .expect_err("no doc id");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("doc_id"), "{}", err.message());
    let err = push(
        &c,
        t,
        v1::event::Kind::GraphMaintain(v1::GraphMaintain {
            mode: "sometimes".into(),
        }),
    )
    .await
    .expect_err("bad mode");
    assert!(err.message().contains("mode"), "{}", err.message());
    let err = push(
        &c,
        t,
        v1::event::Kind::OntologySet(v1::OntologySet {
            ontology_json: "{".into(),
        }),
    )
    .await
    .expect_err("bad json");
    assert_eq!(err.code(), Code::InvalidArgument);

    // An integration publishing straight to the queue with a body that is not an event gets a
    // dead letter with the reason, and the consumer keeps going.
    sandbox
        .ctx
        .queue
        .publish(
            topics::EVENTS,
            Message::with_id("raw-1", r#"{"tenant":"acme","type":"doc.upsert"}"#),
        )
        .await
        .expect("publish");
    let raw = r#"{"tenant":"acme","at":"2026-09-01T00:00:00Z","type":"doc.upsert","doc_id":"raw","origin":"wiki","body":"Billing is owned by the Orion team."}"#;
    sandbox
        .ctx
        .queue
        .publish(topics::EVENTS, Message::with_id("raw-2", raw))
        .await
        .expect("publish");
    let applied = wait_until(Duration::from_secs(10), || {
        let c = c.clone();
        async move {
            lookup(&c, "acme", "alice", "Billing", "owned_by", 0)
                .await
                .is_ok_and(|a| a.value == "Orion")
        }
    })
    .await;
    assert!(applied, "the event after a malformed one is applied");
    // The same message delivered twice (an integration retrying) has no second effect.
    let record = r#"{"tenant":"acme","at":"2026-09-02T00:00:00Z","type":"record.set","source":"record:cmdb","entity":"Billing","predicate":"owned_by","value":"Helix"}"#;
    for _ in 0..2 {
        sandbox
            .ctx
            .queue
            .publish(topics::EVENTS, Message::with_id("rec-1", record))
            .await
            .expect("publish");
    }
    let marker = r#"{"tenant":"acme","at":"2026-09-03T00:00:00Z","type":"doc.upsert","doc_id":"marker","origin":"wiki","body":"Ledger service is owned by the Atlas team."}"#;
    sandbox
        .ctx
        .queue
        .publish(topics::EVENTS, Message::with_id("raw-3", marker))
        .await
        .expect("publish");
    let store = sandbox.ctx.store.clone();
    let marked = wait_until(Duration::from_secs(10), || {
        let store = store.clone();
        async move {
            store
                .load_knowledge("acme")
                .await
                .is_ok_and(|k| k.pages.iter().any(|p| p.source_id == "marker"))
        }
    })
    .await;
    assert!(marked, "the marker after the duplicate is applied");
    let knowledge = store.load_knowledge("acme").await.expect("load");
    let records = knowledge
        .facts
        .iter()
        .filter(|f| f.source.source_id == "record:cmdb")
        .count();
    assert_eq!(
        records, 1,
        "one record fact for one message delivered twice"
    );
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_see_only_what_they_may_read_and_unknowns_abstain() {
    let t = "acme";
    let (sandbox, c) = with_ontology(t).await;
    let seq = push(
        &c,
        t,
        doc(
            "board",
            "pricing-page",
            "The Secret plan costs €999 per month.",
            &["cfo"],
        ),
    )
    .await
    .expect("doc");
    let hidden = lookup(&c, t, "alice", "Secret", "price", seq)
        .await
        .expect("answer");
    assert_eq!(hidden.status, v1::AnswerStatus::Abstained as i32);
    assert!(hidden.evidence.is_empty() && hidden.value.is_empty());
    let seen = lookup(&c, t, "cfo", "Secret", "price", seq)
        .await
        .expect("answer");
    assert_eq!(seen.value, "999");
    // Another tenant sees nothing of this one: it has no such slot, and knows no Secret plan.
    let err = lookup(&c, "globex", "cfo", "Secret", "price", 0)
        .await
        .expect_err("no ontology there");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    let elsewhere = c
        .retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller("globex", "cfo"),
            text: "What do we know about the Secret plan?".into(),
            ..Default::default()
        })
        .await
        .expect("ask")
        .into_inner();
    assert_eq!(
        elsewhere.status,
        v1::AnswerStatus::Abstained as i32,
        "{elsewhere:?}"
    );
    assert!(elsewhere.passages.is_empty() && elsewhere.hops.is_empty());

    // Questions the ontology cannot map abstain with the reason; bad requests name the field.
    let answer = c
        .retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(t, "alice"),
            text: "Is it raining in Izmir?".into(),
            ..Default::default()
        })
        .await
        .expect("ask")
        .into_inner();
    assert_eq!(answer.status, v1::AnswerStatus::Abstained as i32);
    assert!(
        answer.abstain_reason.contains("predicate"),
        "{}",
        answer.abstain_reason
    );
    let err = lookup(&c, t, "alice", "Secret", "colour", 0)
        .await
        .expect_err("unknown predicate");
    assert_eq!(err.code(), Code::InvalidArgument);
    let err = c
        .retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(t, "alice"),
            text: " ".into(),
            ..Default::default()
        })
        .await
        .expect_err("empty question");
    assert!(err.message().contains("text"));
    let err = lookup(&c, t, "alice", "Secret", "price", 999_999)
        .await
        .expect_err("unknown sequence");
    assert_eq!(err.code(), Code::NotFound);

    // Abstentions become signals for the analyst.
    let store = sandbox.ctx.store.clone();
    let signalled = wait_until(Duration::from_secs(10), || {
        let store = store.clone();
        async move {
            store.inbox(topics::SIGNALS, 100).await.is_ok_and(|rows| {
                rows.iter().any(|r| {
                    r.body.contains("entity_missing") || r.body.contains("relationship_unknown")
                })
            })
        }
    })
    .await;
    assert!(signalled, "abstentions publish signals");

    // An idempotency key makes a retried push a duplicate.
    let keyed = || {
        let mut telemetry = c.telemetry.clone();
        async move {
            telemetry
                .push_event(v1::Event {
                    caller: caller(t, "hr"),
                    idempotency_key: "k-1".into(),
                    kind: Some(doc("x", "wiki", "y", &[])),
                    ..Default::default()
                })
                .await
                .expect("push")
                .into_inner()
        }
    };
    let first = keyed().await;
    let second = keyed().await;
    assert_eq!((second.sequence, second.duplicate), (first.sequence, true));
    sandbox.shutdown().await.expect("clean shutdown");
}

/// The firewall's verdict on `text` for `tenant`, once it is `expected` (or the last one seen).
async fn verdict_on(
    c: &Clients,
    tenant: &str,
    text: &str,
    expected: v1::Verdict,
) -> v1::ValidateResponse {
    let mut seen = None;
    for _ in 0..100 {
        let response = c
            .firewall
            .clone()
            .validate(v1::ValidateRequest {
                caller: caller(tenant, "alice"),
                input: Some(v1::validate_request::Input::Text(text.into())),
                ..Default::default()
            })
            .await
            .expect("validate")
            .into_inner();
        if response.overall == expected as i32 {
            return response;
        }
        seen = Some(response);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    seen.expect("a verdict")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_page_is_cited_no_more_and_a_listing_reconciles_its_source() {
    let t = "acme";
    let (sandbox, c) = with_ontology(t).await;
    push(&c, t, pricing(49)).await.expect("doc");
    push(
        &c,
        t,
        doc("faq", "wiki", "The Pro plan costs €45 per month.", &[]),
    )
    .await
    .expect("doc");
    let seq = push(
        &c,
        t,
        doc("owners", "wiki", "Billing is owned by the Orion team.", &[]),
    )
    .await
    .expect("doc");
    let answer = lookup(&c, t, "alice", "Pro plan", "price", seq)
        .await
        .expect("answer");
    assert_eq!(
        (answer.value.as_str(), answer.evidence[0].source_id.as_str()),
        ("49", "pricing")
    );
    let claim = "The Pro plan costs €49 per month.";
    let before = verdict_on(&c, t, claim, v1::Verdict::Pass).await;
    assert_eq!(before.overall, v1::Verdict::Pass as i32, "{before:?}");
    let before_deletion = chrono::Utc::now();
    tokio::time::sleep(Duration::from_millis(20)).await;

    // Deleted: the next page answers, nothing cites the deleted one, the firewall neither.
    let delete = |id: &str| v1::event::Kind::DocDelete(v1::DocDelete { doc_id: id.into() });
    let seq = push(&c, t, delete("pricing")).await.expect("delete");
    let answer = lookup(&c, t, "alice", "Pro plan", "price", seq)
        .await
        .expect("answer");
    assert_eq!(answer.value, "45", "{answer:?}");
    assert!(
        answer.evidence.iter().all(|e| e.source_id != "pricing"),
        "{:?}",
        answer.evidence
    );
    let asked = c
        .retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(t, "alice"),
            text: "What does the Pro plan cost?".into(),
            min_sequence: seq,
            ..Default::default()
        })
        .await
        .expect("ask")
        .into_inner();
    assert!(
        !format!("{asked:?}").contains("\"pricing\""),
        "an Ask cites the deleted page: {asked:?}"
    );
    let after = verdict_on(&c, t, claim, v1::Verdict::Block).await;
    assert_eq!(after.overall, v1::Verdict::Block as i32, "{after:?}");
    assert!(
        !format!("{after:?}").contains("\"pricing\""),
        "the firewall cites the deleted page: {after:?}"
    );
    // As of before the deletion, the page still answers.
    let then = c
        .retrieval
        .clone()
        .lookup(v1::LookupRequest {
            caller: caller(t, "alice"),
            entity: "Pro plan".into(),
            predicate_path: vec!["price".into()],
            min_sequence: seq,
            as_of: Some(ontoloop_proto::convert::timestamp(before_deletion)),
            ..Default::default()
        })
        .await
        .expect("as of")
        .into_inner();
    assert_eq!(
        (then.value.as_str(), then.evidence[0].source_id.as_str()),
        ("49", "pricing")
    );

    // Deleting it again, or a page never seen, changes nothing; a blank id is refused.
    push(&c, t, delete("pricing")).await.expect("delete again");
    push(&c, t, delete("never-was"))
        .await
        .expect("delete unknown");
    let refused = push(&c, t, delete(" ")).await.expect_err("blank id");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");

    // The wiki lists only its owners page: the FAQ is gone, the owners page stays.
    let seq = push(
        &c,
        t,
        v1::event::Kind::SourceListing(v1::SourceListing {
            origin: "wiki".into(),
            doc_ids: vec!["owners".into()],
        }),
    )
    .await
    .expect("listing");
    let answer = lookup(&c, t, "alice", "Pro plan", "price", seq)
        .await
        .expect("answer");
    assert_eq!(
        answer.status,
        v1::AnswerStatus::Abstained as i32,
        "{answer:?}"
    );
    let owner = lookup(&c, t, "alice", "Billing", "owned_by", seq)
        .await
        .expect("answer");
    assert_eq!(owner.value, "Orion");

    // A page comes back with a new version after its tombstone.
    let seq = push(&c, t, pricing(59)).await.expect("doc");
    let answer = lookup(&c, t, "alice", "Pro plan", "price", seq)
        .await
        .expect("answer");
    assert_eq!(
        (answer.value.as_str(), answer.evidence[0].source_version),
        ("59", 3)
    );
    sandbox.shutdown().await.expect("clean shutdown");
}

/// A page version published ahead of the day it takes effect, through the intake, the analyst,
/// retrieval and the firewall: until then the version before answers and passes the firewall,
/// the announced value is noted beside it and a claim of it is blocked; once its time has come
/// the read models make it current on their own (no further event), and it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_published_ahead_takes_effect_on_its_day_with_no_further_event() {
    let t = "acme";
    let (sandbox, c) = with_ontology(t).await;
    push(&c, t, pricing(49)).await.expect("doc");
    let takes_effect = chrono::Utc::now() + chrono::Duration::seconds(3);
    let v1::event::Kind::DocUpsert(mut announced) = pricing(59) else {
        unreachable!("pricing is a page")
    };
    announced.effective_from = Some(ontoloop_proto::convert::timestamp(takes_effect));
    let seq = push(&c, t, v1::event::Kind::DocUpsert(announced))
        .await
        .expect("announced version");
    let before = lookup(&c, t, "alice", "Pro plan", "price", seq)
        .await
        .expect("answer");
    assert_eq!(
        (before.value.as_str(), before.evidence[0].source_version),
        ("49", 1),
        "{before:?}"
    );
    let upcoming: Vec<(&str, u64)> = before
        .upcoming
        .iter()
        .map(|e| (e.value.as_str(), e.source_version))
        .collect();
    assert_eq!(upcoming, [("59", 2)], "{before:?}");
    assert_eq!(
        verdict_on(
            &c,
            t,
            "The Pro plan costs €49 per month.",
            v1::Verdict::Pass
        )
        .await
        .overall,
        v1::Verdict::Pass as i32
    );
    assert_eq!(
        verdict_on(
            &c,
            t,
            "The Pro plan costs €59 per month.",
            v1::Verdict::Block
        )
        .await
        .overall,
        v1::Verdict::Block as i32
    );
    // Its day comes; nothing else is pushed.
    let now = chrono::Utc::now();
    if takes_effect > now {
        tokio::time::sleep((takes_effect - now).to_std().unwrap_or_default()).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = lookup(&c, t, "alice", "Pro plan", "price", seq)
        .await
        .expect("answer");
    assert_eq!(
        (
            after.status,
            after.value.as_str(),
            after.evidence[0].source_version
        ),
        (v1::AnswerStatus::Answered as i32, "59", 2),
        "{after:?}"
    );
    assert!(after.upcoming.is_empty(), "{after:?}");
    let passed = verdict_on(
        &c,
        t,
        "The Pro plan costs €59 per month.",
        v1::Verdict::Pass,
    )
    .await;
    assert_eq!(passed.overall, v1::Verdict::Pass as i32, "{passed:?}");
    // As of before its day, the version before still answers.
    let then = c
        .retrieval
        .clone()
        .lookup(v1::LookupRequest {
            caller: caller(t, "alice"),
            entity: "Pro plan".into(),
            predicate_path: vec!["price".into()],
            min_sequence: seq,
            as_of: Some(ontoloop_proto::convert::timestamp(
                takes_effect - chrono::Duration::milliseconds(500),
            )),
            ..Default::default()
        })
        .await
        .expect("as of")
        .into_inner();
    assert_eq!(then.value, "49", "{then:?}");
    sandbox.shutdown().await.expect("clean shutdown");
}

/// Values that differ by scope, through the intake, the analyst, retrieval and the firewall: a
/// page states a general price and a US one, the system of record sets the EU one; an Ask or
/// Lookup naming no scope is NEEDS_SCOPE with each scope's value, one naming a scope (in its
/// request or its words) gets that scope's value; a bad scope is INVALID_ARGUMENT naming the
/// field; the firewall checks a claim against its scope's value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_that_differs_by_scope_needs_a_scope_end_to_end() {
    let t = "scoped";
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let scoped = ONTOLOGY.replacen(
        r#""authority":"#,
        r#""scopes":{"region":["EU","US"]},"authority":"#,
        1,
    );
    push(&c, t, ontology(&scoped)).await.expect("ontology");
    push(
        &c,
        t,
        doc(
            "pricing",
            "pricing-page",
            "The Pro plan costs €49 per month. In the US, the Pro plan costs €55 per month.",
            &[],
        ),
    )
    .await
    .expect("doc");
    let seq = push(
        &c,
        t,
        v1::event::Kind::RecordSet(v1::RecordSet {
            source: "record:billing".into(),
            entity: "Pro plan".into(),
            predicate: "price".into(),
            value: "45".into(),
            effective_from: None,
            scope: "region=EU".into(),
        }),
    )
    .await
    .expect("record");
    let general = lookup(&c, t, "alice", "Pro plan", "price", seq)
        .await
        .expect("answer");
    assert_eq!(
        general.status,
        v1::AnswerStatus::NeedsScope as i32,
        "{general:?}"
    );
    let listed: Vec<(&str, &str)> = general
        .scoped
        .iter()
        .map(|v| (v.scope.as_str(), v.value.as_str()))
        .collect();
    assert_eq!(
        listed,
        vec![("", "49"), ("region=EU", "45"), ("region=US", "55")]
    );
    assert_eq!(general.scoped[1].evidence[0].source_id, "record:billing");
    let in_scope = |scope: &str| {
        let mut retrieval = c.retrieval.clone();
        let scope = scope.to_owned();
        async move {
            retrieval
                .lookup(v1::LookupRequest {
                    caller: caller(t, "alice"),
                    entity: "Pro plan".into(),
                    predicate_path: vec!["price".into()],
                    min_sequence: seq,
                    scope,
                    ..Default::default()
                })
                .await
        }
    };
    let us = in_scope("region=US").await.expect("answer").into_inner();
    assert_eq!(
        (us.status, us.value.as_str()),
        (v1::AnswerStatus::Answered as i32, "55")
    );
    let err = in_scope("region").await.expect_err("refused");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("scope"), "{}", err.message());
    // The question's own words name the scope.
    let asked = c
        .retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller(t, "alice"),
            text: "How much does the Pro plan cost in the EU?".into(),
            min_sequence: seq,
            ..Default::default()
        })
        .await
        .expect("ask")
        .into_inner();
    assert_eq!(asked.value, "45", "{asked:?}");
    // The firewall: each value in its own scope passes, one in another scope is contradicted.
    let passed = verdict_on(
        &c,
        t,
        "In the US, the Pro plan costs €55 per month.",
        v1::Verdict::Pass,
    )
    .await;
    assert_eq!(passed.overall, v1::Verdict::Pass as i32, "{passed:?}");
    assert_eq!(
        passed.verdicts[0].claim.as_ref().map(|c| c.scope.as_str()),
        Some("region=US")
    );
    let blocked = verdict_on(
        &c,
        t,
        "In the EU, the Pro plan costs €55 per month.",
        v1::Verdict::Block,
    )
    .await;
    assert_eq!(blocked.overall, v1::Verdict::Block as i32, "{blocked:?}");
    drop(sandbox);
}
