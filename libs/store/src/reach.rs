//! Whether PostgreSQL answered lately. A write (or a read of a tenant's knowledge) that cannot
//! reach it — no connection to be had, or one that broke — marks it away; from then on an intake
//! append, or a read model's read of the store, is refused at once instead of each waiting out
//! the connect timeout, so a client learns of an outage promptly and retries, and a read model's
//! caller answers from the model as it stands. [`HOLD_OFF`] after the last failure one call (the
//! probe) tries for real while the rest are still refused; the first that gets through clears
//! the mark. Under load, letting every call try after the hold-off made each wait out the
//! connect timeout until one failed again (four refusals in five were slow in the drill at
//! 50 events/s). The embedded SQLite is never away: nothing is marked there.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sea_orm::DbErr;

use crate::StoreError;

/// How long after a call found the database away the next is refused without trying.
pub const HOLD_OFF: Duration = Duration::from_secs(1);

/// How long a probe is waited for before another may go: longer than a connect timeout, so only
/// a probe whose caller went away (its call cancelled before it noted how it went) is given up.
const PROBE_LIMIT: Duration = Duration::from_secs(15);

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
    /// When the call trying for real while the others are refused was let through.
    probe: Option<Instant>,
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
                        was.probe = None;
                    }
                    None => {
                        tracing::warn!(error = %err, "the database is unreachable");
                        *away = Some(Away {
                            since: now,
                            last: now,
                            reason: err.to_string(),
                            probe: None,
                        });
                    }
                }
            }
            Err(_) => {
                // The database answered (with an error of another kind): the probe, if this
                // was it, is over, and the next call after the hold-off may try.
                let mut away = self.away.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(was) = away.as_mut() {
                    was.probe = None;
                }
            }
        }
    }

    /// Refused at once while the database is marked away, except for one call (the probe) at a
    /// time once [`HOLD_OFF`] has passed since the last failure: this caller, which must then
    /// note how its call went.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        self.refuse(true)
    }

    /// As [`Reach::check`], without making the caller the probe: for a caller about to queue
    /// for a call that checks for itself (a group of appends), so that it never waits behind a
    /// probe only to be refused.
    pub(crate) fn peek(&self) -> Result<(), StoreError> {
        self.refuse(false)
    }

    fn refuse(&self, probe: bool) -> Result<(), StoreError> {
        let mut away = self.away.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(was) = away.as_mut() else {
            return Ok(());
        };
        let probing = was.probe.is_some_and(|at| at.elapsed() < PROBE_LIMIT);
        if was.last.elapsed() < HOLD_OFF || probing {
            return Err(StoreError::Away {
                for_ms: was.since.elapsed().as_millis() as u64,
                reason: was.reason.clone(),
            });
        }
        if probe {
            was.probe = Some(Instant::now());
        }
        Ok(())
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
        // After the hold-off, one call tries for real; the others are refused while it does.
        if let Some(away) = reach.away.lock().expect("lock").as_mut() {
            away.last -= HOLD_OFF;
        }
        assert!(reach.peek().is_ok(), "a call may go");
        assert!(reach.peek().is_ok(), "a peek never takes the probe's turn");
        assert!(reach.check().is_ok(), "the probe");
        assert!(reach.peek().is_err(), "refused while the probe is out");
        assert!(reach.check().is_err(), "refused while the probe is out");
        // The probe failed: refused for another hold-off, then one more probe.
        reach.note::<()>(&Err(DbErr::ConnectionAcquire(
            sea_orm::error::ConnAcquireErr::Timeout,
        )));
        assert!(reach.check().is_err());
        if let Some(away) = reach.away.lock().expect("lock").as_mut() {
            away.last -= HOLD_OFF;
        }
        assert!(reach.check().is_ok(), "the next probe");
        // A probe whose caller went away without a word is given up after its limit.
        if let Some(away) = reach.away.lock().expect("lock").as_mut() {
            away.probe = away.probe.map(|at| at - PROBE_LIMIT);
        }
        assert!(reach.check().is_ok(), "a probe given up");
        reach.note(&Ok(()));
        assert!(reach.away.lock().expect("lock").is_none());
    }
}
