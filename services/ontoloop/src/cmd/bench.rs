//! `ontoloop bench ...` and `ontoloop gen-org ...`: run the `ontoloop-bench` binary built beside
//! this one with the same arguments. The benchmarks and the organisation generator are a crate
//! of their own (`libs/bench`), so this binary holds no benchmark and links no test kit.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

/// The binary the benchmarks are in.
const BENCH: &str = "ontoloop-bench";

/// Everything after the subcommand, passed on as it is (`--help` included).
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

impl Args {
    /// Runs `ontoloop-bench [--config FILE] [SUBCOMMAND] ARGS...`; its exit code is this
    /// command's.
    pub fn run(self, config: Option<&Path>, subcommand: Option<&str>) -> anyhow::Result<ExitCode> {
        let bench = bench_binary()?;
        let mut command = std::process::Command::new(&bench);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        command.args(subcommand).args(&self.args);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt as _;
            let err = command.exec();
            Err(err).with_context(|| format!("run {}", bench.display()))
        }
        #[cfg(not(unix))]
        {
            let status = command
                .status()
                .with_context(|| format!("run {}", bench.display()))?;
            Ok(status
                .code()
                .and_then(|code| u8::try_from(code).ok())
                .map_or(ExitCode::FAILURE, ExitCode::from))
        }
    }
}

/// `ontoloop-bench` in the directory this binary is in, or an error saying how to build it.
fn bench_binary() -> anyhow::Result<PathBuf> {
    let this = std::env::current_exe().context("find the ontoloop binary")?;
    let dir = this.parent().context("the ontoloop binary's directory")?;
    let bench = dir.join(format!("{BENCH}{}", std::env::consts::EXE_SUFFIX));
    if bench.is_file() {
        return Ok(bench);
    }
    let release = if dir.ends_with("release") {
        " --release"
    } else {
        ""
    };
    anyhow::bail!(
        "the benchmarks are a binary of their own, {BENCH}, and there is none beside this one \
         ({}): build it with `cargo build{release} -p {BENCH}` (or `make bench`, which builds \
         and runs every benchmark)",
        bench.display()
    )
}
