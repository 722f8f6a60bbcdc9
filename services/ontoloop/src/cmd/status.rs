//! `ontoloop status`: each service's gRPC health, one line per service, and how text is read
//! (the extraction stages, and whether the semantic stage finds its model).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use crate::print;
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print `{"services":[{"name","addr","status"}],"extraction":"..."}`.
    #[arg(long)]
    json: bool,
    /// Ask only this service (repeatable): retrieval, firewall, telemetry or analyst.
    #[arg(long = "service", value_name = "NAME")]
    services: Vec<String>,
    /// Host to dial instead of `services.host`.
    #[arg(long)]
    host: Option<String>,
    /// Seconds to wait for each service.
    #[arg(long, default_value_t = 2)]
    timeout_secs: u64,
}

impl Args {
    /// Exits non-zero unless every service asked is SERVING.
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let session = Session::load(config, &[("services.host", self.host.as_deref())])?;
        let kinds = ontoloop::status::select(&self.services)?;
        let timeout = Duration::from_secs(self.timeout_secs);
        let report = ontoloop::status::check(&session.settings, &kinds, timeout).await;
        let extraction = ontoloop_embed::describe(&session.settings.extract);
        print::status(&report, &extraction, self.json)?;
        Ok(if report.iter().all(|s| s.status == "SERVING") {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }
}
