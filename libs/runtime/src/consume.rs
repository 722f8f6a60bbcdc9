//! Queue consumers that drain on cancellation.

use std::future::Future;

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
        let delivery: Delivery = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            next = consumer.next() => match next {
                Some(Ok(delivery)) => delivery,
                Some(Err(err)) => {
                    tracing::warn!(queue = name, error = %err, "consumer error");
                    continue;
                }
                None => break,
            },
        };
        let outcome = handler(&delivery.message, delivery.redelivered).await;
        let id = delivery.message.id.clone();
        let result = match &outcome {
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
            Ok(()) => settled += 1,
            // The broker redelivers what could not be settled; handlers are idempotent.
            Err(err) => {
                tracing::warn!(queue = name, message_id = %id, error = %err, "settle failed")
            }
        }
    }
    tracing::info!(queue = name, settled, "consumer drained");
    Ok(settled)
}
