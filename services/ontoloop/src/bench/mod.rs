//! `ontoloop bench ...`: benchmarks that drive the real services over gRPC.

pub mod auth;
pub mod drift;
pub mod extract;
pub mod fake_model;
pub mod firewall;
pub mod memory;
pub mod outage;
pub mod plate;
pub mod scale;
pub mod signals;
