//! The library half of `ontoloop status`: each service's gRPC health, asked concurrently (over
//! TLS when the `[tls]` client settings say so), and what each tenant asked about holds (the
//! analyst's `TenantSummary`).

use std::time::Duration;

use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_settings::Settings;
use serde::Serialize;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

/// The health of one service.
#[derive(Debug, Serialize)]
pub struct ServiceStatus {
    /// Short service name.
    pub name: &'static str,
    /// Address dialled.
    pub addr: String,
    /// SERVING, NOT_SERVING, SERVICE_UNKNOWN, UNKNOWN or UNREACHABLE.
    pub status: String,
    /// Why the service could not be asked, when unreachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What one tenant holds and how far its intake is behind, or why the analyst could not say.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantStatus {
    /// The tenant.
    pub tenant: String,
    /// Its figures; absent when the call failed.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub summary: Option<TenantFigures>,
    /// Why the analyst could not be asked, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A tenant's figures, as `TenantSummary` answers them (see `analyst.proto`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TenantFigures {
    /// Pages whose version in effect is not a deletion.
    pub pages: u64,
    /// Page versions kept.
    pub page_versions: u64,
    /// Facts that hold now.
    pub facts: u64,
    /// Entities of the graph.
    pub entities: u64,
    /// The ontology's predicates; empty while none is set.
    pub predicates: Vec<String>,
    /// When the newest applied page event was received (RFC 3339); `None` when none was.
    pub last_ingest: Option<String>,
    /// Events accepted, not yet applied or refused.
    pub backlog: u64,
    /// Events the analyst refused.
    pub failed_events: u64,
    /// Commits of the tenant's knowledge.
    pub knowledge_version: u64,
}

impl TenantStatus {
    /// The tenant's status from the analyst's answer.
    pub fn answered(tenant: &str, summary: &v1::TenantSummaryResponse) -> Self {
        Self {
            tenant: tenant.to_owned(),
            summary: Some(TenantFigures {
                pages: summary.pages,
                page_versions: summary.page_versions,
                facts: summary.facts,
                entities: summary.entities,
                predicates: summary.predicates.clone(),
                last_ingest: ontoloop_proto::json::rfc3339(summary.last_ingest.as_ref()),
                backlog: summary.backlog,
                failed_events: summary.failed_events,
                knowledge_version: summary.knowledge_version,
            }),
            error: None,
        }
    }

    /// The tenant's status when the analyst could not be asked.
    pub fn failed(tenant: &str, error: String) -> Self {
        Self {
            tenant: tenant.to_owned(),
            summary: None,
            error: Some(error),
        }
    }
}

/// The services named on the command line; all four when none is named.
pub fn select(names: &[String]) -> anyhow::Result<Vec<ServiceKind>> {
    if names.is_empty() {
        return Ok(ServiceKind::ALL.to_vec());
    }
    names
        .iter()
        .map(|name| {
            ServiceKind::from_name(name).ok_or_else(|| {
                anyhow::anyhow!(
                    "unknown service {name:?} (expected retrieval, firewall, telemetry or analyst)"
                )
            })
        })
        .collect()
}

/// Asks every service, concurrently.
pub async fn check_all(settings: &Settings, timeout: Duration) -> Vec<ServiceStatus> {
    check(settings, &ServiceKind::ALL, timeout).await
}

/// Asks the given services, concurrently.
pub async fn check(
    settings: &Settings,
    kinds: &[ServiceKind],
    timeout: Duration,
) -> Vec<ServiceStatus> {
    let tls = ontoloop_runtime::tls::client_config(&settings.tls).map_err(|err| format!("{err:#}"));
    let checks = kinds.iter().map(|&kind| {
        let port = settings.services.port_of(kind.name()).unwrap_or_default();
        let addr = format!("{}:{port}", settings.services.host);
        check_one(kind, addr, tls.clone(), timeout)
    });
    futures::future::join_all(checks).await
}

async fn check_one(
    kind: ServiceKind,
    addr: String,
    tls: Result<Option<tonic::transport::ClientTlsConfig>, String>,
    timeout: Duration,
) -> ServiceStatus {
    let outcome = match tls {
        Ok(tls) => tokio::time::timeout(timeout, ask(kind, &addr, tls.as_ref())).await,
        Err(err) => Ok(Err(err)),
    };
    let (status, error) = match outcome {
        Ok(Ok(status)) => (status, None),
        Ok(Err(err)) => ("UNREACHABLE".to_owned(), Some(err)),
        Err(_) => (
            "UNREACHABLE".to_owned(),
            Some(format!("no answer within {timeout:?}")),
        ),
    };
    ServiceStatus {
        name: kind.name(),
        addr,
        status,
        error,
    }
}

async fn ask(
    kind: ServiceKind,
    addr: &str,
    tls: Option<&tonic::transport::ClientTlsConfig>,
) -> Result<String, String> {
    let endpoint = ontoloop_runtime::tls::endpoint(addr, tls).map_err(|err| format!("{err:#}"))?;
    let channel = endpoint
        .connect()
        .await
        .map_err(|err| format!("connect: {}", with_sources(&err)))?;
    let mut client = HealthClient::new(channel);
    let response = client
        .check(HealthCheckRequest {
            service: kind.grpc_name().to_owned(),
        })
        .await
        .map_err(|status| format!("health check: {}", status.message()))?;
    let status = tonic_health::pb::health_check_response::ServingStatus::try_from(
        response.into_inner().status,
    )
    .map(|s| s.as_str_name().to_owned())
    .unwrap_or_else(|_| "UNKNOWN".to_owned());
    Ok(status)
}

/// An error and its sources, so a TLS failure says why ("invalid peer certificate: ...").
fn with_sources(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        // Wrappers often repeat their source's message; say it once.
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
