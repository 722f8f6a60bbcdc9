//! The four services and their stable names.

/// One of ontoloop's four services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceKind {
    /// Answers questions with provenance.
    Retrieval,
    /// Validates claims before release.
    Firewall,
    /// Takes in signals and events.
    Telemetry,
    /// Clusters signals, heals the graph, runs the review queue.
    Analyst,
}

impl ServiceKind {
    /// Every service, in the order they are listed to people.
    pub const ALL: [ServiceKind; 4] = [
        ServiceKind::Retrieval,
        ServiceKind::Firewall,
        ServiceKind::Telemetry,
        ServiceKind::Analyst,
    ];

    /// Short lowercase name used in settings, logs and the command line.
    pub fn name(self) -> &'static str {
        match self {
            ServiceKind::Retrieval => "retrieval",
            ServiceKind::Firewall => "firewall",
            ServiceKind::Telemetry => "telemetry",
            ServiceKind::Analyst => "analyst",
        }
    }

    /// Fully qualified gRPC service name, as health checks and reflection know it.
    pub fn grpc_name(self) -> &'static str {
        match self {
            ServiceKind::Retrieval => "ontoloop.v1.RetrievalService",
            ServiceKind::Firewall => "ontoloop.v1.FirewallService",
            ServiceKind::Telemetry => "ontoloop.v1.TelemetryService",
            ServiceKind::Analyst => "ontoloop.v1.AnalystService",
        }
    }

    /// Parses a short name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in ServiceKind::ALL {
            assert_eq!(ServiceKind::from_name(kind.name()), Some(kind));
            assert!(kind.grpc_name().starts_with("ontoloop.v1."));
        }
        assert_eq!(ServiceKind::from_name("gateway"), None);
    }
}
