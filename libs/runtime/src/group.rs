//! Tasks that stand or fall together, and the one drain policy every service and `ontoloop up`
//! follow.
//!
//! A group runs named tasks that all watch one cancellation token. It ends when the token is
//! cancelled (shutdown) or when any task ends on its own, whichever comes first: a task that
//! fails, or stops before shutdown, cancels the others, because a partial service (or a partial
//! system) is worse than none. Then every task gets the drain time to finish what it holds;
//! whatever is still running after that is aborted. The first failure is the group's error.

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Named tasks sharing one cancellation token.
pub struct TaskGroup {
    cancel: CancellationToken,
    tasks: JoinSet<(String, anyhow::Result<()>)>,
}

impl TaskGroup {
    /// An empty group whose tasks stop when `cancel` fires.
    pub fn new(cancel: CancellationToken) -> Self {
        Self {
            cancel,
            tasks: JoinSet::new(),
        }
    }

    /// The token every task of the group watches.
    pub fn token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Starts `task` with the group's token; it must return once the token is cancelled.
    pub fn spawn<F, Fut>(&mut self, name: impl Into<String>, task: F)
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let name = name.into();
        let running = task(self.cancel.clone());
        self.tasks.spawn(async move { (name, running.await) });
    }

    /// Waits for shutdown or for the first task to end on its own, cancels the rest, gives them
    /// `drain` to finish, and returns the first failure (a task that stopped before shutdown
    /// counts as one).
    pub async fn join(mut self, drain: Duration) -> anyhow::Result<()> {
        let mut failure = None;
        tokio::select! {
            () = self.cancel.cancelled() => {}
            Some(ended) = self.tasks.join_next() => {
                let stopped_early = !self.cancel.is_cancelled();
                self.cancel.cancel();
                failure = outcome(ended, stopped_early);
            }
        }
        let drained = tokio::time::timeout(drain, async {
            while let Some(ended) = self.tasks.join_next().await {
                if let Some(err) = outcome(ended, false) {
                    failure.get_or_insert(err);
                }
            }
        })
        .await;
        if drained.is_err() {
            tracing::error!(
                timeout_ms = drain.as_millis() as u64,
                tasks = self.tasks.len(),
                "tasks did not drain in time; aborting them"
            );
            self.tasks.shutdown().await;
        }
        failure.map_or(Ok(()), Err)
    }
}

/// The error a task's end stands for, logged where the group handles it.
fn outcome(
    ended: Result<(String, anyhow::Result<()>), tokio::task::JoinError>,
    stopped_early: bool,
) -> Option<anyhow::Error> {
    match ended {
        Ok((name, Ok(()))) if stopped_early => {
            tracing::error!(task = %name, "task stopped before shutdown");
            Some(anyhow::anyhow!("{name} stopped before shutdown"))
        }
        Ok((_, Ok(()))) => None,
        Ok((name, Err(err))) => {
            tracing::error!(task = %name, error = format!("{err:#}"), "task failed");
            Some(err.context(format!("{name} failed")))
        }
        Err(err) => {
            tracing::error!(error = %err, "task panicked");
            Some(anyhow::anyhow!("a task panicked: {err}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_task_failing_at_start_stops_the_others_and_is_the_error() {
        let mut group = TaskGroup::new(CancellationToken::new());
        let (stopped_tx, mut stopped_rx) = tokio::sync::mpsc::channel(2);
        for name in ["first", "second"] {
            let stopped = stopped_tx.clone();
            group.spawn(name, move |cancel| async move {
                cancel.cancelled().await;
                let _ = stopped.send(name).await;
                Ok(())
            });
        }
        group.spawn("broken", |_| async { Err(anyhow::anyhow!("cannot start")) });
        let err = group
            .join(Duration::from_secs(5))
            .await
            .expect_err("the group fails");
        assert_eq!(format!("{err:#}"), "broken failed: cannot start");
        let mut stopped = vec![stopped_rx.recv().await, stopped_rx.recv().await];
        stopped.sort();
        assert_eq!(stopped, vec![Some("first"), Some("second")]);
    }

    #[tokio::test]
    async fn shutdown_drains_every_task_and_a_clean_stop_is_ok() {
        let cancel = CancellationToken::new();
        let mut group = TaskGroup::new(cancel.clone());
        group.spawn("worker", |cancel| async move {
            cancel.cancelled().await;
            Ok(())
        });
        cancel.cancel();
        group
            .join(Duration::from_secs(5))
            .await
            .expect("a clean stop");
    }

    #[tokio::test]
    async fn a_task_stopping_before_shutdown_is_a_failure() {
        let mut group = TaskGroup::new(CancellationToken::new());
        group.spawn("quitter", |_| async { Ok(()) });
        let err = group.join(Duration::from_secs(5)).await.expect_err("fails");
        assert_eq!(err.to_string(), "quitter stopped before shutdown");
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_will_not_drain_is_aborted_after_the_drain_time() {
        let cancel = CancellationToken::new();
        let mut group = TaskGroup::new(cancel.clone());
        group.spawn("stubborn", |_| async {
            std::future::pending::<()>().await;
            Ok(())
        });
        cancel.cancel();
        group
            .join(Duration::from_secs(10))
            .await
            .expect("aborted, not failed");
    }
}
