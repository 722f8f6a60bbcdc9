//! Queue consumers that drain on cancellation, cannot silently die and never retry forever.
//!
//! A consumer whose stream breaks (the broker's channel or connection gone) or cannot be opened
//! is opened again with backoff (`queue.backoff_initial_ms` doubling to `queue.backoff_max_ms`);
//! meanwhile its part of the service's [`Health`] is down, so the service's gRPC health check
//! answers NOT_SERVING until the consumer runs again. A message whose handling fails for a
//! passing reason is put back after `queue.retry_delay_ms`, and after `queue.max_attempts`
//! deliveries it is dead-lettered with the last reason; a handler that panics counts as such a
//! failure. Invalid messages are dead-lettered at once by their handlers ([`Handled::Reject`]),
//! and a body over `queue.max_body_bytes` before any handler reads it.
//! Each delivery (each batch) is handled in a span that continues the trace its publisher put in
//! the message's headers.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use tracing::Instrument as _;

use ontoloop_queue::{Delivery, QueueError, SharedQueue};
use tokio_util::sync::CancellationToken;

/// Which parts of a service run (its consumers, by queue): the service is healthy only when all
/// of them do. Cheap to clone; clones share the board.
#[derive(Clone, Default)]
pub struct Health {
    board: Arc<tokio::sync::watch::Sender<BTreeMap<String, bool>>>,
}

impl Health {
    /// A board with no parts (healthy).
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks `part` running or not.
    pub fn set(&self, part: &str, running: bool) {
        self.board
            .send_if_modified(|board| board.insert(part.to_owned(), running) != Some(running));
    }

    /// Whether every part runs.
    pub fn healthy(&self) -> bool {
        self.board.borrow().values().all(|running| *running)
    }

    /// Parts that do not run, by name.
    pub fn down(&self) -> Vec<String> {
        self.board
            .borrow()
            .iter()
            .filter(|(_, running)| !**running)
            .map(|(part, _)| part.clone())
            .collect()
    }

    /// Waits until the board changes.
    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<BTreeMap<String, bool>> {
        self.board.subscribe()
    }
}

/// How a consumer retries messages and restarts itself.
#[derive(Clone)]
pub struct ConsumerOptions {
    /// Deliveries of one message before it is dead-lettered with its last reason.
    pub max_attempts: u32,
    /// Wait before a message that failed for a passing reason is put back.
    pub retry_delay: Duration,
    /// First wait before a broken consumer is opened again; doubles up to `restart_max`.
    pub restart_initial: Duration,
    /// Longest wait between restarts.
    pub restart_max: Duration,
    /// Where the consumer reports whether it runs.
    pub health: Health,
    /// A delivery whose body is larger is dead-lettered at once, never handed to the handler.
    pub max_body_bytes: usize,
}

impl ConsumerOptions {
    /// The `[queue]` settings' retry and backoff, reporting to `health`.
    pub fn from_settings(settings: &ontoloop_settings::QueueSettings, health: Health) -> Self {
        Self {
            max_attempts: settings.max_attempts.max(1),
            retry_delay: Duration::from_millis(settings.retry_delay_ms),
            restart_initial: Duration::from_millis(settings.backoff_initial_ms.max(1)),
            restart_max: Duration::from_millis(settings.backoff_max_ms.max(1)),
            health,
            max_body_bytes: settings.max_body_bytes,
        }
    }
}

/// What a handler decided about one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Processed (or already processed before): acknowledge.
    Done,
    /// Can never be processed: dead-letter with this reason.
    Reject(String),
    /// A passing failure: put back for another try (after `queue.retry_delay_ms`, and counted
    /// towards `queue.max_attempts`).
    Retry(String),
    /// Another writer got there first (a concurrent commit): put back at once for another try,
    /// not counted as a failure.
    Contended(String),
}

/// Consumes `queue` until `cancel` fires. A delivery being handled when cancellation comes is
/// finished and settled; deliveries not yet handled stay unacknowledged and go back to the queue
/// when the consumer is dropped, so nothing is lost. A broken consumer is opened again with
/// backoff, failures are retried and dead-lettered as `options` say (see the module header).
/// Returns how many deliveries were settled.
pub async fn run_consumer<F, Fut>(
    queue: SharedQueue,
    name: &str,
    cancel: CancellationToken,
    options: ConsumerOptions,
    mut handler: F,
) -> Result<u64, QueueError>
where
    F: FnMut(&ontoloop_queue::Message, bool) -> Fut + Send,
    Fut: Future<Output = Handled> + Send,
{
    let mut settled = 0u64;
    let mut attempts = Attempts::default();
    let mut restarts = Restarts::new(&options);
    while let Some(mut consumer) = restarts.open(&queue, name, &cancel).await {
        loop {
            let delivery = match next_delivery(consumer.as_mut(), name, &cancel).await {
                Next::Delivery(delivery) => delivery,
                Next::Cancelled => {
                    tracing::info!(queue = name, settled, "consumer drained");
                    return Ok(settled);
                }
                Next::Broken(reason) => {
                    restarts.broken(name, &reason);
                    break;
                }
            };
            observe_lag(name, &delivery.message);
            let span = consume_span(name, &delivery.message);
            let handled = match oversized(&delivery.message, options.max_body_bytes) {
                Some(refused) => refused,
                None => AssertUnwindSafe(handler(&delivery.message, delivery.redelivered))
                    .catch_unwind()
                    .instrument(span)
                    .await
                    .unwrap_or_else(|_| Handled::Retry("the handler panicked".to_owned())),
            };
            let outcome = attempts.judge(&delivery.message.id, handled, options.max_attempts);
            if matches!(outcome, Handled::Retry(_)) {
                pause(options.retry_delay, &cancel).await;
            }
            if settle(name, delivery, &outcome).await {
                settled += 1;
            }
        }
    }
    tracing::info!(queue = name, settled, "consumer drained");
    Ok(settled)
}

/// The span a message of `queue` is handled in: a child of the trace its headers carry (the call
/// that published it), so one trace runs from that call across the queue to the message's
/// effect. A batch handler that handles some messages alone gives each one its own.
pub fn consume_span(queue: &str, message: &ontoloop_queue::Message) -> tracing::Span {
    let span = tracing::info_span!(
        "consume",
        otel.kind = "consumer",
        messaging.destination.name = queue,
        messaging.message.id = %message.id,
        trace_id = tracing::field::Empty,
    );
    ontoloop_observability::trace::follow(&span, &message.headers);
    span
}

/// Consumes `queue` in batches until `cancel` fires: waits for one delivery, then takes whatever
/// else is already delivered, up to `max_batch`, and hands the messages to `handler` together
/// (so it can record them in one transaction). The handler returns one outcome per message, in
/// order; each delivery is settled as [`run_consumer`] settles it. A batch in hand when
/// cancellation comes is finished and settled.
pub async fn run_batch_consumer<F, Fut>(
    queue: SharedQueue,
    name: &str,
    cancel: CancellationToken,
    max_batch: usize,
    options: ConsumerOptions,
    mut handler: F,
) -> Result<u64, QueueError>
where
    F: FnMut(Vec<ontoloop_queue::Message>) -> Fut + Send,
    Fut: Future<Output = Vec<Handled>> + Send,
{
    let mut settled = 0u64;
    let max_batch = max_batch.max(1);
    let mut attempts = Attempts::default();
    let mut restarts = Restarts::new(&options);
    'open: while let Some(mut consumer) = restarts.open(&queue, name, &cancel).await {
        loop {
            let first = match next_delivery(consumer.as_mut(), name, &cancel).await {
                Next::Delivery(delivery) => delivery,
                Next::Cancelled => break 'open,
                Next::Broken(reason) => {
                    restarts.broken(name, &reason);
                    continue 'open;
                }
            };
            let mut batch = vec![first];
            while batch.len() < max_batch {
                match consumer.next().now_or_never() {
                    Some(Some(Ok(delivery))) => batch.push(delivery),
                    Some(Some(Err(err))) => {
                        tracing::warn!(queue = name, error = %err, "consumer error");
                        break;
                    }
                    Some(None) | None => break,
                }
            }
            for delivery in &batch {
                observe_lag(name, &delivery.message);
            }
            // Bodies over the cap are dead-lettered before the handler reads any of the batch.
            let (batch, refused): (Vec<_>, Vec<_>) = batch.into_iter().partition(|delivery| {
                oversized(&delivery.message, options.max_body_bytes).is_none()
            });
            // A refusal left unsettled must not be covered by the batch's cumulative ack below.
            let mut refusals_settled = true;
            for delivery in refused {
                let outcome =
                    oversized(&delivery.message, options.max_body_bytes).unwrap_or(Handled::Done);
                if settle(name, delivery, &outcome).await {
                    settled += 1;
                } else {
                    refusals_settled = false;
                }
            }
            if batch.is_empty() {
                continue;
            }
            let messages: Vec<_> = batch.iter().map(|d| d.message.clone()).collect();
            // One span for the batch: a child of its first message's trace, linked to the others.
            let span = tracing::info_span!(
                "consume_batch",
                otel.kind = "consumer",
                messaging.destination.name = name,
                messaging.batch.message_count = messages.len(),
                trace_id = tracing::field::Empty,
            );
            ontoloop_observability::trace::follow_many(&span, messages.iter().map(|m| &m.headers));
            let outcomes = AssertUnwindSafe(handler(messages))
                .catch_unwind()
                .instrument(span)
                .await
                .unwrap_or_default();
            let mut outcomes = outcomes.into_iter();
            // Failures are settled one by one first; then every success of the batch is
            // acknowledged at once (one cumulative acknowledgement on RabbitMQ).
            let mut done = Vec::with_capacity(batch.len());
            let mut failures_settled = refusals_settled;
            let mut delayed = false;
            for delivery in batch {
                // A handler that returned too few outcomes (or panicked) leaves the rest for
                // another try.
                let outcome = outcomes
                    .next()
                    .unwrap_or_else(|| Handled::Retry("handler gave no outcome".to_owned()));
                let outcome = attempts.judge(&delivery.message.id, outcome, options.max_attempts);
                if outcome == Handled::Done {
                    done.push(delivery);
                    continue;
                }
                if matches!(outcome, Handled::Retry(_)) && !delayed {
                    pause(options.retry_delay, &cancel).await;
                    delayed = true;
                }
                if settle(name, delivery, &outcome).await {
                    settled += 1;
                } else {
                    failures_settled = false;
                }
            }
            if !failures_settled {
                // A cumulative acknowledgement would also cover the delivery left unsettled.
                for delivery in done {
                    if settle(name, delivery, &Handled::Done).await {
                        settled += 1;
                    }
                }
                continue;
            }
            let acked = done.len() as u64;
            match Delivery::ack_batch(done).await {
                Ok(()) => settled += acked,
                // The broker redelivers what could not be acknowledged; handlers are idempotent.
                Err(err) => {
                    tracing::warn!(queue = name, error = %err, "batch acknowledgement failed")
                }
            }
        }
    }
    tracing::info!(queue = name, settled, "consumer drained");
    Ok(settled)
}

/// The refusal of a message whose body is over `max_body_bytes`, if it is.
fn oversized(message: &ontoloop_queue::Message, max_body_bytes: usize) -> Option<Handled> {
    (message.body.len() > max_body_bytes).then(|| {
        Handled::Reject(format!(
            "the body is {} bytes, over queue.max_body_bytes ({max_body_bytes})",
            message.body.len()
        ))
    })
}

/// What waiting for the next delivery ended in.
enum Next {
    Delivery(Delivery),
    Cancelled,
    /// The stream broke or ended; the consumer must be opened again.
    Broken(String),
}

/// The next delivery, or why there is none.
async fn next_delivery(
    consumer: &mut dyn ontoloop_queue::Consumer,
    name: &str,
    cancel: &CancellationToken,
) -> Next {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Next::Cancelled,
        next = consumer.next() => match next {
            Some(Ok(delivery)) => Next::Delivery(delivery),
            Some(Err(err)) => {
                tracing::warn!(queue = name, error = %err, "consumer broke");
                Next::Broken(err.to_string())
            }
            None => Next::Broken(format!("consumer of {name} was closed")),
        },
    }
}

/// Opening (and re-opening) a consumer with backoff, with its health part kept up to date.
struct Restarts {
    health: Health,
    initial: Duration,
    max: Duration,
    wait: Duration,
    /// Restarts after a break.
    count: u64,
}

impl Restarts {
    fn new(options: &ConsumerOptions) -> Self {
        Self {
            health: options.health.clone(),
            initial: options.restart_initial,
            max: options.restart_max,
            wait: Duration::ZERO,
            count: 0,
        }
    }

    /// A running consumer of `name`, or `None` once cancelled.
    async fn open(
        &mut self,
        queue: &SharedQueue,
        name: &str,
        cancel: &CancellationToken,
    ) -> Option<Box<dyn ontoloop_queue::Consumer>> {
        loop {
            if !self.wait.is_zero() {
                tracing::warn!(
                    queue = name,
                    wait_ms = self.wait.as_millis() as u64,
                    "restarting consumer"
                );
                if !pause(self.wait, cancel).await {
                    return None;
                }
            }
            if cancel.is_cancelled() {
                return None;
            }
            match queue.consume(name).await {
                Ok(consumer) => {
                    self.health.set(name, true);
                    if self.count > 0 {
                        tracing::info!(queue = name, restarts = self.count, "consumer runs again");
                    }
                    self.wait = Duration::ZERO;
                    return Some(consumer);
                }
                Err(err) => {
                    self.health.set(name, false);
                    tracing::warn!(queue = name, error = %err, "cannot open the consumer");
                    self.next_wait();
                }
            }
        }
    }

    fn broken(&mut self, name: &str, reason: &str) {
        self.health.set(name, false);
        self.count += 1;
        ontoloop_observability::metrics::global().add(
            "ontoloop_consumer_restarts_total",
            "Consumers opened again after their stream broke, by queue.",
            &[("queue", name)],
            1.0,
        );
        tracing::warn!(queue = name, reason, "consumer stopped; restarting it");
        self.next_wait();
    }

    fn next_wait(&mut self) {
        self.wait = if self.wait.is_zero() {
            self.initial
        } else {
            (self.wait * 2).min(self.max)
        };
    }
}

/// Sleeps `wait` unless `cancel` fires first; false when it did.
async fn pause(wait: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        () = cancel.cancelled() => false,
        () = tokio::time::sleep(wait) => true,
    }
}

/// Deliveries of messages that failed for a passing reason, by message id: a message retried
/// `max_attempts` times in all is dead-lettered with its last reason. Bounded: the oldest entries
/// are forgotten past [`Attempts::CAPACITY`] (such a message gets its attempts afresh).
#[derive(Default)]
struct Attempts {
    counts: HashMap<String, u32>,
    order: VecDeque<String>,
}

impl Attempts {
    const CAPACITY: usize = 10_000;

    /// The outcome to settle a delivery of `id` with, given what its handler said.
    fn judge(&mut self, id: &str, handled: Handled, max_attempts: u32) -> Handled {
        match handled {
            Handled::Retry(reason) => {
                let count = self.counts.entry(id.to_owned()).or_insert(0);
                *count += 1;
                let count = *count;
                if count == 1 {
                    self.order.push_back(id.to_owned());
                    if self.order.len() > Self::CAPACITY
                        && let Some(oldest) = self.order.pop_front()
                    {
                        self.counts.remove(&oldest);
                    }
                }
                if count >= max_attempts {
                    self.forget(id);
                    Handled::Reject(format!("failed {count} times, last: {reason}"))
                } else {
                    Handled::Retry(reason)
                }
            }
            // Not a failure of the message: neither counted nor forgotten.
            contended @ Handled::Contended(_) => contended,
            settled => {
                self.forget(id);
                settled
            }
        }
    }

    fn forget(&mut self, id: &str) {
        if self.counts.remove(id).is_some() {
            self.order.retain(|known| known != id);
        }
    }
}

/// Settles one delivery as `outcome` says; `false` when the settle itself failed (the broker
/// then redelivers the message, and handlers are idempotent).
async fn settle(name: &str, delivery: Delivery, outcome: &Handled) -> bool {
    let id = delivery.message.id.clone();
    let result = match outcome {
        Handled::Done => delivery.ack().await,
        Handled::Reject(reason) => {
            tracing::warn!(queue = name, message_id = %id, reason = %reason, "dead-lettering message");
            delivery.dead_letter(reason).await
        }
        Handled::Retry(reason) => {
            tracing::warn!(queue = name, message_id = %id, reason = %reason, "requeueing message");
            delivery.requeue().await
        }
        Handled::Contended(reason) => {
            tracing::debug!(queue = name, message_id = %id, reason = %reason, "requeueing message");
            delivery.requeue().await
        }
    };
    match result {
        Ok(()) => true,
        Err(err) => {
            tracing::warn!(queue = name, message_id = %id, error = %err, "settle failed");
            false
        }
    }
}

/// The histogram of how long deliveries waited between their publish and their consumer.
const CONSUMER_LAG: &str = "ontoloop_queue_consumer_lag_seconds";

/// Observes in [`CONSUMER_LAG`] how long `message` waited on `queue` since it was published
/// (a redelivered message: since it was first published, its retries included). A message with no
/// publish stamp is not counted; a publisher's clock ahead of ours counts as no wait.
fn observe_lag(queue: &str, message: &ontoloop_queue::Message) {
    let Some(published) = message.published_at() else {
        return;
    };
    let waited = std::time::SystemTime::now()
        .duration_since(published)
        .unwrap_or_default();
    ontoloop_observability::metrics::global().observe(
        CONSUMER_LAG,
        "Seconds a delivered message waited on its queue since it was published, by queue.",
        &[("queue", queue)],
        waited.as_secs_f64(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_failing_again_and_again_is_dead_lettered_with_its_reason() {
        let mut attempts = Attempts::default();
        let retry = || Handled::Retry("store away".to_owned());
        assert_eq!(attempts.judge("m", retry(), 3), retry());
        assert_eq!(attempts.judge("m", retry(), 3), retry());
        assert_eq!(
            attempts.judge("m", retry(), 3),
            Handled::Reject("failed 3 times, last: store away".to_owned())
        );
        // Counted afresh after it was settled; other messages have their own count.
        assert_eq!(attempts.judge("m", retry(), 3), retry());
        assert_eq!(attempts.judge("n", Handled::Done, 3), Handled::Done);
        // A lost race with another writer is no failure of the message.
        let contended = || Handled::Contended("tenant changed concurrently".to_owned());
        for _ in 0..5 {
            assert_eq!(attempts.judge("c", contended(), 3), contended());
        }
        assert_eq!(
            attempts.judge("x", retry(), 1),
            Handled::Reject("failed 1 times, last: store away".to_owned())
        );
    }

    #[test]
    fn success_forgets_the_failures() {
        let mut attempts = Attempts::default();
        attempts.judge("m", Handled::Retry("r".into()), 3);
        attempts.judge("m", Handled::Done, 3);
        assert!(attempts.counts.is_empty() && attempts.order.is_empty());
    }

    #[test]
    fn health_is_down_while_any_part_is() {
        let health = Health::new();
        assert!(health.healthy());
        health.set("events", true);
        health.set("signals", false);
        assert!(!health.healthy());
        assert_eq!(health.down(), vec!["signals".to_owned()]);
        health.set("signals", true);
        assert!(health.healthy());
    }
}
