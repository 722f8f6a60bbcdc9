//! What tests and benchmarks share and production never runs: the seeded organisation world
//! generator ([`generate`]) and its loader into a store ([`load`]), the brute-force plate oracle ([`oracle`]), the harness that
//! compares plates with it ([`plate`]), the machine's PostgreSQL, RabbitMQ and free ports for
//! tests that need them ([`servers`]), a TCP proxy that can cut a server off ([`proxy`]) and
//! `ontoloop up` as a child process ([`process`]) and a tiny PDF writer ([`pdf`]).
//!
//! Nothing here is compiled into a service or the `ontoloop` CLI. The benchmarks
//! (`ontoloop-bench`, with `gen-org`), the system tests and the `ontoloop-org` examples use it for
//! their worlds and oracles; world files themselves are `ontoloop_core::world`.

pub mod generate;
pub mod load;
pub mod oracle;
pub mod pdf;
pub mod plate;
pub mod process;
pub mod proxy;
pub mod python;
pub mod servers;
