//! The patterns page of the loop: the signals the analyst recorded in the sliding window, grouped
//! into patterns. Healing them is not built yet; every pattern is reported `open`.

use chrono::{DateTime, Utc};
use ontoloop_core::patterns::{ObservedSignal, Pattern, PatternKind, cluster};
use ontoloop_core::{SignalType, topics};
use ontoloop_runtime::Context;

/// The tenant's patterns over the configured window, most severe first.
pub async fn patterns(
    ctx: &Context,
    tenant: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Pattern>, ontoloop_store::StoreError> {
    let settings = &ctx.settings.signals;
    let window =
        chrono::Duration::seconds(i64::try_from(settings.window_secs).unwrap_or(i64::MAX / 1000));
    let recorded = ctx.store.inbox_since(topics::SIGNALS, now - window).await?;
    let signals: Vec<ObservedSignal> = recorded
        .iter()
        .filter_map(|m| {
            let (owner, mut signal) = parse_signal(m.body.as_bytes())?;
            if signal.at == DateTime::<Utc>::MIN_UTC {
                signal.at = m.received_at;
            }
            (owner == tenant).then_some(signal)
        })
        .collect();
    let thresholds = ontoloop_runtime::severity_thresholds(settings);
    Ok(cluster(&signals, &thresholds))
}

/// A signal message's tenant and content, if the body is one. The subject is what the pattern
/// kind is about: the relationship for a missing relationship, the sector for a stale sector,
/// else the entity (each falling back to the others). A body without a time gets `MIN_UTC`.
pub fn parse_signal(body: &[u8]) -> Option<(String, ObservedSignal)> {
    let body: serde_json::Value = serde_json::from_slice(body).ok()?;
    let tenant = body.get("tenant")?.as_str()?.to_owned();
    let kind = SignalType::from_name(body.get("type")?.as_str()?)?;
    let field = |name: &str| {
        body.get(name)
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let order: [&str; 3] = match PatternKind::of(kind) {
        PatternKind::MissingRelationshipType => ["relationship", "entity", "sector"],
        PatternKind::StaleSector => ["sector", "entity", "relationship"],
        PatternKind::MissingEntity | PatternKind::Contradiction => {
            ["entity", "relationship", "sector"]
        }
    };
    let subject = order.iter().find_map(|name| field(name))?.to_owned();
    let agent = field("agent_id").unwrap_or("unknown").to_owned();
    let at = field("at")
        .and_then(|at| DateTime::parse_from_rfc3339(at).ok())
        .map_or(DateTime::<Utc>::MIN_UTC, |at| at.with_timezone(&Utc));
    Some((
        tenant,
        ObservedSignal {
            kind,
            subject,
            agent,
            at,
        },
    ))
}
