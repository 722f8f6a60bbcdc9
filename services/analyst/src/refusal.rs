//! Why an event could not be applied, and what the events queue does about it: the knowledge
//! writer and the org writer share this discipline. A refused event (it can never apply) settles
//! its intake entry as failed with the reason and goes to the dead-letter queue; a passing failure
//! (store trouble, a concurrent writer) puts it back for another try.
//!
//! Intake sequence numbers belong to a tenant: an event whose `seq` is not an intake event of the
//! event's own tenant (forged or misrouted in an AMQP body) is refused to the dead-letter queue
//! and settles nothing, and every settlement is scoped to the event's tenant in the store.

use ontoloop_core::topics;
use ontoloop_queue::Message;
use ontoloop_runtime::Handled;
use ontoloop_store::{Store, StoreError};

use crate::inbox::inbox_id;

/// Why an event could not be applied (or a tenant's knowledge read); it displays as the reason.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// It can never apply: dead-letter it.
    #[error("{0}")]
    Invalid(String),
    /// Try again after a delay (store trouble); counted towards `queue.max_attempts`.
    #[error("{0}")]
    Passing(String),
    /// A concurrent writer committed first: try again at once, not counted as a failure.
    #[error("{0}")]
    Contended(String),
}

impl From<StoreError> for Refusal {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Conflict { tenant } => {
                Refusal::Contended(format!("tenant {tenant} changed concurrently; retrying"))
            }
            // A NUL byte PostgreSQL refuses in text, say: no retry can ever store it.
            invalid if invalid.is_invalid_data() => {
                Refusal::Invalid(format!("the store refuses the data: {invalid}"))
            }
            other => Refusal::Passing(other.to_string()),
        }
    }
}

/// Whether the event's intake entry is settled already (a redelivery, which must have no second
/// effect). A `seq` that is not an intake event of `tenant` — another tenant's, or none at all —
/// is refused: it never settles, skips or reveals another tenant's event.
async fn already_settled(store: &Store, tenant: &str, seq: Option<i64>) -> Result<bool, Refusal> {
    let Some(seq) = seq else {
        return Ok(false);
    };
    match store.intake_state(tenant, seq).await? {
        Some((state, _)) => Ok(state != ontoloop_store::intake_state::PENDING),
        None => Err(Refusal::Invalid(format!(
            "sequence number {seq} is not an intake event of tenant {tenant}"
        ))),
    }
}

/// Whether the event was applied already, so that a redelivery has no second effect: its intake
/// entry is settled ([`already_settled`]), or `message` (one that came straight from an
/// integration, without a sequence number) was recorded in the inbox by the commit that applied
/// it.
pub(crate) async fn already_applied(
    store: &Store,
    tenant: &str,
    seq: Option<i64>,
    message: Option<&Message>,
) -> Result<bool, Refusal> {
    if already_settled(store, tenant, seq).await? {
        return Ok(true);
    }
    match message {
        Some(message) => Ok(store
            .inbox_contains(topics::EVENTS, &inbox_id(tenant, message))
            .await?),
        None => Ok(false),
    }
}

/// What the queue does with an event of `tenant` whose intake sequence number is `seq` once it
/// was applied (`Ok`) or refused. A refused event's intake entry (of that tenant only) is marked
/// failed first; when even that fails, the event is tried again.
pub(crate) async fn settle(
    store: &Store,
    tenant: &str,
    seq: Option<i64>,
    applied: Result<(), Refusal>,
) -> Handled {
    match applied {
        Ok(()) => Handled::Done,
        Err(Refusal::Passing(reason)) => Handled::Retry(reason),
        Err(Refusal::Contended(reason)) => Handled::Contended(reason),
        Err(Refusal::Invalid(reason)) => {
            if let Some(seq) = seq
                && let Err(err) = store.intake_fail(tenant, seq, &reason).await
            {
                return Handled::Retry(format!("mark event {seq} failed: {err}"));
            }
            Handled::Reject(reason)
        }
    }
}
