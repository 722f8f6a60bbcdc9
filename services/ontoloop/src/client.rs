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

/// Converts a domain event into a pushed event.
pub fn event(
    caller: &Caller,
    event: &ontoloop_core::events::Event,
    at: chrono::DateTime<chrono::Utc>,
) -> v1::Event {
    use ontoloop_core::events::Event;
    use v1::event::Kind;
    let kind = match event {
        Event::DocUpsert {
            doc_id,
            title,
            origin,
            body,
            acl,
            hold,
            confidence,
        } => Kind::DocUpsert(v1::DocUpsert {
            doc_id: doc_id.clone(),
            title: title.clone(),
            origin: origin.clone(),
            body: body.clone(),
            acl: acl.clone(),
            hold: *hold,
            confidence: confidence.unwrap_or_default(),
        }),
        Event::RecordSet {
            source,
            entity,
            predicate,
            value,
        } => Kind::RecordSet(v1::RecordSet {
            source: source.clone(),
            entity: entity.clone(),
            predicate: predicate.clone(),
            value: value.clone(),
        }),
        Event::RecordRename { source, old, new } => Kind::RecordRename(v1::RecordRename {
            source: source.clone(),
            old: old.clone(),
            new: new.clone(),
        }),
        Event::OntologySet { ontology } => Kind::OntologySet(v1::OntologySet {
            ontology_json: ontology.to_string(),
        }),
        Event::GraphMaintain { mode } => {
            Kind::GraphMaintain(v1::GraphMaintain { mode: mode.clone() })
        }
        Event::EmployeeHired(person) => Kind::Hr(v1::HrEvent {
            r#type: v1::HrEventType::EmployeeHired as i32,
            person_id: person.id.clone(),
            name: person.name.clone(),
            team: person.team.clone(),
            role: person.role.clone(),
            manager_id: person.manager.clone().unwrap_or_default(),
            ..Default::default()
        }),
        Event::EmployeeTransferred {
            person,
            team,
            manager,
            role,
        } => Kind::Hr(v1::HrEvent {
            r#type: v1::HrEventType::EmployeeTransferred as i32,
            person_id: person.clone(),
            team: team.clone(),
            role: role.clone().unwrap_or_default(),
            manager_id: manager.clone().unwrap_or_default(),
            ..Default::default()
        }),
        Event::EmployeeTerminated { person } => Kind::Hr(v1::HrEvent {
            r#type: v1::HrEventType::EmployeeTerminated as i32,
            person_id: person.clone(),
            ..Default::default()
        }),
        Event::OrgRestructure {
            teams,
            moves,
            dissolve,
        } => Kind::Hr(v1::HrEvent {
            r#type: v1::HrEventType::OrgRestructure as i32,
            teams: teams
                .iter()
                .map(|t| v1::HrTeam {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    parent: t.parent.clone().unwrap_or_default(),
                })
                .collect(),
            moves: moves
                .iter()
                .map(|m| v1::HrMove {
                    person_id: m.person.clone(),
                    team: m.team.clone(),
                    manager_id: m.manager.clone().unwrap_or_default(),
                    role: m.role.clone().unwrap_or_default(),
                })
                .collect(),
            dissolve: dissolve.clone(),
            ..Default::default()
        }),
        Event::DocsPush {
            changed_files,
            contents,
        } => Kind::DocsPush(v1::DocsPush {
            changed_files: changed_files.clone(),
            contents: contents.clone().into_iter().collect(),
        }),
        Event::ItemUpsert(item) => Kind::WorkItem(v1::WorkItemUpsert {
            item_id: item.id.clone(),
            title: item.title.clone(),
            assignee: item.assignee.clone().unwrap_or_default(),
            service: item.service.clone().unwrap_or_default(),
            severity: item.severity.as_str().to_owned(),
            scope: item.scope.as_str().to_owned(),
            source_type: item.source.as_str().to_owned(),
            created_at: item.created_at.map(ontoloop_proto::convert::timestamp),
            acl: item.acl.clone(),
        }),
    };
    v1::Event {
        caller: self::caller(caller),
        at: Some(ontoloop_proto::convert::timestamp(at)),
        idempotency_key: String::new(),
        kind: Some(kind),
    }
}
