//! The library half of the `ontoloop` command: running the services in one process (`up`),
//! asking their health (`status`), their clients (`client`), pushing a folder's documents
//! (`ingest`) and the MCP server (`mcp`). The binary (`main.rs`, `cmd/`) parses arguments, calls
//! these and prints; the system tests and the benchmarks (`ontoloop-bench`) call them too, so a
//! test exercises the same path a person does.

pub mod client;
pub mod ingest;
pub mod mcp;
pub mod status;
pub mod up;

use std::process::ExitCode;

/// Runs a command on a multi-threaded tokio runtime: its exit code, or the error printed
/// (`error: ...`) and a failure. The `main` of `ontoloop` and of `ontoloop-bench`.
pub fn run_command(command: impl Future<Output = anyhow::Result<ExitCode>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
