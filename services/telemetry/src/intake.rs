//! Appending events to the intake log a group per transaction. A push that arrives while another
//! group is being written waits for its turn, and every push waiting then goes into the next
//! group: one write and one sync for all of them (group commit). A push is still acknowledged
//! only once its own row is durable, and gets the number it would have got alone. A group the
//! store refuses (one body it cannot keep, a lost race for a number) is appended one event at a
//! time, each with the store's own retries, so one bad event fails only its own push.

use std::sync::{Mutex, PoisonError};

use ontoloop_store::{Intake, IntakeRequest, Store, StoreError};
use tokio::sync::oneshot;

/// Events appended in one transaction at most.
const MAX_GROUP: usize = 256;

/// A push waiting to be appended, and where its outcome goes.
type Waiting = (IntakeRequest, oneshot::Sender<Result<Intake, StoreError>>);

/// The intake's appender: pushes in flight share transactions.
pub(crate) struct Appender {
    store: Store,
    waiting: Mutex<Vec<Waiting>>,
    /// Held while a group is written: the pushes that arrive meanwhile form the next one.
    turn: tokio::sync::Mutex<()>,
}

impl Appender {
    pub(crate) fn new(store: Store) -> Self {
        Self {
            store,
            waiting: Mutex::new(Vec::new()),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Appends `request` with whatever else is waiting, once its turn comes; its number, or
    /// the earlier row its idempotency key names.
    pub(crate) async fn accept(&self, request: IntakeRequest) -> Result<Intake, StoreError> {
        let (sender, outcome) = oneshot::channel();
        self.lock().push((request, sender));
        {
            // Every push takes a turn, so every waiting push is in some group; its own may be
            // an earlier or a later turn's.
            let _turn = self.turn.lock().await;
            let group: Vec<Waiting> = {
                let mut waiting = self.lock();
                let n = waiting.len().min(MAX_GROUP);
                waiting.drain(..n).collect()
            };
            if !group.is_empty() {
                // A task of its own: a caller that goes away mid-write does not cancel the
                // others' appends.
                let _ = tokio::spawn(append(self.store.clone(), group)).await;
            }
        }
        outcome
            .await
            .unwrap_or_else(|_| Err(StoreError::interrupted("the append of this event")))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Appends `group` in one transaction, else one event at a time; tells each push its outcome.
async fn append(store: Store, group: Vec<Waiting>) {
    let (requests, senders): (Vec<IntakeRequest>, Vec<_>) = group.into_iter().unzip();
    if requests.len() > 1 {
        match store.intake_accept_many(&requests).await {
            Ok(accepted) => {
                for (sender, intake) in senders.into_iter().zip(accepted) {
                    let _ = sender.send(Ok(intake));
                }
                return;
            }
            Err(err) => {
                tracing::debug!(error = %err, events = requests.len(), "a group append failed; appending one at a time");
            }
        }
    }
    for (request, sender) in requests.into_iter().zip(senders) {
        let outcome = store
            .intake_accept(
                &request.tenant,
                request.idempotency_key.as_deref(),
                &request.kind,
                &request.body,
                request.received_at,
                request.lease_until,
                request.trace_context.as_deref(),
            )
            .await;
        let _ = sender.send(outcome);
    }
}
