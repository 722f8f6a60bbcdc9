//! gRPC clients of the four services, dialled from settings or from a running embedded system.
//! Every call carries `authorization: Bearer $ONTOLOOP_TOKEN` when that variable is set; with
//! `[tls]` client settings the channels are `https://`, trusting `tls.ca_file` only and presenting
//! `tls.client_cert_file` for mTLS.

use std::net::SocketAddr;

use anyhow::Context as _;
use ontoloop_core::{Caller, ServiceKind};
use ontoloop_proto::v1;
use ontoloop_proto::v1::analyst_service_client::AnalystServiceClient;
use ontoloop_proto::v1::firewall_service_client::FirewallServiceClient;
use ontoloop_proto::v1::retrieval_service_client::RetrievalServiceClient;
use ontoloop_proto::v1::telemetry_service_client::TelemetryServiceClient;
use ontoloop_settings::{Settings, TlsSettings};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, ClientTlsConfig};

/// The environment variable whose token the clients send as their bearer.
pub const TOKEN_VAR: &str = "ONTOLOOP_TOKEN";

/// Adds `authorization: Bearer <token>` to every call, when there is a token.
#[derive(Clone, Default)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Bearer {
    /// The bearer of `token`; a token that cannot be a header value is an error.
    pub fn new(token: &str) -> anyhow::Result<Self> {
        let value = format!("Bearer {}", token.trim())
            .parse()
            .with_context(|| format!("{TOKEN_VAR} is not a valid header value"))?;
        Ok(Self(Some(value)))
    }

    /// Whether calls carry a token.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// The bearer of `$ONTOLOOP_TOKEN`, or none when it is unset or empty.
    pub fn from_env() -> anyhow::Result<Self> {
        match std::env::var(TOKEN_VAR) {
            Ok(token) if !token.trim().is_empty() => Self::new(&token),
            _ => Ok(Self(None)),
        }
    }
}

impl tonic::service::Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// A channel whose calls carry the bearer token.
pub type Transport = InterceptedService<Channel, Bearer>;

/// Clients of the services the CLI talks to.
#[derive(Clone)]
pub struct Clients {
    /// Retrieval.
    pub retrieval: RetrievalServiceClient<Transport>,
    /// Telemetry.
    pub telemetry: TelemetryServiceClient<Transport>,
    /// Analyst.
    pub analyst: AnalystServiceClient<Transport>,
    /// Firewall.
    pub firewall: FirewallServiceClient<Transport>,
}

async fn channel(addr: &str, tls: Option<&ClientTlsConfig>) -> anyhow::Result<Channel> {
    ontoloop_runtime::tls::endpoint(addr, tls)?
        .connect()
        .await
        .with_context(|| format!("connect to {addr} (is `ontoloop up` running?)"))
}

impl Clients {
    /// Dials the addresses the settings give, with `$ONTOLOOP_TOKEN` as the bearer.
    pub async fn from_settings(settings: &Settings) -> anyhow::Result<Self> {
        Self::from_settings_with(settings, Bearer::from_env()?).await
    }

    /// Dials the addresses the settings give, calls carrying `bearer`.
    pub async fn from_settings_with(settings: &Settings, bearer: Bearer) -> anyhow::Result<Self> {
        let addr = |kind: ServiceKind| {
            format!(
                "{}:{}",
                settings.services.host,
                settings.services.port_of(kind.name()).unwrap_or_default()
            )
        };
        Self::dial(addr, bearer, &settings.tls).await
    }

    /// Dials bound addresses (an embedded system, serving with `tls`), with `$ONTOLOOP_TOKEN` as
    /// the bearer.
    pub async fn from_addrs(
        addrs: &[(ServiceKind, SocketAddr)],
        tls: &TlsSettings,
    ) -> anyhow::Result<Self> {
        Self::from_addrs_with(addrs, tls, Bearer::from_env()?).await
    }

    /// Dials bound addresses (an embedded system, serving with `tls`), calls carrying `bearer`.
    pub async fn from_addrs_with(
        addrs: &[(ServiceKind, SocketAddr)],
        tls: &TlsSettings,
        bearer: Bearer,
    ) -> anyhow::Result<Self> {
        let addr = |kind: ServiceKind| {
            addrs
                .iter()
                .find(|(k, _)| *k == kind)
                .map(|(_, a)| a.to_string())
                .unwrap_or_default()
        };
        Self::dial(addr, bearer, tls).await
    }

    async fn dial(
        addr: impl Fn(ServiceKind) -> String,
        bearer: Bearer,
        tls: &TlsSettings,
    ) -> anyhow::Result<Self> {
        let tls = ontoloop_runtime::tls::client_config(tls)?;
        let tls = tls.as_ref();
        let with = |channel| InterceptedService::new(channel, bearer.clone());
        let (addr, with) = (&addr, &with);
        let dial = |kind| async move { channel(&addr(kind), tls).await.map(with) };
        Ok(Self {
            retrieval: RetrievalServiceClient::new(dial(ServiceKind::Retrieval).await?),
            telemetry: TelemetryServiceClient::new(dial(ServiceKind::Telemetry).await?),
            analyst: AnalystServiceClient::new(dial(ServiceKind::Analyst).await?),
            firewall: FirewallServiceClient::new(dial(ServiceKind::Firewall).await?),
        })
    }
}

/// The wire form of a caller.
pub fn caller(caller: &Caller) -> Option<v1::Caller> {
    Some(v1::Caller::from(caller))
}
