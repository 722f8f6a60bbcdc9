//! `ontoloop gen-org`: a seeded organisation generated and loaded into the configured store.

use std::path::Path;
use std::process::ExitCode;

use ontoloop::org::GenSpec;

use crate::print;
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// People over all tenants.
    #[arg(long, default_value_t = 10_000)]
    people: usize,
    /// Work items over all tenants.
    #[arg(long, default_value_t = 100_000)]
    items: usize,
    /// Services over all tenants (default: one per ten people).
    #[arg(long)]
    services: Option<usize>,
    /// Tenants.
    #[arg(long, default_value_t = 1)]
    tenants: usize,
    /// Seed of the generator (the same seed gives the same organisation).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Store URL (sets store.url).
    #[arg(long)]
    database_url: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let session = Session::load(config, &[("store.url", self.database_url.as_deref())])?;
        let spec = GenSpec {
            people: self.people,
            items: self.items,
            services: self.services.unwrap_or((self.people / 10).max(1)),
            tenants: self.tenants.max(1),
            seed: self.seed,
        };
        let report = ontoloop::org::gen_org(&session.settings, &spec).await?;
        print::gen_org(&report, self.json)?;
        Ok(ExitCode::SUCCESS)
    }
}
