//! Consumers on the in-process queue (the real implementation the embedded default runs): a
//! message whose handling keeps failing for a passing reason — or whose handler panics — is tried
//! `max_attempts` times, `retry_delay` apart, then dead-lettered with its last reason; the
//! messages around it are handled once; the consumer's health part is up while it runs; a body
//! over `max_body_bytes` is dead-lettered at once, its handler never called.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ontoloop_queue::{MemoryQueue, Message, Queue, REASON_HEADER, SharedQueue};
use ontoloop_runtime::{
    CancellationToken, ConsumerOptions, Handled, Health, run_batch_consumer, run_consumer,
};

fn options(health: Health) -> ConsumerOptions {
    ConsumerOptions {
        max_attempts: 3,
        retry_delay: Duration::from_millis(20),
        restart_initial: Duration::from_millis(10),
        restart_max: Duration::from_millis(50),
        health,
        max_body_bytes: 64,
    }
}

async fn dead_letter(queue: &MemoryQueue, name: &str) -> (String, String) {
    let mut dead = queue.consume_dead_letters(name).await.expect("dlq");
    let letter = tokio::time::timeout(Duration::from_secs(5), dead.next())
        .await
        .expect("a dead letter")
        .expect("open")
        .expect("delivery");
    let reason = letter
        .message
        .headers
        .get(REASON_HEADER)
        .cloned()
        .unwrap_or_default();
    let id = letter.message.id.clone();
    letter.ack().await.expect("ack");
    (id, reason)
}

#[tokio::test]
async fn a_message_that_keeps_failing_is_dead_lettered_after_max_attempts() {
    let memory = MemoryQueue::new();
    let queue: SharedQueue = Arc::new(memory.clone());
    for id in ["before", "poison", "panics", "after"] {
        queue
            .publish("work", Message::with_id(id, id))
            .await
            .expect("publish");
    }
    let health = Health::new();
    let cancel = CancellationToken::new();
    let calls: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let started = Instant::now();
    let consumer = {
        let (queue, cancel, calls, health) =
            (queue.clone(), cancel.clone(), calls.clone(), health.clone());
        tokio::spawn(async move {
            run_consumer(queue, "work", cancel, options(health), move |message, _| {
                let id = message.id.clone();
                calls.lock().expect("lock").push(id.clone());
                async move {
                    match id.as_str() {
                        "poison" => Handled::Retry("the store is away".to_owned()),
                        "panics" => panic!("a handler bug"),
                        _ => Handled::Done,
                    }
                }
            })
            .await
        })
    };
    let mut letters = vec![
        dead_letter(&memory, "work").await,
        dead_letter(&memory, "work").await,
    ];
    letters.sort();
    let took = started.elapsed();
    assert!(health.healthy(), "the consumer runs: {:?}", health.down());
    cancel.cancel();
    let settled = consumer.await.expect("join").expect("consumer");
    let calls = calls.lock().expect("lock").clone();
    let count = |id: &str| calls.iter().filter(|c| *c == id).count();
    assert_eq!(
        letters,
        vec![
            (
                "panics".to_owned(),
                "failed 3 times, last: the handler panicked".to_owned()
            ),
            (
                "poison".to_owned(),
                "failed 3 times, last: the store is away".to_owned()
            ),
        ]
    );
    assert_eq!(count("poison"), 3, "{calls:?}");
    assert_eq!(count("panics"), 3, "{calls:?}");
    assert_eq!(count("before"), 1);
    assert_eq!(count("after"), 1);
    // Two retries each, 20 ms apart.
    assert!(took >= Duration::from_millis(40), "{took:?}");
    // 2 acknowledged, 2 dead-lettered, 4 requeued.
    assert_eq!(settled, 8);
}

#[tokio::test]
async fn a_consumer_reports_itself_running_and_the_board_each_part() {
    let health = Health::new();
    // Down until the consumer has opened its queue and says it runs.
    health.set("idle", false);
    let queue: SharedQueue = Arc::new(MemoryQueue::new());
    let cancel = CancellationToken::new();
    let consumer = {
        let (queue, cancel, health) = (queue.clone(), cancel.clone(), health.clone());
        tokio::spawn(async move {
            run_consumer(queue, "idle", cancel, options(health), |_, _| async {
                Handled::Done
            })
            .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !health.healthy() {
        assert!(Instant::now() < deadline, "down: {:?}", health.down());
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    health.set("other", false);
    assert_eq!(health.down(), vec!["other".to_owned()]);
    health.set("other", true);
    assert!(health.healthy());
    cancel.cancel();
    assert_eq!(consumer.await.expect("join").expect("consumer"), 0);
}

#[tokio::test]
async fn a_body_over_the_cap_is_dead_lettered_unread_by_either_consumer() {
    for batched in [false, true] {
        let memory = MemoryQueue::new();
        let queue: SharedQueue = Arc::new(memory.clone());
        let at_cap = "x".repeat(64);
        let over = "x".repeat(65);
        for (id, body) in [("at-cap", &at_cap), ("over", &over)] {
            queue
                .publish("work", Message::with_id(id, body.as_str()))
                .await
                .expect("publish");
        }
        let cancel = CancellationToken::new();
        let calls: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
        let consumer = {
            let (queue, cancel, calls) = (queue.clone(), cancel.clone(), calls.clone());
            tokio::spawn(async move {
                let health = Health::new();
                if batched {
                    run_batch_consumer(queue, "work", cancel, 16, options(health), move |batch| {
                        let ids = batch.iter().map(|m| m.id.clone());
                        calls.lock().expect("lock").extend(ids);
                        let done = vec![Handled::Done; batch.len()];
                        async move { done }
                    })
                    .await
                } else {
                    run_consumer(queue, "work", cancel, options(health), move |message, _| {
                        calls.lock().expect("lock").push(message.id.clone());
                        async { Handled::Done }
                    })
                    .await
                }
            })
        };
        let (id, reason) = dead_letter(&memory, "work").await;
        assert_eq!(id, "over");
        assert_eq!(
            reason,
            "the body is 65 bytes, over queue.max_body_bytes (64)"
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        while calls.lock().expect("lock").is_empty() {
            assert!(Instant::now() < deadline, "the body at the cap was handled");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cancel.cancel();
        assert_eq!(consumer.await.expect("join").expect("consumer"), 2);
        assert_eq!(*calls.lock().expect("lock"), vec!["at-cap".to_owned()]);
    }
}
