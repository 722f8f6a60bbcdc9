//! `ontoloop status`: each service's gRPC health, one line per service, how text is read (the
//! extraction stages, and whether the semantic stage finds its model), and for each tenant named
//! with `--as`, what it holds and how far its intake is behind (the analyst's `TenantSummary`).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use ontoloop::status::TenantStatus;
use ontoloop_proto::v1;

use crate::print;
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print `{"services":[{"name","addr","status"}],"extraction":"...","tenants":[...]}`.
    #[arg(long)]
    json: bool,
    /// Ask only this service (repeatable): retrieval, firewall, telemetry or analyst.
    #[arg(long = "service", value_name = "NAME")]
    services: Vec<String>,
    /// Also summarise this caller's tenant (repeatable): pages, facts, entities, the ontology's
    /// predicates, the last ingest and the backlog. Needs the reviewer role.
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    callers: Vec<String>,
    /// Host to dial instead of `services.host`.
    #[arg(long)]
    host: Option<String>,
    /// Seconds to wait for each service.
    #[arg(long, default_value_t = 2)]
    timeout_secs: u64,
}

impl Args {
    /// Exits non-zero unless every service asked is SERVING and every tenant asked about was
    /// summarised.
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let overrides = [("services.host", self.host.as_deref())];
        let session = Session::load(config, &overrides)?;
        let kinds = ontoloop::status::select(&self.services)?;
        let timeout = Duration::from_secs(self.timeout_secs);
        let report = ontoloop::status::check(&session.settings, &kinds, timeout).await;
        let extraction = ontoloop_embed::describe(&session.settings.extract);
        let mut tenants = Vec::with_capacity(self.callers.len());
        for spec in &self.callers {
            let mut session = Session::load(config, &overrides)?.acting_as(spec)?;
            let tenant = session.caller()?.tenant().to_owned();
            let request = v1::TenantSummaryRequest {
                caller: session.wire_caller()?,
                min_sequence: 0,
            };
            let asked = tokio::time::timeout(
                timeout,
                session.call("tenant summary", |mut c| async move {
                    c.analyst.tenant_summary(request).await
                }),
            )
            .await;
            tenants.push(match asked {
                Ok(Ok(summary)) => TenantStatus::answered(&tenant, &summary),
                Ok(Err(err)) => TenantStatus::failed(&tenant, format!("{err:#}")),
                Err(_) => TenantStatus::failed(&tenant, format!("no answer within {timeout:?}")),
            });
        }
        print::status(&report, &extraction, &tenants, self.json)?;
        let healthy = report.iter().all(|s| s.status == "SERVING");
        Ok(if healthy && tenants.iter().all(|t| t.error.is_none()) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }
}
