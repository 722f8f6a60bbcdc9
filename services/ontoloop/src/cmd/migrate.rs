//! `ontoloop migrate`: pending store migrations applied, then exit.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::print;
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Store URL (sets store.url).
    #[arg(long)]
    database_url: Option<String>,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let session = Session::load(config, &[("store.url", self.database_url.as_deref())])?;
        let settings = session.settings;
        ontoloop_observability::init(&settings.log).context("set up logging")?;
        let store = ontoloop_store::Store::open(&settings.store)
            .await
            .context("open the store and apply migrations")?;
        let applied = store
            .applied_migrations()
            .await
            .context("list applied migrations")?;
        print::migrations(&applied);
        Ok(ExitCode::SUCCESS)
    }
}
