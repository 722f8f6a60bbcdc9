//! Why an event could not be applied, and what the events queue does about it: the knowledge
//! writer and the org writer share this discipline. A refused event (it can never apply) settles
//! its intake entry as failed with the reason and goes to the dead-letter queue; a passing failure
//! (store trouble, a concurrent writer) puts it back for another try.

use ontoloop_runtime::Handled;
use ontoloop_store::{Store, StoreError};

/// Why an event could not be applied (or a tenant's knowledge read); it displays as the reason.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// It can never apply: dead-letter it.
    #[error("{0}")]
    Invalid(String),
    /// Try again (store trouble or a concurrent writer).
    #[error("{0}")]
    Passing(String),
}

impl From<StoreError> for Refusal {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Conflict { tenant } => {
                Refusal::Passing(format!("tenant {tenant} changed concurrently; retrying"))
            }
            other => Refusal::Passing(other.to_string()),
        }
    }
}

/// What the queue does with an event whose intake sequence number is `seq` once it was applied
/// (`Ok`) or refused. A refused event's intake entry is marked failed first; when even that
/// fails, the event is tried again.
pub(crate) async fn settle(
    store: &Store,
    seq: Option<i64>,
    applied: Result<(), Refusal>,
) -> Handled {
    match applied {
        Ok(()) => Handled::Done,
        Err(Refusal::Passing(reason)) => Handled::Retry(reason),
        Err(Refusal::Invalid(reason)) => {
            if let Some(seq) = seq
                && let Err(err) = store.intake_fail(seq, &reason).await
            {
                return Handled::Retry(format!("mark event {seq} failed: {err}"));
            }
            Handled::Reject(reason)
        }
    }
}
