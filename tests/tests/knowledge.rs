//! The ingest path end to end on the embedded default: events through the telemetry intake,
//! across the queue, applied by the analyst (the one writer), answered by retrieval with
//! read-your-writes, provenance and permissions; bad events are refused with a reason and the
//! events after them still apply.

use std::time::Duration;

use ontoloop_core::ServiceKind;
use ontoloop_core::topics;
use ontoloop_proto::v1;
use ontoloop_proto::v1::analyst_service_client::AnalystServiceClient;
use ontoloop_proto::v1::retrieval_service_client::RetrievalServiceClient;
use ontoloop_proto::v1::telemetry_service_client::TelemetryServiceClient;
use ontoloop_queue::{Message, REASON_HEADER};
use ontoloop_tests::{Sandbox, settings, wait_until};
use tonic::Code;
use tonic::transport::Channel;

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number","patterns":["The {s} plan costs €{o:number} per month."]},
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"record":4,"pricing-page":3,"wiki":2,"default":1}}"#;

struct Clients {
    telemetry: TelemetryServiceClient<Channel>,
    retrieval: RetrievalServiceClient<Channel>,
    analyst: AnalystServiceClient<Channel>,
}

async fn clients(sandbox: &Sandbox) -> Clients {
    let channel = |kind| {
        tonic::transport::Endpoint::from_shared(sandbox.endpoint(kind))
            .expect("endpoint")
            .connect_lazy()
    };
    Clients {
        telemetry: TelemetryServiceClient::new(channel(ServiceKind::Telemetry)),
        retrieval: RetrievalServiceClient::new(channel(ServiceKind::Retrieval)),
        analyst: AnalystServiceClient::new(channel(ServiceKind::Analyst)),
    }
}

fn caller(tenant: &str, principal: &str) -> Option<v1::Caller> {
    Some(v1::Caller {
        tenant: tenant.into(),
        principal: principal.into(),
    })
}

fn doc(id: &str, origin: &str, body: &str, acl: &[&str]) -> v1::event::Kind {
    v1::event::Kind::DocUpsert(v1::DocUpsert {
        doc_id: id.into(),
        title: id.into(),
        origin: origin.into(),
        body: body.into(),
        acl: acl.iter().map(|s| s.to_string()).collect(),
        hold: false,
        confidence: 0.0,
    })
}

async fn push(
    c: &mut Clients,
    tenant: &str,
    kind: v1::event::Kind,
) -> Result<v1::EventAck, tonic::Status> {
    c.telemetry
        .push_event(v1::Event {
            caller: caller(tenant, "integration"),
            kind: Some(kind),
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner())
}

async fn lookup(
    c: &mut Clients,
    tenant: &str,
    principal: &str,
    entity: &str,
    predicate: &str,
    min_sequence: u64,
) -> Result<v1::Answer, tonic::Status> {
    c.retrieval
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

async fn embedded() -> (Sandbox, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/k.db?mode=rwc", dir.path().display());
    (
        Sandbox::start(settings(&[("store.url", &url)]))
            .await
            .expect("sandbox"),
        dir,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_pushed_is_answered_with_provenance_right_after() {
    let (sandbox, _dir) = embedded().await;
    let mut c = clients(&sandbox).await;
    let t = "acme";
    push(
        &mut c,
        t,
        v1::event::Kind::OntologySet(v1::OntologySet {
            ontology_json: ONTOLOGY.into(),
        }),
    )
    .await
    .expect("ontology");
    let seq = push(
        &mut c,
        t,
        doc(
            "pricing",
            "pricing-page",
            "The Pro plan costs €49 per month.",
            &[],
        ),
    )
    .await
    .expect("doc")
    .sequence;
    let answer = lookup(&mut c, t, "alice", "Pro plan", "price", seq)
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
    let again = push(
        &mut c,
        t,
        doc(
            "pricing",
            "pricing-page",
            "The Pro plan costs €49 per month.",
            &[],
        ),
    )
    .await
    .expect("doc")
    .sequence;
    let answer = lookup(&mut c, t, "alice", "pro", "price", again)
        .await
        .expect("answer");
    assert!(
        answer.evidence.iter().all(|e| e.source_version == 1),
        "{:?}",
        answer.evidence
    );

    // A new version is read right after it is pushed; the old value stays in history.
    let seq = push(
        &mut c,
        t,
        doc(
            "pricing",
            "pricing-page",
            "The Pro plan costs €59 per month.",
            &[],
        ),
    )
    .await
    .expect("doc")
    .sequence;
    let answer = lookup(&mut c, t, "alice", "PRO", "price", seq)
        .await
        .expect("answer");
    assert_eq!(answer.value, "59");
    assert_eq!(answer.evidence[0].source_version, 2);

    // A lower-authority page that still says the old value does not win, and does not hedge.
    let seq = push(
        &mut c,
        t,
        doc("wiki-faq", "wiki", "The Pro plan costs €49 per month.", &[]),
    )
    .await
    .expect("doc")
    .sequence;
    let answer = lookup(&mut c, t, "alice", "Pro", "price", seq)
        .await
        .expect("answer");
    assert_eq!(
        (answer.value.as_str(), answer.status),
        ("59", v1::AnswerStatus::Answered as i32)
    );

    // A system-of-record value outranks every page, whatever spelling it uses.
    let seq = push(
        &mut c,
        t,
        v1::event::Kind::RecordSet(v1::RecordSet {
            source: "record:billing".into(),
            entity: "pro plan".into(),
            predicate: "price".into(),
            value: "64".into(),
        }),
    )
    .await
    .expect("record")
    .sequence;
    let answer = lookup(&mut c, t, "alice", "Pro", "price", seq)
        .await
        .expect("answer");
    assert_eq!(answer.value, "64");
    assert_eq!(answer.evidence[0].origin, "record");

    // The maintenance runs are listed with their cost.
    let runs = c
        .analyst
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
    let (sandbox, _dir) = embedded().await;
    let mut c = clients(&sandbox).await;
    let t = "acme";
    // Before any ontology, knowledge events are refused with a reason, not lost silently.
    let early = push(&mut c, t, doc("a", "wiki", "x", &[]))
        .await
        .expect("accepted by the intake")
        .sequence;
    let err = lookup(&mut c, t, "alice", "Pro", "price", early)
        .await
        .expect_err("refused");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("ontology"), "{}", err.message());

    push(
        &mut c,
        t,
        v1::event::Kind::OntologySet(v1::OntologySet {
            ontology_json: ONTOLOGY.into(),
        }),
    )
    .await
    .expect("ontology");
    let bad = push(
        &mut c,
        t,
        v1::event::Kind::RecordSet(v1::RecordSet {
            source: "record:billing".into(),
            entity: "Pro".into(),
            predicate: "colour".into(),
            value: "red".into(),
        }),
    )
    .await
    .expect("the intake cannot know the ontology")
    .sequence;
    let good = push(
        &mut c,
        t,
        doc(
            "pricing",
            "pricing-page",
            "The Pro plan costs €49 per month.",
            &[],
        ),
    )
    .await
    .expect("doc")
    .sequence;
    let err = lookup(&mut c, t, "alice", "Pro", "price", bad)
        .await
        .expect_err("refused event");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("colour"), "{}", err.message());
    assert_eq!(
        lookup(&mut c, t, "alice", "Pro", "price", good)
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
        reasons.iter().any(|r| r.contains("no ontology")),
        "{reasons:?}"
    );
    assert!(reasons.iter().any(|r| r.contains("colour")), "{reasons:?}");
    drop(dead);

    // Malformed events never reach the queue: the intake names the field.
    let err = push(&mut c, t, doc("", "wiki", "x", &[]))
        .await
        .expect_err("no doc id");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("doc_id"), "{}", err.message());
    let err = push(
        &mut c,
        t,
        v1::event::Kind::GraphMaintain(v1::GraphMaintain {
            mode: "sometimes".into(),
        }),
    )
    .await
    .expect_err("bad mode");
    assert!(err.message().contains("mode"), "{}", err.message());
    let err = push(
        &mut c,
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
    let c2 = clients(&sandbox).await;
    let applied = wait_until(Duration::from_secs(10), || {
        let mut c = Clients {
            telemetry: c2.telemetry.clone(),
            retrieval: c2.retrieval.clone(),
            analyst: c2.analyst.clone(),
        };
        async move {
            lookup(&mut c, "acme", "alice", "Billing", "owned_by", 0)
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
    let (sandbox, _dir) = embedded().await;
    let mut c = clients(&sandbox).await;
    let t = "acme";
    push(
        &mut c,
        t,
        v1::event::Kind::OntologySet(v1::OntologySet {
            ontology_json: ONTOLOGY.into(),
        }),
    )
    .await
    .expect("ontology");
    let seq = push(
        &mut c,
        t,
        doc(
            "board",
            "pricing-page",
            "The Secret plan costs €999 per month.",
            &["cfo"],
        ),
    )
    .await
    .expect("doc")
    .sequence;
    let hidden = lookup(&mut c, t, "alice", "Secret", "price", seq)
        .await
        .expect("answer");
    assert_eq!(hidden.status, v1::AnswerStatus::Abstained as i32);
    assert!(hidden.evidence.is_empty() && hidden.value.is_empty());
    let seen = lookup(&mut c, t, "cfo", "Secret", "price", seq)
        .await
        .expect("answer");
    assert_eq!(seen.value, "999");
    // Another tenant sees nothing of this one.
    let err = lookup(&mut c, "globex", "cfo", "Secret", "price", 0)
        .await
        .expect_err("no ontology there");
    assert_eq!(err.code(), Code::FailedPrecondition);

    // Questions the ontology cannot map abstain with the reason; bad requests name the field.
    let answer = c
        .retrieval
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
    let err = lookup(&mut c, t, "alice", "Secret", "colour", 0)
        .await
        .expect_err("unknown predicate");
    assert_eq!(err.code(), Code::InvalidArgument);
    let err = c
        .retrieval
        .ask(v1::AskRequest {
            caller: caller(t, "alice"),
            text: " ".into(),
            ..Default::default()
        })
        .await
        .expect_err("empty question");
    assert!(err.message().contains("text"));
    let err = lookup(&mut c, t, "alice", "Secret", "price", 999_999)
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
    let first = c
        .telemetry
        .push_event(v1::Event {
            caller: caller(t, "hr"),
            idempotency_key: "k-1".into(),
            kind: Some(doc("x", "wiki", "y", &[])),
            ..Default::default()
        })
        .await
        .expect("push")
        .into_inner();
    let second = c
        .telemetry
        .push_event(v1::Event {
            caller: caller(t, "hr"),
            idempotency_key: "k-1".into(),
            kind: Some(doc("x", "wiki", "y", &[])),
            ..Default::default()
        })
        .await
        .expect("push")
        .into_inner();
    assert_eq!((second.sequence, second.duplicate), (first.sequence, true));
    sandbox.shutdown().await.expect("clean shutdown");
}
