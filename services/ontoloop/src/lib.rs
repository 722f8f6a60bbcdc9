//! The library half of the `ontoloop` command: running the services in one process (`up`),
//! asking their health (`status`), their clients (`client`), loading a generated organisation
//! (`org`) and the benchmarks (`bench`). The binary (`main.rs`, `cmd/`) parses arguments, calls
//! these and prints; the system tests call them too, so a test exercises the same path a person
//! does.

pub mod bench;
pub mod client;
pub mod mcp;
pub mod org;
pub mod status;
pub mod up;
