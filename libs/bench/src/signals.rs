//! The signals benchmark: N failure signals published to RabbitMQ (publisher confirms, many in
//! flight) and consumed by the analyst, each recorded durably before its ack. Throughput is
//! measured end to end, from the first publish to the moment the store holds all N; `lost`
//! counts signals never recorded, `duplicated` signals whose effect ran more than once. With
//! `preload`, every signal is published (and confirmed) before the analyst starts, and the rate
//! is the analyst's alone: from its start to the moment the store holds all N.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use ontoloop_core::topics;
use ontoloop_queue::{AmqpQueue, Message, Queue};
use ontoloop_settings::{QueueBackend, Settings};
use serde::Serialize;

use ontoloop::up::Local;

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct SignalsReport {
    /// Signals published.
    pub signals: u64,
    /// Signals per second, end to end.
    pub per_second: f64,
    /// Signals never recorded.
    pub lost: u64,
    /// Signals whose effect ran more than once.
    pub duplicated: u64,
    /// Signals per second the publisher got confirmed (not in the JSON).
    #[serde(skip)]
    pub published_per_second: f64,
}

/// Signals published at once, awaiting their confirms (more makes the broker throttle).
const IN_FLIGHT: usize = 1024;

/// Runs the benchmark on the RabbitMQ and store the settings name, under a fresh queue
/// namespace so a running system on the same broker is not disturbed.
pub async fn run(
    mut settings: Settings,
    count: u64,
    preload: bool,
) -> anyhow::Result<SignalsReport> {
    let QueueBackend::Amqp(url) = settings.queue.backend() else {
        anyhow::bail!("the signals benchmark measures RabbitMQ: pass --amqp-url");
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    settings.queue.namespace = format!("bench-{}-{nanos}.", std::process::id());
    // Every signal is low severity: the analyst records and examines it, and heals nothing.
    let publisher = AmqpQueue::connect(&url, &settings.queue)
        .await
        .context("connect the publisher")?;
    let mut local = if preload {
        None
    } else {
        Some(Local::start(settings.clone()).await?)
    };
    let metrics = ontoloop_observability::metrics::global();
    let processed = || {
        ontoloop_core::SignalType::ALL
            .iter()
            .map(|kind| {
                metrics.value(
                    "ontoloop_analyst_signals_total",
                    &[("type", kind.name()), ("severity", "low")],
                )
            })
            .sum::<f64>()
    };
    let before = processed();
    let recorded_before = match &local {
        Some(local) => local.ctx.store.inbox_count(topics::SIGNALS).await?,
        None => 0,
    };
    let at = chrono::Utc::now().to_rfc3339();
    let started = Instant::now();
    let publishing = futures::stream::iter(0..count)
        .map(|i| {
            let (publisher, at) = (&publisher, &at);
            async move {
                let kind = ontoloop_core::SignalType::ALL[(i % 5) as usize].name();
                let (subject, agent) = (i % 1000, i % 50);
                // The body a reporter publishes, written out directly (the publisher here
                // stands in for a fleet of agents and should cost as little as one).
                let body = format!(
                    r#"{{"tenant":"bench","type":"{kind}","query":"what about subject {subject}?","entity":"subject {subject}","sector":"bench","relationship":"bench","agent_id":"agent-{agent}","idempotency_key":"bench-{i}","severity":"low","at":"{at}"}}"#
                );
                publisher
                    .publish(
                        topics::SIGNALS,
                        Message::with_id(format!("bench-{nanos}-{i}"), body),
                    )
                    .await
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .fold(Ok(()), |acc, r| async move { acc.and(r) });
    publishing.await.context("publish the signals")?;
    let published_per_second = count as f64 / started.elapsed().as_secs_f64();
    let (local, started, recorded_before) = match local.take() {
        Some(local) => (local, started, recorded_before),
        None => {
            let started = Instant::now();
            let local = Local::start(settings.clone()).await?;
            let before = local.ctx.store.inbox_count(topics::SIGNALS).await?;
            (local, started, before)
        }
    };
    // The analyst counts each signal after its batch is committed; watching that counter costs
    // nothing, where counting rows in the store would compete with the analyst for the disk
    // and the CPU. The store is counted once at the end, to find what was lost.
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline && ((processed() - before) as u64) < count {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = started.elapsed();
    // Let any redelivery that might run an effect twice arrive before counting effects.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let effects = (processed() - before).max(0.0) as u64;
    let recorded = local.ctx.store.inbox_count(topics::SIGNALS).await? - recorded_before;
    for queue in [topics::SIGNALS, topics::EVENTS] {
        let _ = publisher.delete(queue).await;
    }
    local.stop().await?;
    Ok(SignalsReport {
        signals: count,
        per_second: recorded.min(effects) as f64 / elapsed.as_secs_f64(),
        lost: count.saturating_sub(recorded),
        duplicated: effects.saturating_sub(count),
        published_per_second,
    })
}
