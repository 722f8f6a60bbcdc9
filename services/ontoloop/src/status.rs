//! The library half of `ontoloop status`: each service's gRPC health, asked concurrently.

use std::time::Duration;

use ontoloop_core::ServiceKind;
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
    let checks = kinds.iter().map(|&kind| {
        let port = settings.services.port_of(kind.name()).unwrap_or_default();
        let addr = format!("{}:{port}", settings.services.host);
        check_one(kind, addr, timeout)
    });
    futures::future::join_all(checks).await
}

async fn check_one(kind: ServiceKind, addr: String, timeout: Duration) -> ServiceStatus {
    let outcome = tokio::time::timeout(timeout, ask(kind, &addr)).await;
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

async fn ask(kind: ServiceKind, addr: &str) -> Result<String, String> {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|err| format!("bad address {addr}: {err}"))?;
    let channel = endpoint
        .connect()
        .await
        .map_err(|err| format!("connect: {err}"))?;
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
