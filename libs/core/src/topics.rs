//! Names of the queues the services exchange messages on. They are part of the wire contract
//! for integrations that publish directly, so they never change silently.

/// HR, docs and system-of-record events, from the telemetry intake or straight from
/// integrations. Consumed by the analyst.
pub const EVENTS: &str = "ontoloop.events";

/// Failure signals from agents, retrieval and the firewall. Consumed by the analyst.
pub const SIGNALS: &str = "ontoloop.signals";

/// Every queue the analyst consumes.
pub const ANALYST_INPUTS: [&str; 2] = [EVENTS, SIGNALS];
