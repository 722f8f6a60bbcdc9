//! `ontoloop bench ...`: benchmarks that drive the real services over gRPC.

pub mod auth;
pub mod drift;
pub mod extract;
pub mod fake_model;
pub mod firewall;
pub mod gate;
pub mod memory;
pub mod outage;
pub mod passages;
pub mod plate;
pub mod scale;
pub mod signals;

/// The value at quantile `q` (0 to 1) of `sorted`, by nearest rank (the smallest value with at
/// least `q` of the samples at or below it); the default (zero) when there are none.
pub(crate) fn percentile<T: Copy + Default>(sorted: &[T], q: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = ((sorted.len() as f64 * q.clamp(0.0, 1.0)).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let sorted: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 0.50), 50);
        assert_eq!(percentile(&sorted, 0.99), 99);
        assert_eq!(percentile(&sorted, 1.0), 100);
        assert_eq!(percentile(&sorted, 0.0), 1);
        assert_eq!(percentile(&[7], 0.99), 7);
        assert_eq!(percentile::<u64>(&[], 0.99), 0);
        let durations = [std::time::Duration::from_millis(3)];
        assert_eq!(percentile(&durations, 0.5), durations[0]);
    }
}
