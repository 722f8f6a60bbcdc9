//! The failure-signal intake: validation naming the field, deduplication by idempotency key,
//! severity from frequency and affected agents, unary and streaming, published for the analyst.

use std::time::Duration;

use ontoloop_core::topics;
use ontoloop_proto::v1;
use ontoloop_proto::v1::telemetry_service_client::TelemetryServiceClient;
use ontoloop_tests::{Sandbox, caller, wait_until};
use tonic::Code;
use tonic::transport::Channel;

fn signal(agent: &str, key: &str, entity: &str) -> v1::Signal {
    v1::Signal {
        caller: caller("acme", agent),
        r#type: v1::SignalType::EntityMissing as i32,
        query: format!("What is {entity}?"),
        entity: entity.into(),
        agent_id: agent.into(),
        idempotency_key: key.into(),
        ..Default::default()
    }
}

async fn embedded() -> (Sandbox, TelemetryServiceClient<Channel>) {
    let sandbox = Sandbox::embedded(&[]).await;
    let telemetry = sandbox.clients().telemetry;
    (sandbox, telemetry)
}

async fn severity(client: &mut TelemetryServiceClient<Channel>, s: v1::Signal) -> (bool, i32) {
    let ack = client
        .report_signal(s)
        .await
        .expect("accepted")
        .into_inner();
    (ack.duplicate, ack.severity)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn severity_grows_with_frequency_and_spread_and_retries_count_once() {
    let (sandbox, mut client) = embedded().await;
    assert_eq!(
        severity(&mut client, signal("a1", "k1", "Project Kite")).await,
        (false, v1::Severity::Low as i32)
    );
    assert_eq!(
        severity(&mut client, signal("a1", "k1", "Project Kite")).await,
        (true, v1::Severity::Low as i32),
        "a retry is a duplicate"
    );
    severity(&mut client, signal("a1", "k2", "Project Kite")).await;
    assert_eq!(
        severity(&mut client, signal("a1", "k3", "project kite"))
            .await
            .1,
        v1::Severity::Medium as i32,
        "3 occurrences"
    );
    for (i, agent) in ["a2", "a3", "a4"].iter().enumerate() {
        severity(
            &mut client,
            signal(agent, &format!("k{}", 10 + i), "Project Kite"),
        )
        .await;
    }
    // 6 occurrences from 4 agents.
    assert_eq!(
        severity(&mut client, signal("a4", "k20", "Project Kite"))
            .await
            .1,
        v1::Severity::High as i32
    );
    for i in 0..5 {
        severity(
            &mut client,
            signal(&format!("b{i}"), &format!("k3{i}"), "Project Kite"),
        )
        .await;
    }
    // 12 occurrences from 9 agents.
    assert_eq!(
        severity(&mut client, signal("b9", "k40", "Project Kite"))
            .await
            .1,
        v1::Severity::Critical as i32
    );
    // Another subject starts low.
    assert_eq!(
        severity(&mut client, signal("a1", "k50", "Project Wren"))
            .await
            .1,
        v1::Severity::Low as i32
    );

    // Streaming: accepted and duplicates are counted.
    let batch = vec![
        signal("c1", "s1", "Project Owl"),
        signal("c2", "s2", "Project Owl"),
        signal("c1", "s1", "Project Owl"),
    ];
    let ack = client
        .report_signals(tokio_stream::iter(batch))
        .await
        .expect("stream")
        .into_inner();
    assert_eq!((ack.accepted, ack.duplicates), (2, 1));

    // Every accepted signal reaches the analyst once.
    let store = sandbox.ctx.store.clone();
    let arrived = wait_until(Duration::from_secs(10), || {
        let store = store.clone();
        async move {
            store
                .inbox(topics::SIGNALS, 1000)
                .await
                .is_ok_and(|rows| rows.len() == 16)
        }
    })
    .await;
    assert!(arrived, "16 distinct signals recorded by the analyst");

    // The analyst groups them into patterns, across spellings.
    let patterns = sandbox.clients().patterns("acme", "reviewer").await;
    let summary: Vec<(&str, &str, u64, u64, i32)> = patterns
        .iter()
        .map(|p| {
            (
                p.kind.as_str(),
                p.key.as_str(),
                p.signal_count,
                p.agent_count,
                p.severity,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "missing_entity",
                "project kite",
                13,
                10,
                v1::Severity::Critical as i32
            ),
            (
                "missing_entity",
                "project owl",
                2,
                2,
                v1::Severity::Low as i32
            ),
            (
                "missing_entity",
                "project wren",
                1,
                1,
                v1::Severity::Low as i32
            ),
        ]
    );
    sandbox.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_signals_name_the_field() {
    let (sandbox, mut client) = embedded().await;
    let cases: Vec<(v1::Signal, &str)> = vec![
        (
            v1::Signal {
                r#type: 0,
                ..signal("a", "k", "X")
            },
            "type",
        ),
        (
            v1::Signal {
                r#type: 99,
                ..signal("a", "k", "X")
            },
            "type",
        ),
        (
            v1::Signal {
                query: " ".into(),
                ..signal("a", "k", "X")
            },
            "query",
        ),
        (
            v1::Signal {
                agent_id: String::new(),
                ..signal("a", "k", "X")
            },
            "agent_id",
        ),
        (
            v1::Signal {
                idempotency_key: String::new(),
                ..signal("a", "k", "X")
            },
            "idempotency_key",
        ),
        (
            v1::Signal {
                entity: String::new(),
                ..signal("a", "k", "X")
            },
            "entity|relationship|sector",
        ),
        (
            v1::Signal {
                caller: None,
                ..signal("a", "k", "X")
            },
            "caller",
        ),
    ];
    for (bad, field) in cases {
        let err = client.report_signal(bad).await.expect_err("invalid");
        assert_eq!(err.code(), Code::InvalidArgument, "{field}");
        assert!(err.message().contains(field), "{field}: {}", err.message());
    }
    let err = client
        .report_signals(tokio_stream::iter(vec![
            signal("a", "k1", "X"),
            v1::Signal {
                query: String::new(),
                ..signal("a", "k2", "X")
            },
        ]))
        .await
        .expect_err("second is invalid");
    assert!(
        err.message().contains("signals[1].query"),
        "{}",
        err.message()
    );
    sandbox.shutdown().await.expect("clean shutdown");
}
