//! Queue consumers that drain on cancellation.

use std::future::Future;

use futures::FutureExt as _;

use ontoloop_queue::{Delivery, QueueError, SharedQueue};
use tokio_util::sync::CancellationToken;

/// What a handler decided about one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Processed (or already processed before): acknowledge.
    Done,
    /// Can never be processed: dead-letter with this reason.
    Reject(String),
    /// A passing failure: put back for another try.
    Retry(String),
}

/// Consumes `queue` until `cancel` fires. A delivery being handled when cancellation comes is
/// finished and settled; deliveries not yet handled stay unacknowledged and go back to the queue
/// when the consumer is dropped, so nothing is lost. Returns how many deliveries were settled.
pub async fn run_consumer<F, Fut>(
    queue: SharedQueue,
    name: &str,
    cancel: CancellationToken,
    mut handler: F,
) -> Result<u64, QueueError>
where
    F: FnMut(&ontoloop_queue::Message, bool) -> Fut + Send,
    Fut: Future<Output = Handled> + Send,
{
    let mut consumer = queue.consume(name).await?;
    let mut settled = 0u64;
    loop {
        let Some(delivery) = next_delivery(consumer.as_mut(), name, &cancel).await else {
            break;
        };
        let outcome = handler(&delivery.message, delivery.redelivered).await;
        if settle(name, delivery, &outcome).await {
            settled += 1;
        }
    }
    tracing::info!(queue = name, settled, "consumer drained");
    Ok(settled)
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
    mut handler: F,
) -> Result<u64, QueueError>
where
    F: FnMut(Vec<ontoloop_queue::Message>) -> Fut + Send,
    Fut: Future<Output = Vec<Handled>> + Send,
{
    let mut consumer = queue.consume(name).await?;
    let mut settled = 0u64;
    let max_batch = max_batch.max(1);
    loop {
        let Some(first) = next_delivery(consumer.as_mut(), name, &cancel).await else {
            break;
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
        let messages = batch.iter().map(|d| d.message.clone()).collect();
        let mut outcomes = handler(messages).await.into_iter();
        // Failures are settled one by one first; then every success of the batch is
        // acknowledged at once (one cumulative acknowledgement on RabbitMQ).
        let mut done = Vec::with_capacity(batch.len());
        let mut failures_settled = true;
        for delivery in batch {
            // A handler that returned too few outcomes leaves the rest for another try.
            let outcome = outcomes
                .next()
                .unwrap_or_else(|| Handled::Retry("handler gave no outcome".to_owned()));
            if outcome == Handled::Done {
                done.push(delivery);
            } else if settle(name, delivery, &outcome).await {
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
            Err(err) => tracing::warn!(queue = name, error = %err, "batch acknowledgement failed"),
        }
    }
    tracing::info!(queue = name, settled, "consumer drained");
    Ok(settled)
}

/// The next delivery, or `None` once cancelled or the consumer is closed for good; a passing
/// consumer error is logged and waited past.
async fn next_delivery(
    consumer: &mut dyn ontoloop_queue::Consumer,
    name: &str,
    cancel: &CancellationToken,
) -> Option<Delivery> {
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            next = consumer.next() => match next {
                Some(Ok(delivery)) => return Some(delivery),
                Some(Err(err)) => tracing::warn!(queue = name, error = %err, "consumer error"),
                None => return None,
            },
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
    };
    match result {
        Ok(()) => true,
        Err(err) => {
            tracing::warn!(queue = name, message_id = %id, error = %err, "settle failed");
            false
        }
    }
}
