//! Exponential backoff schedules for reconnecting to the store and the broker.
//!
//! Only the schedule lives here; the caller sleeps, so the rule stays free of IO and clocks.

use std::time::Duration;

/// Waits between connection attempts: `initial`, doubling up to `max`, for `attempts` tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    attempts: u32,
}

impl Backoff {
    /// A schedule of `attempts` tries; at least one try is always made.
    pub fn new(initial: Duration, max: Duration, attempts: u32) -> Self {
        Self {
            initial,
            max: max.max(initial),
            attempts: attempts.max(1),
        }
    }

    /// How many tries in all.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The wait after failed try number `attempt` (1-based), or `None` when no try is left.
    pub fn delay_after(&self, attempt: u32) -> Option<Duration> {
        if attempt >= self.attempts {
            return None;
        }
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        Some(self.initial.saturating_mul(factor).min(self.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_stops() {
        let backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(350), 5);
        let waits: Vec<_> = (1..=5).map(|n| backoff.delay_after(n)).collect();
        assert_eq!(
            waits,
            vec![
                Some(Duration::from_millis(100)),
                Some(Duration::from_millis(200)),
                Some(Duration::from_millis(350)),
                Some(Duration::from_millis(350)),
                None,
            ]
        );
    }

    #[test]
    fn always_tries_once() {
        let backoff = Backoff::new(Duration::ZERO, Duration::ZERO, 0);
        assert_eq!(backoff.attempts(), 1);
        assert_eq!(backoff.delay_after(1), None);
    }
}
