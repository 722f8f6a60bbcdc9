//! What tests and benchmarks share and production never runs: drift-benchmark world files and
//! their grading ([`world`]), the seeded organisation world generator ([`generate`]), the
//! brute-force plate oracle ([`oracle`]) and the harness that compares plates with it
//! ([`plate`]).
//!
//! Nothing here is compiled into a service. The `ontoloop` CLI uses it for `bench` and
//! `gen-org`, the system tests and the `ontoloop-org` examples for their worlds and oracles.

pub mod generate;
pub mod oracle;
pub mod plate;
pub mod world;
