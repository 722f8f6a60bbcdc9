//! The queue contract, run against both implementations: the in-process queue and RabbitMQ at
//! `ONTOLOOP_TEST_AMQP_URL` (default: the machine's broker on 127.0.0.1:5672). RabbitMQ tests
//! fail, never skip, when the broker does not answer: `.ci/run` starts it.

use std::sync::Arc;
use std::time::Duration;

use ontoloop_queue::{
    AmqpQueue, Delivery, MemoryQueue, Message, REASON_HEADER, SOURCE_QUEUE_HEADER, SharedQueue,
};
use ontoloop_settings::Loader;

const WAIT: Duration = Duration::from_secs(10);
const QUIET: Duration = Duration::from_millis(300);

fn amqp_url() -> String {
    std::env::var("ONTOLOOP_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}

async fn memory() -> SharedQueue {
    Arc::new(MemoryQueue::new())
}

async fn amqp() -> SharedQueue {
    let settings = Loader::new()
        .env_vars([])
        .set("queue.connect_attempts", "3")
        .load()
        .expect("default settings");
    let queue = AmqpQueue::connect(&amqp_url(), &settings.queue)
        .await
        .expect("RabbitMQ answers on ONTOLOOP_TEST_AMQP_URL");
    Arc::new(queue)
}

fn unique(name: &str) -> String {
    format!("test.{name}.{:016x}", rand_suffix())
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

async fn next(consumer: &mut Box<dyn ontoloop_queue::Consumer>) -> Delivery {
    tokio::time::timeout(WAIT, consumer.next())
        .await
        .expect("a delivery within the wait")
        .expect("consumer open")
        .expect("delivery, not error")
}

async fn nothing_more(consumer: &mut Box<dyn ontoloop_queue::Consumer>) {
    if let Ok(Some(Ok(delivery))) = tokio::time::timeout(QUIET, consumer.next()).await {
        panic!("unexpected extra delivery: {:?}", delivery.message);
    }
}

async fn publish_confirm_consume_ack(queue: SharedQueue) {
    let name = unique("ack");
    for n in 0..3 {
        let message = Message::with_id(format!("m{n}"), format!("{{\"n\":{n}}}"))
            .header("k", format!("v{n}"));
        queue
            .publish(&name, message)
            .await
            .expect("confirmed publish");
    }
    assert_eq!(queue.ready_count(&name).await.expect("count"), 3);
    let mut consumer = queue.consume(&name).await.expect("consume");
    for n in 0..3 {
        let delivery = next(&mut consumer).await;
        assert_eq!(delivery.message.id, format!("m{n}"));
        assert_eq!(delivery.message.body, format!("{{\"n\":{n}}}").into_bytes());
        assert_eq!(delivery.message.headers.get("k"), Some(&format!("v{n}")));
        assert!(!delivery.redelivered);
        delivery.ack().await.expect("ack");
    }
    drop(consumer);
    let mut again = queue.consume(&name).await.expect("consume again");
    nothing_more(&mut again).await;
    drop(again);
    assert_eq!(queue.ready_count(&name).await.expect("count"), 0);
    queue.delete(&name).await.expect("delete");
}

async fn dead_letter_keeps_the_reason(queue: SharedQueue) {
    let name = unique("dlq");
    queue
        .publish(
            &name,
            Message::with_id("bad", "not json").header("origin", "test"),
        )
        .await
        .expect("publish");
    let mut consumer = queue.consume(&name).await.expect("consume");
    let delivery = next(&mut consumer).await;
    delivery
        .dead_letter("body is not JSON")
        .await
        .expect("dead-letter");
    nothing_more(&mut consumer).await;
    let mut dead = queue
        .consume_dead_letters(&name)
        .await
        .expect("consume dlq");
    let letter = next(&mut dead).await;
    assert_eq!(letter.message.id, "bad");
    assert_eq!(letter.message.body, b"not json");
    assert_eq!(
        letter
            .message
            .headers
            .get(REASON_HEADER)
            .map(String::as_str),
        Some("body is not JSON")
    );
    assert_eq!(letter.message.headers.get(SOURCE_QUEUE_HEADER), Some(&name));
    assert_eq!(
        letter.message.headers.get("origin").map(String::as_str),
        Some("test")
    );
    letter.ack().await.expect("ack dead letter");
    drop(dead);
    drop(consumer);
    queue.delete(&name).await.expect("delete");
}

async fn a_dead_consumer_redelivers_to_the_next(queue: SharedQueue) {
    let name = unique("crash");
    for n in 0..20 {
        queue
            .publish(&name, Message::with_id(format!("m{n:02}"), "{}"))
            .await
            .expect("publish");
    }
    let mut first = queue.consume(&name).await.expect("consume");
    let mut acked = Vec::new();
    for _ in 0..5 {
        let delivery = next(&mut first).await;
        acked.push(delivery.message.id.clone());
        delivery.ack().await.expect("ack");
    }
    // The sixth is taken and never acknowledged: the consumer dies holding it.
    let held = next(&mut first).await;
    let held_id = held.message.id.clone();
    drop(held);
    drop(first);
    let mut second = queue.consume(&name).await.expect("consume again");
    let mut seen = Vec::new();
    let mut redelivered = Vec::new();
    while seen.len() < 15 {
        let delivery = next(&mut second).await;
        if delivery.redelivered {
            redelivered.push(delivery.message.id.clone());
        }
        seen.push(delivery.message.id.clone());
        delivery.ack().await.expect("ack");
    }
    nothing_more(&mut second).await;
    assert!(
        redelivered.contains(&held_id),
        "{held_id} must come back marked redelivered: {redelivered:?}"
    );
    let mut all: Vec<_> = acked.into_iter().chain(seen).collect();
    all.sort();
    let expected: Vec<_> = (0..20).map(|n| format!("m{n:02}")).collect();
    assert_eq!(
        all, expected,
        "every message exactly once after acknowledgement"
    );
    drop(second);
    queue.delete(&name).await.expect("delete");
}

async fn requeue_redelivers(queue: SharedQueue) {
    let name = unique("requeue");
    queue
        .publish(&name, Message::with_id("r", "{}"))
        .await
        .expect("publish");
    let mut consumer = queue.consume(&name).await.expect("consume");
    let delivery = next(&mut consumer).await;
    assert!(!delivery.redelivered);
    delivery.requeue().await.expect("requeue");
    let again = next(&mut consumer).await;
    assert_eq!(again.message.id, "r");
    assert!(again.redelivered);
    again.ack().await.expect("ack");
    drop(consumer);
    queue.delete(&name).await.expect("delete");
}

async fn a_batch_acknowledgement_covers_exactly_the_batch(queue: SharedQueue) {
    let name = unique("batch");
    for n in 0..10 {
        queue
            .publish(&name, Message::with_id(format!("b{n}"), "{}"))
            .await
            .expect("publish");
    }
    let mut first = queue.consume(&name).await.expect("consume");
    let mut batch = Vec::new();
    for _ in 0..6 {
        batch.push(next(&mut first).await);
    }
    // A failure inside the batch is settled on its own first, as the batch consumer does.
    let failed = batch.remove(2);
    failed.requeue().await.expect("requeue");
    Delivery::ack_batch(batch).await.expect("batch ack");
    drop(first);
    // What comes back is the requeued one and the four never taken, nothing acknowledged.
    let mut second = queue.consume(&name).await.expect("consume again");
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let delivery = next(&mut second).await;
        seen.push(delivery.message.id.clone());
        delivery.ack().await.expect("ack");
    }
    nothing_more(&mut second).await;
    seen.sort();
    assert_eq!(seen, ["b2", "b6", "b7", "b8", "b9"]);
    drop(second);
    queue.delete(&name).await.expect("delete");
}

macro_rules! contract {
    ($($case:ident),* $(,)?) => {
        mod memory_queue {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(super::memory().await).await;
                }
            )*
        }
        mod rabbitmq {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(super::amqp().await).await;
                }
            )*
        }
    };
}

contract!(
    publish_confirm_consume_ack,
    dead_letter_keeps_the_reason,
    a_dead_consumer_redelivers_to_the_next,
    requeue_redelivers,
    a_batch_acknowledgement_covers_exactly_the_batch,
);

#[tokio::test]
async fn an_unreachable_broker_is_reported_after_backoff() {
    let settings = Loader::new()
        .env_vars([])
        .set("queue.connect_attempts", "3")
        .set("queue.backoff_initial_ms", "10")
        .set("queue.backoff_max_ms", "20")
        .load()
        .expect("settings");
    // Port 1 on loopback: nothing listens there.
    let err = AmqpQueue::connect("amqp://guest:guest@127.0.0.1:1/%2f", &settings.queue)
        .await
        .expect_err("nothing listens on port 1");
    let text = err.to_string();
    assert!(text.contains("after 3 attempts"), "{text}");
    assert!(
        !text.contains("guest:guest"),
        "the password must not leak: {text}"
    );
}

/// A listener that accepts the socket and never speaks AMQP (a half-dead broker, a proxy whose
/// far side hangs): each try fails after `queue.connect_timeout_ms` instead of waiting forever,
/// and the error says which bound it hit.
#[tokio::test]
async fn a_silent_broker_is_a_failed_try_not_a_hang() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            sockets.push(socket);
        }
    });
    let settings = Loader::new()
        .env_vars([])
        .set("queue.connect_attempts", "2")
        .set("queue.backoff_initial_ms", "10")
        .set("queue.backoff_max_ms", "20")
        .set("queue.connect_timeout_ms", "300")
        .load()
        .expect("settings");
    let url = format!("amqp://guest:guest@127.0.0.1:{port}/%2f");
    let err = tokio::time::timeout(WAIT, AmqpQueue::connect(&url, &settings.queue))
        .await
        .expect("the connect gives up instead of hanging")
        .expect_err("nothing answers");
    held.abort();
    let text = err.to_string();
    assert!(text.contains("after 2 attempts"), "{text}");
    assert!(text.contains("queue.connect_timeout_ms"), "{text}");
}
