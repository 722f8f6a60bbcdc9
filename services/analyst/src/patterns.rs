//! The patterns page of the loop: the signals the analyst recorded in the sliding window, grouped
//! into patterns; their status (healed, proposed, open) is what the healer recorded.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use ontoloop_core::patterns::{ObservedSignal, Pattern, PatternKind, cluster};
use ontoloop_core::{Severity, SignalType, topics};
use ontoloop_runtime::Context;
use ontoloop_store::PatternStatus;

/// The tenant's patterns over the configured window, most severe first.
pub async fn patterns(
    ctx: &Context,
    tenant: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Pattern>, ontoloop_store::StoreError> {
    let settings = &ctx.settings.signals;
    let recorded = ctx
        .store
        .inbox_since(topics::SIGNALS, now - settings.window())
        .await?;
    let signals: Vec<ObservedSignal> = recorded
        .iter()
        .filter_map(|m| {
            let (owner, mut signal, _) = parse_signal(m.body.as_bytes())?;
            if signal.at == DateTime::<Utc>::MIN_UTC {
                signal.at = m.received_at;
            }
            (owner == tenant).then_some(signal)
        })
        .collect();
    Ok(cluster(&signals, settings))
}

/// The tenant's patterns with the status the healer recorded (`open` when it recorded none).
pub async fn with_status(
    ctx: &Context,
    tenant: &str,
    now: DateTime<Utc>,
) -> Result<Vec<(Pattern, PatternStatus)>, ontoloop_store::StoreError> {
    let found = patterns(ctx, tenant, now).await?;
    let statuses = ctx.store.pattern_statuses(tenant).await?;
    Ok(found
        .into_iter()
        .map(|p| {
            let status = statuses
                .iter()
                .find(|s| s.kind == p.kind.name() && s.key == p.key)
                .cloned()
                .unwrap_or_else(|| PatternStatus {
                    kind: p.kind.name().to_owned(),
                    key: p.key.clone(),
                    status: "open".to_owned(),
                    action: String::new(),
                    signal_to_heal_ms: None,
                });
            (p, status)
        })
        .collect())
}

/// A signal message's tenant and content, if the body is one. The subject is what the pattern
/// kind is about: the relationship for a missing relationship, the sector for a stale sector,
/// else the entity (each falling back to the others). A body without a time gets `MIN_UTC`; one
/// without the severity the intake computed counts as low.
pub fn parse_signal(body: &[u8]) -> Option<(String, ObservedSignal, Severity)> {
    let body: SignalBody<'_> = serde_json::from_slice(body).ok()?;
    let kind = SignalType::from_name(&body.kind)?;
    let field = |value: &Option<Cow<'_, str>>| {
        value
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let (entity, relationship, sector) = (
        field(&body.entity),
        field(&body.relationship),
        field(&body.sector),
    );
    let subject = match PatternKind::of(kind) {
        PatternKind::MissingRelationshipType => relationship.or(entity).or(sector),
        PatternKind::StaleSector => sector.or(entity).or(relationship),
        PatternKind::MissingEntity | PatternKind::Contradiction => {
            entity.or(relationship).or(sector)
        }
    }?;
    let agent = field(&body.agent_id).unwrap_or_else(|| "unknown".to_owned());
    let at = field(&body.at)
        .and_then(|at| DateTime::parse_from_rfc3339(&at).ok())
        .map_or(DateTime::<Utc>::MIN_UTC, |at| at.with_timezone(&Utc));
    let severity = field(&body.severity)
        .and_then(|s| Severity::from_name(&s))
        .unwrap_or(Severity::Low);
    Some((
        body.tenant.into_owned(),
        ObservedSignal {
            kind,
            subject,
            agent,
            at,
        },
        severity,
    ))
}

/// The fields of a signal message the analyst reads; the rest are ignored.
#[derive(serde::Deserialize)]
struct SignalBody<'a> {
    #[serde(borrow)]
    tenant: Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    entity: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    relationship: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    sector: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    agent_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    at: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    severity: Option<Cow<'a, str>>,
}
