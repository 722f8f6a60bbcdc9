//! No signal lost: `ontoloop up` on RabbitMQ is killed (SIGKILL, no drain) in the middle of
//! 10,000 signals; a new analyst starts on the same store and queue and processes the rest.
//! Every signal is recorded exactly once, and the new analyst runs the effect only of those the
//! killed one had not recorded: the redelivered ones are recognised, not applied twice.

use std::process::Command;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use ontoloop_core::topics;
use ontoloop_queue::{AmqpQueue, Message, Queue};
use ontoloop_testkit::process::{Up, ports_env};
use ontoloop_testkit::servers::{amqp_namespace, amqp_url};

const BIN: &str = env!("CARGO_BIN_EXE_ontoloop");
const SIGNALS: u64 = 10_000;

fn settings(store: &str, namespace: &str) -> ontoloop_settings::Settings {
    ontoloop_settings::Loader::new()
        .env_vars([])
        .set("store.url", store)
        .set("queue.url", amqp_url())
        .set("queue.namespace", namespace)
        .set("queue.prefetch", "256")
        .load()
        .expect("settings")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_consumer_mid_stream_loses_and_repeats_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store_url = format!("sqlite://{}/kill.db?mode=rwc", dir.path().display());
    let namespace = amqp_namespace("kill");
    let settings = settings(&store_url, &namespace);

    // The first analyst: a whole `ontoloop up` process, to be killed without warning.
    let mut first = Command::new(BIN);
    first
        .arg("up")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ONTOLOOP__STORE__URL", &store_url)
        .env("ONTOLOOP__QUEUE__URL", amqp_url())
        .env("ONTOLOOP__QUEUE__NAMESPACE", &namespace)
        .env("ONTOLOOP__QUEUE__PREFETCH", "256")
        .envs(ports_env());
    // Kept whole until the end: its stdout is read for as long as it runs.
    let mut first = Up::start(first);

    let store = ontoloop_store::Store::connect(&settings.store)
        .await
        .expect("open the store");
    let publisher = AmqpQueue::connect(&amqp_url(), &settings.queue)
        .await
        .expect("RabbitMQ answers");
    let publishing = {
        let publisher = publisher.clone();
        tokio::spawn(async move {
            futures::stream::iter(0..SIGNALS)
                .map(|i| {
                    let publisher = publisher.clone();
                    async move {
                        let body = serde_json::json!({
                            "tenant": "kill",
                            "type": "query_pattern",
                            "query": format!("who runs project {}?", i % 100),
                            "entity": format!("project {}", i % 100),
                            "agent_id": format!("agent-{}", i % 7),
                            "severity": "low",
                        });
                        publisher
                            .publish(
                                topics::SIGNALS,
                                Message::with_id(format!("kill-{i}"), body.to_string()),
                            )
                            .await
                    }
                })
                .buffer_unordered(256)
                .fold(
                    0u64,
                    |failed, r| async move { failed + u64::from(r.is_err()) },
                )
                .await
        })
    };

    // Kill the first analyst once it has recorded some, long before all.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let recorded = store.inbox_count(topics::SIGNALS).await.expect("count");
        if recorded >= 500 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the first analyst recorded nothing"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.child.kill().expect("SIGKILL the first analyst");
    first.child.wait().expect("reap it");
    let at_kill = store.inbox_count(topics::SIGNALS).await.expect("count");
    assert!(
        at_kill < SIGNALS,
        "killed mid-stream: {at_kill} of {SIGNALS} recorded"
    );
    assert_eq!(
        publishing.await.expect("publisher"),
        0,
        "every publish confirmed"
    );

    // A new analyst on the same store and queue takes over what the dead one held.
    let metrics = ontoloop_observability::metrics::global();
    let effects = || {
        metrics.value(
            "ontoloop_analyst_signals_total",
            &[("type", "query_pattern"), ("severity", "low")],
        )
    };
    let before = effects();
    let second = ontoloop::up::Local::start(settings.clone())
        .await
        .expect("second analyst starts");
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut recorded = at_kill;
    while recorded < SIGNALS && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        recorded = store.inbox_count(topics::SIGNALS).await.expect("count");
    }
    // Give a late redelivery the chance to show a second effect.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let recorded = store.inbox_count(topics::SIGNALS).await.expect("count");
    let ran = (effects() - before) as u64;
    second.stop().await.expect("clean stop");
    for queue in [topics::SIGNALS, topics::EVENTS] {
        let _ = publisher.delete(queue).await;
    }
    println!(
        "recorded {at_kill} before the kill; the new analyst recorded {ran} more; {recorded} in all"
    );
    assert_eq!(recorded, SIGNALS, "every signal recorded exactly once");
    assert_eq!(
        ran,
        SIGNALS - at_kill,
        "the new analyst ran the effect of exactly the signals not recorded before the kill"
    );
}
