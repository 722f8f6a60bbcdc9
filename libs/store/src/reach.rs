//! Whether PostgreSQL answered lately. A write (or a read of a tenant's knowledge version) that
//! cannot reach it — no connection to be had, or one that broke — marks it away; for
//! [`HOLD_OFF`] after, an intake append is refused at once instead of each waiting out the
//! connect timeout, so a client learns of an outage promptly and retries, and a read model's
//! caller answers from the model as it stands; the first call after that tries for real, and any
//! that gets through clears the mark. The embedded SQLite is never away: nothing is marked
//! there.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sea_orm::DbErr;

use crate::StoreError;

/// How long after a call found the database away the next is refused without trying.
pub const HOLD_OFF: Duration = Duration::from_secs(1);

/// When the database was first found away in this outage, when last, and why.
#[derive(Debug, Default)]
pub(crate) struct Reach {
    away: Mutex<Option<Away>>,
}

#[derive(Debug)]
struct Away {
    since: Instant,
    last: Instant,
    reason: String,
}

impl Reach {
    /// Notes how a write went: a connection failure marks the database away, success clears
    /// the mark; any other error says nothing of reachability.
    pub(crate) fn note<T>(&self, result: &Result<T, DbErr>) {
        match result {
            Ok(_) => {
                let mut away = self.away.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(was) = away.take() {
                    tracing::info!(
                        away_ms = was.since.elapsed().as_millis() as u64,
                        "the database answers again"
                    );
                }
            }
            Err(err @ (DbErr::ConnectionAcquire(_) | DbErr::Conn(_))) => {
                let now = Instant::now();
                let mut away = self.away.lock().unwrap_or_else(PoisonError::into_inner);
                match &mut *away {
                    Some(was) => {
                        was.last = now;
                        was.reason = err.to_string();
                    }
                    None => {
                        tracing::warn!(error = %err, "the database is unreachable");
                        *away = Some(Away {
                            since: now,
                            last: now,
                            reason: err.to_string(),
                        });
                    }
                }
            }
            Err(_) => {}
        }
    }

    /// Refused at once while a write found the database away less than [`HOLD_OFF`] ago.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        let away = self.away.lock().unwrap_or_else(PoisonError::into_inner);
        match &*away {
            Some(was) if was.last.elapsed() < HOLD_OFF => Err(StoreError::Away {
                for_ms: was.since.elapsed().as_millis() as u64,
                reason: was.reason.clone(),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_failure_refuses_appends_for_a_while_and_success_clears_it() {
        let reach = Reach::default();
        assert!(reach.check().is_ok());
        reach.note::<()>(&Err(DbErr::Custom("a query failed".into())));
        assert!(
            reach.check().is_ok(),
            "only connection failures mark it away"
        );
        reach.note::<()>(&Err(DbErr::ConnectionAcquire(
            sea_orm::error::ConnAcquireErr::Timeout,
        )));
        match reach.check() {
            Err(StoreError::Away { reason, .. }) => assert!(reason.contains("acquire"), "{reason}"),
            other => panic!("{other:?}"),
        }
        // After the hold-off, the next append tries for real.
        if let Some(away) = reach.away.lock().expect("lock").as_mut() {
            away.last -= HOLD_OFF;
        }
        assert!(reach.check().is_ok());
        reach.note(&Ok(()));
        assert!(reach.away.lock().expect("lock").is_none());
    }
}
