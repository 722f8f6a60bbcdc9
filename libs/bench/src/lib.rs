//! The benchmarks (`ontoloop-bench`, also run as `ontoloop bench ...`): each drives the real
//! services over gRPC on a system of its own, and `gen-org` loads a generated organisation.
//! A crate of its own so that the shipped `ontoloop` binary holds no benchmark and links no
//! test kit; the binary (`main.rs`) parses arguments, calls these and prints.

pub mod auth;
pub mod drift;
pub mod extract;
pub mod fake_model;
pub mod firewall;
pub mod gate;
pub mod grow;
pub mod ingest;
pub mod memory;
pub mod org;
pub mod outage;
pub mod overview;
pub mod passages;
pub mod plate;
pub mod scale;
pub mod signals;
pub mod store_outage;

/// How many times a call the system could not answer yet (UNAVAILABLE, DEADLINE_EXCEEDED) is
/// made again, a second apart: an hour of patience for a slow machine.
pub(crate) const MAX_WAITS: u32 = 3_600;

/// Makes the call `call` makes until it answers. The system being behind (an event not applied
/// yet, or a call past its deadline on a busy machine) is waited for, a second at a time up to
/// [`MAX_WAITS`] times, never aborted on; any other failure is an error saying what was `doing`.
pub(crate) async fn patiently<T, F, Fut>(doing: &'static str, mut call: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let mut waited = 0;
    loop {
        match call().await {
            Ok(response) => return Ok(response.into_inner()),
            Err(status)
                if matches!(
                    status.code(),
                    tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
                ) && waited < MAX_WAITS =>
            {
                waited += 1;
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
            Err(status) => return Err(anyhow::Error::new(status).context(doing)),
        }
    }
}

/// Pushes `event` for `caller` through the telemetry intake; its intake sequence number.
pub(crate) async fn push(
    clients: &mut ontoloop::client::Clients,
    caller: &ontoloop_core::Caller,
    event: &ontoloop_core::events::Event,
    at: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<u64> {
    use anyhow::Context as _;
    let ack = clients
        .telemetry
        .push_event(ontoloop_proto::convert::event_to_wire(caller, event, at))
        .await
        .with_context(|| format!("push {} event", event.kind()))?;
    Ok(ack.into_inner().sequence)
}

/// `text` as a part of a tenant's name: ASCII letters and digits lower-cased, anything else `-`.
pub(crate) fn slug(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

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
