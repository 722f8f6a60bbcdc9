//! Service tests on the embedded default (SQLite in a temporary directory, the in-process
//! queue): every service serves health and reflection (v1 and v1alpha), answers a tenant it knows nothing about
//! honestly (nothing known yet, an empty plate), rejects requests without a caller, and shuts down
//! cleanly. The analyst records signals and dead-letters bad ones with the reason.

use std::time::Duration;

use futures::StreamExt;
use ontoloop_core::{ServiceKind, topics};
use ontoloop_proto::v1;
use ontoloop_queue::{Message, REASON_HEADER};
use ontoloop_tests::{Sandbox, wait_until};
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tonic_reflection::pb::v1::ServerReflectionRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

fn caller() -> Option<v1::Caller> {
    ontoloop_tests::caller("acme", "alice")
}

async fn health(sandbox: &Sandbox, kind: ServiceKind) -> i32 {
    let mut client = HealthClient::new(sandbox.channel(kind));
    client
        .check(HealthCheckRequest {
            service: kind.grpc_name().into(),
        })
        .await
        .expect("health answers")
        .into_inner()
        .status
}

async fn reflected_services(sandbox: &Sandbox, kind: ServiceKind) -> Vec<String> {
    let mut client = ServerReflectionClient::new(sandbox.channel(kind));
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .expect("reflection answers")
        .into_inner();
    let response = responses.next().await.expect("one response").expect("ok");
    match response.message_response {
        Some(MessageResponse::ListServicesResponse(list)) => {
            list.service.into_iter().map(|s| s.name).collect()
        }
        other => panic!("unexpected reflection response: {other:?}"),
    }
}

/// The services reflection v1alpha lists (Python's grpcio-reflection, Postman, older grpcurl).
async fn reflected_services_v1alpha(sandbox: &Sandbox, kind: ServiceKind) -> Vec<String> {
    use tonic_reflection::pb::v1alpha::ServerReflectionRequest;
    use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse;
    let mut client = ServerReflectionClient::new(sandbox.channel(kind));
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .expect("reflection v1alpha answers")
        .into_inner();
    let response = responses.next().await.expect("one response").expect("ok");
    match response.message_response {
        Some(MessageResponse::ListServicesResponse(list)) => {
            list.service.into_iter().map(|s| s.name).collect()
        }
        other => panic!("unexpected reflection response: {other:?}"),
    }
}

#[tokio::test]
async fn every_service_serves_health_and_reflection() {
    let sandbox = Sandbox::embedded(&[]).await;
    for kind in ServiceKind::ALL {
        assert_eq!(
            health(&sandbox, kind).await,
            1,
            "{} is SERVING",
            kind.name()
        );
        let services = reflected_services(&sandbox, kind).await;
        assert!(
            services.contains(&kind.grpc_name().to_owned()),
            "{services:?}"
        );
        assert!(
            services.contains(&"grpc.health.v1.Health".to_owned()),
            "{services:?}"
        );
        // Each version lists itself; beside that, the same services.
        let not_reflection = |names: Vec<String>| -> Vec<String> {
            let mut names: Vec<String> = names
                .into_iter()
                .filter(|n| !n.starts_with("grpc.reflection."))
                .collect();
            names.sort();
            names
        };
        let alpha = reflected_services_v1alpha(&sandbox, kind).await;
        assert!(
            alpha.contains(&"grpc.reflection.v1alpha.ServerReflection".to_owned()),
            "{alpha:?}"
        );
        assert_eq!(
            not_reflection(alpha),
            not_reflection(services),
            "{}: v1alpha lists what v1 does",
            kind.name()
        );
    }
    sandbox.shutdown().await.expect("clean shutdown");
}

fn assert_needs_caller(result: Result<impl std::fmt::Debug, tonic::Status>, what: &str) {
    let status = result.expect_err("no caller");
    assert_eq!(status.code(), Code::InvalidArgument, "{what}: {status:?}");
    assert!(
        status.message().contains("caller"),
        "{what}: {}",
        status.message()
    );
}

#[tokio::test]
async fn empty_tenants_get_honest_answers_and_every_request_needs_a_caller() {
    let sandbox = Sandbox::embedded(&[]).await;
    let clients = sandbox.clients();
    let mut retrieval = clients.retrieval.clone();
    let ask = v1::AskRequest {
        caller: caller(),
        text: "How much is Pro?".into(),
        ..Default::default()
    };
    // Nothing pushed yet: an answer (the empty ontology maps no question), never a refusal.
    let answer = retrieval
        .ask(ask.clone())
        .await
        .expect("an answer, with no ontology yet")
        .into_inner();
    assert_eq!(answer.status, v1::AnswerStatus::Abstained as i32);
    assert!(
        answer.abstain_reason.contains("predicate") && answer.passages.is_empty(),
        "{answer:?}"
    );
    assert_needs_caller(
        retrieval
            .ask(v1::AskRequest {
                caller: None,
                ..ask
            })
            .await,
        "Ask",
    );
    let lookup = v1::LookupRequest {
        caller: caller(),
        entity: "Pro".into(),
        predicate_path: vec!["price".into()],
        ..Default::default()
    };
    // A slot no ontology defines yet is named back.
    let status = retrieval
        .lookup(lookup)
        .await
        .expect_err("no such predicate yet");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status
            .message()
            .contains("\"price\" is not in the ontology"),
        "{}",
        status.message()
    );
    // A tenant without organisation data has an empty plate, with every dimension counted.
    let plate = retrieval
        .plate(v1::PlateRequest {
            caller: caller(),
            ..Default::default()
        })
        .await
        .expect("a plate")
        .into_inner();
    assert!(plate.items.is_empty());
    let dimensions: Vec<&str> = plate.dimensions.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(dimensions[0], "permission", "{dimensions:?}");
    assert_eq!(dimensions.len(), 7, "{dimensions:?}");
    assert_needs_caller(
        retrieval
            .plate(v1::PlateRequest {
                caller: None,
                ..Default::default()
            })
            .await,
        "Plate",
    );

    let mut firewall = clients.firewall.clone();
    let validate = v1::ValidateRequest {
        caller: caller(),
        input: Some(v1::validate_request::Input::Text("Pro costs 49.".into())),
        ..Default::default()
    };
    // Without an ontology the graph is read (the empty ontology) and no sentence is checkable:
    // it passes unchecked, as an unrecognised sentence does, and the coverage says so.
    let verdict = firewall
        .validate(validate.clone())
        .await
        .expect("a verdict")
        .into_inner();
    assert_eq!(verdict.overall, v1::Verdict::Pass as i32, "{verdict:?}");
    assert!(verdict.verdicts.is_empty(), "{verdict:?}");
    let coverage = verdict.coverage.expect("coverage of a text");
    assert_eq!(
        (
            coverage.sentences,
            coverage.checkable,
            coverage.unrecognised
        ),
        (1, 0, 1)
    );
    // A structured claim names a predicate no ontology defines yet: refused, naming it.
    let status = firewall
        .validate(v1::ValidateRequest {
            caller: caller(),
            input: Some(v1::validate_request::Input::Claims(v1::ClaimList {
                claims: vec![v1::Claim {
                    subject: "Pro".into(),
                    predicate: "price".into(),
                    object: "49".into(),
                    ..Default::default()
                }],
            })),
            ..Default::default()
        })
        .await
        .expect_err("no such predicate yet");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("\"price\""), "{status:?}");
    assert_needs_caller(
        firewall
            .validate(v1::ValidateRequest {
                caller: None,
                ..validate
            })
            .await,
        "Validate",
    );

    let mut telemetry = clients.telemetry.clone();
    // Signals are validated field by field (the intake itself is tested in signals.rs).
    let status = telemetry
        .report_signal(v1::Signal {
            caller: caller(),
            ..Default::default()
        })
        .await
        .expect_err("no type");
    assert_eq!(status.code(), Code::InvalidArgument);
    let status = telemetry
        .report_signals(tokio_stream::iter([v1::Signal::default()]))
        .await
        .expect_err("no caller");
    assert!(
        status.message().contains("signals[0].caller"),
        "{}",
        status.message()
    );
    let status = telemetry
        .push_event(v1::Event {
            caller: caller(),
            ..Default::default()
        })
        .await
        .expect_err("no kind");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains("kind"), "{}", status.message());
    let hr = v1::Event {
        caller: caller(),
        kind: Some(v1::event::Kind::Hr(v1::HrEvent::default())),
        ..Default::default()
    };
    let status = telemetry
        .push_event(hr)
        .await
        .expect_err("an HR event without a type");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains("hr.type"), "{}", status.message());
    assert_needs_caller(
        telemetry.push_event(v1::Event::default()).await,
        "PushEvent",
    );

    let mut analyst = clients.analyst.clone();
    let next = analyst
        .next_review(v1::NextReviewRequest {
            caller: caller(),
            ..Default::default()
        })
        .await
        .expect("next review")
        .into_inner();
    assert!(next.update.is_none(), "an empty queue has no next update");
    let status = analyst
        .decide(v1::DecideRequest {
            caller: caller(),
            update_id: "u-missing".into(),
            decision: v1::Decision::Approve as i32,
            ..Default::default()
        })
        .await
        .expect_err("no such update");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    let status = analyst
        .decide(v1::DecideRequest {
            caller: caller(),
            update_id: "u-missing".into(),
            ..Default::default()
        })
        .await
        .expect_err("no decision");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().contains("decision"),
        "{}",
        status.message()
    );
    assert_needs_caller(analyst.decide(v1::DecideRequest::default()).await, "Decide");
    // The one pattern is the gap the abstained Ask reported: its key words, one signal.
    let keys = || {
        let mut analyst = analyst.clone();
        async move {
            analyst
                .list_patterns(v1::ListPatternsRequest {
                    caller: caller(),
                    ..Default::default()
                })
                .await
                .expect("patterns")
                .into_inner()
                .patterns
                .into_iter()
                .map(|p| (p.id, p.signal_count))
                .collect::<Vec<_>>()
        }
    };
    let one = vec![("missing_entity:much pro".to_owned(), 1)];
    assert!(
        wait_until(Duration::from_secs(10), || async { keys().await == one }).await,
        "{:?}",
        keys().await
    );
    assert_needs_caller(
        analyst
            .list_patterns(v1::ListPatternsRequest::default())
            .await,
        "ListPatterns",
    );

    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn shutdown_stops_every_service() {
    let sandbox = Sandbox::embedded(&[]).await;
    let addrs: Vec<_> = ServiceKind::ALL.iter().map(|k| sandbox.addr(*k)).collect();
    sandbox.shutdown().await.expect("clean shutdown");
    for addr in addrs {
        let refused = tokio::net::TcpStream::connect(addr).await;
        assert!(
            refused.is_err(),
            "{addr} still accepts connections after shutdown"
        );
    }
}

#[tokio::test]
async fn the_analyst_records_signals_and_dead_letters_bad_ones() {
    let sandbox = Sandbox::embedded(&[]).await;
    let queue = sandbox.ctx.queue.clone();
    let store = sandbox.ctx.store.clone();
    queue
        .publish(topics::SIGNALS, Message::with_id("bad-1", "not json"))
        .await
        .expect("publish");
    queue
        .publish(
            topics::SIGNALS,
            Message::with_id("ok-1", r#"{"type":"doc.upsert"}"#),
        )
        .await
        .expect("publish");
    let recorded = wait_until(Duration::from_secs(10), || {
        let store = store.clone();
        async move {
            store
                .inbox(topics::SIGNALS, 10)
                .await
                .map(|rows| rows.len() == 1)
                .unwrap_or(false)
        }
    })
    .await;
    assert!(recorded, "the good message after a bad one is recorded");
    let rows = store.inbox(topics::SIGNALS, 10).await.expect("read");
    assert_eq!(rows[0].message_id, "ok-1");
    let mut dead = queue
        .consume_dead_letters(topics::SIGNALS)
        .await
        .expect("dlq");
    let letter = tokio::time::timeout(Duration::from_secs(10), dead.next())
        .await
        .expect("a dead letter")
        .expect("open")
        .expect("delivery");
    assert_eq!(letter.message.id, "bad-1");
    let reason = letter
        .message
        .headers
        .get(REASON_HEADER)
        .cloned()
        .unwrap_or_default();
    assert!(reason.contains("not JSON"), "{reason}");
    letter.ack().await.expect("ack");
    drop(dead);
    sandbox.shutdown().await.expect("clean shutdown");
}
