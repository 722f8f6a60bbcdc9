//! What tests and benchmarks share and production never runs: drift-benchmark world files and
//! their grading ([`world`]), the seeded organisation world generator ([`generate`]) and its
//! loader into a store ([`load`]), the brute-force plate oracle ([`oracle`]), the harness that
//! compares plates with it ([`plate`]), the machine's PostgreSQL, RabbitMQ and free ports for
//! tests that need them ([`servers`]), a TCP proxy that can cut a server off ([`proxy`]) and
//! `ontoloop up` as a child process ([`process`]).
//!
//! Nothing here is compiled into a service. The `ontoloop` CLI uses it for `bench` and
//! `gen-org`, the system tests and the `ontoloop-org` examples for their worlds and oracles.

pub mod generate;
pub mod load;
pub mod oracle;
pub mod plate;
pub mod process;
pub mod proxy;
pub mod python;
pub mod servers;
pub mod world;
