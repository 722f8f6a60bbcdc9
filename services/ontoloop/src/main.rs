//! `ontoloop`: the command line. Runs the four services in one process (`up`) and talks to
//! running services over gRPC (`status`, `ask`, `ingest`, `validate`, `signal`, `patterns`,
//! `plate`, `review`), loads generated organisations (`gen-org`), migrates the store and runs
//! the benchmarks.
//!
//! It owns argument parsing (`cmd`, one module per subcommand), the session every command starts
//! from (`session`) and printing (`print`) only; every behaviour lives in the services and
//! libraries it calls.

mod cmd;
mod dev_auth;
mod print;
mod session;

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    ontoloop::run_command(cmd::Cli::parse().run())
}
