//! Group commit: callers hand their writes to one writer task, which takes every write waiting
//! (up to a cap) and commits them together: one transaction and one sync for all of them. A
//! caller still returns only once its own write is done, with its own outcome.
//!
//! One task, not a lock taken in turn: with a lock every caller must be scheduled once to pass
//! it on, and on a busy runtime that queue of hand-overs costs more than the writes (a push
//! waited about 110 ms for its turn to write 2 ms). Writes submitted while a group is written
//! form the next group. The queue in front of the writer is bounded: a caller past it waits.

use std::future::Future;

use tokio::sync::{mpsc, oneshot};

/// A write waiting for its group, and where its outcome goes.
type Waiting<R, O> = (R, oneshot::Sender<O>);

/// The front of a writer task that commits its callers' writes a group at a time.
pub struct GroupCommit<R, O> {
    sender: mpsc::Sender<Waiting<R, O>>,
}

impl<R, O> std::fmt::Debug for GroupCommit<R, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field(
                "waiting",
                &(self.sender.max_capacity() - self.sender.capacity()),
            )
            .finish()
    }
}

impl<R: Send + 'static, O: Send + 'static> GroupCommit<R, O> {
    /// Starts the writer task (on the current tokio runtime): up to `queue` writes wait in front
    /// of it, and `write` gets up to `max_group` at a time and returns their outcomes in the
    /// order given. The task ends when the last handle is dropped.
    pub fn spawn<F, Fut>(queue: usize, max_group: usize, mut write: F) -> Self
    where
        F: FnMut(Vec<R>) -> Fut + Send + 'static,
        Fut: Future<Output = Vec<O>> + Send + 'static,
    {
        let (sender, mut receiver) = mpsc::channel::<Waiting<R, O>>(queue.max(1));
        let max_group = max_group.max(1);
        tokio::spawn(async move {
            let mut waiting = Vec::with_capacity(max_group);
            while receiver.recv_many(&mut waiting, max_group).await > 0 {
                let (writes, callers): (Vec<R>, Vec<_>) = waiting.drain(..).unzip();
                // A task of its own, so a write that panics fails its own group (its callers are
                // told nothing, as when the writer is gone), not every group after it.
                let outcomes = match tokio::spawn(write(writes)).await {
                    Ok(outcomes) => outcomes,
                    Err(err) => {
                        tracing::error!(error = %err, writes = callers.len(), "a group write failed");
                        Vec::new()
                    }
                };
                // A caller whose outcome is missing (or who left) learns it from its handle.
                for (caller, outcome) in callers.into_iter().zip(outcomes) {
                    let _ = caller.send(outcome);
                }
            }
        });
        Self { sender }
    }

    /// Hands `write` to the writer and waits for its outcome; `None` when the writer is gone
    /// (its runtime shut down) or gave no outcome for it.
    pub async fn submit(&self, write: R) -> Option<O> {
        let (caller, outcome) = oneshot::channel();
        self.sender.send((write, caller)).await.ok()?;
        outcome.await.ok()
    }

    /// Hands `write` to the writer without waiting for its outcome (only for room in the
    /// queue); false when the writer is gone.
    pub async fn hand_over(&self, write: R) -> bool {
        let (caller, _) = oneshot::channel();
        self.sender.send((write, caller)).await.is_ok()
    }

    /// Writes waiting in front of the writer now.
    pub fn waiting(&self) -> usize {
        self.sender.max_capacity() - self.sender.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn writes_submitted_together_share_a_group_and_each_gets_its_outcome() {
        let groups = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&groups);
        let (release, released) = tokio::sync::watch::channel(false);
        let writer = Arc::new(GroupCommit::spawn(64, 16, move |writes: Vec<u32>| {
            seen.lock().expect("lock").push(writes.len());
            let mut released = released.clone();
            async move {
                // The first group waits until the others are queued behind it.
                let _ = released.wait_for(|go| *go).await;
                writes.into_iter().map(|n| n * 10).collect()
            }
        }));
        let first = tokio::spawn({
            let writer = Arc::clone(&writer);
            async move { writer.submit(1).await }
        });
        while groups.lock().expect("lock").is_empty() {
            tokio::task::yield_now().await;
        }
        let rest: Vec<_> = (2..=20)
            .map(|n| {
                let writer = Arc::clone(&writer);
                tokio::spawn(async move { writer.submit(n).await })
            })
            .collect();
        while writer.waiting() < 19 {
            tokio::task::yield_now().await;
        }
        release.send(true).expect("release");
        assert_eq!(first.await.expect("join"), Some(10));
        for (n, handle) in (2..=20).zip(rest) {
            assert_eq!(handle.await.expect("join"), Some(n * 10));
        }
        // One alone, then the nineteen waiting in groups of at most sixteen.
        assert_eq!(*groups.lock().expect("lock"), vec![1, 16, 3]);
    }

    #[tokio::test]
    async fn a_group_whose_write_panics_fails_alone() {
        let writer = GroupCommit::spawn(4, 4, |writes: Vec<u32>| async move {
            assert!(writes != [13], "a write that panics");
            writes
        });
        assert_eq!(writer.submit(13).await, None);
        assert_eq!(writer.submit(7).await, Some(7), "the writer goes on");
    }

    #[tokio::test]
    async fn a_write_without_an_outcome_is_told_none() {
        let writer = GroupCommit::spawn(4, 4, |_: Vec<u32>| async { Vec::<u32>::new() });
        assert_eq!(writer.submit(1).await, None);
    }
}
