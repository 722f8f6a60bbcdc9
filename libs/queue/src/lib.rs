//! The ontoloop message queue: one contract, two implementations.
//!
//! Owns the delivery semantics every service relies on — durable publish that returns only once
//! the broker confirmed, manual acknowledgement, a dead-letter queue that keeps the rejection
//! reason in a header, redelivery of whatever a dead consumer held — and provides them on
//! RabbitMQ ([`AmqpQueue`], via lapin) and in process ([`MemoryQueue`], the embedded default).
//! A publish adds the publisher's W3C trace context to the message's headers (AMQP headers on
//! RabbitMQ) when traces are on. It never interprets message bodies: they are bytes here.

mod amqp;
mod memory;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use amqp::AmqpQueue;
pub use memory::MemoryQueue;

/// Header that carries the reason a message was dead-lettered.
pub const REASON_HEADER: &str = "x-ontoloop-reason";
/// Header that names the queue a dead-lettered message was rejected from.
pub const SOURCE_QUEUE_HEADER: &str = "x-ontoloop-source-queue";

/// The longest reason a dead letter carries, in bytes. A reason may quote the message (a
/// refused field's value), and AMQP headers travel in one frame (RabbitMQ's frame_max, 128 KiB by
/// default): a reason quoting a huge body made the dead-letter publish fail, and the message was
/// redelivered for ever, holding its queue back.
pub const MAX_REASON_BYTES: usize = 1024;

/// The dead-letter queue that belongs to `queue`.
pub fn dead_letter_queue(queue: &str) -> String {
    format!("{queue}.dlq")
}

/// A queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The broker could not be reached after every attempt.
    #[error("broker at {url} unreachable after {attempts} attempts: {reason}")]
    Unreachable {
        /// Broker URL without its password.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The last error.
        reason: String,
    },
    /// The broker refused to confirm a publish; the message may not be stored.
    #[error("broker did not confirm the publish to {queue}")]
    NotConfirmed {
        /// Target queue.
        queue: String,
    },
    /// The channel or connection a delivery came on is gone; the broker will redeliver it.
    #[error("delivery can no longer be settled: {0}")]
    Settle(String),
    /// Any other broker error.
    #[error("broker error: {0}")]
    Broker(String),
    /// A `queue.tls_*` file could not be read; `key` names the setting.
    #[error("setting `{key}`: {reason}")]
    Tls {
        /// The setting, for example `queue.tls_ca_file`.
        key: &'static str,
        /// Why the file is unusable.
        reason: String,
    },
}

impl ontoloop_core::ServiceError for QueueError {
    fn error_code(&self) -> ontoloop_core::ErrorCode {
        match self {
            QueueError::Unreachable { .. }
            | QueueError::NotConfirmed { .. }
            | QueueError::Settle(_)
            | QueueError::Broker(_)
            // The queue is unusable until the file is fixed; no request caused it.
            | QueueError::Tls { .. } => ontoloop_core::ErrorCode::Unavailable,
        }
    }
}

/// A message: an id, a body and string headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Unique id; consumers deduplicate on it.
    pub id: String,
    /// Opaque payload.
    pub body: Vec<u8>,
    /// String headers.
    pub headers: BTreeMap<String, String>,
}

impl Message {
    /// A message with a fresh random id and no headers.
    pub fn new(body: impl Into<Vec<u8>>) -> Self {
        Self::with_id(new_message_id(), body)
    }

    /// A message with a caller-chosen id (for idempotent re-publishing).
    pub fn with_id(id: impl Into<String>, body: impl Into<Vec<u8>>) -> Self {
        Self {
            id: id.into(),
            body: body.into(),
            headers: BTreeMap::new(),
        }
    }

    /// Adds a header.
    pub fn header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(key.into(), value.into());
        self
    }
}

/// `message` with the publisher's trace context in its headers (`traceparent`, `tracestate`),
/// unless it carries one already, so the consumer's span continues the publisher's trace.
fn traced(mut message: Message) -> Message {
    ontoloop_observability::trace::inject_current(&mut message.headers);
    message
}

/// The header a publish stamps a message with: when it was published, in milliseconds since the
/// Unix epoch ([`Message::published_at`]); consumers measure their lag from it.
pub const PUBLISHED_AT_HEADER: &str = "x-ontoloop-published-ms";

impl Message {
    /// When the message was last published, if a publish stamped it ([`PUBLISHED_AT_HEADER`]).
    pub fn published_at(&self) -> Option<std::time::SystemTime> {
        let millis = self.headers.get(PUBLISHED_AT_HEADER)?.parse::<u64>().ok()?;
        std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(millis))
    }
}

/// `message` stamped with the time of this publish ([`PUBLISHED_AT_HEADER`]).
fn stamped(mut message: Message) -> Message {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis());
    message
        .headers
        .insert(PUBLISHED_AT_HEADER.to_owned(), millis.to_string());
    message
}

/// A random 128-bit hex id.
pub fn new_message_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The id of a message that is one tenant's `key` (an idempotency key, or an integration's own
/// message id): `prefix`, a dash and the hex SHA-256 of the tenant and the key, each preceded by
/// its length. Two different (tenant, key) pairs never share an id however their text looks
/// (tenant `a` with key `b-c` and tenant `a-b` with key `c` differ), and the id has the same short
/// length for any key, well within the broker's 255 bytes.
pub fn scoped_id(prefix: &str, tenant: &str, key: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in [tenant, key] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{prefix}-{hex}")
}

/// `reason` cut at [`MAX_REASON_BYTES`] on a character boundary, marked with "…" when cut.
fn capped_reason(reason: &str) -> std::borrow::Cow<'_, str> {
    if reason.len() <= MAX_REASON_BYTES {
        return reason.into();
    }
    let mut end = MAX_REASON_BYTES - '…'.len_utf8();
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &reason[..end]).into()
}

/// One delivered message; settle it exactly once with [`Delivery::ack`],
/// [`Delivery::dead_letter`] or [`Delivery::requeue`]. Dropping it unsettled leaves it with the
/// consumer until the consumer goes away, and then the queue redelivers it.
pub struct Delivery {
    /// The message.
    pub message: Message,
    /// True when the message was delivered before and not acknowledged.
    pub redelivered: bool,
    settle: Box<dyn Settle>,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("message", &self.message)
            .field("redelivered", &self.redelivered)
            .finish_non_exhaustive()
    }
}

impl Delivery {
    /// Processing succeeded; the queue forgets the message.
    pub async fn ack(self) -> Result<(), QueueError> {
        self.settle.ack().await
    }

    /// The message can never be processed: move it to the dead-letter queue with `reason` in the
    /// [`REASON_HEADER`] header, cut at [`MAX_REASON_BYTES`]. The dead letter is confirmed before
    /// the original is acknowledged, so the message is never in neither place.
    pub async fn dead_letter(self, reason: &str) -> Result<(), QueueError> {
        self.settle
            .dead_letter(&self.message, &capped_reason(reason))
            .await
    }

    /// Acknowledges a batch at once: on RabbitMQ one cumulative acknowledgement when the whole
    /// batch came on one channel in order, else one by one. The batch must be, in delivery
    /// order, every delivery of its consumer not yet settled up to the last one (a consumer that
    /// settles each batch before taking the next guarantees it), since a cumulative
    /// acknowledgement also covers the earlier unsettled deliveries of the channel.
    pub async fn ack_batch(mut batch: Vec<Delivery>) -> Result<(), QueueError> {
        let Some(last) = batch.pop() else {
            return Ok(());
        };
        let channel = last.settle.channel();
        if channel.is_some() && batch.iter().all(|d| d.settle.channel() == channel) {
            return last.settle.ack_through().await;
        }
        for delivery in batch {
            delivery.ack().await?;
        }
        last.ack().await
    }

    /// Processing failed for a passing reason; put the message back for another try.
    pub async fn requeue(self) -> Result<(), QueueError> {
        self.settle.requeue().await
    }
}

/// How an implementation settles one delivery.
#[async_trait::async_trait]
trait Settle: Send + Sync {
    async fn ack(&self) -> Result<(), QueueError>;
    /// The channel a cumulative acknowledgement covers; `None` when there is no such thing.
    fn channel(&self) -> Option<u64> {
        None
    }
    /// Acknowledges this delivery and every earlier unsettled one of its channel.
    async fn ack_through(&self) -> Result<(), QueueError> {
        self.ack().await
    }
    async fn dead_letter(&self, message: &Message, reason: &str) -> Result<(), QueueError>;
    async fn requeue(&self) -> Result<(), QueueError>;
}

/// A stream of deliveries from one queue. Dropping the consumer returns every unsettled
/// delivery to the queue, to be redelivered to another consumer.
#[async_trait::async_trait]
pub trait Consumer: Send {
    /// The next delivery; `None` once the consumer is closed for good.
    async fn next(&mut self) -> Option<Result<Delivery, QueueError>>;
}

/// The queue contract both implementations satisfy (see `tests/contract.rs`).
#[async_trait::async_trait]
pub trait Queue: Send + Sync {
    /// Declares `queue` and its dead-letter queue (idempotent). Publishing and consuming declare
    /// on first use too; call it to make sure messages published before any consumer are kept.
    async fn declare(&self, queue: &str) -> Result<(), QueueError>;

    /// Publishes durably; returns once the broker has confirmed the message.
    async fn publish(&self, queue: &str, message: Message) -> Result<(), QueueError>;

    /// Starts consuming `queue` with manual acknowledgement.
    async fn consume(&self, queue: &str) -> Result<Box<dyn Consumer>, QueueError>;

    /// Starts consuming the dead-letter queue of `queue`.
    async fn consume_dead_letters(&self, queue: &str) -> Result<Box<dyn Consumer>, QueueError>;

    /// Messages ready in `queue` (not counting unacknowledged ones).
    async fn ready_count(&self, queue: &str) -> Result<u64, QueueError>;

    /// Deletes `queue` and its dead-letter queue (tests and maintenance).
    async fn delete(&self, queue: &str) -> Result<(), QueueError>;

    /// Implementation name for logs: `memory` or `amqp`.
    fn kind(&self) -> &'static str;

    /// Whether a confirmed message outlives this process (RabbitMQ's durable queues do; the
    /// in-process queue does not, so an outbox publishing to it publishes again at start-up
    /// what the consumer had not taken).
    fn durable(&self) -> bool {
        true
    }
}

/// A shared queue handle.
pub type SharedQueue = Arc<dyn Queue>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reason_is_cut_on_a_character_boundary() {
        assert_eq!(capped_reason("short"), "short");
        let exact = "r".repeat(MAX_REASON_BYTES);
        assert_eq!(capped_reason(&exact), exact);
        let long = format!("mode {:?} is not patch", "é".repeat(1_000_000));
        let cut = capped_reason(&long);
        assert!(cut.len() <= MAX_REASON_BYTES, "{}", cut.len());
        assert!(cut.starts_with("mode \"éé"), "{cut:.20}");
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn scoped_ids_never_collide_across_tenants() {
        // The same text joined with a dash, split differently between tenant and key.
        let first = scoped_id("sig", "a", "b-c");
        let second = scoped_id("sig", "a-b", "c");
        assert_ne!(first, second);
        assert_ne!(scoped_id("sig", "ab", "c"), scoped_id("sig", "a", "bc"));
        assert_ne!(scoped_id("sig", "", "ac"), scoped_id("sig", "a", "c"));
        assert_eq!(
            first,
            scoped_id("sig", "a", "b-c"),
            "the same pair, the same id"
        );
        let long = scoped_id("sig", "t", &"k".repeat(10_000));
        assert!(long.starts_with("sig-"), "{long}");
        assert_eq!(long.len(), first.len(), "fixed length whatever the key");
        assert!(long.len() <= 255);
    }
}
