//! The patterns page of the loop: the tenant's signals taken in over the sliding window, grouped
//! into patterns; their status (healed, proposed, open) is what the healer recorded. The window
//! is read from the signal intake log for the one tenant through its (tenant, received_at)
//! index, so a tenant's page never reads other tenants' signals.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use ontoloop_core::patterns::{ObservedSignal, Pattern, PatternKind, cluster};
use ontoloop_core::{Severity, SignalType};
use ontoloop_runtime::Context;
use ontoloop_store::{PatternStatus, WindowSignal};

/// The tenant's patterns over the configured window, most severe first; missing relationship
/// types clustered by the relation their questions ask, by meaning with the sentence encoder
/// when one is loaded (off the async workers), else by stems.
pub async fn patterns(
    ctx: &Context,
    tenant: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Pattern>, ontoloop_store::StoreError> {
    let settings = &ctx.settings.signals;
    let recorded = ctx
        .store
        .signals_in_window(
            tenant,
            now - settings.window(),
            ontoloop_store::MAX_WINDOW_SIGNALS,
        )
        .await?;
    let signals: Vec<ObservedSignal> = recorded.iter().filter_map(observed).collect();
    let Some(encoder) = ctx.extraction().await.encoder().cloned() else {
        return Ok(cluster(&signals, settings, None));
    };
    let (signals, thresholds) = (std::sync::Arc::new(signals), *settings);
    let shared = std::sync::Arc::clone(&signals);
    let clustered =
        tokio::task::spawn_blocking(move || cluster(&shared, &thresholds, Some(encoder.as_ref())))
            .await;
    Ok(clustered.unwrap_or_else(|err| {
        tracing::warn!(tenant, error = %err, "cannot cluster the patterns by meaning; by stems");
        cluster(&signals, &thresholds, None)
    }))
}

/// A recorded signal as the clustering sees it: read from the message that announced it (as the
/// healer read it), or, for a row recorded before the intake kept messages, from its columns.
fn observed(row: &WindowSignal) -> Option<ObservedSignal> {
    if let Some(body) = &row.body {
        // The intake wrote the message; one that is not a signal names no subject to group by.
        let (_, mut signal, _) = parse_signal(body.as_bytes()).ok()?;
        if signal.at == DateTime::<Utc>::MIN_UTC {
            signal.at = row.received_at;
        }
        return Some(signal);
    }
    Some(ObservedSignal {
        kind: SignalType::from_name(&row.signal_type)?,
        subject: row.subject.clone(),
        agent: row.agent_id.clone(),
        at: row.received_at,
        query: String::new(),
    })
    .filter(|signal| !signal.subject.is_empty())
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

/// Why a message on the signals queue is not a signal.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    /// Not the shape of a signal, or a type or severity no signal has.
    #[error("not a signal: {0}")]
    Malformed(#[from] serde_json::Error),
    /// A signal about nothing.
    #[error("a signal names no entity, relationship or sector")]
    NoSubject,
}

/// A signal message's tenant and content. The subject is what the pattern kind is about: the
/// relationship for a missing relationship, the sector for a stale sector, else the entity (each
/// falling back to the others). A body without a time gets `MIN_UTC`; one without the severity
/// the intake computed counts as low. A type or severity no signal has is an error, never a
/// signal dropped or counted as another.
pub fn parse_signal(body: &[u8]) -> Result<(String, ObservedSignal, Severity), SignalError> {
    let body: SignalBody<'_> = serde_json::from_slice(body)?;
    let kind = body.kind;
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
    }
    .ok_or(SignalError::NoSubject)?;
    let agent = field(&body.agent_id).unwrap_or_else(|| "unknown".to_owned());
    let at = field(&body.at)
        .and_then(|at| DateTime::parse_from_rfc3339(&at).ok())
        .map_or(DateTime::<Utc>::MIN_UTC, |at| at.with_timezone(&Utc));
    let severity = body.severity.unwrap_or(Severity::Low);
    Ok((
        body.tenant.into_owned(),
        ObservedSignal {
            kind,
            subject,
            agent,
            at,
            query: field(&body.query).unwrap_or_default(),
        },
        severity,
    ))
}

/// The fields of a signal message the analyst reads; the rest are ignored.
#[derive(serde::Deserialize)]
struct SignalBody<'a> {
    #[serde(borrow)]
    tenant: Cow<'a, str>,
    #[serde(rename = "type")]
    kind: SignalType,
    #[serde(default, borrow)]
    entity: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    relationship: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    sector: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    query: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    agent_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    at: Option<Cow<'a, str>>,
    #[serde(default)]
    severity: Option<Severity>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_body_is_read_or_refused_with_the_reason() {
        let (tenant, signal, severity) = parse_signal(
            br#"{"tenant":"acme","type":"relationship_unknown","entity":"Kite",
                 "relationship":"owned_by","severity":"high"}"#,
        )
        .expect("a signal");
        assert_eq!(
            (
                tenant.as_str(),
                signal.kind,
                signal.subject.as_str(),
                severity
            ),
            (
                "acme",
                SignalType::RelationshipUnknown,
                "owned_by",
                Severity::High
            )
        );
        assert_eq!(signal.query, "", "no question reported");
        let (_, signal, severity) = parse_signal(
            br#"{"tenant":"acme","type":"entity_missing","entity":"Kite","query":"Who owns Kite?"}"#,
        )
        .expect("a signal without a severity");
        assert_eq!(severity, Severity::Low);
        // The question as asked: its capitalised words tell the names from the relation.
        assert_eq!(signal.query, "Who owns Kite?");
        let typo = parse_signal(br#"{"tenant":"acme","type":"entity_misssing","entity":"Kite"}"#)
            .expect_err("no such type");
        assert!(matches!(typo, SignalError::Malformed(_)), "{typo}");
        assert!(typo.to_string().contains("entity_misssing"), "{typo}");
        let severity = parse_signal(
            br#"{"tenant":"acme","type":"entity_missing","entity":"Kite","severity":"urgent"}"#,
        )
        .expect_err("no such severity");
        assert!(matches!(severity, SignalError::Malformed(_)), "{severity}");
        let nothing = parse_signal(br#"{"tenant":"acme","type":"entity_missing","entity":" "}"#)
            .expect_err("no subject");
        assert!(matches!(nothing, SignalError::NoSubject), "{nothing}");
    }
}
