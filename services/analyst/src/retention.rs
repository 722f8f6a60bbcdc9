//! The retention pass: every `retention.every_minutes` the analyst deletes what the store keeps
//! only for a while (`[retention]`; what may never go is `ontoloop_store::retention`'s rule),
//! at most `retention.max_rows_per_pass` rows of each table per pass, logs what it deleted and
//! counts it in `ontoloop_retention_pruned_total{table}`. A store that fails is logged and tried
//! again on the next pass; it never stops the analyst.

use chrono::{DateTime, Utc};
use ontoloop_runtime::{CancellationToken, Context};
use ontoloop_settings::RetentionSettings;
use ontoloop_store::{Retained, Store};

/// The analyst's retention task ([`run`] on the context's store and settings).
pub fn task(ctx: &Context) -> impl FnOnce(CancellationToken) -> BoxFuture + Send + 'static {
    let (store, settings) = (ctx.store.clone(), ctx.settings.retention.clone());
    move |cancel| Box::pin(run(store, settings, cancel))
}

type BoxFuture = std::pin::Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

/// Runs a pass at once, then one every `settings.every_minutes`, until `cancel`.
pub async fn run(
    store: Store,
    settings: RetentionSettings,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    loop {
        pass(&store, &settings, Utc::now()).await;
        tokio::select! {
            () = cancel.cancelled() => return Ok(()),
            () = tokio::time::sleep(settings.every()) => {}
        }
    }
}

/// One pass at `now`: per table, the rows deleted (tables kept forever, or whose delete
/// failed, are absent).
pub async fn pass(
    store: &Store,
    settings: &RetentionSettings,
    now: DateTime<Utc>,
) -> Vec<(Retained, u64)> {
    let mut pruned = Vec::new();
    for table in Retained::ALL {
        let Some(before) = cutoff(settings, table, now) else {
            continue;
        };
        match store.prune(table, before, settings.max_rows_per_pass).await {
            Ok(rows) => {
                if rows > 0 {
                    tracing::info!(table = table.name(), rows, %before, "pruned expired rows");
                    ontoloop_observability::metrics::global().add(
                        "ontoloop_retention_pruned_total",
                        "Rows the retention pass deleted, by table.",
                        &[("table", table.name())],
                        rows as f64,
                    );
                }
                if rows == settings.max_rows_per_pass {
                    tracing::info!(
                        table = table.name(),
                        "more rows are due than one pass deletes; the next pass goes on"
                    );
                }
                pruned.push((table, rows));
            }
            Err(err) => {
                tracing::warn!(table = table.name(), error = %err, "cannot prune expired rows");
            }
        }
    }
    pruned
}

/// Rows of `table` older than this are due at `now`; `None` when the table is kept forever.
fn cutoff(
    settings: &RetentionSettings,
    table: Retained,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let days = match table {
        Retained::Inbox => settings.inbox_days,
        Retained::SignalIntake => settings.signal_intake_days,
        Retained::IntakeEvent => settings.intake_event_days,
        Retained::OrgChange => settings.org_change_days,
    };
    let keep = chrono::Duration::from_std(RetentionSettings::keep(days)?).ok()?;
    now.checked_sub_signed(keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> RetentionSettings {
        RetentionSettings {
            every_minutes: 60,
            max_rows_per_pass: 10,
            inbox_days: 7,
            signal_intake_days: 30,
            intake_event_days: 0,
            org_change_days: u64::MAX,
        }
    }

    #[test]
    fn each_table_has_its_own_cutoff_and_0_days_keeps_forever() {
        let now = Utc::now();
        let settings = settings();
        assert_eq!(
            cutoff(&settings, Retained::Inbox, now),
            Some(now - chrono::Duration::days(7))
        );
        assert_eq!(
            cutoff(&settings, Retained::SignalIntake, now),
            Some(now - chrono::Duration::days(30))
        );
        assert_eq!(cutoff(&settings, Retained::IntakeEvent, now), None);
        // A window beyond any date keeps everything rather than overflowing.
        assert_eq!(cutoff(&settings, Retained::OrgChange, now), None);
    }
}
