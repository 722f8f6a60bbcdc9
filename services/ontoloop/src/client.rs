//! gRPC clients of the four services, dialled from settings or from a running embedded system.

use std::net::SocketAddr;

use anyhow::Context as _;
use ontoloop_core::{Caller, ServiceKind};
use ontoloop_proto::v1;
use ontoloop_proto::v1::analyst_service_client::AnalystServiceClient;
use ontoloop_proto::v1::firewall_service_client::FirewallServiceClient;
use ontoloop_proto::v1::retrieval_service_client::RetrievalServiceClient;
use ontoloop_proto::v1::telemetry_service_client::TelemetryServiceClient;
use ontoloop_settings::Settings;
use tonic::transport::{Channel, Endpoint};

/// Clients of the services the CLI talks to.
#[derive(Clone)]
pub struct Clients {
    /// Retrieval.
    pub retrieval: RetrievalServiceClient<Channel>,
    /// Telemetry.
    pub telemetry: TelemetryServiceClient<Channel>,
    /// Analyst.
    pub analyst: AnalystServiceClient<Channel>,
    /// Firewall.
    pub firewall: FirewallServiceClient<Channel>,
}

async fn channel(addr: &str) -> anyhow::Result<Channel> {
    Endpoint::from_shared(format!("http://{addr}"))
        .with_context(|| format!("bad address {addr}"))?
        .connect()
        .await
        .with_context(|| format!("connect to {addr} (is `ontoloop up` running?)"))
}

impl Clients {
    /// Dials the addresses the settings give.
    pub async fn from_settings(settings: &Settings) -> anyhow::Result<Self> {
        let addr = |kind: ServiceKind| {
            format!(
                "{}:{}",
                settings.services.host,
                settings.services.port_of(kind.name()).unwrap_or_default()
            )
        };
        Self::dial(
            &addr(ServiceKind::Retrieval),
            &addr(ServiceKind::Telemetry),
            &addr(ServiceKind::Analyst),
            &addr(ServiceKind::Firewall),
        )
        .await
    }

    /// Dials bound addresses (an embedded system).
    pub async fn from_addrs(addrs: &[(ServiceKind, SocketAddr)]) -> anyhow::Result<Self> {
        let addr = |kind: ServiceKind| {
            addrs
                .iter()
                .find(|(k, _)| *k == kind)
                .map(|(_, a)| a.to_string())
                .unwrap_or_default()
        };
        Self::dial(
            &addr(ServiceKind::Retrieval),
            &addr(ServiceKind::Telemetry),
            &addr(ServiceKind::Analyst),
            &addr(ServiceKind::Firewall),
        )
        .await
    }

    async fn dial(
        retrieval: &str,
        telemetry: &str,
        analyst: &str,
        firewall: &str,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            retrieval: RetrievalServiceClient::new(channel(retrieval).await?),
            telemetry: TelemetryServiceClient::new(channel(telemetry).await?),
            analyst: AnalystServiceClient::new(channel(analyst).await?),
            firewall: FirewallServiceClient::new(channel(firewall).await?),
        })
    }
}

/// The wire form of a caller.
pub fn caller(caller: &Caller) -> Option<v1::Caller> {
    Some(v1::Caller::from(caller))
}
