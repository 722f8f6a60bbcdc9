//! The library half of the `ontoloop` command: running the services in one process and asking
//! their health. The binary parses arguments and calls these; the system tests call them too, so
//! a test exercises the same path a person does.

pub mod bench;
pub mod client;
pub mod org;
pub mod show;
pub mod status;
pub mod up;
