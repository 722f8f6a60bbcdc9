//! Appending events to the intake log a group per transaction. Pushes hand their events to one
//! writer task ([`GroupCommit`]); those that arrive while a group is being written go into the
//! next one: one write and one sync for all of them (group commit). A push is still acknowledged
//! only once its own row is durable, and gets the number it would have got alone. A group the
//! store refuses (one body it cannot keep, a lost race for a number) is appended one event at a
//! time, each with the store's own retries, so one bad event fails only its own push.

use ontoloop_store::group::GroupCommit;
use ontoloop_store::{Intake, IntakeRequest, Store, StoreError};

/// Events appended in one transaction at most.
const MAX_GROUP: usize = 256;

/// Pushes waiting in front of the writer at most; a push past them waits to join the queue.
const MAX_WAITING: usize = 4096;

/// The intake's appender: pushes in flight share transactions.
pub(crate) struct Appender {
    store: Store,
    writer: GroupCommit<IntakeRequest, Result<Intake, StoreError>>,
}

impl Appender {
    /// Starts the appender's writer task on the current runtime.
    pub(crate) fn new(store: Store) -> Self {
        Self {
            store: store.clone(),
            writer: GroupCommit::spawn(MAX_WAITING, MAX_GROUP, move |group| {
                append(store.clone(), group)
            }),
        }
    }

    /// Appends `request` with whatever else is waiting; its number, or the earlier row its
    /// idempotency key names. Refused at once while the store is away (a group trying it, up to
    /// its connect timeout, would hold this one back only for it to be refused after).
    pub(crate) async fn accept(&self, request: IntakeRequest) -> Result<Intake, StoreError> {
        self.store.check_reach()?;
        self.writer
            .submit(request)
            .await
            .unwrap_or_else(|| Err(StoreError::interrupted("the append of this event")))
    }
}

/// Appends `requests` in one transaction, else one event at a time; each one's outcome, in order.
async fn append(store: Store, requests: Vec<IntakeRequest>) -> Vec<Result<Intake, StoreError>> {
    if requests.len() > 1 {
        match store.intake_accept_many(&requests).await {
            Ok(accepted) => return accepted.into_iter().map(Ok).collect(),
            Err(err) => {
                tracing::debug!(error = %err, events = requests.len(), "a group append failed; appending one at a time");
            }
        }
    }
    let mut outcomes = Vec::with_capacity(requests.len());
    for request in requests {
        outcomes.push(store.intake_accept_request(&request).await);
    }
    outcomes
}
