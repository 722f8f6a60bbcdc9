//! The in-process queue: the embedded default, with the same semantics as RabbitMQ.
//!
//! Messages live in memory (they survive a consumer, not the process). A delivery stays
//! "unacked" and owned by its consumer until settled; when the consumer is dropped, everything
//! it held goes back to the front of the queue marked redelivered.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::{
    Consumer, Delivery, Message, Queue, QueueError, REASON_HEADER, SOURCE_QUEUE_HEADER, Settle,
    dead_letter_queue,
};

/// The in-process queue. Clones share the same queues.
#[derive(Clone, Default)]
pub struct MemoryQueue {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MemoryQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryQueue").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Inner {
    queues: Mutex<HashMap<String, QueueState>>,
    next_tag: AtomicU64,
    next_consumer: AtomicU64,
}

#[derive(Default)]
struct QueueState {
    ready: VecDeque<Stored>,
    unacked: HashMap<u64, (u64, Stored)>,
    notify: Arc<Notify>,
}

#[derive(Clone)]
struct Stored {
    message: Message,
    redelivered: bool,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, QueueState>> {
        // A panic while holding the lock cannot leave a queue half-updated (every critical
        // section is a single push or pop), so a poisoned lock is still safe to use.
        self.queues
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, queue: &str, stored: Stored, front: bool) {
        let mut queues = self.lock();
        let state = queues.entry(queue.to_owned()).or_default();
        if front {
            state.ready.push_front(stored);
        } else {
            state.ready.push_back(stored);
        }
        state.notify.notify_waiters();
    }

    fn settle(&self, queue: &str, tag: u64) -> Result<Stored, QueueError> {
        let mut queues = self.lock();
        queues
            .get_mut(queue)
            .and_then(|state| state.unacked.remove(&tag))
            .map(|(_, stored)| stored)
            .ok_or_else(|| {
                QueueError::Settle(format!("delivery {tag} on {queue} is no longer held"))
            })
    }
}

impl MemoryQueue {
    /// An empty queue set.
    pub fn new() -> Self {
        Self::default()
    }

    fn consumer(&self, queue: &str) -> Box<dyn Consumer> {
        let notify = {
            let mut queues = self.inner.lock();
            queues.entry(queue.to_owned()).or_default().notify.clone()
        };
        Box::new(MemoryConsumer {
            inner: self.inner.clone(),
            queue: queue.to_owned(),
            id: self.inner.next_consumer.fetch_add(1, Ordering::Relaxed),
            notify,
        })
    }
}

#[async_trait::async_trait]
impl Queue for MemoryQueue {
    async fn declare(&self, queue: &str) -> Result<(), QueueError> {
        let mut queues = self.inner.lock();
        queues.entry(queue.to_owned()).or_default();
        queues.entry(dead_letter_queue(queue)).or_default();
        Ok(())
    }

    async fn publish(&self, queue: &str, message: Message) -> Result<(), QueueError> {
        self.declare(queue).await?;
        let message = crate::traced(message);
        let message = crate::stamped(message);
        self.inner.push(
            queue,
            Stored {
                message,
                redelivered: false,
            },
            false,
        );
        Ok(())
    }

    async fn consume(&self, queue: &str) -> Result<Box<dyn Consumer>, QueueError> {
        self.declare(queue).await?;
        Ok(self.consumer(queue))
    }

    async fn consume_dead_letters(&self, queue: &str) -> Result<Box<dyn Consumer>, QueueError> {
        self.declare(queue).await?;
        Ok(self.consumer(&dead_letter_queue(queue)))
    }

    async fn ready_count(&self, queue: &str) -> Result<u64, QueueError> {
        let queues = self.inner.lock();
        Ok(queues
            .get(queue)
            .map_or(0, |state| state.ready.len() as u64))
    }

    async fn delete(&self, queue: &str) -> Result<(), QueueError> {
        let mut queues = self.inner.lock();
        queues.remove(queue);
        queues.remove(&dead_letter_queue(queue));
        Ok(())
    }

    fn durable(&self) -> bool {
        false
    }

    fn kind(&self) -> &'static str {
        "memory"
    }
}

struct MemoryConsumer {
    inner: Arc<Inner>,
    queue: String,
    id: u64,
    notify: Arc<Notify>,
}

#[async_trait::async_trait]
impl Consumer for MemoryConsumer {
    async fn next(&mut self) -> Option<Result<Delivery, QueueError>> {
        loop {
            // Register interest before looking, so a publish between the look and the wait is
            // not missed.
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut queues = self.inner.lock();
                let state = queues.entry(self.queue.clone()).or_default();
                if let Some(stored) = state.ready.pop_front() {
                    let tag = self.inner.next_tag.fetch_add(1, Ordering::Relaxed);
                    state.unacked.insert(tag, (self.id, stored.clone()));
                    return Some(Ok(Delivery {
                        message: stored.message,
                        redelivered: stored.redelivered,
                        settle: Box::new(MemorySettle {
                            inner: self.inner.clone(),
                            queue: self.queue.clone(),
                            tag,
                        }),
                    }));
                }
            }
            notified.await;
        }
    }
}

impl Drop for MemoryConsumer {
    fn drop(&mut self) {
        // Like a closed AMQP channel: whatever this consumer held goes back, redelivered, in the
        // order it was first delivered.
        let mut queues = self.inner.lock();
        if let Some(state) = queues.get_mut(&self.queue) {
            let mut held: Vec<(u64, Stored)> = state
                .unacked
                .iter()
                .filter(|(_, (owner, _))| *owner == self.id)
                .map(|(tag, (_, stored))| (*tag, stored.clone()))
                .collect();
            held.sort_by_key(|(tag, _)| *tag);
            for (tag, _) in &held {
                state.unacked.remove(tag);
            }
            for (_, mut stored) in held.into_iter().rev() {
                stored.redelivered = true;
                state.ready.push_front(stored);
            }
            state.notify.notify_waiters();
        }
    }
}

struct MemorySettle {
    inner: Arc<Inner>,
    queue: String,
    tag: u64,
}

#[async_trait::async_trait]
impl Settle for MemorySettle {
    async fn ack(&self) -> Result<(), QueueError> {
        self.inner.settle(&self.queue, self.tag).map(|_| ())
    }

    async fn dead_letter(&self, message: &Message, reason: &str) -> Result<(), QueueError> {
        self.inner.settle(&self.queue, self.tag)?;
        let dead = message
            .clone()
            .header(REASON_HEADER, reason)
            .header(SOURCE_QUEUE_HEADER, self.queue.clone());
        self.inner.push(
            &dead_letter_queue(&self.queue),
            Stored {
                message: dead,
                redelivered: false,
            },
            false,
        );
        Ok(())
    }

    async fn requeue(&self) -> Result<(), QueueError> {
        let mut stored = self.inner.settle(&self.queue, self.tag)?;
        stored.redelivered = true;
        self.inner.push(&self.queue, stored, true);
        Ok(())
    }
}
